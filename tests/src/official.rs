//! The client the official `@modelcontextprotocol/conformance` suite drives.
//!
//! Contract: the server URL is the last argument; `MCP_CONFORMANCE_SCENARIO` names the
//! scenario, `MCP_CONFORMANCE_PROTOCOL_VERSION` the revision, and
//! `MCP_CONFORMANCE_CONTEXT` (JSON) carries extra input for some scenarios. Exit 0 when
//! the scenario's flow completed; the suite judges what went over the wire.
//!
//! Every scenario is what an agent host does with our crates: discover the server's
//! tools, turn them into bindings, build a `ToolHost`, call tools through it. What a
//! scenario decides on its own is only which tools to call, with which arguments.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use brain_mcp_transport::{CallRequest, ClientOptions, EraPreference, McpClient};
use brain_tools::ServerRequestPolicy;
use serde_json::{Value, json};

use crate::{
    bindings::{self, BindOptions, Server, TENANT},
    official_auth,
};

/// The whole scenario must end before the suite's own timeout (30 s).
const SCENARIO_DEADLINE: Duration = Duration::from_secs(25);
/// Bound on closing sessions after the scenario.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// The revision that introduced the stateless lifecycle.
const MODERN: &str = "2026-07-28";

pub(crate) async fn main(args: &[String]) -> ExitCode {
    let Some(url) = args.last().filter(|url| url.starts_with("http")) else {
        eprintln!("brain-conformance: the server URL must be the last argument");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let version =
        std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_else(|_| "2025-11-25".into());
    let context = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok());
    eprintln!("scenario {scenario} at {version} against {url}");
    let auth = match official_auth::for_scenario(&scenario, context.as_ref()) {
        Ok(auth) => auth,
        Err(error) => {
            eprintln!("scenario {scenario}: FAILED: {error:#}");
            return ExitCode::FAILURE;
        }
    };
    let mut options = options(&scenario, &version);
    if let Some(auth) = &auth {
        options = auth.options(options);
    }
    let client = McpClient::new(options).expect("the client builds");
    let server = match auth {
        Some(auth) => Server::Protected {
            url: url.to_owned(),
            auth,
        },
        None => Server::Http(url.to_owned()),
    };
    let outcome = tokio::time::timeout(
        SCENARIO_DEADLINE,
        run(&client, &scenario, &version, &server, context.as_ref()),
    )
    .await;
    client.shutdown(CLOSE_GRACE).await;
    match outcome {
        Ok(Ok(())) => {
            eprintln!("scenario {scenario}: done");
            ExitCode::SUCCESS
        }
        Ok(Err(error)) => {
            eprintln!("scenario {scenario}: FAILED: {error:#}");
            ExitCode::FAILURE
        }
        Err(_) => {
            eprintln!(
                "scenario {scenario}: FAILED: did not finish within {} s",
                SCENARIO_DEADLINE.as_secs()
            );
            ExitCode::FAILURE
        }
    }
}

/// The client options a scenario needs: the revision picks the era (unless
/// `BRAIN_CONFORMANCE_ERA` says auto, legacy or modern); elicitation answers and the
/// standalone stream only where the scenario is about them.
fn options(scenario: &str, version: &str) -> ClientOptions {
    let forced = std::env::var("BRAIN_CONFORMANCE_ERA").ok();
    let era = match crate::parse_era(forced.as_deref()) {
        Ok(era) if forced.is_some() => era,
        _ if version == MODERN => EraPreference::Modern,
        _ => EraPreference::Legacy,
    };
    let options = ClientOptions::default().era(era);
    match scenario {
        // Its server sends elicitation/create on the standalone GET stream.
        "elicitation-sep1034-client-defaults" => options
            .standalone_stream(true)
            .server_requests(ServerRequestPolicy::AcceptElicitationDefaults),
        // input_required rounds carry elicitations.
        "sep-2322-client-request-state" => {
            options.server_requests(ServerRequestPolicy::AcceptElicitationDefaults)
        }
        _ => options,
    }
}

async fn run(
    client: &McpClient,
    scenario: &str,
    version: &str,
    server: &Server,
    context: Option<&Value>,
) -> anyhow::Result<()> {
    let discovery = bindings::discover(client, server).await?;
    eprintln!(
        "discovered {} tool(s) in {} page(s), era {:?}: {}",
        discovery.tools.len(),
        discovery.pages,
        discovery.era,
        discovery
            .tools
            .iter()
            .map(|tool| tool.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let bound = bindings::bind(client, server, &discovery.tools, &BindOptions::default())?;
    for (tool, why) in &bound.dropped {
        eprintln!("not bound: {tool}: {why}");
    }
    match scenario {
        // The handshake (and the listing) is the scenario.
        "initialize" | "request-metadata" | "json-schema-ref-no-deref" => Ok(()),
        "tools_call" => {
            let called = bound
                .call("call-1", "add_numbers", json!({"a": 2, "b": 3}))
                .await;
            report(&called);
            called.ok().map(drop)
        }
        "sse-retry" => {
            let called = bound.call("call-1", "test_reconnection", json!({})).await;
            report(&called);
            called.ok().map(drop)
        }
        "elicitation-sep1034-client-defaults" => {
            let called = bound
                .call("call-1", "test_client_elicitation_defaults", json!({}))
                .await;
            report(&called);
            called.ok().map(drop)
        }
        // The authorization scenarios: the tools listed (with the tenant's token), then
        // each called through the host (a step-up, a moved authorization server, ...).
        _ if scenario.starts_with("auth/")
            || matches!(
                scenario,
                "sep-2322-client-request-state"
                    | "http-standard-headers"
                    | "http-invalid-tool-headers"
            ) =>
        {
            // Every tool the client kept, with placeholder arguments.
            let mut failures = Vec::new();
            for (i, tool) in discovery.tools.iter().enumerate() {
                if bound.name_of(&tool.name).is_err() {
                    continue;
                }
                let arguments = bindings::placeholder_arguments(&tool.input_schema);
                let called = bound
                    .call(&format!("call-{}", i + 1), &tool.name, arguments)
                    .await;
                report(&called);
                if let Some(why) = called.failure() {
                    failures.push(format!("{}: {why}", tool.name));
                }
            }
            if failures.is_empty() {
                Ok(())
            } else {
                anyhow::bail!("{}", failures.join("; "))
            }
        }
        "http-custom-headers" => custom_headers(client, server, context).await,
        "json-schema-2020-12-preservation" => {
            let focal = bound.name_of("json_schema_2020_12_tool")?;
            // The schema exactly as the host holds it after loading the config.
            let schema = bound
                .host
                .tools_for(TENANT)
                .into_iter()
                .find(|tool| tool.name == focal)
                .map(|tool| tool.input_schema)
                .context("the host does not list json_schema_2020_12_tool")?;
            let called = bound
                .call("call-1", "json_schema_echo", json!({ "schema": schema }))
                .await;
            report(&called);
            called.ok().map(drop)
        }
        other => anyhow::bail!("unknown scenario {other:?} at {version}"),
    }
}

/// `http-custom-headers`: the context's calls, with their arguments exactly as given.
///
/// Straight through `McpClient`: `test_custom_headers_null` passes `null` for a boolean
/// argument, which `ToolHost` would (rightly) refuse as invalid before sending.
async fn custom_headers(
    client: &McpClient,
    server: &Server,
    context: Option<&Value>,
) -> anyhow::Result<()> {
    let calls = context
        .and_then(|context| context.get("toolCalls"))
        .and_then(Value::as_array)
        .context("MCP_CONFORMANCE_CONTEXT has no toolCalls")?;
    for (i, call) in calls.iter().enumerate() {
        let name = call
            .get("name")
            .and_then(Value::as_str)
            .context("a toolCalls entry without a name")?;
        let arguments = call
            .get("arguments")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let request = CallRequest::new(
            server.endpoint(),
            name,
            format!("call-{}", i + 1),
            Duration::from_secs(20),
        )
        .arguments(arguments)
        .param_headers(true);
        let outcome = client.call(request).await.map_err(|error| {
            anyhow::anyhow!("{name} failed ({}): {error}", error.kind().as_str())
        })?;
        eprintln!("{name}: {}", outcome.result);
    }
    Ok(())
}

fn report(called: &bindings::Called) {
    match called.failure() {
        None => eprintln!(
            "{}: ok, {} event(s), content {}",
            called.result.header.tool,
            called.events.len(),
            serde_json::to_string(&called.result.content).unwrap_or_default()
        ),
        Some(why) => eprintln!("{}: FAILED: {why}", called.result.header.tool),
    }
}
