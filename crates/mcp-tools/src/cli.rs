//! The command line: clap types, and Go-style single-dash long flags.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

const EXAMPLES: &str = "\
Examples:
  Turn two tools of a server into bindings (the spec's command line):
    mcp-tools -url https://mcp.example.com/mcp -token-env MCP_API_KEY -tenant local -tools search,fetch
  Every tool of an installed stdio server:
    mcp-tools --command 'npx -y @modelcontextprotocol/server-everything stdio' --tenant local
  Run one call from a host config, events as JSON lines:
    mcp-tools call --config host.json --tenant local --tool search --args '{\"query\": \"rust\"}'
  Check a host config, and compare its MCP bindings with their servers:
    mcp-tools check --config host.json --live

Exit status: 0 success; 1 failure (discovery, a failed call, a config problem); 2 usage error.";

/// Turn tools on an MCP server into Brain tool bindings; run and check them.
///
/// Without a subcommand, connects to the server, lists its tools and prints a JSON array
/// with one binding for each named tool (every tool without -tools). Single-dash long
/// flags work as in the spec (-url, -token-env, -tenant, -tools).
#[derive(Debug, Parser)]
#[command(
    name = "mcp-tools",
    version,
    after_help = EXAMPLES,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub(crate) struct Cli {
    /// More logs on stderr (-v info, -vv debug, -vvv trace).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub(crate) verbose: u8,

    #[command(subcommand)]
    pub(crate) command: Option<Command>,

    #[command(flatten)]
    pub(crate) discover: DiscoverArgs,
}

/// The subcommands beyond discovery.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run one call through the real call path; print its events as JSON lines.
    Call(CallArgs),
    /// Validate a host config; with --live, compare MCP bindings with their servers.
    Check(CheckArgs),
}

/// Which protocol era to speak.
#[derive(Debug, Clone, Copy, ValueEnum, Default)]
pub(crate) enum EraArg {
    /// 2026-07-28 when the server supports it, else a session per call.
    #[default]
    Auto,
    /// Always the initialize lifecycle (a session per call).
    Legacy,
    /// Always 2026-07-28.
    Modern,
}

/// Discovery (the default command).
#[derive(Debug, Args)]
pub(crate) struct DiscoverArgs {
    /// The server's MCP endpoint (Streamable HTTP).
    #[arg(
        long,
        value_name = "URL",
        required_unless_present = "command",
        conflicts_with = "command"
    )]
    pub(crate) url: Option<String>,

    /// An installed stdio server to start instead: the program and its arguments.
    #[arg(long, value_name = "COMMAND")]
    pub(crate) command: Option<String>,

    /// The environment variable that holds the API key (sent as a bearer token).
    #[arg(long, value_name = "NAME")]
    pub(crate) token_env: Option<String>,

    /// Tenants that may use the tools (repeat, or separate with commas).
    #[arg(long, value_name = "TENANT", value_delimiter = ',', required = true)]
    pub(crate) tenant: Vec<String>,

    /// The tools to bind, by name on the server (separate with commas); default every tool.
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub(crate) tools: Vec<String>,

    /// Give up when discovery takes longer than this.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub(crate) discovery_timeout: u64,

    /// Protocol era.
    #[arg(long, value_enum, default_value_t = EraArg::Auto)]
    pub(crate) era: EraArg,
}

/// `mcp-tools call`.
#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// The host config (JSON).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: PathBuf,
    /// The session's tenant.
    #[arg(long)]
    pub(crate) tenant: String,
    /// The tool, by the name the model sees.
    #[arg(long)]
    pub(crate) tool: String,
    /// The arguments, a JSON object.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub(crate) args: String,
    /// The session ID for the scope.
    #[arg(long, default_value = "cli-session")]
    pub(crate) session: String,
    /// The call ID (also the MCP progress token); default a fresh one.
    #[arg(long)]
    pub(crate) call: Option<String>,
    /// Protocol era.
    #[arg(long, value_enum, default_value_t = EraArg::Auto)]
    pub(crate) era: EraArg,
}

/// `mcp-tools check`.
#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The host config (JSON).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: PathBuf,
    /// Also list each MCP binding's server and compare.
    #[arg(long)]
    pub(crate) live: bool,
    /// Per-server discovery deadline for --live.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub(crate) discovery_timeout: u64,
}

/// Long flags that may be written with one dash, Go style (`-url`, `-token-env=X`).
const LONG_FLAGS: &[&str] = &[
    "url",
    "command",
    "token-env",
    "tenant",
    "tools",
    "discovery-timeout",
    "era",
    "config",
    "tool",
    "args",
    "session",
    "call",
    "live",
    "verbose",
    "help",
    "version",
];

/// Flags whose next argument is a value (never rewritten).
const TAKES_VALUE: &[&str] = &[
    "url",
    "command",
    "token-env",
    "tenant",
    "tools",
    "discovery-timeout",
    "era",
    "config",
    "tool",
    "args",
    "session",
    "call",
];

/// Rewrites `-url X` and `-url=X` to `--url X` / `--url=X` for the known long flags.
pub(crate) fn normalize(args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut value_next = false;
    for arg in args {
        if value_next {
            value_next = false;
            out.push(arg);
            continue;
        }
        let rewritten = match arg.strip_prefix('-') {
            Some(rest) if !rest.starts_with('-') => {
                let name = rest.split_once('=').map_or(rest, |(name, _)| name);
                LONG_FLAGS.contains(&name).then(|| format!("-{arg}"))
            }
            _ => None,
        };
        let arg = rewritten.unwrap_or(arg);
        if let Some(long) = arg.strip_prefix("--") {
            value_next = !long.contains('=') && TAKES_VALUE.contains(&long);
        }
        out.push(arg);
    }
    out
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn single_dash_long_flags_work_as_in_the_spec() {
        let args = normalize(strings(&[
            "mcp-tools",
            "-url",
            "https://x/mcp",
            "-token-env",
            "MCP_API_KEY",
            "-tenant",
            "local",
            "-tools",
            "search,fetch",
        ]));
        let cli = Cli::try_parse_from(args).unwrap();
        assert_eq!(cli.discover.url.as_deref(), Some("https://x/mcp"));
        assert_eq!(cli.discover.token_env.as_deref(), Some("MCP_API_KEY"));
        assert_eq!(cli.discover.tenant, ["local"]);
        assert_eq!(cli.discover.tools, ["search", "fetch"]);
    }

    #[test]
    fn values_are_never_rewritten_and_tenants_repeat() {
        let args = normalize(strings(&[
            "mcp-tools",
            "--url=https://x/mcp",
            "-tenant=a,b",
            "-tenant",
            "c",
            "-v",
        ]));
        assert_eq!(args[2], "--tenant=a,b");
        let cli = Cli::try_parse_from(args).unwrap();
        assert_eq!(cli.discover.tenant, ["a", "b", "c"]);
        assert_eq!(cli.verbose, 1);
        let args = normalize(strings(&[
            "mcp-tools",
            "call",
            "--args",
            "-tool",
            "--tool",
            "x",
        ]));
        assert_eq!(args[3], "-tool", "a value that looks like a flag stays");
    }
}
