//! `--help` for each command, completions and man pages.

use crate::support::mcp_tools;

/// Whether `text` mentions every one of `words`.
fn contains_all(text: &str, words: &[&str]) -> bool {
    words.iter().all(|word| text.contains(word))
}

#[tokio::test]
async fn help_for_each_command() {
    for (name, args) in [
        ("main", vec!["--help"]),
        ("call", vec!["call", "--help"]),
        ("check", vec!["check", "--help"]),
        ("login", vec!["login", "--help"]),
        ("logout", vec!["logout", "--help"]),
        ("completions", vec!["completions", "--help"]),
        ("manpage", vec!["manpage", "--help"]),
        ("serve", vec!["serve", "--help"]),
    ] {
        let run = mcp_tools(&args, &[]).await;
        assert_eq!(run.code, 0);
        insta::assert_snapshot!(name, run.stdout);
    }
}

/// Every new flag has an example in the help of its command.
#[tokio::test]
async fn every_new_flag_has_an_example() {
    let main = mcp_tools(&["--help"], &[]).await.stdout;
    let examples = main.split("Examples:").nth(1).unwrap();
    assert!(
        contains_all(
            examples,
            &[
                "--merge",
                "--replace",
                "--prefix",
                "--models",
                "--strict",
                "-discovery-timeout",
                "-discovery-max-bytes",
                "--config host.json --tool",
                "--store",
                "--auth",
                "login",
                "completions",
                "--env LOG_LEVEL=warn",
                "--pass-env",
                "--cwd"
            ]
        ),
        "{examples}"
    );
    let call = mcp_tools(&["call", "--help"], &[]).await.stdout;
    let examples = call.split("Examples:").nth(1).unwrap();
    assert!(
        contains_all(
            examples,
            &["--format json", "--format human", "--save-dir", "--store"]
        ),
        "{examples}"
    );
    let check = mcp_tools(&["check", "--help"], &[]).await.stdout;
    let examples = check.split("Examples:").nth(1).unwrap();
    assert!(
        contains_all(examples, &["--models", "--strict", "--live"]),
        "{examples}"
    );
    let login = mcp_tools(&["login", "--help"], &[]).await.stdout;
    let examples = login.split("Examples:").nth(1).unwrap();
    assert!(
        contains_all(
            examples,
            &[
                "--config",
                "--tool",
                "--tenant",
                "--store",
                "--url",
                "--auth",
                "--timeout"
            ]
        ),
        "{examples}"
    );
    let logout = mcp_tools(&["logout", "--help"], &[]).await.stdout;
    let examples = logout.split("Examples:").nth(1).unwrap();
    assert!(
        contains_all(examples, &["--tenant", "--store"]),
        "{examples}"
    );
}

#[tokio::test]
async fn completions_for_bash_zsh_and_fish() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef mcp-tools"),
        ("fish", "complete -c mcp-tools"),
    ] {
        let run = mcp_tools(&["completions", shell], &[]).await;
        assert_eq!(run.code, 0, "{shell}: {}", run.stderr);
        assert!(run.stdout.contains(marker), "{shell}");
        assert!(
            run.stdout.contains("--merge") && run.stdout.contains("--models"),
            "{shell}"
        );
    }
    let run = mcp_tools(&["completions", "powershell"], &[]).await;
    assert_eq!(run.code, 2);
}

#[tokio::test]
async fn man_pages_for_the_command_and_each_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man");
    let run = mcp_tools(&["manpage", "--out-dir", out.to_str().unwrap()], &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut pages: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    assert_eq!(
        pages,
        [
            "mcp-tools-call.1",
            "mcp-tools-check.1",
            "mcp-tools-completions.1",
            "mcp-tools-login.1",
            "mcp-tools-logout.1",
            "mcp-tools-manpage.1",
            "mcp-tools-serve.1",
            "mcp-tools.1"
        ]
    );
    let page = std::fs::read_to_string(out.join("mcp-tools.1")).unwrap();
    assert!(page.contains(".TH mcp-tools 1"), "{page}");
    assert!(page.contains("merge"), "{page}");
}
