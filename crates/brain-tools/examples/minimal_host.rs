//! A minimal host: load a host config, build a `ToolHost`, call one tool, and print the
//! call's events as JSON lines on stdout.
//!
//! ```sh
//! # the embedded config: the tools `echo` and `progress` of the MCP server at $MCP_URL
//! cargo run -p brain-tools --example minimal_host
//! # your own config, tool and arguments (a JSON object), as tenant `local`
//! cargo run -p brain-tools --example minimal_host -- host.json search '{"query": "rust"}'
//! # the embedded config, another tool
//! cargo run -p brain-tools --example minimal_host -- - progress '{"steps": 5}'
//! ```
//!
//! The embedded config fits the workspace's test server: start it with
//! `cargo run -p brain-mcp-testkit --bin brain-mcp-testkit-http`, which prints
//! `LISTENING <url>`, and set `MCP_URL` to that URL. With no server there, the call still
//! ends in one `tool.result`: an error of kind `connect`, delivery `not_sent`.
//!
//! It uses nothing but `brain-tools` (and `serde_json` and `tokio`, as a host does): the
//! config crate is `brain_tools::config`, and the types a host needs from the layers below
//! are re-exported.

use std::{process::ExitCode, time::Duration};

use brain_tools::{CallScope, CancellationToken, HostConfig, ToolEvent, ToolHost};

/// Two tools of one MCP server; `MCP_URL` is filled in from the environment.
const EMBEDDED: &str = r#"{
  "tools": [
    {
      "name": "echo",
      "description": "Says the message back.",
      "input_schema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
      "url": "MCP_URL",
      "mcp_tool": "echo",
      "tenants": ["local"],
      "timeout_seconds": 30
    },
    {
      "name": "progress",
      "description": "Reports progress, then says it is done.",
      "input_schema": {"type": "object", "properties": {"steps": {"type": "integer"}, "delay_ms": {"type": "integer"}}},
      "url": "MCP_URL",
      "mcp_tool": "progress",
      "tenants": ["local"],
      "timeout_seconds": 30
    }
  ]
}"#;

const USAGE: &str = "usage: minimal_host [CONFIG.json|- [TOOL [ARGUMENTS_JSON [TENANT]]]] \
(`-`: the embedded config)";

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => {
            eprintln!("minimal_host: {message}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// Runs one call; `Ok(false)` when the tool call failed (its events say why).
async fn run() -> Result<bool, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        println!("{USAGE}");
        return Ok(true);
    }
    // 1. The config: from a file, or the embedded one.
    let bytes = match args.first().filter(|path| *path != "-") {
        Some(path) => std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))?,
        None => {
            let url =
                std::env::var("MCP_URL").unwrap_or_else(|_| "http://127.0.0.1:8000/mcp".to_owned());
            EMBEDDED.replace("MCP_URL", &url).into_bytes()
        }
    };
    // Every problem, each with its JSON path, in one answer.
    let loaded = HostConfig::from_json_bytes(&bytes).map_err(|errors| errors.to_string())?;
    for warning in &loaded.warnings {
        eprintln!("warning: {warning}");
    }

    // 2. The host: one per process, shared by every call.
    let host = ToolHost::new(&loaded.config).map_err(|e| format!("cannot build the host: {e}"))?;
    let tenant = args.get(3).map_or("local", String::as_str);
    let tools: Vec<String> = host
        .tools_for(tenant)
        .into_iter()
        .map(|tool| tool.name)
        .collect();
    eprintln!("tools for tenant {tenant}: {}", tools.join(", "));

    // 3. One call; its events go to stdout as JSON lines as they come.
    let tool = match args.get(1) {
        Some(tool) => tool.clone(),
        None => tools.first().cloned().ok_or("the config has no tools")?,
    };
    let arguments = match args.get(2) {
        Some(text) => serde_json::from_str(text).map_err(|e| format!("ARGUMENTS_JSON: {e}"))?,
        None if tool == "progress" => serde_json::json!({"steps": 3, "delay_ms": 100}),
        None => serde_json::json!({"message": "hello from minimal_host"}),
    };
    let print = |event: ToolEvent| println!("{}", event.to_json_line());
    let scope = CallScope::new(tenant, "session-1", "call-1");
    let cancel = CancellationToken::new();
    let result = host
        .call(scope, tool, arguments)
        .cancel(cancel)
        .sink(std::sync::Arc::new(print))
        .await;

    // 4. Let the background close of the call's MCP context finish before exiting.
    host.client().shutdown(Duration::from_secs(5)).await;
    Ok(!result.is_error)
}
