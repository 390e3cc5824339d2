//! The `gateway` object: how the config's tools are served to MCP clients. Every problem
//! is reported with its path (`gateway.issuers[0].issuer`), as for bindings.

use std::collections::HashMap;

use serde_json::Value;

use super::{Fields, Loader, auth::UrlRule, suggest, type_name};
use crate::{
    error::Problem,
    gateway::{GatewayConfig, GatewayIssuer, GatewayLimits, GatewayTls},
    path::Path,
};

const GATEWAY_FIELDS: &[&str] = &[
    "resource",
    "listen",
    "issuers",
    "tenant_claim",
    "scopes",
    "api_keys",
    "allowed_origins",
    "allowed_hosts",
    "tls",
    "limits",
];
const ISSUER_FIELDS: &[&str] = &["issuer", "jwks_uri"];
const TLS_FIELDS: &[&str] = &["cert", "key"];
const LIMIT_FIELDS: &[&str] = &[
    "calls_in_flight_per_tenant",
    "requests_per_minute_per_tenant",
    "max_body_bytes",
    "header_timeout_seconds",
    "idle_timeout_seconds",
    "max_connections",
    "drain_seconds",
    "drain_notice_seconds",
];

impl Loader<'_> {
    /// The `gateway` object, when the config has one; `None` when absent or reported.
    pub(super) fn gateway(&mut self, value: Option<&Value>) -> Option<GatewayConfig> {
        let value = value?;
        let fields = self.object(
            &Path::root().key("gateway"),
            value,
            "the gateway",
            GATEWAY_FIELDS,
        )?;
        let errors_before = self.errors.len();
        let issuers = self.issuers(&fields);
        let resource = self.auth_url(&fields, "resource", UrlRule::Endpoint);
        let listen = self.listen(&fields);
        let tenant_claim = self
            .non_empty_string(&fields, "tenant_claim")
            .map(|claim| claim.unwrap_or_else(|| "tenant".to_owned()));
        let scopes = if fields
            .object
            .get("scopes")
            .is_some_and(|v| v.as_array().is_some_and(Vec::is_empty))
        {
            Some(Vec::new())
        } else {
            self.scopes(&fields)
        };
        let api_keys = self.non_empty_string(&fields, "api_keys");
        let allowed_origins = self.unique_strings(&fields, "allowed_origins", |origin| {
            is_origin(origin).then_some(()).ok_or(Problem::BadOrigin)
        });
        let allowed_hosts = self.unique_strings(&fields, "allowed_hosts", |host| {
            (!host.is_empty() && !host.contains(['/', ' ']))
                .then_some(())
                .ok_or(Problem::WrongType {
                    expected: "a host name (with its port, if any)",
                    found: "something else",
                })
        });
        let tls = self.tls(&fields);
        let limits = self.limits(&fields);
        let (
            Some(issuers),
            Some(resource),
            Some(listen),
            Some(tenant_claim),
            Some(scopes),
            Some(api_keys),
            Some(tls),
            Some(limits),
        ) = (
            issuers,
            resource,
            listen,
            tenant_claim,
            scopes,
            api_keys,
            tls,
            limits,
        )
        else {
            return None;
        };
        if issuers.is_empty() && api_keys.is_none() {
            self.error(&fields.path, None, Problem::NoCallerIdentity);
        }
        if !issuers.is_empty() && resource.is_none() {
            self.error(
                &fields.at("resource"),
                None,
                Problem::Missing {
                    what: "the URL clients reach the gateway at (the audience its access tokens must name), e.g. \"https://gw.example.com/mcp\"",
                },
            );
        }
        if self.errors.len() > errors_before {
            return None;
        }
        Some(GatewayConfig {
            resource,
            listen,
            issuers,
            tenant_claim,
            scopes,
            api_keys,
            allowed_origins: allowed_origins?,
            allowed_hosts: allowed_hosts?,
            tls,
            limits,
        })
    }

    /// An object with only `allowed` fields (every other one reported).
    fn object<'o>(
        &mut self,
        path: &Path,
        value: &'o Value,
        what: &'static str,
        allowed: &'static [&'static str],
    ) -> Option<Fields<'o>> {
        let Value::Object(object) = value else {
            self.error(
                path,
                None,
                Problem::WrongType {
                    expected: "an object",
                    found: type_name(value),
                },
            );
            return None;
        };
        for key in object.keys() {
            if !allowed.contains(&key.as_str()) {
                self.error(
                    &path.key(key),
                    None,
                    Problem::UnknownField {
                        object: what,
                        suggestion: suggest(key, allowed),
                        allowed,
                    },
                );
            }
        }
        Some(Fields {
            path: path.clone(),
            object,
            tool: None,
        })
    }

    fn issuers(&mut self, fields: &Fields<'_>) -> Option<Vec<GatewayIssuer>> {
        let path = fields.at("issuers");
        let items = match fields.object.get("issuers") {
            None => return Some(Vec::new()),
            Some(Value::Array(items)) => items,
            Some(other) => {
                self.error(
                    &path,
                    None,
                    Problem::WrongType {
                        expected: "an array of issuers",
                        found: type_name(other),
                    },
                );
                return None;
            }
        };
        let mut issuers = Vec::with_capacity(items.len());
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut ok = true;
        for (index, item) in items.iter().enumerate() {
            let path = path.index(index);
            let Some(issuer) = self.object(&path, item, "an issuer", ISSUER_FIELDS) else {
                ok = false;
                continue;
            };
            let identifier = self.required_url(
                &issuer,
                "issuer",
                "the issuer identifier (the iss of its tokens)",
                UrlRule::Issuer,
            );
            let jwks_uri = self.auth_url(&issuer, "jwks_uri", UrlRule::Endpoint);
            match (identifier, jwks_uri) {
                (Some(identifier), Some(jwks_uri)) => {
                    if let Some(&first) = seen.get(&identifier) {
                        self.error(&issuer.at("issuer"), None, Problem::Repeated { first });
                        ok = false;
                        continue;
                    }
                    seen.insert(identifier.clone(), index);
                    issuers.push(GatewayIssuer {
                        issuer: identifier,
                        jwks_uri,
                    });
                }
                _ => ok = false,
            }
        }
        ok.then_some(issuers)
    }

    fn listen(&mut self, fields: &Fields<'_>) -> Option<Option<String>> {
        let listen = self.non_empty_string(fields, "listen")?;
        match listen {
            Some(address) if address.parse::<std::net::SocketAddr>().is_err() => {
                self.error(&fields.at("listen"), None, Problem::BadListenAddress);
                None
            }
            other => Some(other),
        }
    }

    /// An optional array of unique strings, each as `check` says.
    fn unique_strings(
        &mut self,
        fields: &Fields<'_>,
        field: &str,
        check: impl Fn(&str) -> Result<(), Problem>,
    ) -> Option<Vec<String>> {
        let errors_before = self.errors.len();
        let list = self.string_list(fields, field);
        let path = fields.at(field);
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (index, item) in list.iter().enumerate() {
            if let Err(problem) = check(item) {
                self.error(&path.index(index), None, problem);
            } else if let Some(&first) = seen.get(item.as_str()) {
                self.error(&path.index(index), None, Problem::Repeated { first });
            } else {
                seen.insert(item, index);
            }
        }
        (self.errors.len() == errors_before).then_some(list)
    }

    fn tls(&mut self, fields: &Fields<'_>) -> Option<Option<GatewayTls>> {
        let Some(value) = fields.object.get("tls") else {
            return Some(None);
        };
        let tls = self.object(&fields.at("tls"), value, "the tls object", TLS_FIELDS)?;
        let mut file = |field: &str, what: &'static str| {
            if !tls.object.contains_key(field) {
                self.error(&tls.at(field), None, Problem::Missing { what });
                return None;
            }
            self.non_empty_string(&tls, field)?
        };
        let cert = file("cert", "the certificate chain's file (PEM)");
        let key = file("key", "the private key's file (PEM)");
        Some(Some(GatewayTls {
            cert: cert?,
            key: key?,
        }))
    }

    fn limits(&mut self, fields: &Fields<'_>) -> Option<GatewayLimits> {
        let defaults = GatewayLimits::default();
        let Some(value) = fields.object.get("limits") else {
            return Some(defaults);
        };
        let limits = self.object(
            &fields.at("limits"),
            value,
            "the limits object",
            LIMIT_FIELDS,
        )?;
        let mut number = |field: &str, min: u64, max: u64, default: u64| {
            self.integer(&limits, field, min, max, default)
        };
        let calls_in_flight_per_tenant = number(
            "calls_in_flight_per_tenant",
            1,
            100_000,
            defaults.calls_in_flight_per_tenant,
        );
        let requests_per_minute_per_tenant = number(
            "requests_per_minute_per_tenant",
            1,
            10_000_000,
            defaults.requests_per_minute_per_tenant,
        );
        let max_body_bytes = number("max_body_bytes", 1024, 64 << 20, defaults.max_body_bytes);
        let header_timeout_seconds = number(
            "header_timeout_seconds",
            1,
            300,
            defaults.header_timeout_seconds,
        );
        let idle_timeout_seconds = number(
            "idle_timeout_seconds",
            1,
            3600,
            defaults.idle_timeout_seconds,
        );
        let max_connections = number("max_connections", 1, 100_000, defaults.max_connections);
        let drain_seconds = number("drain_seconds", 0, 3600, defaults.drain_seconds);
        let drain_notice_seconds = number(
            "drain_notice_seconds",
            0,
            300,
            defaults.drain_notice_seconds,
        );
        Some(GatewayLimits {
            calls_in_flight_per_tenant: calls_in_flight_per_tenant?,
            requests_per_minute_per_tenant: requests_per_minute_per_tenant?,
            max_body_bytes: max_body_bytes?,
            header_timeout_seconds: header_timeout_seconds?,
            idle_timeout_seconds: idle_timeout_seconds?,
            max_connections: max_connections?,
            drain_seconds: drain_seconds?,
            drain_notice_seconds: drain_notice_seconds?,
        })
    }
}

/// `scheme://host[:port]`, nothing else (an origin as a browser sends it).
fn is_origin(text: &str) -> bool {
    let Ok(url) = url::Url::parse(text) else {
        return false;
    };
    matches!(url.scheme(), "http" | "https")
        && url.host_str().is_some_and(|host| !host.is_empty())
        && url.path() == "/"
        && !text.ends_with('/')
        && url.query().is_none()
        && url.fragment().is_none()
        && url.username().is_empty()
        && url.password().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_scheme_host_and_port() {
        for (text, ok) in [
            ("https://app.example.com", true),
            ("http://localhost:5173", true),
            ("https://app.example.com/", false),
            ("https://app.example.com/path", false),
            ("app.example.com", false),
            ("ftp://app.example.com", false),
            ("https://user@app.example.com", false),
        ] {
            assert_eq!(is_origin(text), ok, "{text}");
        }
    }
}
