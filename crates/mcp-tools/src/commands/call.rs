//! `mcp-tools call`: one call through the real call path, printed for a person or as JSON
//! lines.

use std::{
    io::IsTerminal,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use brain_tools::{CallScope, CancellationToken, ClientOptions, ToolHost};

use crate::{
    cli::{CallArgs, Format},
    runtime::{
        client::{self, era},
        config::{self, Warn},
        exit::{Exit, Outcome},
        logs::color_allowed,
        output::{
            human::Paint,
            printer::{Printer, STALL, Style},
        },
        shell,
        signals::Signals,
        store,
    },
};

/// The printing style `--format` asks for, given what stdout and stderr are.
fn style(format: Format, stdout_is_terminal: bool, stderr_is_terminal: bool) -> Style {
    let human = Style::Human {
        paint: Paint::new(color_allowed(stdout_is_terminal)),
        bar: stderr_is_terminal,
    };
    match format {
        Format::Human => human,
        Format::Json => Style::Json,
        Format::Auto if stdout_is_terminal => human,
        Format::Auto => Style::Json,
    }
}

pub(crate) async fn run(args: CallArgs, signals: Signals) -> Outcome {
    let arguments: serde_json::Value = serde_json::from_str(&args.args)
        .map_err(|error| Exit::Usage(format!("--args is not JSON: {error}")))?;
    let loaded = config::load(&args.config, Warn::Binding(&args.tool))?;
    let timeout = call_timeout(&loaded.config, &args.tool, args.timeout)?;
    let options = ClientOptions::default()
        .era(era(args.era))
        .credential_store(store::for_calls(&args.store));
    let login = {
        let (config, tool, store) = (args.config.clone(), args.tool.clone(), args.store.clone());
        Box::new(move |key: &brain_tools::GrantKey| {
            shell::login(&shell::binding_flags(&config, &tool), &key.tenant, &store)
        })
    };
    let client = client::build(options, login)?;
    // A binding this build cannot serve fails when it is called (naming the feature), not
    // a call of another binding.
    let host = ToolHost::builder(loaded.config)
        .client(client.clone())
        .config_path(args.config.display().to_string())
        .store_flags(shell::store_flags(&args.store))
        .allow_unsupported(true)
        .build()
        .map_err(|error| Exit::Failed(error.to_string()))?;
    let call_id = args.call.unwrap_or_else(|| {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos());
        format!("cli-{}-{nanos}", std::process::id())
    });
    let scope = CallScope::new(args.tenant, args.session, call_id);
    // The first signal cancels the call: the server is told, the session deleted, the
    // process group killed, and the result printed.
    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    let interrupt = tokio::spawn(async move {
        signals.at_least(1).await;
        on_interrupt.cancel();
    });

    let style = style(
        args.format,
        std::io::stdout().is_terminal(),
        std::io::stderr().is_terminal(),
    );
    let printer = Printer::start(style, args.save_dir, std::io::stdout())
        .map_err(|error| Exit::Failed(format!("cannot start the output thread: {error}")))?;
    let sink = printer.sink();
    // The sink hands the result to the printer as soon as the call has it; closing what
    // the call left open comes after (the run settles its clients).
    let mut call = host
        .call(scope, args.tool, arguments)
        .cancel(cancel)
        .sink(std::sync::Arc::new(sink));
    if let Some(timeout) = timeout {
        call = call.timeout(timeout);
    }
    let result = call.await;
    interrupt.abort();
    let printed = tokio::task::spawn_blocking(move || printer.finish(STALL)).await;
    match printed {
        Ok(Ok(())) => {}
        Ok(Err(message)) => return Err(Exit::Failed(message)),
        Err(error) => return Err(Exit::Failed(format!("the output thread failed: {error}"))),
    }
    if result.is_error {
        Err(Exit::Reported)
    } else {
        Ok(())
    }
}

/// The call's own deadline (`--timeout`), which may only be sooner than its binding's
/// `timeout_seconds`: a longer one is a usage error that names the binding's limit. A
/// tool the config does not have is the call's to report (`unknown_tool`).
fn call_timeout(
    config: &brain_tools::config::HostConfig,
    tool: &str,
    seconds: Option<u64>,
) -> Result<Option<Duration>, Exit> {
    let Some(seconds) = seconds else {
        return Ok(None);
    };
    if let Some(binding) = config.tools.iter().find(|binding| binding.name == tool)
        && seconds > binding.timeout_seconds
    {
        return Err(Exit::Usage(format!(
            "--timeout {seconds} is longer than the {} s that {tool}'s binding allows \
             (its timeout_seconds): a call may only end sooner; raise timeout_seconds in the \
             host config to allow longer calls",
            binding.timeout_seconds
        )));
    }
    Ok(Some(Duration::from_secs(seconds)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calls_timeout_may_only_be_sooner_than_its_bindings() {
        let loaded = brain_tools::config::HostConfig::from_json_bytes(
            br#"{"tools": [{"name": "search", "url": "https://mcp.example.com/mcp",
                "mcp_tool": "search", "input_schema": {"type": "object"},
                "tenants": ["local"], "timeout_seconds": 30}]}"#,
        )
        .unwrap();
        let config = &loaded.config;
        assert_eq!(call_timeout(config, "search", None).unwrap(), None);
        assert_eq!(
            call_timeout(config, "search", Some(30)).unwrap(),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            call_timeout(config, "nope", Some(999)).unwrap(),
            Some(Duration::from_secs(999)),
            "an unknown tool is the call's to report"
        );
        let Err(Exit::Usage(message)) = call_timeout(config, "search", Some(31)) else {
            panic!("a usage error")
        };
        assert_eq!(
            message,
            "--timeout 31 is longer than the 30 s that search's binding allows (its \
             timeout_seconds): a call may only end sooner; raise timeout_seconds in the host \
             config to allow longer calls"
        );
    }

    #[test]
    fn auto_is_human_at_a_terminal_and_json_in_a_pipe() {
        assert!(matches!(style(Format::Auto, false, true), Style::Json));
        assert!(matches!(
            style(Format::Auto, true, true),
            Style::Human { bar: true, .. }
        ));
        assert!(matches!(
            style(Format::Human, false, false),
            Style::Human { bar: false, .. }
        ));
        assert!(matches!(style(Format::Json, true, true), Style::Json));
    }
}
