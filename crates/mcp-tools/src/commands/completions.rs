//! Shell completions and man pages, generated from the clap definition.

use clap::CommandFactory;

use crate::{
    cli::{Cli, CompletionsArgs, ManpageArgs, Shell},
    runtime::{
        exit::{Exit, Outcome},
        output::out,
    },
};

/// `mcp-tools completions SHELL`: the script on stdout.
pub(crate) fn completions(args: &CompletionsArgs) -> Outcome {
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

/// `mcp-tools manpage --out-dir DIR`: `mcp-tools.1` and one page per subcommand
/// (`mcp-tools-call.1`, ...).
pub(crate) fn manpage(args: &ManpageArgs) -> Outcome {
    let failed = |error: std::io::Error| {
        Exit::Failed(format!(
            "cannot write the man pages to {}: {error}",
            args.out_dir.display()
        ))
    };
    std::fs::create_dir_all(&args.out_dir).map_err(failed)?;
    clap_mangen::generate_to(Cli::command(), &args.out_dir).map_err(failed)?;
    Ok(())
}
