//! Without the `oauth` feature: no DPoP. Only an OAuth grant binds a token to a key, so
//! an endpoint's `dpop` is always `None` here and the HTTP backend's DPoP steps are never
//! taken; what they name stands here, with the same interface as `dpop.rs`, so that the
//! endpoint and the backend have no `cfg` of their own.

/// A grant's DPoP binding: none in this build.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Dpop {}

impl Dpop {
    pub(crate) fn proof_prefix(&self) -> &str {
        match *self {}
    }
}

#[cfg(feature = "http")]
pub(crate) use http::*;

/// What the HTTP backend names.
#[cfg(feature = "http")]
mod http {
    use super::Dpop;

    pub(crate) const PROOF_HEADER: &str = "dpop";
    pub(crate) const NONCE_HEADER: &str = "dpop-nonce";

    /// The kind of server a nonce is for: the backend speaks only to resource servers.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub(crate) enum Server {
        Resource,
    }

    impl Dpop {
        pub(crate) fn proof(
            &self,
            _server: Server,
            _method: &str,
            _url: &url::Url,
            _token: Option<&str>,
        ) -> Option<String> {
            match *self {}
        }

        pub(crate) fn nonce(&self, _server: Server, _url: &url::Url) -> Option<String> {
            match *self {}
        }

        pub(crate) fn learn(&self, _server: Server, _url: &url::Url, _nonce: &str) -> bool {
            match *self {}
        }
    }

    /// No refusal is for want of a DPoP nonce where no request carries a proof.
    pub(crate) fn resource_wants_nonce(_status: u16, _challenge: Option<&str>) -> bool {
        false
    }
}
