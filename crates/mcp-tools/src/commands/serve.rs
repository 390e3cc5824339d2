//! `mcp-tools serve`: the host config's tools as one MCP server (the gateway crate,
//! `brain-mcp-gateway`), over HTTP or, for one tenant, over stdio; and `--new-key`, a new
//! API key with the line of the key file that accepts it.

use std::{net::SocketAddr, sync::Arc};

use brain_mcp_gateway::Gateway;
use brain_tools::{ClientOptions, ToolHost};

use crate::{
    cli::ServeArgs,
    runtime::{
        client::{self, era},
        config,
        exit::{Exit, Outcome},
        output::outln,
        shell,
        signals::Signals,
        store,
    },
};

/// Where the gateway listens when neither `--listen` nor the config says.
const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

pub(crate) async fn run(args: ServeArgs, signals: Signals) -> Outcome {
    if args.new_key {
        let tenant = args.tenant.as_deref().unwrap_or_default();
        let (key, line) = brain_mcp_gateway::new_api_key(tenant)
            .map_err(|error| Exit::Failed(error.to_string()))?;
        eprintln!(
            "mcp-tools: a new API key for tenant {tenant} (shown once: only its hash is kept), then the line to add to the gateway's api_keys file:"
        );
        outln!("{key}");
        outln!("{line}");
        return Ok(());
    }
    let Some(path) = &args.config else {
        return Err(Exit::Usage("--config is required".into()));
    };
    let loaded = config::load(path, config::Warn::All)?;
    let store = store::for_calls(&args.store);
    let options = ClientOptions::default()
        .era(era(args.era))
        .credential_store(Arc::clone(&store));
    let login = {
        let (config, store) = (path.clone(), args.store.clone());
        Box::new(move |key: &brain_tools::GrantKey| {
            shell::login(
                &format!(
                    "--config {} --tool TOOL",
                    shell::word(&config.display().to_string())
                ),
                &key.tenant,
                &store,
            )
        })
    };
    let client = client::build(options, login)?;
    let host = ToolHost::builder(loaded.config.clone())
        .client(client)
        .config_path(path.display().to_string())
        .store_flags(shell::store_flags(&args.store))
        .build()
        .map_err(|error| Exit::Failed(error.to_string()))?;

    if args.stdio {
        let tenant = args.tenant.as_deref().unwrap_or_default();
        // stdout is the MCP channel: nothing else is printed there.
        return brain_mcp_gateway::serve_stdio(host, &loaded.config, tenant)
            .await
            .map_err(|error| Exit::Failed(error.to_string()));
    }

    // Every replica of a fleet seals sessions with the store's key ring, so that a
    // caller's next request may reach any of them.
    let mut builder = Gateway::builder(host, &loaded.config);
    match store::key_ring(args.store.keys.as_deref()) {
        Ok(Some(ring)) => builder = builder.session_keys(ring),
        Ok(None) => tracing::info!(
            "no key ring (--store-keys, $MCP_TOOLS_STORE_KEYS): sessions are sealed with a key of this process's own and open on no other replica"
        ),
        Err(error) => {
            return Err(Exit::Failed(format!(
                "the key ring that seals sessions cannot be used: {error}"
            )));
        }
    }
    let gateway = builder
        .build()
        .map_err(|error| Exit::Failed(error.to_string()))?;
    gateway.report_store(store);
    let configured = loaded
        .config
        .gateway
        .as_ref()
        .and_then(|gateway| gateway.listen.clone());
    let address: SocketAddr = match (args.listen, configured) {
        (Some(address), _) => address,
        (None, Some(configured)) => configured.parse().map_err(|_| {
            Exit::Failed(format!(
                "the gateway's listen address {configured} is not IP:PORT"
            ))
        })?,
        (None, None) => DEFAULT_LISTEN.parse().unwrap_or_else(|_| unreachable!()),
    };
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|error| Exit::Failed(format!("cannot listen on {address}: {error}")))?;
    let bound = listener
        .local_addr()
        .map_err(|error| Exit::Failed(format!("cannot listen on {address}: {error}")))?;
    let scheme = match loaded.config.gateway.as_ref().and_then(|g| g.tls.as_ref()) {
        Some(_) => "https",
        None => "http",
    };
    outln!("listening on {scheme}://{bound}/mcp");
    let first_signal = async move { signals.at_least(1).await };
    gateway
        .serve(listener, first_signal)
        .await
        .map_err(|error| Exit::Failed(error.to_string()))
}
