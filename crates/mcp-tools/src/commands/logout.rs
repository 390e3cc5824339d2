//! `mcp-tools logout`: remove a tenant's stored grant for the server of an OAuth binding.

use brain_tools::ClientOptions;
use brain_tools_config::McpAuth;

use crate::{
    cli::LogoutArgs,
    runtime::{
        auth, client,
        exit::{Exit, Outcome},
        output::{
            escape::{escape, redacted_url},
            outln,
        },
        store,
    },
};

pub(crate) async fn run(args: LogoutArgs) -> Outcome {
    let target = auth::target(&args.target)?;
    let tenant = args.target.tenant.trim();
    if tenant.is_empty() {
        return Err(Exit::Usage("the tenant name is empty".into()));
    }
    let authorization = auth::stored_authorization(tenant, &target.auth)?;
    let store = store::open(&args.target.store).await?;
    let dir = store.place;
    let client = client::build(
        ClientOptions::default().credential_store(store.store),
        client::any_login(),
    )?;
    // Removed readable or not: a grant the store cannot read is repaired by a logout.
    let removed = client.forget_grant(&target.url, &authorization).await;
    let removed = removed.map_err(|error| {
        Exit::Failed(format!(
            "cannot remove the grant from {}: {}",
            dir,
            error.detail()
        ))
    })?;
    let (url, tenant, dir) = (
        redacted_url(&target.url),
        escape(tenant, false),
        escape(&dir, false),
    );
    match (&target.auth, removed) {
        (McpAuth::OAuth(_), 0) => {
            outln!("tenant {tenant} had no grant for {url} in {dir}; nothing to remove");
        }
        (McpAuth::OAuth(_), removed) => outln!(
            "removed {removed} grant{} of tenant {tenant} for {url} from {dir}",
            if removed == 1 { "" } else { "s" },
        ),
        (auth, _) => outln!(
            "{url}: {} tokens are kept in memory only, never stored; nothing to remove",
            auth.type_name()
        ),
    }
    Ok(())
}
