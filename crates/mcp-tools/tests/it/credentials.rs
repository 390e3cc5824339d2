//! Credentials in URLs stay out of what the binary prints: the user info and query of an
//! OTLP endpoint at `-vvv`, malformed or not.

use std::sync::{Arc, Mutex};

use brain_mcp_testkit::Era;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

use crate::support::{config, discovered, mcp_tools, server};

const PASSWORD: &str = "hunter2-otlp-7c1d";
const QUERY_KEY: &str = "s3cret-query-key-99e2";

/// An OTLP/HTTP collector on loopback that answers every export with 200 and keeps each
/// request's head.
struct Collector {
    port: u16,
    heads: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Collector {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&heads);
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                connections.spawn(serve(stream, Arc::clone(&kept)));
            }
        });
        Self { port, heads, task }
    }
}

/// Serves the requests of one connection.
async fn serve(mut stream: TcpStream, heads: Arc<Mutex<Vec<String>>>) {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let Some(end) = buffer.windows(4).position(|window| window == b"\r\n\r\n") else {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(read) => buffer.extend_from_slice(&chunk[..read]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
        let length = head
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse::<usize>().ok())?
            })
            .unwrap_or(0);
        while buffer.len() < end + 4 + length {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(read) => buffer.extend_from_slice(&chunk[..read]),
            }
        }
        buffer.drain(..end + 4 + length);
        heads.lock().unwrap().push(head);
        let answer =
            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if stream.write_all(answer).await.is_err() {
            return;
        }
    }
}

fn assert_hidden(stderr: &str) {
    for secret in [PASSWORD, QUERY_KEY] {
        assert!(!stderr.contains(secret), "{secret} on stderr:\n{stderr}");
    }
}

/// At `-vvv`, a call exports its spans to an endpoint whose URL holds a user and a
/// password and a query with a key: the collector gets the user info as a Basic header
/// (and the query), and no log line holds the password or the query.
#[tokio::test]
async fn an_otlp_endpoints_user_info_and_query_are_in_no_log_line() {
    let server = server(Era::Modern).await;
    let dir = tempfile::tempdir().unwrap();
    let path = config(&dir, discovered(&server.url(), "echo").await);
    let collector = Collector::start().await;
    let endpoint = format!(
        "http://otel-user:{PASSWORD}@127.0.0.1:{}/?key={QUERY_KEY}",
        collector.port
    );
    let run = mcp_tools(
        &[
            "-vvv",
            "call",
            "--config",
            &path,
            "--tenant",
            "local",
            "--tool",
            "echo",
            "--args",
            r#"{"message": "hi"}"#,
        ],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_METRICS_EXPORTER", "none"),
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("TRACE"), "trace lines were printed");
    assert_hidden(&run.stderr);
    assert_hidden(&run.stdout);
    // The spans went where the URL says, the credentials in the header.
    let heads = collector.heads.lock().unwrap().clone();
    assert!(!heads.is_empty(), "the call's spans were exported");
    use base64::Engine as _;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("otel-user:{PASSWORD}"));
    for head in &heads {
        assert!(
            head.starts_with(&format!("POST /v1/traces?key={QUERY_KEY} HTTP/1.1\r\n")),
            "{head}"
        );
        assert!(
            head.to_ascii_lowercase().contains(&format!(
                "authorization: basic {}",
                basic.to_ascii_lowercase()
            )),
            "{head}"
        );
    }
}

/// A malformed endpoint is named by its variable, and shown without user info or query,
/// at the default log level and at `-vvv`.
#[tokio::test]
async fn a_malformed_otlp_endpoint_is_not_echoed() {
    let endpoint = format!("http://otel-user:{PASSWORD}@[::1/x?key={QUERY_KEY}");
    for verbose in [None, Some("-vvv")] {
        let mut args: Vec<&str> = verbose.into_iter().collect();
        args.extend(["check", "--config", "none.json"]);
        let run = mcp_tools(&args, &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)]).await;
        assert_hidden(&run.stderr);
        assert!(
            run.stderr.contains(
                "OTEL_EXPORTER_OTLP_ENDPOINT is not a usable URL (invalid IPv6 address: http://<redacted>@[::1/x?<redacted>): traces are not exported"
            ),
            "{verbose:?}: {}",
            run.stderr
        );
    }
}
