//! `cargo xtask <command>`: project automation (the alias is in `.cargo/config.toml`).
//!
//! A small dispatcher over subcommands, one module each. To add one, write its module
//! with a `pub(crate) fn run(args: &[String]) -> anyhow::Result<()>` and add an entry to
//! [`COMMANDS`] with its options. `cargo xtask --help` lists the commands and
//! `cargo xtask NAME --help` a command's options; both exit 0, and `--help` never reaches
//! the command itself.

mod api;
mod bench;
mod conformance;
mod demo;
mod fuzz;
mod man;
mod peers;
mod results;
mod server_scenarios;
mod soak;
mod test;
mod util;

use std::process::ExitCode;

/// A subcommand.
struct Command {
    name: &'static str,
    /// One line: what it does.
    about: &'static str,
    /// Its options: (flag and value, what it does).
    options: &'static [(&'static str, &'static str)],
    run: fn(&[String]) -> anyhow::Result<()>,
}

/// Every subcommand, in the order `--help` lists them.
const COMMANDS: &[Command] = &[
    Command {
        name: "test",
        about: "fmt, clippy, cargo features, dependency direction, public API, semver, packages, tests, and the conformance run (what CI runs)",
        options: &[(
            "--step NAME",
            "run only this step (repeatable): fmt, clippy, features, deps, api, semver, docs, package, build, peers, tests, conformance",
        )],
        run: test::run,
    },
    Command {
        name: "conformance",
        about: "official MCP suite (2025-11-25 and 2026-07-28; client scenarios, and server scenarios against the gateway), our scenarios, interop matrix",
        options: &[
            (
                "--suite official|server|ours|interop",
                "run only this suite",
            ),
            (
                "--only TEXT",
                "run only the rows whose scenario or peer contains TEXT",
            ),
        ],
        run: conformance::run,
    },
    Command {
        name: "demo",
        about: "discover the testkit's tools, write a host config, run one call with progress",
        options: &[],
        run: demo::run,
    },
    Command {
        name: "bench",
        about: "side-by-side figures: ours, the floor, the TypeScript and Python SDKs (release)",
        options: &[
            (
                "--rounds N",
                "rounds, each figure is their median (default 3)",
            ),
            (
                "--calls N",
                "sequential calls per case and round; the SDKs get a fifth (default 1000)",
            ),
        ],
        run: bench::run,
    },
    Command {
        name: "soak",
        about: "10,000 calls with faults and cancels; leaks and memory (release)",
        options: &[("--calls N", "how many calls (default 10000)")],
        run: soak::run,
    },
    Command {
        name: "man",
        about: "the man pages of mcp-tools (mcp-tools.1 and one per subcommand) into target/man/",
        options: &[],
        run: man::run,
    },
    Command {
        name: "api",
        about: "the public API of each published library crate, checked against xtask/api/<crate>.txt",
        options: &[(
            "--bless",
            "write the listings to xtask/api/ instead of checking them (then review the diff)",
        )],
        run: api::run,
    },
    Command {
        name: "fuzz",
        about: "run the libFuzzer targets (needs cargo-fuzz)",
        options: &[
            ("--seconds N", "how long each target runs (default 60)"),
            (
                "--target NAME",
                "run only this target: config_load, mcp_result, discovery_output",
            ),
        ],
        run: fuzz::run,
    },
];

fn main() -> ExitCode {
    // Run by cargo as rustdoc (`cargo xtask api`).
    if let Some(rustdoc) = std::env::var_os(api::UNSTABLE_RUSTDOC) {
        return ExitCode::from(api::unstable_rustdoc(rustdoc));
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    ExitCode::from(dispatch(&args))
}

/// Runs the command line; returns the exit code.
fn dispatch(args: &[String]) -> u8 {
    let help = |arg: &String| matches!(arg.as_str(), "-h" | "--help");
    let Some(name) = args.first() else {
        eprint!("{}", usage());
        return 2;
    };
    if help(name) {
        print!("{}", usage());
        return 0;
    }
    if name == "help" {
        return match args.get(1) {
            None => {
                print!("{}", usage());
                0
            }
            Some(name) => match find(name) {
                Some(command) => {
                    print!("{}", command_help(command));
                    0
                }
                None => unknown(name),
            },
        };
    }
    let Some(command) = find(name) else {
        return unknown(name);
    };
    if args[1..].iter().any(help) {
        print!("{}", command_help(command));
        return 0;
    }
    match (command.run)(&args[1..]) {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("xtask {name}: {error:#}");
            1
        }
    }
}

fn find(name: &str) -> Option<&'static Command> {
    COMMANDS.iter().find(|command| command.name == name)
}

fn unknown(name: &str) -> u8 {
    eprintln!("xtask: unknown command {name:?}");
    eprint!("{}", usage());
    2
}

/// `cargo xtask --help`.
fn usage() -> String {
    let mut text = String::from("usage: cargo xtask <command> [options]\n\ncommands:\n");
    for command in COMMANDS {
        text.push_str(&format!("  {:<12} {}\n", command.name, command.about));
    }
    text.push_str("\n`cargo xtask <command> --help` lists a command's options.\n");
    text
}

/// `cargo xtask NAME --help`.
fn command_help(command: &Command) -> String {
    let flags: String = command
        .options
        .iter()
        .map(|(flag, _)| format!(" [{flag}]"))
        .collect();
    let mut text = format!(
        "{}\n\nusage: cargo xtask {}{flags}\n\noptions:\n",
        command.about, command.name
    );
    let width = command
        .options
        .iter()
        .map(|(flag, _)| flag.len())
        .chain([10])
        .max()
        .unwrap_or(10);
    for (flag, what) in command.options {
        text.push_str(&format!("  {flag:<width$}  {what}\n"));
    }
    text.push_str(&format!("  {:<width$}  print this help\n", "-h, --help"));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn help_exits_0_and_lists_every_command() {
        for line in ["--help", "-h", "help"] {
            assert_eq!(dispatch(&args(line)), 0, "{line}");
        }
        let text = usage();
        for command in COMMANDS {
            assert!(text.contains(&format!("  {:<12} ", command.name)), "{text}");
        }
    }

    #[test]
    fn every_command_takes_help_and_lists_its_options() {
        for command in COMMANDS {
            // `--help` anywhere prints the help and never runs the command.
            for line in [
                format!("{} --help", command.name),
                format!("{} -h", command.name),
                format!("help {}", command.name),
            ] {
                assert_eq!(dispatch(&args(&line)), 0, "{line}");
            }
            let text = command_help(command);
            assert!(
                text.contains(&format!("usage: cargo xtask {}", command.name)),
                "{text}"
            );
            for (flag, _) in command.options {
                assert!(text.contains(flag), "{text}");
            }
        }
    }

    #[test]
    fn an_unknown_command_is_a_usage_error() {
        assert_eq!(dispatch(&args("nope")), 2);
        assert_eq!(dispatch(&args("help nope")), 2);
        assert_eq!(dispatch(&[]), 2);
    }

    #[test]
    fn the_test_help_names_every_step() {
        let test = find("test").unwrap();
        for step in test::step_names() {
            assert!(
                test.options[0].1.contains(step),
                "--step {step} is not listed"
            );
        }
    }
}
