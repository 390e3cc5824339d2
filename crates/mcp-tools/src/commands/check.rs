//! `mcp-tools check`: validate a host config; with `--live`, compare each MCP binding
//! with what its server lists now.

use brain_tools::{ClientOptions, Era, GrantStatus, McpClient};
use brain_tools_config::{Loaded, McpAuth, McpServer, Target, ToolBinding};
use serde_json::Value;

use crate::{
    cli::{CheckArgs, ReportFormat},
    runtime::{
        auth,
        client::{self, discovery_failure, endpoint, token},
        config::{self, Warn},
        diff::diff,
        exit::{Exit, Outcome},
        models,
        output::{
            escape::{escape, redacted_url},
            fit, out, outln,
            progress::Spinner,
        },
        shell, stdio, store,
    },
};

pub(crate) async fn run(args: CheckArgs) -> Outcome {
    let loaded = config::load(&args.config, Warn::All)?;
    relative_paths(&loaded);
    let tools = loaded.config.tools.len();
    let live = if args.live {
        live(&args, &loaded).await
    } else {
        let line = format!(
            "{}: {tools} tool binding{} OK",
            args.config.display(),
            if tools == 1 { "" } else { "s" }
        );
        // With --format json, stdout holds the report alone.
        if args.format == ReportFormat::Json {
            eprintln!("{line}");
        } else {
            outln!("{line}");
        }
        Ok(())
    };
    let models = check_models(&args, &loaded);
    live.and(models)
}

/// Warns (stderr) of each stdio binding whose command names relative paths without a
/// `cwd`: it works only when the host runs in the right folder.
fn relative_paths(loaded: &Loaded) {
    let Ok(here) = std::env::current_dir() else {
        return;
    };
    for (index, binding) in loaded.config.tools.iter().enumerate() {
        if let Some(McpServer::Stdio(command)) = binding.mcp().map(|mcp| &mcp.server)
            && let Some(warning) = stdio::relative_without_cwd(command, &here, |path| path.exists())
        {
            eprintln!(
                "warning: tools[{index}] ({}).command: {}",
                binding.name,
                escape(&warning, false)
            );
        }
    }
}

/// `--models`: the report on stdout; with `--strict`, any finding fails the check.
fn check_models(args: &CheckArgs, loaded: &Loaded) -> Outcome {
    if args.models.is_empty() {
        return Ok(());
    }
    let report = models::check(&loaded.config.tools, &args.models, |_| true);
    match args.format {
        ReportFormat::Human => out!("{}", report.render(fit::columns(std::io::stdout()))),
        ReportFormat::Json => out!("{}", report.to_json()),
    }
    if args.strict && !report.is_empty() {
        return Err(Exit::Failed(format!("{} (--strict)", report.count())));
    }
    Ok(())
}

/// The tenants of a server's bindings with a usable grant, first one first; prints a line
/// for each tenant without one (with the login command to run), and counts them.
async fn grants(
    args: &CheckArgs,
    client: &McpClient,
    url: &str,
    server_auth: &McpAuth,
    bindings: &[&ToolBinding],
    missing: &mut usize,
) -> Result<Vec<String>, Exit> {
    let mut tenants: Vec<&str> = Vec::new();
    for binding in bindings {
        for tenant in &binding.tenants {
            if !tenants.contains(&tenant.as_str()) {
                tenants.push(tenant);
            }
        }
    }
    let mut usable = Vec::new();
    for tenant in tenants {
        let names: Vec<&str> = bindings
            .iter()
            .filter(|binding| binding.tenants.iter().any(|t| t == tenant))
            .map(|binding| binding.name.as_str())
            .collect();
        let command = |command: &str| {
            format!(
                "mcp-tools {command} {} --tenant {}{}",
                shell::binding_flags(&args.config, names[0]),
                shell::word(tenant),
                shell::store_flags(&args.store)
            )
        };
        let login = command("login");
        // A tenant is any string a config holds: shown escaped.
        let shown = escape(tenant, false);
        let authorization = auth::stored_authorization(tenant, server_auth)?;
        match client.grant_status(url, &authorization).await {
            Ok(GrantStatus::Stored(summary)) if summary.usable => {
                outln!(
                    "{}: tenant {shown}'s grant: {}",
                    names.join(", "),
                    auth::describe(&summary)
                );
                usable.push(tenant.to_owned());
            }
            Ok(GrantStatus::Stored(summary)) => {
                *missing += 1;
                outln!(
                    "{}: tenant {shown}'s grant can no longer be used ({}); run `{login}`",
                    names.join(", "),
                    auth::describe(&summary)
                );
            }
            Ok(GrantStatus::Missing) => {
                *missing += 1;
                outln!(
                    "{}: tenant {shown} has no grant for {}; run `{login}`",
                    names.join(", "),
                    redacted_url(url)
                );
            }
            // Tokens are obtained at call time: nothing to check in a store.
            Ok(_) => usable.push(tenant.to_owned()),
            Err(error) => {
                *missing += 1;
                let repair = if error.unreadable_grant() {
                    format!(
                        "; run `{}` to remove it, or `{login}` to make it again",
                        command("logout")
                    )
                } else {
                    String::new()
                };
                outln!(
                    "{}: cannot read tenant {shown}'s grant ({}): {}{repair}",
                    names.join(", "),
                    error.kind().as_str(),
                    escape(error.detail(), false)
                );
            }
        }
    }
    Ok(usable)
}

/// `--live`: each MCP binding compared with what its server lists now.
async fn live(args: &CheckArgs, loaded: &Loaded) -> Outcome {
    let options = ClientOptions::default().credential_store(store::for_calls(&args.store));
    // A grant's login names the first binding of its server.
    let bindings: Vec<(String, String)> = loaded
        .config
        .tools
        .iter()
        .filter_map(|binding| match binding.mcp().map(|mcp| &mcp.server) {
            Some(McpServer::Http { url, .. }) => Some((url.clone(), binding.name.clone())),
            _ => None,
        })
        .collect();
    let (config, store) = (args.config.clone(), args.store.clone());
    let login = Box::new(move |key: &brain_tools::GrantKey| {
        match bindings.iter().find(|(url, _)| *url == key.resource) {
            Some((_, tool)) => {
                shell::login(&shell::binding_flags(&config, tool), &key.tenant, &store)
            }
            None => (client::any_login())(key),
        }
    });
    let client = client::build(options, login)?;
    let mut missing = 0;
    // One discovery per server, shared by its bindings.
    let mut servers: Vec<(&McpServer, Vec<&ToolBinding>)> = Vec::new();
    for binding in &loaded.config.tools {
        if let Target::Mcp(mcp) = &binding.target {
            match servers
                .iter_mut()
                .find(|(server, _)| *server == &mcp.server)
            {
                Some((_, bindings)) => bindings.push(binding),
                None => servers.push((&mcp.server, vec![binding])),
            }
        }
    }
    let mut differences = 0;
    for (server, bindings) in servers {
        let token_env = match server {
            McpServer::Http { token_env, .. } => token_env.as_deref(),
            _ => None,
        };
        let bearer = match token(token_env, "the token_env of these bindings") {
            Ok(bearer) => bearer,
            Err(Exit::Failed(message)) => {
                report(&bindings, &message);
                differences += bindings.len();
                continue;
            }
            Err(other) => return Err(other),
        };
        let endpoint = endpoint(server, bearer);
        let mut request = args.limits.request(endpoint);
        if let McpServer::Http {
            url,
            auth: Some(server_auth),
            ..
        } = server
        {
            let usable = grants(args, &client, url, server_auth, &bindings, &mut missing).await?;
            // The listing carries a tenant's grant: the first one with a usable grant.
            let Some(tenant) = usable.first() else {
                report(
                    &bindings,
                    "no tenant of these bindings has a usable grant to list the server with",
                );
                differences += bindings.len();
                continue;
            };
            match auth::authorization(tenant, server_auth) {
                Ok(authorization) => request = request.authorization(authorization),
                Err(Exit::Failed(message)) => {
                    report(&bindings, &message);
                    differences += bindings.len();
                    continue;
                }
                Err(other) => return Err(other),
            }
        }
        let spinner = Spinner::start(format!(
            "listing the tools of {}",
            request.endpoint.describe()
        ));
        let found = client.discover(request).await;
        drop(spinner);
        let found = match found {
            Ok(found) => found,
            Err(error) => {
                let failure = discovery_failure(&error, args.limits.discovery_timeout);
                report(&bindings, &failure);
                if let McpServer::Stdio(command) = server {
                    for name in stdio::not_passed(&failure, command, |name| {
                        std::env::var_os(name).is_some()
                    }) {
                        outln!(
                            "  {}",
                            stdio::not_passed_hint(&name, stdio::Passing::Binding)
                        );
                    }
                }
                differences += bindings.len();
                continue;
            }
        };
        for binding in bindings {
            let Some(mcp) = binding.mcp() else { continue };
            let Some(tool) = found.tools.iter().find(|tool| tool.name == mcp.mcp_tool) else {
                outln!(
                    "{}: the server no longer lists \"{}\"",
                    binding.name,
                    escape(&mcp.mcp_tool, false)
                );
                differences += 1;
                continue;
            };
            let mut lines = Vec::new();
            let schema = |schema: &Option<brain_tools_config::JsonObject>| {
                schema.clone().map_or(Value::Null, Value::Object)
            };
            for (field, old, new) in [
                (
                    "input_schema",
                    Value::Object(binding.input_schema.clone()),
                    Value::Object(tool.input_schema.clone()),
                ),
                (
                    "output_schema",
                    schema(&binding.output_schema),
                    schema(&tool.output_schema),
                ),
            ] {
                let changes = diff(&old, &new);
                if !changes.is_empty() {
                    lines.push(format!("  {field} changed on the server:"));
                    lines.extend(changes.into_iter().map(|line| format!("    {line}")));
                }
            }
            // Tasks: what the listing says a call may meet. No server suggests how long a
            // tool takes (neither tasks extension defines a hint in the listing; a task's
            // ttlMs comes with the task), so the binding's timeout is stated, not judged.
            if found.era == Era::Legacy && tool.task_support.as_deref() == Some("required") {
                lines.push(
                    "  requires tasks (execution.taskSupport \"required\"), which this host supports in the 2026-07-28 era: calls to it fail".to_owned(),
                );
            }
            if found.tasks {
                lines.push(if mcp.tasks {
                    format!(
                        "  note: the server may run it as a task; a call waits for the task within timeout_seconds ({} s)",
                        binding.timeout_seconds
                    )
                } else {
                    "  note: the server may run calls as tasks, and this binding turns them off (\"tasks\": false): a tool that only runs as a task fails".to_owned()
                });
            }
            let description = tool.description.clone().unwrap_or_default();
            if description != binding.description {
                lines.push(format!(
                    "  note: the server's description differs: \"{}\"",
                    escape(&description, false)
                ));
            }
            let changed = lines.iter().any(|line| !line.starts_with("  note:"));
            let tool = escape(&mcp.mcp_tool, false);
            if changed {
                differences += 1;
                outln!("{} ({tool}):", binding.name);
            } else if !lines.is_empty() {
                outln!("{} ({tool}): schemas match", binding.name);
            } else {
                outln!("{} ({tool}): matches the server", binding.name);
            }
            for line in lines {
                outln!("{line}");
            }
        }
    }
    if missing > 0 {
        eprintln!(
            "mcp-tools: {missing} tenant grant{} missing or unusable",
            if missing == 1 { " is" } else { "s are" },
        );
    }
    if differences > 0 {
        eprintln!(
            "mcp-tools: {differences} binding{} {} from their servers",
            if differences == 1 { "" } else { "s" },
            if differences == 1 {
                "differs"
            } else {
                "differ"
            }
        );
    }
    if differences > 0 || missing > 0 {
        Err(Exit::Reported)
    } else {
        Ok(())
    }
}

fn report(bindings: &[&ToolBinding], message: &str) {
    for binding in bindings {
        outln!(
            "{}: cannot compare: {}",
            binding.name,
            escape(message, false)
        );
    }
}
