//! Tokens that never show up in Debug output, logs or errors.

use std::{fmt, sync::Arc};

/// A bearer token. Its `Debug` prints `Secret(<redacted>)`; it has no `Display`. The only
/// way to read it is [`Secret::expose`], used when the `Authorization` header is built.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Secret(Arc<str>);

impl Secret {
    /// Wraps a token.
    pub fn new(token: impl Into<String>) -> Self {
        Self(Arc::from(token.into()))
    }

    /// The token itself.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_token() {
        let secret = Secret::new("sk-live-123");
        assert_eq!(format!("{secret:?}"), "Secret(<redacted>)");
        assert_eq!(
            format!("{:?}", Some(secret.clone())),
            "Some(Secret(<redacted>))"
        );
        assert_eq!(secret.expose(), "sk-live-123");
    }
}
