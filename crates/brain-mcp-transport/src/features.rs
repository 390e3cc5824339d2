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

/// What a build has (its cargo features), as data: the check below is pure, and its
/// tests cover every build, whatever features they are compiled with.
#[derive(Debug, Clone, Copy)]
struct Built {
    http: bool,
    stdio: bool,
    oauth: bool,
    oauth_jwt: bool,
}

/// This build.
const BUILT: Built = Built {
    http: cfg!(feature = "http"),
    stdio: cfg!(feature = "stdio"),
    oauth: cfg!(feature = "oauth"),
    oauth_jwt: cfg!(feature = "oauth-jwt"),
};

/// Whether this build can reach `endpoint` with `authorization`; the error names the
/// missing feature. Checked where a request becomes a client operation (`call`,
/// `discover`, and so `authorize`), before any network or process work.
pub(crate) fn check(
    endpoint: &Endpoint,
    authorization: Option<&Authorization>,
) -> Result<(), CallError> {
    check_in(BUILT, endpoint, authorization)
}

fn check_in(
    built: Built,
    endpoint: &Endpoint,
    authorization: Option<&Authorization>,
) -> Result<(), CallError> {
    match endpoint {
        Endpoint::Http(_) if !built.http => {
            return Err(missing(ErrorKind::Connect, "an HTTP server", "http"));
        }
        Endpoint::Stdio(_) if !built.stdio => {
            return Err(missing(ErrorKind::Connect, "a stdio server", "stdio"));
        }
        _ => {}
    }
    let Some(authorization) = authorization else {
        return Ok(());
    };
    if !built.oauth {
        return Err(missing(
            ErrorKind::AuthorizationFailed,
            "an OAuth grant",
            "oauth",
        ));
    }
    if !built.oauth_jwt && uses_private_key_jwt(authorization) {
        return Err(missing(
            ErrorKind::AuthorizationFailed,
            "private_key_jwt client authentication",
            "oauth-jwt",
        ));
    }
    Ok(())
}

fn uses_private_key_jwt(authorization: &Authorization) -> bool {
    matches!(
        &authorization.grant,
        crate::grant::Grant::ClientCredentials(grant)
            if matches!(grant.authentication, crate::grant::ClientAuthentication::PrivateKeyJwt { .. })
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        grant::{ClientAuthentication, ClientCredentialsGrant, Grant, SigningAlgorithm},
        secret::Secret,
    };

    const FULL: Built = Built {
        http: true,
        stdio: true,
        oauth: true,
        oauth_jwt: true,
    };
    /// The default build: no `oauth-jwt`.
    const DEFAULT: Built = Built {
        oauth_jwt: false,
        ..FULL
    };
    const STDIO_ONLY: Built = Built {
        http: false,
        stdio: true,
        oauth: false,
        oauth_jwt: false,
    };
    const HTTP_ONLY: Built = Built {
        stdio: false,
        oauth: false,
        oauth_jwt: false,
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
        built: Built,
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

    #[test]
    fn this_build_is_what_its_features_say() {
        assert_eq!(
            check(BUILT, &http(), None).is_none(),
            cfg!(feature = "http")
        );
        assert_eq!(
            check(BUILT, &stdio(), None).is_none(),
            cfg!(feature = "stdio")
        );
    }
}
