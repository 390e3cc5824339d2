//! `mcp-tools login`: make a tenant's grant for the server of an OAuth binding, and keep
//! it in the credential store.

use std::{sync::Arc, time::Duration};

use brain_tools::{ClientOptions, ErrorKind, GrantStatus};
use brain_tools_config::McpAuth;

use crate::{
    cli::{GrantTarget, LoginArgs},
    runtime::{
        auth::{self, LoopbackAuthorizer, Protected, describe},
        client::{self, era},
        exit::{Exit, Outcome},
        output::{
            escape::{escape, redacted_url},
            outln,
        },
        shell, store,
    },
};

/// The tenant must be one the binding is for: a grant for any other would never be used.
fn check_tenant(target: &Protected, args: &GrantTarget) -> Result<(), Exit> {
    let tenant = args.tenant.trim();
    if tenant.is_empty() {
        return Err(Exit::Usage("the tenant name is empty".into()));
    }
    if let Some(tenants) = &target.tenants
        && !tenants.iter().any(|t| t == tenant)
    {
        return Err(Exit::Failed(format!(
            "the binding is not for tenant {tenant} (its tenants: {}); a grant for it would never be used",
            tenants.join(", ")
        )));
    }
    Ok(())
}

pub(crate) async fn run(args: LoginArgs) -> Outcome {
    let target = auth::target(&args.target)?;
    check_tenant(&target, &args.target)?;
    let tenant = args.target.tenant.trim();
    if let McpAuth::Enterprise(_) = target.auth {
        return Err(Exit::Failed(
            "enterprise-managed authorization has nothing to log in to: the host supplies each tenant's identity token at call time (docs/auth.md)".into(),
        ));
    }
    let authorization = auth::authorization(tenant, &target.auth)?;
    let store = store::open(&args.target.store).await?;
    let (flags, store_args) = (shell::target_flags(&args.target), args.target.store.clone());
    let client = client::build(
        ClientOptions::default()
            .era(era(args.era))
            .credential_store(store.store),
        Box::new(move |key| shell::login(&flags, &key.tenant, &store_args)),
    )?;
    let authorized = client
        .authorize(
            &target.url,
            &authorization,
            Arc::new(LoopbackAuthorizer),
            Duration::from_secs(args.timeout),
        )
        .await;
    match authorized {
        Ok(GrantStatus::Stored(summary)) => {
            outln!(
                "tenant {} is authorized for {}: {}; stored in {}",
                escape(tenant, false),
                redacted_url(&target.url),
                describe(&summary),
                escape(&store.place, false)
            );
            Ok(())
        }
        Ok(GrantStatus::AtCallTime) => {
            outln!(
                "{}: a token was obtained for tenant {}; {} tokens are obtained at call time, so nothing is stored",
                redacted_url(&target.url),
                escape(tenant, false),
                target.auth.type_name()
            );
            Ok(())
        }
        Ok(GrantStatus::Missing) => Err(Exit::Failed(format!(
            "{} listed its tools without asking for authorization, so there was nothing to authorize and no grant is stored",
            redacted_url(&target.url)
        ))),
        Ok(other) => Err(Exit::Failed(format!(
            "the grant is in an unexpected state: {other:?}"
        ))),
        Err(error) if error.kind() == ErrorKind::Timeout => Err(Exit::Failed(format!(
            "the authorization was not complete within {} s (--timeout); no grant is stored",
            args.timeout
        ))),
        Err(error) => Err(Exit::Failed(format!(
            "the authorization failed: {}; no grant is stored",
            error.detail()
        ))),
    }
}
