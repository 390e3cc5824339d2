//! The OpenTelemetry rows: calls with the `otel` feature on and exporting, against the
//! same calls without a pipeline. Spans (`tracing-opentelemetry`, the SDK's batch
//! processor) and metrics (a periodic reader, every second) go over OTLP/HTTP (protobuf)
//! through `ExportHttpClient` to a sink in this process on loopback, which reads every
//! request whole and answers 200: the cost measured is the client's.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use anyhow::Context as _;
use brain_tools::ExportHttpClient;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::{
    metrics::{PeriodicReader, SdkMeterProvider},
    trace::SdkTracerProvider,
};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader},
    net::TcpListener,
};
use tracing_subscriber::{
    Layer as _,
    filter::{LevelFilter, Targets},
    layer::SubscriberExt,
};

/// What the sink received.
#[derive(Debug, Default)]
struct Received {
    requests: AtomicU64,
    bytes: AtomicU64,
}

/// The pipeline, installed for the whole process (one measurement per process).
pub(super) struct Pipeline {
    traces: SdkTracerProvider,
    metrics: SdkMeterProvider,
    received: Arc<Received>,
}

/// An OTLP/HTTP sink on 127.0.0.1: every request read whole (keep-alive), answered 200.
async fn sink() -> anyhow::Result<(String, Arc<Received>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let received = Arc::new(Received::default());
    let counted = Arc::clone(&received);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let counted = Arc::clone(&counted);
            tokio::spawn(async move {
                let mut stream = BufReader::new(stream);
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some((name, value)) = line.split_once(':')
                            && name.eq_ignore_ascii_case("content-length")
                        {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if stream.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    counted.requests.fetch_add(1, Ordering::Relaxed);
                    counted.bytes.fetch_add(length as u64, Ordering::Relaxed);
                    let answer = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if stream.get_mut().write_all(answer).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    Ok((url, received))
}

impl Pipeline {
    /// Installs it (before the host is built: the host's metrics are made on the global
    /// meter provider as it is then). Our spans from `info` up, rmcp's off, as
    /// docs/observability.md says.
    pub(super) async fn install() -> anyhow::Result<Self> {
        let (url, received) = sink().await?;
        let client = ExportHttpClient::new(Duration::from_secs(10))
            .map_err(|error| anyhow::anyhow!("{error}"))?;
        let spans = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client.clone())
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(format!("{url}/v1/traces"))
            .build()
            .context("the span exporter")?;
        let traces = SdkTracerProvider::builder()
            .with_batch_exporter(spans)
            .build();
        let metrics = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(format!("{url}/v1/metrics"))
            .build()
            .context("the metric exporter")?;
        let metrics = SdkMeterProvider::builder()
            .with_reader(
                PeriodicReader::builder(metrics)
                    .with_interval(Duration::from_secs(1))
                    .build(),
            )
            .build();
        opentelemetry::global::set_meter_provider(metrics.clone());
        let filter = Targets::new()
            .with_default(LevelFilter::INFO)
            .with_target("rmcp", LevelFilter::OFF);
        let subscriber = tracing_subscriber::registry().with(
            tracing_opentelemetry::layer()
                .with_tracer(traces.tracer("brain-bench"))
                .with_location(false)
                .with_threads(false)
                .with_tracked_inactivity(false)
                .with_filter(filter),
        );
        tracing::subscriber::set_global_default(subscriber)
            .context("a subscriber was already installed")?;
        Ok(Self {
            traces,
            metrics,
            received,
        })
    }

    /// Exports what is left, and says what the sink received.
    pub(super) async fn finish(self, line: &mut Value) -> anyhow::Result<()> {
        let Self {
            traces,
            metrics,
            received,
        } = self;
        tokio::task::spawn_blocking(move || {
            let _ = traces.shutdown();
            let _ = metrics.shutdown();
        })
        .await?;
        line["otlp_requests"] = json!(received.requests.load(Ordering::Relaxed));
        line["otlp_bytes"] = json!(received.bytes.load(Ordering::Relaxed));
        anyhow::ensure!(
            received.requests.load(Ordering::Relaxed) > 0,
            "nothing was exported"
        );
        Ok(())
    }
}
