//! The command line: clap types, the checks clap runs on single values, and Go-style
//! single-dash long flags.

use std::{ffi::OsString, path::PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};

/// The longest discovery deadline a flag accepts (an hour).
pub(crate) const MAX_DISCOVERY_SECONDS: u64 = 3600;
/// The discovery byte budget's default and bounds (`-discovery-max-bytes`).
const DEFAULT_DISCOVERY_BYTES: u64 = brain_tools::DEFAULT_DISCOVERY_BYTES as u64;
const MIN_DISCOVERY_BYTES: u64 = 64 * 1024;
const MAX_DISCOVERY_BYTES: u64 = 1024 * 1024 * 1024;

const EXAMPLES: &str = "\
Examples:
  Turn two tools of a server into bindings (the spec's command line):
    mcp-tools -url https://mcp.example.com/mcp -token-env MCP_API_KEY -tenant local -tools search,fetch
  Every tool of an installed stdio server:
    mcp-tools --command 'npx -y @modelcontextprotocol/server-everything stdio' --tenant local
  A stdio server that needs a variable and a secret (the bindings name NOTION_TOKEN, never
  its value) and runs in its own folder:
    mcp-tools --command 'notion-mcp-server' --env LOG_LEVEL=warn --pass-env NOTION_TOKEN --cwd /srv/notion --tenant local
  Add the bindings to a host config in place, named docs_search and docs_fetch:
    mcp-tools -url https://mcp.example.com/mcp -tenant local -tools search,fetch --prefix docs_ --merge host.json
  Replace bindings that are already in the config:
    mcp-tools -url https://mcp.example.com/mcp -tenant local --prefix docs_ --merge host.json --replace
  Warn where a schema breaks a model provider's rules; refuse to print with --strict:
    mcp-tools -url https://mcp.example.com/mcp -tenant local --models openai,anthropic,gemini --strict
  Give up on a slow server after 10 seconds:
    mcp-tools -url https://mcp.example.com/mcp -tenant local -discovery-timeout 10
  Read at most 4 MiB of tool listings (a server that lists without end is cut off):
    mcp-tools -url https://mcp.example.com/mcp -tenant local -discovery-max-bytes 4194304
  A server that wants OAuth: the auth object goes into the bindings; the grant is acme's:
    mcp-tools -url https://mcp.example.com/mcp -tenant acme --auth '{\"type\": \"oauth\", \"scopes\": [\"files:read\"]}'
  List the server of a binding already in a host config, with its token_env or auth (the
  tenant's grant read from ./grants instead of the user's credential directory):
    mcp-tools --config host.json --tool search -tenant acme --store ./grants
  Log a tenant in to the server of a binding (authorization code flow, in a browser):
    mcp-tools login --config host.json --tool search --tenant acme
  Run one call from a host config (readable at a terminal, JSON lines in a pipe):
    mcp-tools call --config host.json --tenant local --tool search --args '{\"query\": \"rust\"}'
  Check a host config, its MCP bindings against their servers (and tenants' grants), and
  the providers' rules:
    mcp-tools check --config host.json --live --models openai,anthropic,gemini
  Shell completions, and the man pages:
    mcp-tools completions bash > ~/.local/share/bash-completion/completions/mcp-tools
    mcp-tools manpage --out-dir ~/.local/share/man/man1

Logs: -v, -vv, -vvv or RUST_LOG; rmcp's own lines are never shown above `error`.
Exit status: 0 success; 1 failure (discovery, a failed call, a config problem, --strict findings); 2 usage error.";

const CALL_EXAMPLES: &str = "\
Examples:
  At a terminal: a live progress bar, then the result as text:
    mcp-tools call --config host.json --tenant local --tool search --args '{\"query\": \"rust\"}'
  Events as JSON lines, whatever stdout is:
    mcp-tools call --config host.json --tenant local --tool search --args '{}' --format json
  Readable output in a pipe or a file:
    mcp-tools call --config host.json --tenant local --tool search --args '{}' --format human > result.txt
  Write the images of the result to a folder (named CALL-N.png, N the block's number):
    mcp-tools call --config host.json --tenant local --tool render --format human --save-dir out/
  Set the IDs of the scope (the call ID is also the MCP progress token):
    mcp-tools call --config host.json --tenant local --tool search --session s1 --call c1
  A binding with an OAuth auth object: the call carries the tenant's grant (mcp-tools login):
    mcp-tools call --config host.json --tenant acme --tool search --args '{}' --store ./grants

Exit status: 0 when the result is not an error; 1 when it is; 2 usage error.";

const CHECK_EXAMPLES: &str = "\
Examples:
  Validate a host config:
    mcp-tools check --config host.json
  Compare each MCP binding with what its server lists now, and report tenants of OAuth
  bindings that have no usable grant (with the login command to run):
    mcp-tools check --config host.json --live
  Report where names and schemas break the providers' rules for tool definitions:
    mcp-tools check --config host.json --models openai,anthropic,gemini
  The same, failing (exit 1) on any finding, e.g. in CI:
    mcp-tools check --config host.json --models openai --strict
  The report as JSON for a script (every finding, and a verdict per binding and provider):
    mcp-tools check --config host.json --models openai,anthropic,gemini --format json

Exit status: 0 valid (model findings are warnings); 1 a problem, a difference with --live,
or a model finding with --strict; 2 usage error.";

const LOGIN_EXAMPLES: &str = "\
Examples:
  Log tenant acme in to the server of the binding search (open the printed URL in a browser):
    mcp-tools login --config host.json --tool search --tenant acme
  Keep the grant in another directory (also give --store to call, check and logout):
    mcp-tools login --config host.json --tool search --tenant acme --store /var/lib/brain/grants
  A server that is not in a config yet, with an auth object:
    mcp-tools login --url https://mcp.example.com/mcp --auth '{\"type\": \"oauth\"}' --tenant acme
  Wait up to 10 minutes for the browser:
    mcp-tools login --config host.json --tool search --tenant acme --timeout 600

The authorization server sends the browser back to the binding's redirect_uri (default
http://127.0.0.1:8976/callback), where mcp-tools listens on loopback until it arrives.
Grants are kept in $XDG_STATE_HOME/brain-mcp-tools/credentials (default
~/.local/state/brain-mcp-tools/credentials), files readable by the owner only.

Exit status: 0 the grant is stored (or, for client_credentials, a token was obtained);
1 failure; 2 usage error.";

const LOGOUT_EXAMPLES: &str = "\
Examples:
  Remove tenant acme's grant for the server of the binding search:
    mcp-tools logout --config host.json --tool search --tenant acme
  From another store:
    mcp-tools logout --config host.json --tool search --tenant acme --store /var/lib/brain/grants

Exit status: 0 removed (or nothing was stored); 1 failure; 2 usage error.";

const COMPLETIONS_EXAMPLES: &str = "\
Examples:
  bash:  mcp-tools completions bash > ~/.local/share/bash-completion/completions/mcp-tools
  zsh:   mcp-tools completions zsh > ~/.zfunc/_mcp-tools   (with fpath+=~/.zfunc before compinit)
  fish:  mcp-tools completions fish > ~/.config/fish/completions/mcp-tools.fish";

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
    /// Run one call through the real call path; print its progress and result.
    Call(CallArgs),
    /// Validate a host config; compare MCP bindings with their servers; check the
    /// providers' rules.
    Check(CheckArgs),
    /// Authorize a tenant for the server of an OAuth binding and store the grant.
    Login(LoginArgs),
    /// Remove a tenant's stored grant for the server of an OAuth binding.
    Logout(LogoutArgs),
    /// Serve the host config's tools as one MCP server (the gateway), over HTTP or stdio.
    #[cfg(feature = "gateway")]
    Serve(ServeArgs),
    /// Print a shell completion script.
    Completions(CompletionsArgs),
    /// Write the man pages: mcp-tools.1 and one per subcommand.
    Manpage(ManpageArgs),
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

/// A model provider whose rules for tool definitions `--models` checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Model {
    /// OpenAI function calling (Chat Completions and Responses; strict mode).
    Openai,
    /// Anthropic tool use (Messages API; strict tool use).
    Anthropic,
    /// Google Gemini function declarations (`parameters`, the OpenAPI subset).
    Gemini,
}

/// How `call` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum Format {
    /// `human` when stdout is a terminal, `json` otherwise.
    #[default]
    Auto,
    /// A live progress bar on stderr (at a terminal), then the result as text.
    Human,
    /// Events as JSON lines (docs/events.md).
    Json,
}

/// How `check` prints the `--models` report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum ReportFormat {
    /// For a person: rules grouped per binding, then a verdict per binding and provider.
    #[default]
    Human,
    /// The whole report as JSON on stdout: every finding (rule, provider, effect, binding,
    /// path, message, source, SDK fix) and every verdict.
    Json,
}

/// The shells `completions` writes for.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum Shell {
    /// Bash.
    Bash,
    /// Zsh.
    Zsh,
    /// Fish.
    Fish,
}

/// Discovery (the default command).
#[derive(Debug, Args)]
pub(crate) struct DiscoverArgs {
    /// The server's MCP endpoint (Streamable HTTP), an absolute http:// or https:// URL.
    #[arg(
        long,
        value_name = "URL",
        value_parser = http_url,
        required_unless_present_any = ["command", "config"],
        conflicts_with_all = ["command", "config"]
    )]
    pub(crate) url: Option<String>,

    /// An installed stdio server to start instead: the program and its arguments, split as
    /// a POSIX shell splits words (quote a path or an argument with spaces in it).
    #[arg(long, value_name = "COMMAND", conflicts_with = "config")]
    pub(crate) command: Option<String>,

    /// With --command: a variable for the server, KEY=VALUE (repeat it). Copied into the
    /// bindings' command.env as written: for a secret, use --pass-env.
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = env_assignment)]
    pub(crate) env: Vec<(String, String)>,

    /// With --command: pass the host's variable NAME to the server (repeat it). The
    /// bindings get {"from_env": "NAME"}, read each time the server starts, never the value.
    #[arg(long, value_name = "NAME")]
    pub(crate) pass_env: Vec<String>,

    /// With --command: the folder to start the server in, recorded (absolute) as the
    /// bindings' command.cwd. Without it, a command that names relative paths is recorded
    /// with the current folder.
    #[arg(long, value_name = "DIR")]
    pub(crate) cwd: Option<PathBuf>,

    /// The environment variable that holds the API key (sent as a bearer token).
    #[arg(long, value_name = "NAME", value_parser = env_name, conflicts_with_all = ["auth", "config"])]
    pub(crate) token_env: Option<String>,

    /// How the server's OAuth access tokens are obtained: an auth object as in a host
    /// config (docs/auth.md), copied into the bindings. The grant is the first tenant's.
    #[arg(long, value_name = "JSON", requires = "url")]
    pub(crate) auth: Option<String>,

    /// Instead of -url: the server (and its token_env or auth) of this host config's
    /// binding --tool.
    #[arg(long, value_name = "FILE", requires = "tool")]
    pub(crate) config: Option<PathBuf>,

    /// With --config: the binding whose server to list.
    #[arg(long, value_name = "NAME", requires = "config")]
    pub(crate) tool: Option<String>,

    #[command(flatten)]
    pub(crate) store: StoreArgs,

    /// Tenants that may use the tools (repeat, or separate with commas).
    #[arg(long, value_name = "TENANT", value_delimiter = ',', required = true)]
    pub(crate) tenant: Vec<String>,

    /// The tools to bind, by name on the server (separate with commas); default every tool.
    #[arg(long, value_name = "NAMES", value_delimiter = ',', value_parser = list_item)]
    pub(crate) tools: Vec<String>,

    #[command(flatten)]
    pub(crate) limits: DiscoveryLimits,

    /// Protocol era.
    #[arg(long, value_enum, default_value_t = EraArg::Auto)]
    pub(crate) era: EraArg,

    /// Add the bindings to this host config's `tools` array in place instead of printing
    /// them (the file is created when missing).
    #[arg(long, value_name = "FILE")]
    pub(crate) merge: Option<PathBuf>,

    /// With --merge: replace bindings of the same name instead of refusing.
    #[arg(long, requires = "merge")]
    pub(crate) replace: bool,

    /// Name each binding PREFIX + the tool's name on the server (mcp_tool is unchanged).
    #[arg(long, value_name = "PREFIX", value_parser = name_prefix)]
    pub(crate) prefix: Option<String>,

    /// Report where names and schemas break these providers' rules (openai, anthropic,
    /// gemini; separate with commas).
    #[arg(long, value_name = "MODELS", value_enum, value_delimiter = ',')]
    pub(crate) models: Vec<Model>,

    /// With --models: any finding is an error (exit 1; nothing printed or merged).
    #[arg(long, requires = "models")]
    pub(crate) strict: bool,
}

/// `mcp-tools call`.
#[derive(Debug, Args)]
#[command(after_help = CALL_EXAMPLES)]
pub(crate) struct CallArgs {
    /// The host config (JSON).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: PathBuf,
    /// The session's tenant.
    #[arg(long, value_parser = non_empty)]
    pub(crate) tenant: String,
    /// The tool, by the name the model sees.
    #[arg(long)]
    pub(crate) tool: String,
    /// The arguments, a JSON object.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub(crate) args: String,
    /// The session ID for the scope.
    #[arg(long, default_value = "cli-session", value_parser = non_empty)]
    pub(crate) session: String,
    /// The call ID (also the MCP progress token); default a fresh one.
    #[arg(long, value_parser = non_empty)]
    pub(crate) call: Option<String>,
    /// Protocol era.
    #[arg(long, value_enum, default_value_t = EraArg::Auto)]
    pub(crate) era: EraArg,
    /// How to print: human at a terminal and JSON lines otherwise (auto), or either.
    #[arg(long, value_enum, default_value_t = Format::Auto)]
    pub(crate) format: Format,
    /// Write each image of the result, and any base64 in its structured content, to this
    /// folder as CALL-N.EXT (created if missing).
    #[arg(long, value_name = "DIR")]
    pub(crate) save_dir: Option<PathBuf>,
    /// End this call after this long (1 to 86400), if sooner than its binding's
    /// timeout_seconds: a call cannot be given longer than its binding allows.
    #[arg(
        long,
        value_name = "SECONDS",
        value_parser = clap::value_parser!(u64).range(1..=86_400)
    )]
    pub(crate) timeout: Option<u64>,
    #[command(flatten)]
    pub(crate) store: StoreArgs,
}

/// `mcp-tools serve`.
#[cfg(feature = "gateway")]
#[derive(Debug, Args)]
#[command(after_help = SERVE_EXAMPLES)]
pub(crate) struct ServeArgs {
    /// The host config (JSON), with its "gateway" object.
    #[arg(long, value_name = "FILE", required_unless_present = "new_key")]
    pub(crate) config: Option<PathBuf>,
    /// Where to listen (default: the gateway object's "listen", else 127.0.0.1:8080).
    #[arg(long, value_name = "ADDR", conflicts_with = "stdio")]
    pub(crate) listen: Option<std::net::SocketAddr>,
    /// Serve one tenant over stdin and stdout (for a desktop client that starts the
    /// gateway as its server) instead of HTTP.
    #[arg(long, requires = "tenant")]
    pub(crate) stdio: bool,
    /// With --stdio: the tenant served; with --new-key: the tenant the key is for.
    #[arg(long, value_parser = non_empty)]
    pub(crate) tenant: Option<String>,
    /// Print a new API key for --tenant, and the line of the key file that accepts it.
    #[arg(long, requires = "tenant", conflicts_with_all = ["config", "stdio", "listen"])]
    pub(crate) new_key: bool,
    /// Protocol era to speak to the servers upstream.
    #[arg(long, value_enum, default_value_t = EraArg::Auto)]
    pub(crate) era: EraArg,
    #[command(flatten)]
    pub(crate) store: StoreArgs,
}

#[cfg(feature = "gateway")]
const SERVE_EXAMPLES: &str = "\
Examples:
  Serve the tools of host.json to MCP clients (who calls: its \"gateway\" object):
    mcp-tools serve --config host.json --listen 127.0.0.1:8443
  Serve one tenant over stdio, for a desktop client that starts it:
    mcp-tools serve --config host.json --stdio --tenant local
  A new API key for tenant acme, and the line to add to the key file:
    mcp-tools serve --new-key --tenant acme";

/// How long and how much listing a server's tools may take (discovery, and `check --live`).
#[derive(Debug, Args)]
pub(crate) struct DiscoveryLimits {
    /// Give up when a server's discovery takes longer than this (1 to 3600).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 30,
        value_parser = clap::value_parser!(u64).range(1..=MAX_DISCOVERY_SECONDS)
    )]
    pub(crate) discovery_timeout: u64,
    /// Give up when a server's tool listing (every page together) passes this many bytes
    /// (65536 to 1073741824, that is 64 KiB to 1 GiB).
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = DEFAULT_DISCOVERY_BYTES,
        value_parser = clap::value_parser!(u64).range(MIN_DISCOVERY_BYTES..=MAX_DISCOVERY_BYTES)
    )]
    pub(crate) discovery_max_bytes: u64,
}

/// `mcp-tools check`.
#[derive(Debug, Args)]
#[command(after_help = CHECK_EXAMPLES)]
pub(crate) struct CheckArgs {
    /// The host config (JSON).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: PathBuf,
    /// Also list each MCP binding's server and compare.
    #[arg(long)]
    pub(crate) live: bool,
    #[command(flatten)]
    pub(crate) limits: DiscoveryLimits,
    /// Report where names and schemas break these providers' rules (openai, anthropic,
    /// gemini; separate with commas).
    #[arg(long, value_name = "MODELS", value_enum, value_delimiter = ',')]
    pub(crate) models: Vec<Model>,
    /// With --models: any finding is an error (exit 1).
    #[arg(long, requires = "models")]
    pub(crate) strict: bool,
    /// With --models: how to print the report (json: stdout holds only the report).
    #[arg(long, value_enum, default_value_t = ReportFormat::Human, requires = "models", conflicts_with = "live")]
    pub(crate) format: ReportFormat,
    #[command(flatten)]
    pub(crate) store: StoreArgs,
}

/// Which server a login or logout is for, and how it authorizes: a binding of a host
/// config, or a URL and an auth object.
#[derive(Debug, Args)]
pub(crate) struct GrantTarget {
    /// The host config (JSON).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "url",
        requires = "tool"
    )]
    pub(crate) config: Option<PathBuf>,
    /// The binding (its server and auth object), by the name the model sees.
    #[arg(long, value_name = "NAME", requires = "config")]
    pub(crate) tool: Option<String>,
    /// Instead of --config: the server's MCP endpoint.
    #[arg(long, value_name = "URL", value_parser = http_url, conflicts_with = "config", requires = "auth")]
    pub(crate) url: Option<String>,
    /// With --url: the auth object, as in a host config.
    #[arg(long, value_name = "JSON", requires = "url")]
    pub(crate) auth: Option<String>,
    /// The tenant whose grant it is.
    #[arg(long, value_name = "TENANT", value_parser = non_empty)]
    pub(crate) tenant: String,
    #[command(flatten)]
    pub(crate) store: StoreArgs,
}

/// `mcp-tools login`.
#[derive(Debug, Args)]
#[command(after_help = LOGIN_EXAMPLES)]
pub(crate) struct LoginArgs {
    #[command(flatten)]
    pub(crate) target: GrantTarget,
    /// Give up when the authorization is not complete after this long (1 to 3600).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 300,
        value_parser = clap::value_parser!(u64).range(1..=MAX_DISCOVERY_SECONDS)
    )]
    pub(crate) timeout: u64,
    /// Protocol era.
    #[arg(long, value_enum, default_value_t = EraArg::Auto)]
    pub(crate) era: EraArg,
}

/// `mcp-tools logout`.
#[derive(Debug, Args)]
#[command(after_help = LOGOUT_EXAMPLES)]
pub(crate) struct LogoutArgs {
    #[command(flatten)]
    pub(crate) target: GrantTarget,
}

/// `mcp-tools completions`.
#[derive(Debug, Args)]
#[command(after_help = COMPLETIONS_EXAMPLES)]
pub(crate) struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub(crate) shell: Shell,
}

/// `mcp-tools manpage`.
#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  mcp-tools manpage --out-dir ~/.local/share/man/man1 && man mcp-tools"
)]
pub(crate) struct ManpageArgs {
    /// Where to write mcp-tools.1 and one page per subcommand.
    #[arg(long, value_name = "DIR")]
    pub(crate) out_dir: PathBuf,
}

/// `--url`: an absolute http or https URL with a host. A URL without a scheme
/// (`127.0.0.1:8080/mcp`) is a usage error, not a connection failure.
fn http_url(value: &str) -> Result<String, String> {
    let lower = value.to_ascii_lowercase();
    let rest = ["http://", "https://"]
        .iter()
        .find_map(|scheme| lower.strip_prefix(scheme))
        .ok_or("give an absolute http:// or https:// URL, like https://host/mcp")?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() {
        return Err("the URL has no host; give one like https://host/mcp".into());
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("a URL cannot contain spaces or control characters".into());
    }
    // What the host could not connect to anyway is a usage error too: a bad port, an
    // unclosed IPv6 address, and credentials in the URL (the token goes in -token-env).
    let parsed = url::Url::parse(value).map_err(|error| format!("not a usable URL: {error}"))?;
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(
            "the URL holds a user name or password; remove it, and name the variable that holds the token with -token-env".into(),
        );
    }
    Ok(value.to_owned())
}

/// `--token-env`: the name of an environment variable.
fn env_name(value: &str) -> Result<String, String> {
    let mut chars = value.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        Ok(value.to_owned())
    } else if value.is_empty() {
        Err("the variable name is empty; name the variable that holds the API key".into())
    } else {
        Err("not a variable name: use letters, digits and '_', not starting with a digit".into())
    }
}

/// `--env KEY=VALUE`: a name an environment can hold (not empty, no `=` or NUL), then the
/// value (which may hold `=`).
fn env_assignment(value: &str) -> Result<(String, String), String> {
    let Some((key, value)) = value.split_once('=') else {
        return Err(
            "write KEY=VALUE (to pass a host variable by name, use --pass-env NAME)".into(),
        );
    };
    if key.is_empty() || key.contains('\0') || value.contains('\0') {
        return Err("the variable's name is empty, or a NUL character is in it".into());
    }
    Ok((key.to_owned(), value.to_owned()))
}

/// One item of a comma-separated list: spaces around it are dropped; empty is an error.
/// A tenant, session or call ID: not empty, not only spaces.
fn non_empty(value: &str) -> Result<String, String> {
    if value.trim().is_empty() {
        Err("must not be empty".into())
    } else {
        Ok(value.to_owned())
    }
}

fn list_item(value: &str) -> Result<String, String> {
    let value = value.trim();
    if value.is_empty() {
        Err("a name in the list is empty".into())
    } else {
        Ok(value.to_owned())
    }
}

/// `--prefix`: the start of a binding name (`^[A-Za-z0-9_-]{1,63}$`).
fn name_prefix(value: &str) -> Result<String, String> {
    let valid = (1..=63).contains(&value.len())
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if valid {
        Ok(value.to_owned())
    } else {
        Err("a prefix is 1 to 63 letters, digits, '_' or '-' (binding names are ^[A-Za-z0-9_-]{1,64}$)".into())
    }
}

/// Long flags that may be written with one dash, Go style (`-url`, `-token-env=X`).
const LONG_FLAGS: &[&str] = &[
    "url",
    "command",
    "env",
    "pass-env",
    "cwd",
    "token-env",
    "tenant",
    "tools",
    "discovery-timeout",
    "discovery-max-bytes",
    "era",
    "merge",
    "replace",
    "prefix",
    "models",
    "strict",
    "config",
    "tool",
    "args",
    "session",
    "call",
    "format",
    "save-dir",
    "live",
    "out-dir",
    "auth",
    "store",
    "store-keys",
    "timeout",
    "listen",
    "stdio",
    "new-key",
    "verbose",
    "help",
    "version",
];

/// Flags whose next argument is a value (never rewritten).
const TAKES_VALUE: &[&str] = &[
    "url",
    "command",
    "env",
    "pass-env",
    "cwd",
    "token-env",
    "tenant",
    "tools",
    "discovery-timeout",
    "discovery-max-bytes",
    "era",
    "merge",
    "prefix",
    "models",
    "config",
    "tool",
    "args",
    "session",
    "call",
    "format",
    "save-dir",
    "out-dir",
    "auth",
    "store",
    "store-keys",
    "timeout",
    "listen",
];

/// Where tenants' OAuth grants are kept: a folder on this machine (shared by its
/// processes), or a PostgreSQL database (shared by a fleet of hosts).
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct StoreArgs {
    /// Where tenants' OAuth grants are kept: a folder, or a postgres:// URL for a store a
    /// fleet of hosts shares (default: $MCP_TOOLS_STORE, else the user's credential
    /// folder).
    #[arg(long = "store", value_name = "DIR|URL")]
    pub(crate) location: Option<String>,

    /// The file holding the key ring that seals a postgres:// store's secrets and `serve`'s
    /// session ids (default: the key ring in $MCP_TOOLS_STORE_KEYS).
    #[arg(long = "store-keys", value_name = "FILE")]
    pub(crate) keys: Option<PathBuf>,
}

/// Rewrites `-url X` and `-url=X` to `--url X` / `--url=X` for the known long flags.
/// Arguments that are not UTF-8 pass through untouched (clap reports them).
pub(crate) fn normalize(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut out = Vec::new();
    let mut value_next = false;
    for arg in args {
        if value_next {
            value_next = false;
            out.push(arg);
            continue;
        }
        let Some(text) = arg.to_str() else {
            out.push(arg);
            continue;
        };
        let rewritten = match text.strip_prefix('-') {
            Some(rest) if !rest.starts_with('-') => {
                let name = rest.split_once('=').map_or(rest, |(name, _)| name);
                LONG_FLAGS.contains(&name).then(|| format!("-{text}"))
            }
            _ => None,
        };
        let text = rewritten.unwrap_or_else(|| text.to_owned());
        if let Some(long) = text.strip_prefix("--") {
            value_next = !long.contains('=') && TAKES_VALUE.contains(&long);
        }
        out.push(text.into());
    }
    verbosity_after_subcommand(&mut out);
    out
}

/// `mcp-tools -vv call ...`: verbosity given before a subcommand moves after its name.
/// clap refuses any argument before a subcommand here, global ones included (discovery's
/// flags must not mix with a subcommand), so without this only `mcp-tools call -vv` works.
fn verbosity_after_subcommand(args: &mut Vec<OsString>) {
    let is_verbosity = |arg: &OsString| {
        arg.to_str().is_some_and(|arg| {
            arg == "--verbose"
                || arg
                    .strip_prefix('-')
                    .is_some_and(|vs| !vs.is_empty() && vs.chars().all(|c| c == 'v'))
        })
    };
    let leading = args
        .iter()
        .skip(1)
        .take_while(|arg| is_verbosity(arg))
        .count();
    let Some(name) = args.get(1 + leading).and_then(|arg| arg.to_str()) else {
        return;
    };
    if leading == 0
        || !<Cli as clap::CommandFactory>::command()
            .get_subcommands()
            .any(|command| command.get_name() == name)
    {
        return;
    }
    let flags: Vec<OsString> = args.drain(1..=leading).collect();
    args.splice(2..2, flags);
}

/// A clap error as one line: the message, its context, and any tip, without the usage
/// block (`--help` shows that).
pub(crate) fn one_line(error: &clap::Error) -> String {
    let mut text = error.render().to_string();
    // A URL that was refused may hold a password or a query with a key: it is shown
    // without them.
    if let (
        Some(clap::error::ContextValue::String(arg)),
        Some(clap::error::ContextValue::String(value)),
    ) = (
        error.get(clap::error::ContextKind::InvalidArg),
        error.get(clap::error::ContextKind::InvalidValue),
    ) && arg.ends_with("<URL>")
        && !value.is_empty()
    {
        text = text.replace(
            value.as_str(),
            &brain_tools_config::text::redacted_url(value),
        );
    }
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    text.split("\n\n")
        .filter(|part| {
            let part = part.trim_start();
            !part.starts_with("Usage:") && !part.starts_with("For more information")
        })
        .map(|part| {
            part.lines()
                .map(str::trim)
                .filter(|line| !line.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    fn strings(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    fn parse(args: &[&str]) -> Result<Cli, String> {
        Cli::try_parse_from(normalize(strings(args))).map_err(|error| one_line(&error))
    }

    #[test]
    fn the_cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn single_dash_long_flags_work_as_in_the_spec() {
        let cli = parse(&[
            "mcp-tools",
            "-url",
            "https://x/mcp",
            "-token-env",
            "MCP_API_KEY",
            "-tenant",
            "local",
            "-tools",
            "search,fetch",
        ])
        .unwrap();
        assert_eq!(cli.discover.url.as_deref(), Some("https://x/mcp"));
        assert_eq!(cli.discover.token_env.as_deref(), Some("MCP_API_KEY"));
        assert_eq!(cli.discover.tenant, ["local"]);
        assert_eq!(cli.discover.tools, ["search", "fetch"]);
    }

    /// Every long flag of every command may be written with one dash, and the rewrite
    /// knows which take a value: a flag added later cannot be forgotten.
    #[test]
    fn the_single_dash_lists_are_clap_s_own_flags() {
        fn walk(command: &clap::Command, flags: &mut Vec<(String, bool)>) {
            for arg in command.get_arguments() {
                if let Some(long) = arg.get_long() {
                    let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values())
                        && !matches!(
                            arg.get_action(),
                            clap::ArgAction::SetTrue
                                | clap::ArgAction::Count
                                | clap::ArgAction::Help
                                | clap::ArgAction::Version
                        );
                    flags.push((long.to_owned(), takes_value));
                }
            }
            for sub in command.get_subcommands() {
                walk(sub, flags);
            }
        }
        let mut command = Cli::command();
        command.build();
        let mut flags = Vec::new();
        walk(&command, &mut flags);
        assert!(flags.len() > 20, "{flags:?}");
        for (flag, takes_value) in flags {
            assert!(
                LONG_FLAGS.contains(&flag.as_str()),
                "--{flag} cannot be written -{flag}"
            );
            assert_eq!(
                TAKES_VALUE.contains(&flag.as_str()),
                takes_value,
                "--{flag}: whether it takes a value"
            );
        }
        // The flags of this round, Go style, as a user types them.
        let cli = parse(&[
            "mcp-tools",
            "-url",
            "https://x/mcp",
            "-tenant",
            "local",
            "-merge",
            "host.json",
            "-replace",
            "-prefix",
            "docs_",
            "-models",
            "openai,gemini",
            "-strict",
        ]);
        assert!(cli.is_ok(), "{cli:?}");
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
        // Verbosity before a subcommand goes after its name; elsewhere it stays.
        let cases: [(&[&str], &[&str]); 4] = [
            (
                &["mcp-tools", "-vv", "call", "--tool", "x"],
                &["mcp-tools", "call", "-vv", "--tool", "x"],
            ),
            (
                &[
                    "mcp-tools",
                    "-v",
                    "--verbose",
                    "check",
                    "--config",
                    "h.json",
                ],
                &[
                    "mcp-tools",
                    "check",
                    "-v",
                    "--verbose",
                    "--config",
                    "h.json",
                ],
            ),
            (
                &["mcp-tools", "-vv", "-url", "https://x/mcp"],
                &["mcp-tools", "-vv", "--url", "https://x/mcp"],
            ),
            (
                &["mcp-tools", "-v", "search"],
                &["mcp-tools", "-v", "search"],
            ),
        ];
        for (given, expected) in cases {
            assert_eq!(normalize(strings(given)), strings(expected), "{given:?}");
        }
        let cli = Cli::try_parse_from(normalize(strings(&[
            "mcp-tools",
            "-vvv",
            "check",
            "--config",
            "h.json",
        ])))
        .unwrap();
        assert_eq!(cli.verbose, 3);
    }

    #[test]
    fn tool_lists_are_trimmed() {
        let cli = parse(&[
            "mcp-tools",
            "-url",
            "http://h/mcp",
            "-tenant",
            "t",
            "-tools",
            "echo, search ,x",
        ])
        .unwrap();
        assert_eq!(cli.discover.tools, ["echo", "search", "x"]);
    }

    /// Each bad value is a usage error of one line that says what is wrong.
    #[test]
    fn bad_values_are_one_line_usage_errors() {
        let base = ["mcp-tools", "-tenant", "t"];
        for (extra, expected) in [
            (
                &[
                    "-url",
                    "http://h/mcp",
                    "-discovery-timeout",
                    "18446744073709551615",
                ][..],
                "18446744073709551615 is not in 1..=3600",
            ),
            (
                &["-url", "http://h/mcp", "-discovery-timeout", "0"][..],
                "0 is not in 1..=3600",
            ),
            (
                &["-url", "http://h/mcp", "-tools", ""][..],
                "a name in the list is empty",
            ),
            (
                &["-url", "http://h/mcp", "-tools", "a,,b"][..],
                "a name in the list is empty",
            ),
            (
                &["-url", "127.0.0.1:8080/mcp"][..],
                "give an absolute http:// or https:// URL",
            ),
            (
                &["-url", "ftp://h/mcp"][..],
                "give an absolute http:// or https:// URL",
            ),
            (&["-url", "http:///mcp"][..], "the URL has no host"),
            (
                &["-url", "http://h/mcp", "-token-env", ""][..],
                "the variable name is empty",
            ),
            (
                &["-url", "http://h/mcp", "-token-env", "1X"][..],
                "not a variable name",
            ),
            (
                &["-url", "http://h/mcp", "--prefix", "docs."][..],
                "a prefix is 1 to 63",
            ),
            (
                &["-url", "http://h/mcp", "--models", "openai,llama"][..],
                "invalid value 'llama'",
            ),
            (&["-url", "http://h/mcp", "--replace"][..], "--merge <FILE>"),
            (
                &["-url", "http://h/mcp", "--strict"][..],
                "--models <MODELS>",
            ),
        ] {
            let mut args = base.to_vec();
            args.extend_from_slice(extra);
            let error = parse(&args).expect_err(&format!("{extra:?} is refused"));
            assert!(!error.contains('\n'), "{error}");
            assert!(error.contains(expected), "{extra:?}: {error}");
        }
    }

    #[test]
    fn non_utf8_arguments_do_not_panic() {
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStringExt;
            let args = vec![
                OsString::from("mcp-tools"),
                OsString::from("-url"),
                OsString::from_vec(vec![0x68, 0xff]),
            ];
            assert!(Cli::try_parse_from(normalize(args)).is_err());
        }
    }
}
