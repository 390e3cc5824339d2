//! How a client reaches servers: a private CA's roots, a client certificate (mutual
//! TLS) and a proxy, through real TLS in front of the testkit.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use brain_mcp_testkit::{Era, ServerOptions, TestServer};
use brain_mcp_transport::{ClientOptions, Endpoint, EraPreference, ErrorKind, McpClient, Secret};
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
