//! How a client reaches servers: a private CA's roots, a client certificate (mutual
//! TLS) and a proxy, through real TLS in front of the testkit.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use brain_mcp_testkit::{Era, ServerOptions, TestServer, Tls};
use brain_mcp_transport::{
    ClientOptions, Delivery, Endpoint, EraPreference, ErrorKind, McpClient, Secret,
};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use serde_json::json;
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    net::{TcpListener, TcpStream},
};

use crate::support::{request, run};

/// A private CA, a server certificate for `localhost`, and a client certificate.
struct Pki {
    ca: String,
    server: (String, String),
    client: (String, String),
}

fn pki() -> Pki {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().unwrap();
    let issuer = CertifiedIssuer::self_signed(ca, ca_key).unwrap();
    let leaf = |names: Vec<String>| {
        let key = KeyPair::generate().unwrap();
        let certificate = CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        (certificate.pem(), key.serialize_pem())
    };
    Pki {
        ca: issuer.pem(),
        server: leaf(vec!["localhost".into()]),
        client: leaf(vec!["brain-host".into()]),
    }
}

/// TLS in front of `target`, asking every client for a certificate signed by the CA.
async fn tls_front(pki: &Pki, target: String) -> u16 {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(pki.ca.as_bytes()).unwrap())
        .unwrap();
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(pki.server.0.as_bytes()).unwrap()],
            PrivateKeyDer::from_pem_slice(pki.server.1.as_bytes()).unwrap(),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let (acceptor, target) = (acceptor.clone(), target.clone());
            tokio::spawn(async move {
                if let Ok(mut tls) = acceptor.accept(socket).await
                    && let Ok(mut upstream) = TcpStream::connect(&target).await
                {
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut upstream).await;
                }
            });
        }
    });
    port
}

/// An HTTP CONNECT proxy on loopback that counts the tunnels it opened.
async fn connect_proxy() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let tunnels = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&tunnels);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let counted = Arc::clone(&counted);
            tokio::spawn(async move {
                let mut reader = BufReader::new(socket);
                let mut line = String::new();
                reader.read_line(&mut line).await.ok()?;
                let target = line.strip_prefix("CONNECT ")?.split(' ').next()?.to_owned();
                loop {
                    let mut header = String::new();
                    reader.read_line(&mut header).await.ok()?;
                    if header == "\r\n" || header.is_empty() {
                        break;
                    }
                }
                let target = target.replace("localhost", "127.0.0.1");
                let mut upstream = TcpStream::connect(target).await.ok()?;
                let mut client = reader.into_inner();
                client
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await
                    .ok()?;
                counted.fetch_add(1, Ordering::SeqCst);
                tokio::io::copy_bidirectional(&mut client, &mut upstream)
                    .await
                    .ok()
            });
        }
    });
    (port, tunnels)
}

fn options(_: &Pki) -> ClientOptions {
    ClientOptions::default()
        .era(EraPreference::Modern)
        .warm_contexts(false)
        .no_proxy()
}

#[tokio::test]
async fn a_private_ca_a_client_certificate_and_a_proxy() {
    let server = TestServer::start(ServerOptions {
        era: Era::Modern,
        ..ServerOptions::default()
    })
    .await
    .unwrap();
    let target = server
        .url()
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let pki = pki();
    let port = tls_front(&pki, target).await;
    let endpoint = Endpoint::http(format!("https://localhost:{port}/mcp"), None);
    let call = |client: McpClient| {
        let endpoint = endpoint.clone();
        async move {
            run(
                &client,
                request(
                    &endpoint,
                    "echo",
                    json!({"message": "over tls"}),
                    "c1",
                    std::time::Duration::from_secs(10),
                ),
            )
            .await
        }
    };
    let identity = || {
        options(&pki)
            .root_certificates_pem(pki.ca.clone())
            .client_certificate_pem(pki.client.0.clone(), Secret::new(pki.client.1.clone()))
    };

    // The CA trusted and a client certificate presented: the call goes.
    let ran = call(McpClient::new(identity()).unwrap()).await;
    assert_eq!(ran.text(), "over tls");

    // Without the CA among the roots, the server's certificate is not trusted; without a
    // client certificate, the server refuses the connection: nothing is sent either way.
    for options in [
        options(&pki)
            .client_certificate_pem(pki.client.0.clone(), Secret::new(pki.client.1.clone())),
        options(&pki).root_certificates_pem(pki.ca.clone()),
    ] {
        let ran = call(McpClient::new(options).unwrap()).await;
        let error = ran.error();
        assert_eq!(error.kind(), ErrorKind::Connect, "{error}");
    }

    // Through a proxy: the connection is a CONNECT tunnel to the server.
    let (proxy, tunnels) = connect_proxy().await;
    let proxied = identity().proxy(format!("http://127.0.0.1:{proxy}"));
    let ran = call(McpClient::new(proxied).unwrap()).await;
    assert_eq!(ran.text(), "over tls");
    assert!(
        tunnels.load(Ordering::SeqCst) >= 1,
        "the request went through the proxy"
    );

    // A key that is not a key is a build error that quotes nothing of it.
    let error = McpClient::new(
        options(&pki)
            .client_certificate_pem(pki.client.0.clone(), Secret::new("not-a-key-0123456789")),
    )
    .unwrap_err();
    let text = format!("{error} {:?}", std::error::Error::source(&error));
    assert!(
        text.contains("private key") && !text.contains("not-a-key"),
        "{text}"
    );
    server.shutdown().await;
}

/// A server over TLS that offers HTTP/2 by ALPN gets it, in both eras: the calls in flight
/// to it share one connection instead of a connection each. Calls given up are reset on
/// their streams, which ends the server's work and leaves the connection to the next
/// call. `http2(false)` keeps HTTP/1.1.
#[tokio::test]
async fn a_server_offering_http2_carries_the_calls_in_flight_on_one_connection() {
    const CALLS: u64 = 8;
    for (era, preference) in [
        (Era::Legacy, EraPreference::Legacy),
        (Era::Modern, EraPreference::Modern),
    ] {
        for http2 in [true, false] {
            let server = TestServer::start(ServerOptions {
                era,
                tls: Some(Tls::Http2),
                ..ServerOptions::default()
            })
            .await
            .unwrap();
            let endpoint = Endpoint::http(server.url(), None);
            let client = Arc::new(
                McpClient::new(
                    ClientOptions::default()
                        .era(preference)
                        .warm_contexts(false)
                        .no_proxy()
                        .root_certificates_pem(server.ca_pem().unwrap().to_owned())
                        .http2(http2),
                )
                .unwrap(),
            );
            let within = Duration::from_secs(60);
            let call = |id: &str, tool: &str, arguments: serde_json::Value| {
                request(&endpoint, tool, arguments, id, within)
            };
            // One call first: the connection it opens is the one the rest share.
            let first = run(&client, call("first", "echo", json!({"message": "one"}))).await;
            assert_eq!(first.text(), "one", "{era} http2={http2}");

            // Calls that hang until given up, all at the server at once.
            let give_up = tokio_util::sync::CancellationToken::new();
            let hanging: Vec<_> = (0..CALLS)
                .map(|i| {
                    let request = call(&format!("c{i}"), "hang", json!({})).cancel(give_up.clone());
                    let client = Arc::clone(&client);
                    tokio::spawn(async move { run(&client, request).await })
                })
                .collect();
            let seen = server
                .wait_for(|c| c.calls_in_flight == CALLS, within)
                .await;
            assert_eq!(seen.calls_in_flight, CALLS, "{era} http2={http2}");
            if http2 {
                // Eight calls at the server at once on one connection: multiplexed.
                assert_eq!(seen.connections_accepted, 1, "{era}: one connection");
                assert!(
                    seen.http2_requests > CALLS,
                    "{era}: {} HTTP/2 requests",
                    seen.http2_requests
                );
            } else {
                assert_eq!(seen.http2_requests, 0, "{era}: HTTP/1.1 only");
                assert!(
                    seen.connections_accepted >= CALLS,
                    "{era}: a connection for each call at the server: {}",
                    seen.connections_accepted
                );
            }

            // Given up: each stream is reset (HTTP/2) or its connection closed (HTTP/1.1),
            // which ends the server's work; the next call still goes.
            give_up.cancel();
            for handle in hanging {
                let ran = handle.await.unwrap();
                assert_eq!(
                    ran.error().kind(),
                    ErrorKind::Cancelled,
                    "{era} http2={http2}"
                );
            }
            let seen = server
                .wait_for(|c| c.handler_cancellations == CALLS, within)
                .await;
            assert_eq!(
                seen.handler_cancellations, CALLS,
                "{era} http2={http2}: the work ended"
            );
            // Each call went once.
            assert_eq!(
                seen.tool_calls.get("hang"),
                Some(&CALLS),
                "{era} http2={http2}"
            );
            assert_eq!(client.stats().resends, 0, "{era} http2={http2}");
            let after = run(&client, call("after", "echo", json!({"message": "two"}))).await;
            assert_eq!(after.text(), "two", "{era} http2={http2}");
            if http2 {
                assert_eq!(server.counters().connections_accepted, 1, "{era}");
            }
            client.shutdown(Duration::from_secs(5)).await;
            server.shutdown().await;
        }
    }
}

/// What a hostile HTTP/2 front does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hostile {
    /// Reads each `tools/call` and refuses its stream (`REFUSED_STREAM`: "not processed").
    RefuseCalls,
    /// Reads each `tools/call` and ends the connection with `GOAWAY` (`INTERNAL_ERROR`).
    DropOnCall,
    /// Allows no stream at all (`SETTINGS_MAX_CONCURRENT_STREAMS` 0).
    NoStreams,
}

/// An HTTP/2 front (TLS, ALPN `h2`) to a plain HTTP server: it relays every request but
/// a `tools/call`, which it treats as `hostile` says; counts the calls it received.
async fn hostile_h2_front(pki: &Pki, target: String, hostile: Hostile) -> (u16, Arc<AtomicUsize>) {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(pki.server.0.as_bytes()).unwrap()],
            PrivateKeyDer::from_pem_slice(pki.server.1.as_bytes()).unwrap(),
        )
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    // The relay's own client to the plain server (no TLS used).
    let plain = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    let upstream = reqwest::Client::builder()
        .tls_backend_preconfigured(plain)
        .no_proxy()
        .build()
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let (acceptor, upstream, target) = (acceptor.clone(), upstream.clone(), target.clone());
            let counted = Arc::clone(&counted);
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(socket).await else {
                    return;
                };
                let mut builder = h2::server::Builder::new();
                if hostile == Hostile::NoStreams {
                    builder.max_concurrent_streams(0);
                }
                let Ok(mut connection) = builder.handshake(tls).await else {
                    return;
                };
                let drop_now = Arc::new(tokio::sync::Notify::new());
                loop {
                    let accepted = tokio::select! {
                        accepted = connection.accept() => accepted,
                        () = drop_now.notified() => {
                            connection.abrupt_shutdown(h2::Reason::INTERNAL_ERROR);
                            // Driven until closed, so that the GOAWAY goes out.
                            while connection.accept().await.is_some() {}
                            return;
                        }
                    };
                    let Some(Ok((request, respond))) = accepted else {
                        return;
                    };
                    let relay = Relay {
                        upstream: upstream.clone(),
                        target: target.clone(),
                        calls: Arc::clone(&counted),
                        hostile,
                        drop_now: Arc::clone(&drop_now),
                    };
                    tokio::spawn(relay.run(request, respond));
                }
            });
        }
    });
    (port, calls)
}

struct Relay {
    upstream: reqwest::Client,
    target: String,
    calls: Arc<AtomicUsize>,
    hostile: Hostile,
    drop_now: Arc<tokio::sync::Notify>,
}

impl Relay {
    async fn run(
        self,
        request: http::Request<h2::RecvStream>,
        mut respond: h2::server::SendResponse<bytes::Bytes>,
    ) -> Option<()> {
        use futures::StreamExt;
        let (parts, mut body) = request.into_parts();
        let mut bytes = Vec::new();
        while let Some(chunk) = body.data().await {
            let chunk = chunk.ok()?;
            let _ = body.flow_control().release_capacity(chunk.len());
            bytes.extend_from_slice(&chunk);
        }
        if String::from_utf8_lossy(&bytes).contains("\"tools/call\"") {
            self.calls.fetch_add(1, Ordering::SeqCst);
            match self.hostile {
                Hostile::RefuseCalls => respond.send_reset(h2::Reason::REFUSED_STREAM),
                Hostile::DropOnCall | Hostile::NoStreams => self.drop_now.notify_one(),
            }
            return Some(());
        }
        let response = self
            .upstream
            .request(
                parts.method,
                format!("http://{}{}", self.target, parts.uri.path()),
            )
            .headers(parts.headers)
            .body(bytes)
            .send()
            .await
            .ok()?;
        let mut head = http::Response::builder().status(response.status());
        for (name, value) in response.headers() {
            if !matches!(
                name.as_str(),
                "connection" | "transfer-encoding" | "keep-alive"
            ) {
                head = head.header(name, value);
            }
        }
        let mut sending = respond.send_response(head.body(()).ok()?, false).ok()?;
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            sending.send_data(chunk.ok()?, false).ok()?;
        }
        sending.send_data(bytes::Bytes::new(), true).ok()
    }
}

/// Hostile HTTP/2 servers, each in front of a real one, and what a call to them ends as:
/// - one that refuses the call's stream says it did not run it; the call still goes once
///   only, ending `unknown` (a server that says so may have run it), never sent again
///   behind our back (reqwest's own retries of refused streams are off);
/// - one that drops the connection (`GOAWAY` with an error) once the call arrived: the
///   call ends at once, `unknown`, not at its deadline;
/// - one that allows no stream: the call is never sent, and ends `not_sent` (its
///   handshake refused, or at its deadline).
#[tokio::test]
async fn hostile_http2_servers_get_each_call_once_and_never_hang_it() {
    let server = TestServer::start(ServerOptions {
        era: Era::Modern,
        ..ServerOptions::default()
    })
    .await
    .unwrap();
    let pki = pki();
    for hostile in [
        Hostile::RefuseCalls,
        Hostile::DropOnCall,
        Hostile::NoStreams,
    ] {
        let (port, calls) = hostile_h2_front(&pki, server.addr().to_string(), hostile).await;
        let client = McpClient::new(options(&pki).root_certificates_pem(pki.ca.clone())).unwrap();
        let endpoint = Endpoint::http(format!("https://localhost:{port}/mcp"), None);
        let deadline = match hostile {
            Hostile::NoStreams => Duration::from_secs(2),
            _ => Duration::from_secs(60),
        };
        let before = server.counters();
        let ran = run(
            &client,
            request(
                &endpoint,
                "echo",
                json!({"message": "once"}),
                "c1",
                deadline,
            ),
        )
        .await;
        let error = ran.error();
        let seen = server.counters();
        let reached = |method: &str| seen.method(method) - before.method(method);
        match hostile {
            Hostile::RefuseCalls | Hostile::DropOnCall => {
                assert_eq!(error.delivery(), Delivery::Unknown, "{hostile:?}: {error}");
                assert_ne!(error.kind(), ErrorKind::Timeout, "{hostile:?}: {error}");
                assert_eq!(
                    calls.load(Ordering::SeqCst),
                    1,
                    "{hostile:?}: the call went once"
                );
                assert_eq!(client.stats().resends, 0, "{hostile:?}");
                // What the front relayed (the handshake) reached the server.
                assert_eq!(reached("server/discover"), 1, "{hostile:?}");
            }
            Hostile::NoStreams => {
                // The handshake's stream is refused (opened before the client saw the
                // limit) or never opened (it waits for one until the deadline).
                assert!(
                    matches!(error.kind(), ErrorKind::Connect | ErrorKind::Timeout),
                    "{error}"
                );
                assert_eq!(error.delivery(), Delivery::NotSent, "{error}");
                assert_eq!(calls.load(Ordering::SeqCst), 0);
                // At most the handshake's one resend, on a fresh connection.
                assert!(client.stats().resends <= 1);
                assert_eq!(reached("server/discover"), 0);
            }
        }
        assert_eq!(reached("tools/call"), 0, "{hostile:?}");
        client.shutdown(Duration::from_secs(5)).await;
    }
    server.shutdown().await;
}
