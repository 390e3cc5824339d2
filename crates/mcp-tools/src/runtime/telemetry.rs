//! OpenTelemetry for the binary (feature `otel`, on by default): spans and metrics over
//! OTLP/HTTP (protobuf), configured by the standard `OTEL_*` environment variables, and
//! nothing at all unless an endpoint is set. See
//! [docs/observability.md](https://github.com/brain-dev/brain-mcp-tools/blob/main/docs/observability.md#mcp-tools).
//!
//! Honoured: `OTEL_SDK_DISABLED`, `OTEL_TRACES_EXPORTER` and `OTEL_METRICS_EXPORTER`
//! (`otlp` or `none`), `OTEL_EXPORTER_OTLP_ENDPOINT` and the per-signal
//! `OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT`, `..._PROTOCOL` (`http/protobuf`),
//! `..._HEADERS`, `..._TIMEOUT`, `..._COMPRESSION` (none here), `OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`, `OTEL_METRIC_EXPORT_INTERVAL`.
//! Unlike the SDK, no endpoint means no export (not `localhost:4318`).

use std::time::Duration;

#[cfg(any(feature = "otel", test))]
use crate::runtime::output::escape::redacted_url;

/// How long exporting what is left may hold the process's exit, after the command has
/// printed its outcome.
pub(crate) const FLUSH_BOUND: Duration = Duration::from_secs(2);

/// Whether a signal is exported, from the environment.
#[cfg(any(feature = "otel", test))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Signal {
    /// Exported over OTLP/HTTP to the configured endpoint.
    Export(Endpoint),
    /// Not exported: nothing configured, or turned off.
    Off,
    /// Not exported: the configuration asks for what this binary cannot do (the warning).
    Unsupported(String),
}

/// Where a signal goes: the URL of its requests, without user info, and the user info
/// as the value of an `Authorization: Basic` header. So no URL the HTTP client sees (nor
/// its connection pool, which logs its key at trace level, nor an error) holds a
/// password. Its `Debug` shows neither.
#[cfg(any(feature = "otel", test))]
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    pub(crate) url: String,
    pub(crate) authorization: Option<String>,
}

#[cfg(any(feature = "otel", test))]
impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("url", &redacted_url(&self.url))
            .field(
                "authorization",
                &self.authorization.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// The endpoint of a signal from a variable's `value`; `path` (`v1/traces`) is appended
/// to the path of the general endpoint, as the specification says, and not to a signal's
/// own. `Err`: why it is not a usable URL, without the value (it may hold a password).
#[cfg(any(feature = "otel", test))]
fn endpoint(value: &str, path: Option<&str>) -> Result<Endpoint, String> {
    use base64::Engine as _;
    let mut url = url::Url::parse(value).map_err(|error| error.to_string())?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("not an http or https URL".to_owned());
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("no host".to_owned());
    }
    if let Some(path) = path {
        let joined = format!("{}/{path}", url.path().trim_end_matches('/'));
        url.set_path(&joined);
    }
    let authorization = if url.username().is_empty() && url.password().is_none() {
        None
    } else {
        let credentials = format!(
            "{}:{}",
            percent_decoded(url.username()),
            percent_decoded(url.password().unwrap_or_default())
        );
        // Both succeed on a URL with a host.
        let _ = url.set_username("");
        let _ = url.set_password(None);
        Some(format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(credentials)
        ))
    };
    Ok(Endpoint {
        url: url.into(),
        authorization,
    })
}

/// `text` with its `%XX` escapes decoded (user info in a URL is percent-encoded).
#[cfg(any(feature = "otel", test))]
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let escaped = (bytes[at] == b'%')
            .then(|| text.get(at + 1..at + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                at += 3;
            }
            None => {
                out.push(bytes[at]);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What to export, from the environment (`env` reads a variable).
#[cfg(any(feature = "otel", test))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    pub(crate) traces: Signal,
    pub(crate) metrics: Signal,
}

/// The OTLP exporters' protocol values this binary speaks.
#[cfg(any(feature = "otel", test))]
const PROTOBUF: &str = "http/protobuf";

#[cfg(any(feature = "otel", test))]
pub(crate) fn plan(env: impl Fn(&str) -> Option<String>) -> Plan {
    let set = |name: &str| {
        env(name)
            .map(|value| value.trim().to_owned())
            .filter(|value| !value.is_empty())
    };
    if set("OTEL_SDK_DISABLED").is_some_and(|value| value.eq_ignore_ascii_case("true")) {
        return Plan {
            traces: Signal::Off,
            metrics: Signal::Off,
        };
    }
    let signal = |exporter: &str, signal: &str| -> Signal {
        match set(exporter)
            .as_deref()
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            None | Some("otlp") => {}
            Some("none") => return Signal::Off,
            Some(other) => {
                return Signal::Unsupported(format!(
                    "{exporter}={other} is not supported (otlp or none): {} are not exported",
                    signal.to_ascii_lowercase()
                ));
            }
        }
        let upper = signal.to_ascii_uppercase();
        let own = format!("OTEL_EXPORTER_OTLP_{upper}_ENDPOINT");
        let (endpoint_variable, value, path) = match set(&own) {
            Some(value) => (own, value, None),
            None => match set("OTEL_EXPORTER_OTLP_ENDPOINT") {
                Some(value) => (
                    "OTEL_EXPORTER_OTLP_ENDPOINT".to_owned(),
                    value,
                    Some(format!("v1/{}", signal.to_ascii_lowercase())),
                ),
                None => return Signal::Off,
            },
        };
        let protocol_variable = format!("OTEL_EXPORTER_OTLP_{upper}_PROTOCOL");
        let (variable, protocol) = match set(&protocol_variable) {
            Some(protocol) => (protocol_variable, Some(protocol)),
            None => (
                "OTEL_EXPORTER_OTLP_PROTOCOL".to_owned(),
                set("OTEL_EXPORTER_OTLP_PROTOCOL"),
            ),
        };
        match protocol.as_deref() {
            None | Some(PROTOBUF) => {}
            Some(other) => {
                return Signal::Unsupported(format!(
                    "{variable}={other} is not supported (only {PROTOBUF}): {} are not exported",
                    signal.to_ascii_lowercase()
                ));
            }
        }
        // The value is shown without user info and query: a malformed URL may hold a
        // password as well as a valid one.
        match endpoint(&value, path.as_deref()) {
            Ok(endpoint) => Signal::Export(endpoint),
            Err(why) => Signal::Unsupported(format!(
                "{endpoint_variable} is not a usable URL ({why}: {}): {} are not exported",
                redacted_url(&value),
                signal.to_ascii_lowercase()
            )),
        }
    };
    Plan {
        traces: signal("OTEL_TRACES_EXPORTER", "traces"),
        metrics: signal("OTEL_METRICS_EXPORTER", "metrics"),
    }
}

#[cfg(feature = "otel")]
pub(crate) use self::pipeline::Telemetry;

/// Without the feature: nothing is exported, whatever the environment says.
#[cfg(not(feature = "otel"))]
#[derive(Debug, Default)]
pub(crate) struct Telemetry;

#[cfg(not(feature = "otel"))]
impl Telemetry {
    pub(crate) fn from_env() -> Self {
        Self
    }

    pub(crate) fn layer(&self) -> Option<crate::runtime::logs::BoxedLayer> {
        None
    }

    pub(crate) fn warnings(&self) -> &[String] {
        &[]
    }

    pub(crate) fn shutdown(self, _bound: Duration) {}
}

#[cfg(feature = "otel")]
mod pipeline {
    use std::{collections::HashMap, sync::mpsc, time::Duration};

    use brain_tools::ExportHttpClient;
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
    use opentelemetry_sdk::{Resource, metrics::SdkMeterProvider, trace::SdkTracerProvider};
    use tracing_subscriber::{
        Layer,
        filter::{LevelFilter, Targets},
    };

    use super::{Endpoint, Plan, Signal, plan};
    use crate::runtime::{logs::BoxedLayer, output::escape::redacted_url};

    /// The exporters' providers, when something is exported.
    #[derive(Debug, Default)]
    pub(crate) struct Telemetry {
        traces: Option<SdkTracerProvider>,
        metrics: Option<SdkMeterProvider>,
        warnings: Vec<String>,
    }

    /// The request timeout of the exporters (`OTEL_EXPORTER_OTLP_TIMEOUT`, milliseconds;
    /// 10 s by default, as the specification says).
    fn timeout() -> Duration {
        std::env::var("OTEL_EXPORTER_OTLP_TIMEOUT")
            .ok()
            .and_then(|ms| ms.trim().parse::<u64>().ok())
            .map_or(Duration::from_secs(10), Duration::from_millis)
    }

    /// `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`, else the service is `mcp-tools`.
    fn resource() -> Resource {
        let named = std::env::var_os("OTEL_SERVICE_NAME").is_some_and(|name| !name.is_empty())
            || std::env::var("OTEL_RESOURCE_ATTRIBUTES")
                .is_ok_and(|attributes| attributes.contains("service.name="));
        let builder = Resource::builder().with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ));
        if named {
            builder.build()
        } else {
            builder.with_service_name("mcp-tools").build()
        }
    }

    /// The exporter's headers beside those of `OTEL_EXPORTER_OTLP_HEADERS` (which win):
    /// the endpoint's user info, as `Authorization: Basic`.
    fn headers(endpoint: &Endpoint) -> HashMap<String, String> {
        endpoint
            .authorization
            .iter()
            .map(|value| ("authorization".to_owned(), value.clone()))
            .collect()
    }

    /// An exporter's error without the endpoint's query (which may hold a key).
    fn hidden(error: &str, endpoint: &Endpoint) -> String {
        error.replace(&endpoint.url, &redacted_url(&endpoint.url))
    }

    impl Telemetry {
        /// The pipeline the environment asks for. Must run on the tokio runtime the
        /// commands run on (the exporters' HTTP requests run there); the providers are
        /// set as the global ones before any client is built.
        pub(crate) fn from_env() -> Self {
            let Plan { traces, metrics } = plan(|name| std::env::var(name).ok());
            let mut telemetry = Self::default();
            for signal in [&traces, &metrics] {
                if let Signal::Unsupported(warning) = signal {
                    telemetry.warnings.push(warning.clone());
                }
            }
            if !matches!(traces, Signal::Export(_)) && !matches!(metrics, Signal::Export(_)) {
                return telemetry;
            }
            let client = match ExportHttpClient::new(timeout()) {
                Ok(client) => client,
                Err(error) => {
                    telemetry
                        .warnings
                        .push(format!("telemetry is not exported: {error}"));
                    return telemetry;
                }
            };
            let resource = resource();
            if let Signal::Export(endpoint) = &traces {
                match opentelemetry_otlp::SpanExporter::builder()
                    .with_http()
                    .with_http_client(client.clone())
                    .with_protocol(Protocol::HttpBinary)
                    .with_endpoint(endpoint.url.clone())
                    .with_headers(headers(endpoint))
                    .build()
                {
                    Ok(exporter) => {
                        telemetry.traces = Some(
                            SdkTracerProvider::builder()
                                .with_batch_exporter(exporter)
                                .with_resource(resource.clone())
                                .build(),
                        );
                    }
                    Err(error) => telemetry.warnings.push(format!(
                        "traces are not exported: {}",
                        hidden(&error.to_string(), endpoint)
                    )),
                }
            }
            if let Signal::Export(endpoint) = &metrics {
                match opentelemetry_otlp::MetricExporter::builder()
                    .with_http()
                    .with_http_client(client)
                    .with_protocol(Protocol::HttpBinary)
                    .with_endpoint(endpoint.url.clone())
                    .with_headers(headers(endpoint))
                    .build()
                {
                    Ok(exporter) => {
                        let provider = SdkMeterProvider::builder()
                            .with_periodic_exporter(exporter)
                            .with_resource(resource)
                            .build();
                        opentelemetry::global::set_meter_provider(provider.clone());
                        telemetry.metrics = Some(provider);
                    }
                    Err(error) => telemetry.warnings.push(format!(
                        "metrics are not exported: {}",
                        hidden(&error.to_string(), endpoint)
                    )),
                }
            }
            telemetry
        }

        /// What could not be set up as asked, one line each.
        pub(crate) fn warnings(&self) -> &[String] {
            &self.warnings
        }

        /// The layer that makes spans OpenTelemetry spans, when traces are exported: our
        /// spans and events from `info` up; rmcp's never (they log whole messages). No
        /// source locations, threads or timings of the process's own.
        pub(crate) fn layer(&self) -> Option<BoxedLayer> {
            let provider = self.traces.as_ref()?;
            let filter = Targets::new()
                .with_default(LevelFilter::INFO)
                .with_target("rmcp", LevelFilter::OFF);
            Some(
                tracing_opentelemetry::layer()
                    .with_tracer(provider.tracer("mcp-tools"))
                    .with_location(false)
                    .with_threads(false)
                    .with_target(false)
                    .with_tracked_inactivity(false)
                    .with_filter(filter)
                    .boxed(),
            )
        }

        /// Exports what is left and stops the exporters, within `bound`: the process
        /// exits then whether the collector answered or not. Call it off the runtime's
        /// threads, with the runtime still running (the exports run on it).
        pub(crate) fn shutdown(self, bound: Duration) {
            if self.traces.is_none() && self.metrics.is_none() {
                return;
            }
            let (done, finished) = mpsc::channel();
            let spawned = std::thread::Builder::new()
                .name("otel-flush".to_owned())
                .spawn(move || {
                    if let Some(traces) = self.traces {
                        let _ = traces.shutdown_with_timeout(bound);
                    }
                    if let Some(metrics) = self.metrics {
                        let _ = metrics.shutdown();
                    }
                    let _ = done.send(());
                });
            if spawned.is_ok() {
                let _ = finished.recv_timeout(bound);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn export(url: &str) -> Signal {
        Signal::Export(Endpoint {
            url: url.to_owned(),
            authorization: None,
        })
    }

    fn check(env: &[(&str, &str)], traces: Signal, metrics: Signal) {
        let found = plan(|name| {
            env.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        });
        assert_eq!(found, Plan { traces, metrics }, "{env:?}");
    }

    #[test]
    fn nothing_is_exported_without_an_endpoint_and_the_standard_variables_choose() {
        use Signal::Off;
        let base = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
        #[allow(non_snake_case)]
        let Export = || export("http://127.0.0.1:4318/v1/traces");
        #[allow(non_snake_case)]
        let Metrics = || export("http://127.0.0.1:4318/v1/metrics");
        check(&[], Off, Off);
        check(&[("OTEL_SERVICE_NAME", "host")], Off, Off);
        check(&[base], Export(), Metrics());
        check(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")], Off, Off);
        check(&[base, ("OTEL_SDK_DISABLED", "true")], Off, Off);
        check(&[base, ("OTEL_SDK_DISABLED", "TRUE")], Off, Off);
        check(&[base, ("OTEL_SDK_DISABLED", "false")], Export(), Metrics());
        check(&[base, ("OTEL_TRACES_EXPORTER", "none")], Off, Metrics());
        check(&[base, ("OTEL_METRICS_EXPORTER", "none")], Export(), Off);
        check(
            &[base, ("OTEL_TRACES_EXPORTER", "otlp")],
            Export(),
            Metrics(),
        );
        check(
            &[(
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://127.0.0.1:1/v1/traces",
            )],
            export("http://127.0.0.1:1/v1/traces"),
            Off,
        );
        check(
            &[(
                "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
                "http://127.0.0.1:1/v1/metrics",
            )],
            Off,
            export("http://127.0.0.1:1/v1/metrics"),
        );
        check(
            &[base, ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")],
            Export(),
            Metrics(),
        );
        check(
            &[base, ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")],
            Signal::Unsupported(
                "OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported (only http/protobuf): traces are not exported".into(),
            ),
            Signal::Unsupported(
                "OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported (only http/protobuf): metrics are not exported".into(),
            ),
        );
        check(
            &[
                base,
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
            ],
            Export(),
            Signal::Unsupported(
                "OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported (only http/protobuf): metrics are not exported".into(),
            ),
        );
        check(
            &[base, ("OTEL_TRACES_EXPORTER", "console")],
            Signal::Unsupported(
                "OTEL_TRACES_EXPORTER=console is not supported (otlp or none): traces are not exported".into(),
            ),
            Metrics(),
        );
    }

    #[test]
    fn user_info_becomes_a_basic_header_and_a_bad_url_is_not_echoed() {
        // user:pa ss@ (percent-encoded), and a query kept in the request URL.
        let with_user = export("http://127.0.0.1:4318/v1/traces?tenant=a");
        let mut with_user = match with_user {
            Signal::Export(endpoint) => endpoint,
            other => panic!("{other:?}"),
        };
        with_user.authorization = Some("Basic dXNlcjpwYSBzcw==".into());
        check(
            &[
                (
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    "http://user:pa%20ss@127.0.0.1:4318/v1/traces?tenant=a",
                ),
                ("OTEL_METRICS_EXPORTER", "none"),
            ],
            Signal::Export(with_user.clone()),
            Signal::Off,
        );
        let shown = format!("{with_user:?}");
        assert!(
            !shown.contains("dXNlcjpwYSBzcw") && !shown.contains("tenant=a"),
            "{shown}"
        );
        // The general endpoint gets the signal's path, a slash between, before its query.
        check(
            &[(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "https://collector.example/otlp/?k=v",
            )],
            export("https://collector.example/otlp/v1/traces?k=v"),
            export("https://collector.example/otlp/v1/metrics?k=v"),
        );
        let bad = |what: &str, signal: &str| {
            Signal::Unsupported(format!(
                "OTEL_EXPORTER_OTLP_ENDPOINT is not a usable URL ({what}: http://<redacted>@[::1/x?<redacted>): {signal} are not exported"
            ))
        };
        check(
            &[(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "http://user:hunter2@[::1/x?key=s3cret",
            )],
            bad("invalid IPv6 address", "traces"),
            bad("invalid IPv6 address", "metrics"),
        );
        check(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://collector"),
                ("OTEL_METRICS_EXPORTER", "none"),
            ],
            Signal::Unsupported(
                "OTEL_EXPORTER_OTLP_ENDPOINT is not a usable URL (not an http or https URL: ftp://collector): traces are not exported".into(),
            ),
            Signal::Off,
        );
    }
}
