//! `mcp-tools call`: one call through the real call path, printed for a person or as JSON
//! lines.

use std::{
    io::IsTerminal,
    time::{SystemTime, UNIX_EPOCH},
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
    let result = host
        .call(scope, args.tool, arguments)
        .cancel(cancel)
        .sink(std::sync::Arc::new(sink))
        .await;
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

#[cfg(test)]
mod tests {
    use super::*;

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
