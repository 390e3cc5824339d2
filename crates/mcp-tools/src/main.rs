//! `mcp-tools`: turn tools on an MCP server into Brain tool bindings; run and check them.
//! See [docs/cli.md](https://github.com/brain-dev/brain-mcp-tools/blob/main/docs/cli.md).

mod cli;
mod commands;
mod dispatch;
mod runtime;

fn main() -> std::process::ExitCode {
    dispatch::run(std::env::args_os())
}
