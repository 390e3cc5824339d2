//! API keys for small deployments: a file that maps the SHA-256 of each key to a tenant
//! (never the keys themselves), checked in constant time.
//!
//! A line is `TENANT sha256:HEX`; blank lines and lines starting with `#` are skipped. A
//! key is `mgw_` and 43 characters of base64url (32 random bytes): a key that random
//! needs no slow hash, and its SHA-256 cannot be turned back into it.

use std::path::Path;

use ring::rand::{SecureRandom, SystemRandom};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::GatewayError;

/// How every key begins (so that a person, and a secret scanner, can tell one).
pub const KEY_PREFIX: &str = "mgw_";

/// The keys of a key file: (SHA-256 of the key, tenant).
#[derive(Clone, Default)]
pub(crate) struct ApiKeys {
    entries: Vec<([u8; 32], String)>,
}

/// Counts keys, never shows hashes.
impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKeys")
            .field("keys", &self.entries.len())
            .finish()
    }
}

impl ApiKeys {
    /// Reads a key file; every line that is not a key is an error naming its line.
    pub(crate) fn read(path: &Path) -> Result<Self, GatewayError> {
        let text = std::fs::read_to_string(path).map_err(|error| {
            GatewayError::setup(format!(
                "cannot read the API key file {}: {error}",
                path.display()
            ))
        })?;
        Self::parse(&text).map_err(|(line, why)| {
            GatewayError::setup(format!(
                "the API key file {} line {line}: {why} (a line is `TENANT sha256:HEX`; `mcp-tools serve --new-key --tenant T` prints one)",
                path.display()
            ))
        })
    }

    /// Parses a key file's text; the error is (line number, why).
    pub(crate) fn parse(text: &str) -> Result<Self, (usize, &'static str)> {
        let mut entries = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut words = line.split_whitespace();
            let (Some(tenant), Some(hash), None) = (words.next(), words.next(), words.next())
            else {
                return Err((number + 1, "expected a tenant and a hash"));
            };
            let hex = hash
                .strip_prefix("sha256:")
                .ok_or((number + 1, "the hash must start with sha256:"))?;
            let digest = decode_hex(hex).ok_or((number + 1, "the hash is not 64 hex digits"))?;
            entries.push((digest, tenant.to_owned()));
        }
        Ok(Self { entries })
    }

    /// The tenant of a presented key, comparing its hash with every entry in constant
    /// time (all entries are compared, whatever matched).
    pub(crate) fn tenant_of(&self, key: &str) -> Option<&str> {
        let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        let mut found = None;
        for (hash, tenant) in &self.entries {
            if bool::from(hash.ct_eq(&digest)) {
                found = Some(tenant.as_str());
            }
        }
        found
    }
}

fn decode_hex(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// A new API key for `tenant`, and the line of the key file that accepts it. The key is
/// shown once: only its hash is kept.
///
/// # Errors
/// The system's random number generator failed.
pub fn new_api_key(tenant: &str) -> Result<(String, String), GatewayError> {
    use base64::Engine as _;
    let mut bytes = [0u8; 32];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| GatewayError::setup("no random numbers for a key".to_owned()))?;
    let key = format!(
        "{KEY_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    );
    let digest = Sha256::digest(key.as_bytes());
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    Ok((key, format!("{tenant} sha256:{hex}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_key_is_accepted_by_its_line_and_no_other_key_is() {
        let (key, line) = new_api_key("acme").unwrap();
        let (other, other_line) = new_api_key("globex").unwrap();
        assert!(key.starts_with(KEY_PREFIX) && key.len() == KEY_PREFIX.len() + 43);
        assert!(!line.contains(&key), "the line holds the hash, not the key");
        let keys = ApiKeys::parse(&format!("# keys\n\n{line}\n{other_line}\n")).unwrap();
        assert_eq!(keys.tenant_of(&key), Some("acme"));
        assert_eq!(keys.tenant_of(&other), Some("globex"));
        assert_eq!(keys.tenant_of("mgw_not-a-key"), None);
        assert_eq!(keys.tenant_of(""), None);
    }

    #[test]
    fn lines_that_are_not_keys_are_named() {
        let cases = [
            ("acme", (1, "expected a tenant and a hash")),
            ("acme md5:00", (1, "the hash must start with sha256:")),
            ("\nacme sha256:abc", (2, "the hash is not 64 hex digits")),
            ("acme sha256:00 extra", (1, "expected a tenant and a hash")),
        ];
        for (text, expected) in cases {
            assert_eq!(ApiKeys::parse(text).unwrap_err(), expected, "{text:?}");
        }
    }

    #[test]
    fn debug_shows_no_hash() {
        let (_, line) = new_api_key("acme").unwrap();
        let keys = ApiKeys::parse(&line).unwrap();
        let hash = line.split(':').nth(1).unwrap();
        assert!(!format!("{keys:?}").contains(hash));
    }
}
