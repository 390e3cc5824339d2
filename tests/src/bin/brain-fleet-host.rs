//! One host replica of a fleet, for the fleet tests: a `ToolHost` whose grants are in a
//! shared PostgreSQL store, calling one tool for each tenant in turn until its time is
//! up, and printing every call's outcome as a JSON line on stdout.
//!
//! ```text
//! brain-fleet-host CONFIG STORE_URL TOOL TENANTS SECONDS INTERVAL_MS [LEASE_TTL_MS]
//! ```
//!
//! The key ring is in `MCP_TOOLS_STORE_KEYS`. Each line:
//! `{"tenant": .., "ok": bool, "kind": .., "delivery": .., "ms": ..}`, and at the end
//! `{"done": calls}`.

use std::{
    process::ExitCode,
    sync::Arc,
    time::{Duration, Instant},
};

use brain_tools::{
    CallScope, ClientOptions, KeyRing, McpClient, PostgresCredentialStore, PostgresStoreOptions,
    ToolHost,
};
use brain_tools_config::HostConfig;
use serde_json::json;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("brain-fleet-host: {message}");
            ExitCode::from(2)
        }
    }
}

async fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [config, url, tool, tenants, seconds, interval, rest @ ..] = args.as_slice() else {
        return Err(
            "usage: brain-fleet-host CONFIG STORE_URL TOOL TENANTS SECONDS INTERVAL_MS [LEASE_TTL_MS]"
                .into(),
        );
    };
    let number = |text: &str| text.parse::<u64>().map_err(|e| format!("{text}: {e}"));
    let config =
        HostConfig::from_json_bytes(&std::fs::read(config).map_err(|e| format!("{config}: {e}"))?)
            .map_err(|e| e.to_string())?;
    let keys = KeyRing::from_env("MCP_TOOLS_STORE_KEYS").map_err(|e| e.to_string())?;
    let mut options = PostgresStoreOptions::new(url, keys);
    if let Some(ttl) = rest.first() {
        options = options.lease_ttl(Duration::from_millis(number(ttl)?));
    }
    let store = PostgresCredentialStore::connect(options)
        .await
        .map_err(|e| e.to_string())?;
    let client = McpClient::new(ClientOptions::default().credential_store(Arc::new(store)))
        .map_err(|e| e.to_string())?;
    let host = ToolHost::builder(config.config)
        .client(client)
        .build()
        .map_err(|e| e.to_string())?;
    let tenants: Vec<&str> = tenants.split(',').collect();
    let until = Instant::now() + Duration::from_secs(number(seconds)?);
    let interval = Duration::from_millis(number(interval)?);
    let mut calls = 0usize;
    while Instant::now() < until {
        let tenant = tenants[calls % tenants.len()];
        let scope = CallScope::new(
            tenant,
            "fleet",
            format!("call-{}-{calls}", std::process::id()),
        );
        let started = Instant::now();
        let result = host.call(scope.clone(), tool, json!({})).await;
        let line = json!({
            "tenant": tenant,
            "ok": !result.is_error,
            "kind": result.error.as_ref().map(|e| e.kind.as_str()),
            "delivery": result.error.as_ref().map(|e| e.delivery.as_str()),
            "message": result.error.as_ref().map(|e| e.message.clone()),
            "ms": started.elapsed().as_millis() as u64,
        });
        println!("{line}");
        calls += 1;
        tokio::time::sleep(interval).await;
    }
    println!("{}", json!({"done": calls}));
    host.client().shutdown(Duration::from_secs(5)).await;
    Ok(())
}
