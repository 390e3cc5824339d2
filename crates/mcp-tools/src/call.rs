//! `mcp-tools call`: one call through the real call path, events as JSON lines.

use std::{
    io::Write,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use brain_tools::{CallScope, ClientOptions, McpClient, ToolHost};
use brain_tools_events::ToolEvent;
use tokio_util::sync::CancellationToken;

use crate::{Exit, Outcome, check::load, cli::CallArgs, discover::era};

/// How long closing sessions may take before the process exits.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

pub(crate) async fn run(args: CallArgs) -> Outcome {
    let arguments: serde_json::Value = serde_json::from_str(&args.args)
        .map_err(|error| Exit::Usage(format!("--args is not JSON: {error}")))?;
    let loaded = load(&args.config)?;
    let client = McpClient::new(ClientOptions::default().era(era(args.era)));
    let host = ToolHost::builder(loaded.config)
        .client(client.clone())
        .build()
        .map_err(|error| Exit::Failed(error.to_string()))?;
    let call_id = args.call.unwrap_or_else(|| {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos());
        format!("cli-{}-{nanos}", std::process::id())
    });
    let scope = CallScope::new(args.tenant, args.session, call_id);
    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_interrupt.cancel();
        }
    });
    let print = |event: ToolEvent| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", event.to_json_line());
        let _ = out.flush();
    };
    let result = host
        .call(&scope, &args.tool, arguments, cancel, &print)
        .await;
    client.shutdown(CLOSE_GRACE).await;
    if result.is_error {
        Err(Exit::Reported)
    } else {
        Ok(())
    }
}
