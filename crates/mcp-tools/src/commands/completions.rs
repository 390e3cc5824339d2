//! `mcp-tools completions SHELL`: a shell's completion script, generated from the clap
//! definition.

use clap::CommandFactory;

use crate::{
    cli::{Cli, CompletionsArgs, Shell},
    runtime::{exit::Outcome, output::out},
};

/// The script on stdout.
pub(crate) fn run(args: &CompletionsArgs) -> Outcome {
    let shell = match args.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "mcp-tools", &mut script);
    out!("{}", String::from_utf8_lossy(&script));
    Ok(())
}
