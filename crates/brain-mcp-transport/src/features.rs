//! What this build can do (its cargo features), and the error a call gets for what it
//! cannot: a binding that needs a transport or an authentication that was compiled out
//! fails before anything is sent (`not_sent`), with a message naming the cargo feature.
//! Never a panic, never a call that silently goes without its credentials.

use crate::{
    endpoint::Endpoint,
    error::{CallError, Delivery, ErrorKind},
    grant::Authorization,
};

/// The error of a call or discovery this build cannot make: `what` needs the cargo
/// feature `feature` of `brain-mcp-transport` (also `brain-tools`).
pub(crate) fn missing(kind: ErrorKind, what: &str, feature: &str) -> CallError {
    CallError::new(
        kind,
        Delivery::NotSent,
        format!(
            "was not sent: {what} needs the cargo feature `{feature}` of brain-mcp-transport \
             (and brain-tools), which this build lacks"
        ),
    )
    .retryable_if(false)
}

/// What a build can do: the cargo features it was compiled with (`brain-tools` passes its
/// own through to these, with the same names). [`Features::COMPILED`] is this build's;
/// [`Features::lacks`] says what a server would need that a build lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Features {
    /// `stdio`: stdio servers.
    pub stdio: bool,
    /// `http`: Streamable HTTP servers.
    pub http: bool,
    /// `oauth`: OAuth grants for HTTP servers.
    pub oauth: bool,
    /// `oauth-jwt`: `private_key_jwt` client authentication.
    pub oauth_jwt: bool,
    /// `postgres`: the PostgreSQL credential store.
    pub postgres: bool,
    /// `otel`: OpenTelemetry.
    pub otel: bool,
}

/// What a server needs that a build lacks: the cargo feature, and what needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Lacking {
    /// The feature, as `Cargo.toml` names it (`stdio`, `http`, `oauth`, `oauth-jwt`).
    pub feature: &'static str,
    /// What needs it: `a stdio server`, `an HTTP server`, `an OAuth grant`,
    /// `private_key_jwt client authentication`.
    pub what: &'static str,
}

impl Features {
    /// This build's features.
    pub const COMPILED: Features = Features {
        stdio: cfg!(feature = "stdio"),
        http: cfg!(feature = "http"),
        oauth: cfg!(feature = "oauth"),
        oauth_jwt: cfg!(feature = "oauth-jwt"),
        postgres: cfg!(feature = "postgres"),
        otel: cfg!(feature = "otel"),
    };

    /// The names of the features on, as `Cargo.toml` spells them, e.g.
    /// `["stdio", "http", "oauth"]`.
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.stdio, "stdio"),
            (self.http, "http"),
            (self.oauth, "oauth"),
            (self.oauth_jwt, "oauth-jwt"),
            (self.postgres, "postgres"),
            (self.otel, "otel"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
    }

    /// What a build with these features lacks to call a server: a stdio server
    /// (`stdio`) or an HTTP one, with an OAuth grant of `auth` (its secrets of any type:
    /// a config's variable names, or the secrets themselves) or without. The transport is
    /// named first; `None` when nothing is lacking.
    pub fn lacks<S>(
        &self,
        stdio: bool,
        auth: Option<&brain_tools_auth::McpAuth<S>>,
    ) -> Option<Lacking> {
        let lacking = |feature, what| Some(Lacking { feature, what });
        match stdio {
            true if !self.stdio => return lacking("stdio", "a stdio server"),
            false if !self.http => return lacking("http", "an HTTP server"),
            _ => {}
        }
        let auth = auth?;
        if !self.oauth {
            return lacking("oauth", "an OAuth grant");
        }
        let private_key_jwt = matches!(
            auth,
            brain_tools_auth::McpAuth::ClientCredentials(grant)
                if matches!(grant.authentication, brain_tools_auth::ClientAuthentication::PrivateKeyJwt { .. })
        );
        if !self.oauth_jwt && private_key_jwt {
            return lacking("oauth-jwt", "private_key_jwt client authentication");
        }
        None
    }
}

/// Whether this build can reach `endpoint` with `authorization`; the error names the
/// missing feature. Checked where a request becomes a client operation (`call`,
/// `discover`, and so `authorize`), before any network or process work.
pub(crate) fn check(
    endpoint: &Endpoint,
    authorization: Option<&Authorization>,
) -> Result<(), CallError> {
    check_in(Features::COMPILED, endpoint, authorization)
}

fn check_in(
    built: Features,
    endpoint: &Endpoint,
    authorization: Option<&Authorization>,
) -> Result<(), CallError> {
    let stdio = matches!(endpoint, Endpoint::Stdio(_));
    match built.lacks(
        stdio,
        authorization.map(|authorization| &authorization.grant),
    ) {
        Some(lacking) => {
            let kind = match lacking.feature {
                "stdio" | "http" => ErrorKind::Connect,
                _ => ErrorKind::AuthorizationFailed,
            };
            Err(missing(kind, lacking.what, lacking.feature))
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        grant::{ClientAuthentication, ClientCredentialsGrant, Grant, SigningAlgorithm},
        secret::Secret,
    };

    const FULL: Features = Features {
        http: true,
        stdio: true,
        oauth: true,
        oauth_jwt: true,
        postgres: true,
        otel: true,
    };
    /// The default build: no `oauth-jwt`.
    const DEFAULT: Features = Features {
        oauth_jwt: false,
        ..FULL
    };
    const STDIO_ONLY: Features = Features {
        http: false,
        stdio: true,
        oauth: false,
        oauth_jwt: false,
        postgres: false,
        otel: false,
    };
    const HTTP_ONLY: Features = Features {
        stdio: false,
        oauth: false,
        oauth_jwt: false,
        postgres: false,
        otel: false,
        ..FULL
    };

    fn client_credentials(authentication: ClientAuthentication) -> Authorization {
        Authorization::new(
            "tenant-a",
            Grant::ClientCredentials(ClientCredentialsGrant::new("client", authentication)),
        )
    }

    fn private_key_jwt() -> Authorization {
        client_credentials(ClientAuthentication::PrivateKeyJwt {
            key: Secret::new("-----BEGIN PRIVATE KEY-----"),
            algorithm: SigningAlgorithm::Es256,
        })
    }

    fn client_secret() -> Authorization {
        client_credentials(ClientAuthentication::Secret {
            secret: Secret::new("s"),
            method: None,
        })
    }

    /// `kind: message` of the refusal, `None` when the build can make the call; every
    /// refusal is `not_sent`.
    fn check(
        built: Features,
        endpoint: &Endpoint,
        authorization: Option<&Authorization>,
    ) -> Option<String> {
        check_in(built, endpoint, authorization).err().map(|error| {
            assert_eq!(error.delivery(), Delivery::NotSent, "{error:?}");
            format!("{}: {}", error.kind().as_str(), error.detail())
        })
    }

    fn http() -> Endpoint {
        Endpoint::http("https://mcp.example.com/mcp", None)
    }

    fn stdio() -> Endpoint {
        Endpoint::stdio("server", Vec::<String>::new())
    }

    #[test]
    fn private_key_jwt_without_oauth_jwt_is_refused_by_name() {
        let error = check(DEFAULT, &http(), Some(&private_key_jwt())).expect("refused");
        assert_eq!(
            error,
            "authorization_failed: was not sent: private_key_jwt client authentication \
             needs the cargo feature `oauth-jwt` of brain-mcp-transport (and brain-tools), \
             which this build lacks"
        );
        assert_eq!(check(FULL, &http(), Some(&private_key_jwt())), None);
        // A client secret needs no more than `oauth`.
        assert_eq!(check(DEFAULT, &http(), Some(&client_secret())), None);
    }

    #[test]
    fn a_compiled_out_transport_is_refused_by_name() {
        let error = check(STDIO_ONLY, &http(), None).expect("refused");
        assert!(
            error.starts_with(
                "connect: was not sent: an HTTP server needs the cargo feature `http`"
            ),
            "{error}"
        );
        assert_eq!(check(STDIO_ONLY, &stdio(), None), None);
        let error = check(HTTP_ONLY, &stdio(), None).expect("refused");
        assert!(
            error.starts_with(
                "connect: was not sent: a stdio server needs the cargo feature `stdio`"
            ),
            "{error}"
        );
        assert_eq!(check(HTTP_ONLY, &http(), None), None);
        // The transport is named first: a grant on an HTTP server in a stdio build.
        let error = check(STDIO_ONLY, &http(), Some(&client_secret())).expect("refused");
        assert!(error.contains("`http`"), "{error}");
    }

    #[test]
    fn an_oauth_grant_without_oauth_is_refused_by_name() {
        for authorization in [client_secret(), private_key_jwt()] {
            let error = check(HTTP_ONLY, &http(), Some(&authorization)).expect("refused");
            assert!(
                error.starts_with("authorization_failed: was not sent: an OAuth grant needs the cargo feature `oauth`"),
                "{error}"
            );
        }
    }

    /// A host asks before any call: what a config's server (its secrets still variable
    /// names) needs that a build lacks, and which features a build has.
    #[test]
    fn what_a_server_needs_is_asked_of_a_build_by_name() {
        let config_auth =
            brain_tools_auth::McpAuth::ClientCredentials(brain_tools_auth::ClientCredentials::new(
                "client",
                brain_tools_auth::ClientAuthentication::PrivateKeyJwt {
                    key: "KEY_ENV".to_owned(),
                    algorithm: SigningAlgorithm::Es256,
                },
            ));
        let lacks = |built: Features, stdio: bool, auth| {
            built.lacks(stdio, auth).map(|lacking| lacking.feature)
        };
        assert_eq!(lacks(HTTP_ONLY, true, None), Some("stdio"));
        assert_eq!(lacks(STDIO_ONLY, false, None), Some("http"));
        assert_eq!(lacks(HTTP_ONLY, false, Some(&config_auth)), Some("oauth"));
        assert_eq!(lacks(DEFAULT, false, Some(&config_auth)), Some("oauth-jwt"));
        assert_eq!(lacks(FULL, false, Some(&config_auth)), None);
        assert_eq!(
            HTTP_ONLY.lacks(true, None::<&Grant>).map(|l| l.what),
            Some("a stdio server")
        );
        assert_eq!(
            FULL.names(),
            ["stdio", "http", "oauth", "oauth-jwt", "postgres", "otel"]
        );
        assert_eq!(HTTP_ONLY.names(), ["http"]);
        assert_eq!(Features::COMPILED.stdio, cfg!(feature = "stdio"));
    }

    #[test]
    fn this_build_is_what_its_features_say() {
        assert_eq!(
            check(Features::COMPILED, &http(), None).is_none(),
            cfg!(feature = "http")
        );
        assert_eq!(
            check(Features::COMPILED, &stdio(), None).is_none(),
            cfg!(feature = "stdio")
        );
    }
}
