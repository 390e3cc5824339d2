//! The completion scripts as the shells run them: a line typed up to the cursor, Tab, and
//! what the shell offers. bash through its programmable completion (the function that
//! `complete -p mcp-tools` names, called with `COMP_WORDS` and `COMP_CWORD` set), zsh
//! through compsys on an interactive shell's line editor (`shells/complete.zsh`), fish
//! through `complete -C`. Each shell must be installed (CI installs zsh and fish, see
//! `.ci/run`); a missing one fails the test with what to install.

use std::{path::Path, time::Duration};

use crate::support::{mcp_tools, require};

/// What a person types before Tab (a trailing space: a new word), and what each shell
/// must offer: `Exactly` for a flag's values, `Includes` for what must be among the
/// candidates and what must not.
const CASES: &[(&str, Offers)] = &[
    // A subcommand's flags: call's own, not discovery's.
    (
        "mcp-tools call --",
        Offers::Includes {
            includes: &[
                "--config",
                "--tenant",
                "--tool",
                "--args",
                "--format",
                "--save-dir",
            ],
            excludes: &["--url", "--merge", "--models"],
        },
    ),
    (
        "mcp-tools check --",
        Offers::Includes {
            includes: &["--config", "--live", "--models", "--strict", "--format"],
            excludes: &["--url", "--tool"],
        },
    ),
    // A flag's values.
    (
        "mcp-tools call --format ",
        Offers::Exactly(&["auto", "human", "json"]),
    ),
    (
        "mcp-tools check --format ",
        Offers::Exactly(&["human", "json"]),
    ),
    (
        "mcp-tools call --era ",
        Offers::Exactly(&["auto", "legacy", "modern"]),
    ),
    (
        "mcp-tools --era ",
        Offers::Exactly(&["auto", "legacy", "modern"]),
    ),
    (
        "mcp-tools check --models ",
        Offers::Exactly(&["anthropic", "gemini", "openai"]),
    ),
    // A subcommand's argument (bash offers the subcommand's flags beside it), and the
    // subcommands.
    (
        "mcp-tools completions ",
        Offers::Includes {
            includes: &["bash", "zsh", "fish"],
            excludes: &["powershell", "--config"],
        },
    ),
    (
        "mcp-tools ",
        Offers::Includes {
            includes: &["call", "check", "login", "logout", "completions", "manpage"],
            excludes: &[],
        },
    ),
];

#[derive(Debug)]
enum Offers {
    Exactly(&'static [&'static str]),
    Includes {
        includes: &'static [&'static str],
        excludes: &'static [&'static str],
    },
}

impl Offers {
    fn check(&self, shell: &str, line: &str, offered: &[String]) {
        match self {
            Offers::Exactly(expected) => {
                let mut offered = offered.to_vec();
                offered.sort();
                offered.dedup();
                assert_eq!(offered, *expected, "{shell}: `{line}<Tab>`");
            }
            Offers::Includes { includes, excludes } => {
                for flag in *includes {
                    assert!(
                        offered.iter().any(|o| o == flag),
                        "{shell}: `{line}<Tab>` offers {flag}: {offered:?}"
                    );
                }
                for flag in *excludes {
                    assert!(
                        !offered.iter().any(|o| o == flag),
                        "{shell}: `{line}<Tab>` does not offer {flag}: {offered:?}"
                    );
                }
            }
        }
    }
}

/// The script `mcp-tools completions SHELL` prints, written to `path`.
async fn script(shell: &str, path: &Path) {
    let run = mcp_tools(&["completions", shell], &[]).await;
    assert_eq!(run.code, 0, "{shell}: {}", run.stderr);
    std::fs::write(path, run.stdout).unwrap();
}

/// Fails unless `shell` is on PATH, saying which Debian package has it.
fn installed(shell: &str) {
    require(
        shell,
        &format!("these tests run the completion script in {shell}"),
        &format!("apt-get install {shell}"),
    );
}

/// Runs `program args` and returns its stdout lines; it must end within a minute (a shell
/// that never finishes a completion fails the test instead of hanging it).
async fn lines(program: &str, args: &[&str]) -> Vec<String> {
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap_or_else(|_| panic!("{program} {args:?} did not finish"))
    .unwrap_or_else(|error| panic!("{program} runs: {error}"));
    assert!(
        output.status.success(),
        "{program} {args:?}: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

fn driver(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/shells")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[tokio::test]
async fn bash_completes_a_subcommand_s_flags_and_a_flag_s_values() {
    installed("bash");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp-tools.bash");
    script("bash", &path).await;
    let driver = driver("complete.bash");
    for (line, offers) in CASES {
        // The words bash would split the line into; a trailing space starts an empty one.
        let mut words: Vec<&str> = line.split_whitespace().collect();
        if line.ends_with(' ') {
            words.push("");
        }
        let mut args = vec!["--norc", "--noprofile", &driver, path.to_str().unwrap()];
        args.extend(words);
        offers.check("bash", line, &lines("bash", &args).await);
    }
}

#[tokio::test]
async fn zsh_completes_a_subcommand_s_flags_and_a_flag_s_values() {
    installed("zsh");
    let dir = tempfile::tempdir().unwrap();
    script("zsh", &dir.path().join("_mcp-tools")).await;
    let driver = driver("complete.zsh");
    let fpath = dir.path().to_str().unwrap();
    for (line, offers) in CASES {
        let offered = lines("zsh", &["-f", &driver, fpath, line]).await;
        offers.check("zsh", line, &offered);
    }
}

#[tokio::test]
async fn fish_completes_a_subcommand_s_flags_and_a_flag_s_values() {
    installed("fish");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp-tools.fish");
    script("fish", &path).await;
    let path = path.to_str().unwrap();
    for (line, offers) in CASES {
        // `complete -C LINE` prints what fish offers at the end of LINE: a candidate, a
        // tab, its description.
        let offered: Vec<String> = lines(
            "fish",
            &[
                "--no-config",
                "-c",
                "source $argv[1]; complete -C $argv[2]",
                path,
                line,
            ],
        )
        .await
        .into_iter()
        .map(|row| row.split('\t').next().unwrap_or_default().to_owned())
        .collect();
        offers.check("fish", line, &offered);
    }
}
