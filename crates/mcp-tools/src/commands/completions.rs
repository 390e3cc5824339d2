//! `mcp-tools completions SHELL`: a shell's completion script, generated from the clap
//! definition.

use std::fmt::Write as _;

use clap::CommandFactory;

use crate::{
    cli::{Cli, CompletionsArgs, Shell},
    runtime::{exit::Outcome, output::out},
};

/// The binary's name, as the scripts complete it.
const BIN: &str = "mcp-tools";

/// The script on stdout.
pub(crate) fn run(args: &CompletionsArgs) -> Outcome {
    let shell = match args.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, BIN, &mut script);
    let script = String::from_utf8_lossy(&script);
    match args.shell {
        Shell::Bash => out!("{}", bash_labels(&script, BIN)),
        Shell::Fish => out!("{}", fish(&script, &Cli::command())),
        Shell::Zsh => out!("{script}"),
    }
    Ok(())
}

/// clap_complete's bash script (4.6) finds the subcommand on the line by setting `cmd`
/// to the binary's name with `-` written `__`, then `__subcmd__` and the subcommand
/// (`mcp__tools__subcmd__call`), but it names each subcommand's case by writing every
/// `-` of the path as `__subcmd__`, the binary's own included
/// (`mcp__subcmd__tools__subcmd__call`). No case matches, so nothing after a subcommand
/// completes: not its flags, not a flag's values (bash falls back to file names). The
/// labels are written the loop's way here (clap-rs/clap#6421; a script that already
/// agrees is left as it is).
fn bash_labels(script: &str, bin: &str) -> String {
    const SEP: &str = "__subcmd__";
    let wrong = format!("{}{SEP}", bin.replace('-', SEP));
    let right = format!("{}{SEP}", bin.replace('-', "__"));
    script.replace(&wrong, &right)
}

/// clap_complete's fish script (4.6) has two gaps, both filled here from the same clap
/// definition (clap-rs/clap#6295):
/// - its guard for the top level's candidates fails while a flag waits for its value
///   (`mcp-tools --era <Tab>` offered files): a line that cannot be parsed yet is
///   taken as one at the top level;
/// - it completes no positional argument's values (`mcp-tools completions <Tab>`
///   offered files): a line per subcommand's positional with possible values is added.
fn fish(script: &str, command: &clap::Command) -> String {
    const GUARD: &str = "2>/dev/null\n    or return\n";
    let mut script = script.replacen(GUARD, "2>/dev/null\n    or return 0\n", 1);
    let guard = format!("__fish_{}_using_subcommand", BIN.replace('-', "_"));
    for sub in command.get_subcommands() {
        for arg in sub.get_positionals().filter(|arg| !arg.is_hide_set()) {
            let values: Vec<String> = arg
                .get_possible_values()
                .iter()
                .filter(|value| !value.is_hide_set())
                .map(|value| {
                    let help = value
                        .get_help()
                        .map(ToString::to_string)
                        .unwrap_or_default();
                    format!("{}\\t'{}'", value.get_name(), fish_quoted(&help))
                })
                .collect();
            if values.is_empty() {
                continue;
            }
            let _ = writeln!(
                script,
                "complete -c {BIN} -n \"{guard} {}\" -f -a \"{}\"",
                sub.get_name(),
                values.join("\n")
            );
        }
    }
    script
}

/// Text for inside `'...'` within a double-quoted fish string.
fn fish_quoted(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('\'', "\\'")
        .replace('"', "\\\"")
        .replace('$', "\\$")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every subcommand's case label is a value the loop gives `cmd`.
    #[test]
    fn bash_case_labels_are_the_values_the_loop_sets() {
        let mut command = Cli::command();
        let mut script = Vec::new();
        clap_complete::generate(clap_complete::Shell::Bash, &mut command, BIN, &mut script);
        let script = bash_labels(&String::from_utf8(script).unwrap(), BIN);
        let set: Vec<&str> = script
            .lines()
            .filter_map(|line| line.trim().strip_prefix("cmd=\""))
            .filter_map(|rest| rest.strip_suffix('"'))
            .filter(|value| !value.is_empty())
            .collect();
        let labels: Vec<&str> = script
            .lines()
            .map(str::trim)
            .filter(|line| line.starts_with("mcp__") && line.ends_with(')') && !line.contains(','))
            .map(|line| line.trim_end_matches(')'))
            .collect();
        assert!(labels.contains(&"mcp__tools__subcmd__call"), "{labels:?}");
        for label in &labels {
            assert!(set.contains(label), "{label} is never set: {set:?}");
        }
        for value in &set {
            assert!(labels.contains(value), "{value} has no case: {labels:?}");
        }
    }
}
