//! HTTPS for the test server: a CA of its own, a certificate for `127.0.0.1` and
//! `localhost`, and the protocols it offers by ALPN.

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::TlsAcceptor;

/// Serve HTTPS instead of plain HTTP, with these protocols offered by ALPN (`h1` or `h2`
/// on command lines).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tls {
    /// `http/1.1` only, as a server without HTTP/2 offers.
    Http1,
    /// `h2` first, then `http/1.1`: a client that speaks HTTP/2 gets it.
    Http2,
}

impl std::str::FromStr for Tls {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "h1" => Ok(Tls::Http1),
            "h2" => Ok(Tls::Http2),
            other => Err(format!("unknown TLS mode {other:?}: expected h1 or h2")),
        }
    }
}

/// What a TLS server needs: the acceptor and its CA's certificate, for clients to trust.
pub(crate) struct Identity {
    pub(crate) acceptor: TlsAcceptor,
    pub(crate) ca_pem: String,
}

/// A fresh CA and a server certificate signed by it, offering `tls`'s protocols.
pub(crate) fn identity(tls: Tls) -> Result<Identity, String> {
    let error = |e: &dyn std::fmt::Display| format!("cannot make the test certificates: {e}");
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(|e| error(&e))?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().map_err(|e| error(&e))?;
    let issuer = CertifiedIssuer::self_signed(ca, ca_key).map_err(|e| error(&e))?;
    let key = KeyPair::generate().map_err(|e| error(&e))?;
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
        .map_err(|e| error(&e))?
        .signed_by(&key, &issuer)
        .map_err(|e| error(&e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| error(&e))?
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(leaf.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .map_err(|e| error(&e))?;
    config.alpn_protocols = match tls {
        Tls::Http1 => vec![b"http/1.1".to_vec()],
        Tls::Http2 => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
    };
    Ok(Identity {
        acceptor: TlsAcceptor::from(Arc::new(config)),
        ca_pem: issuer.pem(),
    })
}
