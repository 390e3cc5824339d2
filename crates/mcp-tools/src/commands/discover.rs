//! Discovery: list a server's tools and print them as bindings, or merge them into a
//! host config.

use brain_tools::{ClientOptions, DiscoveredTool, Discovery, Era, ErrorKind};
use brain_tools_config::{HostConfig, McpEra, McpServer, McpTarget, Target, ToolBinding};

use crate::{
    cli::DiscoverArgs,
    runtime::{
        auth,
        client::{self, discovery_failure, endpoint, era, token},
        config::{self, Warn},
        exit::{Exit, Outcome},
        merge, models,
        output::{
            escape::{escape, redacted_url},
            fit, json, out, outln,
            progress::Spinner,
        },
        shell, stdio, store,
    },
};

/// What `-tools` and `--merge` know of a listed tool.
#[derive(Debug, Clone, Copy)]
struct Listed<'a> {
    name: &'a str,
    task_support: Option<&'a str>,
}

impl<'a> From<&'a DiscoveredTool> for Listed<'a> {
    fn from(tool: &'a DiscoveredTool) -> Self {
        Self {
            name: &tool.name,
            task_support: tool.task_support.as_deref(),
        }
    }
}

/// The tools chosen, by index into the listing, and those left out because this client
/// cannot call them.
#[derive(Debug, PartialEq)]
struct Chosen {
    indices: Vec<usize>,
    needs_tasks: Vec<String>,
}

/// The server to list: `-url` (with `-token-env` or `--auth`), `--command`, or the
/// server of a config's binding (`--config F --tool B`), and how to name it in a login
/// command.
fn server(args: &DiscoverArgs) -> Result<(McpServer, Option<String>), Exit> {
    if args.command.is_none()
        && (!args.env.is_empty() || !args.pass_env.is_empty() || args.cwd.is_some())
    {
        return Err(Exit::Usage(
            "--env, --pass-env and --cwd are for a stdio server (--command)".into(),
        ));
    }
    match (&args.url, &args.command, &args.config, &args.tool) {
        (Some(url), None, None, _) => {
            let mut server = McpServer::http(url.clone(), args.token_env.clone());
            let mut flags = None;
            if let Some(text) = &args.auth {
                let parsed = auth::parse_auth(text)?;
                if let McpServer::Http { auth: slot, .. } = &mut server {
                    *slot = Some(parsed);
                }
                // A query may hold a credential: it is not repeated (see the hint).
                flags = Some(format!(
                    "--url {} --auth {}",
                    shell::word(&redacted_url(url)),
                    shell::word(text)
                ));
            }
            Ok((server, flags))
        }
        (None, Some(command), None, _) => {
            if args.auth.is_some() {
                return Err(Exit::Usage(
                    "--auth is for HTTP servers (-url); pass a stdio server's secrets in its environment".into(),
                ));
            }
            let (command, notes) =
                stdio::server(command, &args.env, &args.pass_env, args.cwd.as_deref())?;
            for note in notes {
                eprintln!("mcp-tools: note: {note}");
            }
            Ok((McpServer::Stdio(command), None))
        }
        (None, None, Some(config), Some(tool)) => {
            let loaded = config::load(config, Warn::Binding(tool))?;
            let binding = config::find_binding(&loaded.config.tools, tool, config)?;
            let Some(mcp) = binding.mcp() else {
                return Err(Exit::Failed(format!(
                    "{tool} is not bound to an MCP server; its server cannot be listed"
                )));
            };
            Ok((mcp.server.clone(), Some(shell::binding_flags(config, tool))))
        }
        _ => Err(Exit::Usage(
            "give -url, --command, or --config FILE --tool NAME".into(),
        )),
    }
}

pub(crate) async fn run(args: DiscoverArgs) -> Outcome {
    let tenants = tenants(&args.tenant)?;
    unique(&args.tools)?;
    let (server, login_flags) = server(&args)?;
    let token_env = match &server {
        McpServer::Http { token_env, .. } => token_env.as_deref(),
        _ => None,
    };
    let bearer = token(token_env, "-token-env")?;
    let endpoint = endpoint(&server, bearer);
    let described = endpoint.describe();
    let mut request = args.limits.request(endpoint);
    let mut options = ClientOptions::default().era(era(args.era));
    // A server that wants OAuth: the listing carries the first tenant's grant. A tenant
    // without one authorizes here at a terminal; elsewhere, the error names the login.
    let oauth = match &server {
        McpServer::Http {
            auth: Some(server_auth),
            ..
        } => {
            options = options.credential_store(store::for_calls(&args.store));
            let delegated = matches!(server_auth, brain_tools_config::McpAuth::OAuth(_));
            if delegated && auth::interactive() {
                options = options.authorizer(std::sync::Arc::new(auth::LoopbackAuthorizer));
            }
            request = request.authorization(auth::authorization(&tenants[0], server_auth)?);
            Some(delegated && auth::interactive())
        }
        _ => None,
    };

    let login: client::LoginHint = match login_flags.clone() {
        Some(flags) => {
            let store = args.store.clone();
            Box::new(move |key| shell::login(&flags, &key.tenant, &store))
        }
        None => client::any_login(),
    };
    let client = client::build(options, login)?;
    // The login prompt, if any, needs stderr to itself.
    let spinner =
        (oauth != Some(true)).then(|| Spinner::start(format!("listing the tools of {described}")));
    let found = client.discover(request).await;
    drop(spinner);
    let found = match found {
        Ok(found) => found,
        Err(error) => {
            // Say so at the deadline; closing gets a short grace after that.
            let failure = discovery_failure(&error, args.limits.discovery_timeout);
            eprintln!("mcp-tools: {}", escape(&failure, false));
            if let McpServer::Stdio(command) = &server {
                let how = match args.command {
                    Some(_) => stdio::Passing::Flag,
                    None => stdio::Passing::Binding,
                };
                for name in
                    stdio::not_passed(&failure, command, |name| std::env::var_os(name).is_some())
                {
                    eprintln!("mcp-tools: {}", stdio::not_passed_hint(&name, how));
                }
            }
            if error.kind() == ErrorKind::AuthorizationRequired
                && let Some(flags) = &login_flags
            {
                let query = if flags.contains("?<redacted>") {
                    " (with the query of your -url in place of <redacted>)"
                } else {
                    ""
                };
                eprintln!(
                    "mcp-tools: authorize tenant {} first: mcp-tools login {flags} --tenant {}{}{query}",
                    escape(&tenants[0], false),
                    shell::word(&tenants[0]),
                    shell::store_flags(&args.store)
                );
            }
            return Err(Exit::Reported);
        }
    };
    output(&args, &found, &server, &tenants, &described)
}

/// What discovery says on stderr about tools that may run as tasks: a 2026-07-28 server
/// that declares the tasks extension may run any call as one; a 2025-11-25 tool says so
/// with `execution.taskSupport`.
fn task_notes(found: &Discovery, described: &str) {
    if found.tasks {
        eprintln!(
            "mcp-tools: note: {} may run any call as a task (the 2026-07-28 tasks extension): a call waits for its task within the binding's timeout_seconds, unless the binding sets \"tasks\": false",
            escape(described, false)
        );
    }
    if found.era == Era::Legacy {
        for tool in &found.tools {
            if tool.task_support.as_deref() == Some("optional") {
                eprintln!(
                    "mcp-tools: note: \"{}\" may run as a task (execution.taskSupport \"optional\"); this host calls it without one in the 2025-11-25 era",
                    escape(&tool.name, false)
                );
            }
        }
    }
}

/// Everything after the listing: choose, bind, check, print or merge.
fn output(
    args: &DiscoverArgs,
    found: &Discovery,
    server: &McpServer,
    tenants: &[String],
    described: &str,
) -> Outcome {
    let tools = &found.tools;
    task_notes(found, described);
    let listed: Vec<Listed<'_>> = tools.iter().map(Listed::from).collect();
    let chosen = choose(&listed, &args.tools, described, found.era == Era::Legacy)?;
    for name in &chosen.needs_tasks {
        eprintln!(
            "mcp-tools: note: left out \"{}\": {}",
            escape(name, false),
            REQUIRES_TASKS
        );
    }
    let chosen: Vec<&DiscoveredTool> = chosen.indices.iter().map(|&i| &tools[i]).collect();
    let bindings = bind(&chosen, server, tenants, args.prefix.as_deref(), found.era);

    if let Some(path) = &args.merge {
        let original = config::read_bounded(path)?;
        let shown = path.display().to_string();
        let plan = merge::plan(original.as_deref(), &shown, &bindings, args.replace)?;
        let changed: Vec<&str> = plan.changes.iter().map(|c| c.name.as_str()).collect();
        for warning in &plan.loaded.warnings {
            if warning
                .tool
                .as_deref()
                .is_some_and(|tool| changed.contains(&tool))
            {
                eprintln!("warning: {warning}");
            }
        }
        let tools = &plan.loaded.config.tools;
        models(args, tools, |index| {
            changed.contains(&tools[index].name.as_str())
        })?;
        if plan.writes() {
            merge::write_atomically(path, &plan.bytes).map_err(|error| {
                Exit::Failed(format!("cannot write {shown}: {error}; it is unchanged"))
            })?;
        }
        out!("{}", merge::summary(&plan, &shown));
        return Ok(());
    }

    review(&bindings);
    models(args, &bindings, |_| true)?;
    let json = json::to_string_pretty(&bindings)
        .map_err(|error| Exit::Failed(format!("cannot print the bindings: {error}")))?;
    outln!("{json}");
    Ok(())
}

/// `--models` on discovery: the report on stderr; with `--strict`, any finding stops
/// the run before anything is printed or written.
fn models(
    args: &DiscoverArgs,
    bindings: &[ToolBinding],
    reported: impl Fn(usize) -> bool,
) -> Outcome {
    if args.models.is_empty() {
        return Ok(());
    }
    let report = models::check(bindings, &args.models, reported);
    eprint!("{}", report.render(fit::columns(std::io::stderr())));
    if args.strict && !report.is_empty() {
        return Err(Exit::Failed(format!(
            "{} (--strict): nothing {}",
            report.count(),
            if args.merge.is_some() {
                "was merged"
            } else {
                "is printed"
            }
        )));
    }
    Ok(())
}

/// Bindings for the chosen tools: named PREFIX + the server's name (cleaned when it is
/// not a valid binding name), `mcp_tool` the server's name, `era` the era the server was
/// listed in (so that calls need not probe it).
fn bind(
    tools: &[&DiscoveredTool],
    server: &McpServer,
    tenants: &[String],
    prefix: Option<&str>,
    era: Era,
) -> Vec<ToolBinding> {
    let prefix = prefix.unwrap_or_default();
    let named: Vec<DiscoveredTool> = tools
        .iter()
        .map(|tool| {
            let mut tool = (*tool).clone();
            tool.name = format!("{prefix}{}", tool.name);
            tool
        })
        .collect();
    let named: Vec<&DiscoveredTool> = named.iter().collect();
    let mut bindings = brain_tools::bind_discovered(&named, server, tenants).bindings;
    for (binding, tool) in bindings.iter_mut().zip(tools) {
        let mut target = McpTarget::new(server.clone(), tool.name.clone());
        target.era = Some(match era {
            Era::Legacy => McpEra::Legacy,
            _ => McpEra::Modern,
        });
        binding.target = Target::Mcp(target);
        let wanted = format!("{prefix}{}", tool.name);
        if binding.name != wanted {
            eprintln!(
                "mcp-tools: note: tool \"{}\" is bound as {:?} (binding names are ^[A-Za-z0-9_-]{{1,64}}$ and unique)",
                escape(&tool.name, false),
                binding.name
            );
        }
    }
    bindings
}

fn tenants(given: &[String]) -> Result<Vec<String>, Exit> {
    let mut tenants = Vec::new();
    for tenant in given {
        let tenant = tenant.trim();
        if tenant.is_empty() {
            return Err(Exit::Usage("a tenant name is empty".into()));
        }
        if !tenants.iter().any(|t| t == tenant) {
            tenants.push(tenant.to_owned());
        }
    }
    Ok(tenants)
}

/// `-tools a,a` names a tool twice: a usage error, not two bindings.
fn unique(names: &[String]) -> Result<(), Exit> {
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            return Err(Exit::Usage(format!(
                "-tools names {name:?} twice; name each tool once"
            )));
        }
    }
    Ok(())
}

/// Why a 2025-11-25 tool whose `execution.taskSupport` is `required` is left out.
const REQUIRES_TASKS: &str = "this tool requires tasks (execution.taskSupport \"required\"), which this host supports in the 2026-07-28 era";

/// The named tools (in the order named), or every tool this client can call (`legacy`:
/// the server was listed in the 2025-11-25 era, where a tool that requires tasks cannot
/// be called).
fn choose(
    tools: &[Listed<'_>],
    names: &[String],
    described: &str,
    legacy: bool,
) -> Result<Chosen, Exit> {
    let needs_tasks = |tool: &Listed<'_>| legacy && tool.task_support == Some("required");
    if names.is_empty() {
        let (needing, callable): (Vec<usize>, Vec<usize>) =
            (0..tools.len()).partition(|&i| needs_tasks(&tools[i]));
        return Ok(Chosen {
            indices: callable,
            needs_tasks: needing
                .into_iter()
                .map(|i| tools[i].name.to_owned())
                .collect(),
        });
    }
    let missing: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|name| !tools.iter().any(|tool| tool.name == *name))
        .collect();
    if !missing.is_empty() {
        let mut available: Vec<&str> = tools.iter().map(|tool| tool.name).collect();
        let more = available.len().saturating_sub(30);
        available.truncate(30);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        let what = if missing.len() == 1 {
            "no tool named"
        } else {
            "no tools named"
        };
        // Names from the server (and from the command line): escaped as a person reads them.
        let names = |names: &[&str]| {
            names
                .iter()
                .map(|name| escape(name, false))
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(Exit::Failed(format!(
            "{described} has {what} {}; it has: {}{more}",
            names(&missing),
            if available.is_empty() {
                "no tools".to_owned()
            } else {
                names(&available)
            }
        )));
    }
    let mut indices = Vec::new();
    for name in names {
        let Some(index) = tools.iter().position(|tool| tool.name == *name) else {
            continue;
        };
        if needs_tasks(&tools[index]) {
            return Err(Exit::Failed(format!(
                "{}: {REQUIRES_TASKS}; leave it out of -tools",
                escape(name, false)
            )));
        }
        indices.push(index);
    }
    Ok(Chosen {
        indices,
        needs_tasks: Vec::new(),
    })
}

/// Loads the bindings as the host would and says (on stderr) what needs editing first.
fn review(bindings: &[ToolBinding]) {
    let document = serde_json::json!({ "tools": bindings });
    if let Err(errors) = HostConfig::from_json_value_with_env(&document, |_| true) {
        eprintln!("mcp-tools: note: review these bindings before use:");
        for error in errors.errors() {
            eprintln!("  {error}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(name: &'static str, task_support: Option<&'static str>) -> Listed<'static> {
        Listed { name, task_support }
    }

    fn names(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    fn failed(outcome: Result<Chosen, Exit>) -> String {
        match outcome {
            Err(Exit::Failed(message)) => message,
            other => panic!("not a failure: {other:?}"),
        }
    }

    #[test]
    fn every_tool_but_those_that_require_tasks_in_the_2025_era() {
        let tools = [
            listed("echo", None),
            listed("batch", Some("required")),
            listed("search", Some("optional")),
        ];
        assert_eq!(
            choose(&tools, &[], "srv", true).unwrap(),
            Chosen {
                indices: vec![0, 2],
                needs_tasks: vec!["batch".into()],
            }
        );
        // Listed in the 2026-07-28 era, where this host runs tasks: every tool.
        assert_eq!(
            choose(&tools, &[], "srv", false).unwrap(),
            Chosen {
                indices: vec![0, 1, 2],
                needs_tasks: Vec::new(),
            }
        );
    }

    #[test]
    fn a_missing_tool_is_named_with_the_servers_tools_escaped() {
        use crate::runtime::output::escape::hostile::{TEXT, assert_escaped};
        let tools = [listed(TEXT, None), listed("echo", None)];
        let message = failed(choose(
            &tools,
            &names(&[TEXT.trim_end_matches('y')]),
            "srv",
            true,
        ));
        assert!(message.starts_with("srv has no tool named x"), "{message}");
        assert_escaped(&message);
    }

    #[test]
    fn named_tools_in_the_order_named() {
        let tools = [listed("echo", None), listed("search", Some("forbidden"))];
        assert_eq!(
            choose(&tools, &names(&["search", "echo"]), "srv", true)
                .unwrap()
                .indices,
            [1, 0]
        );
    }

    #[test]
    fn a_named_tool_that_requires_tasks_is_an_error() {
        let tools = [listed("echo", None), listed("batch", Some("required"))];
        let message = failed(choose(&tools, &names(&["echo", "batch"]), "srv", true));
        assert_eq!(
            message,
            "batch: this tool requires tasks (execution.taskSupport \"required\"), which this host \
             supports in the 2026-07-28 era; leave it out of -tools"
        );
    }

    #[test]
    fn a_missing_tool_names_what_exists() {
        let tools = [listed("echo", None), listed("search", None)];
        assert_eq!(
            failed(choose(
                &tools,
                &names(&["fetch", "echo"]),
                "http://h/mcp",
                true
            )),
            "http://h/mcp has no tool named fetch; it has: echo, search"
        );
    }

    #[test]
    fn a_tool_named_twice_is_a_usage_error() {
        assert!(unique(&names(&["echo", "search"])).is_ok());
        assert!(matches!(
            unique(&names(&["echo", "search", "echo"])),
            Err(Exit::Usage(message)) if message == "-tools names \"echo\" twice; name each tool once"
        ));
    }
}
