//! `mcp-tools manpage --out-dir DIR`: the man pages, `mcp-tools.1` and one per subcommand
//! (`mcp-tools-call.1`, ...), generated from the clap definition.

use clap::CommandFactory;

use crate::{
    cli::{Cli, ManpageArgs},
    runtime::exit::{Exit, Outcome},
};

/// Writes the pages into `--out-dir`.
pub(crate) fn run(args: &ManpageArgs) -> Outcome {
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
