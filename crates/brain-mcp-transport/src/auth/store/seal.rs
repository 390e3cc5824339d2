//! Secrets at rest: AES-256-GCM under keys the host provides, each with an id stored
//! beside what it sealed, so that keys can be rotated.

use std::{fmt, path::Path};

use base64::Engine as _;
use ring::{
    aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey},
    rand::{SecureRandom, SystemRandom},
};

use crate::secret::Secret;

/// A key ring: the keys a store seals secrets with, each under an id. The first key seals
/// every new write; every key opens what it sealed, so a host rotates by putting a new
/// key first and keeping the old ones until every record was written again (each
/// refresh or login rewrites its record under the first key).
///
/// Its text form is `ID:KEY` entries separated by commas, spaces or new lines, `KEY`
/// being 32 random bytes in base64 (standard or URL-safe, padding optional), `ID` 1 to
/// 64 of `A-Z a-z 0-9 . _ -`; lines starting with `#` are comments. For example
/// `k2:5Yk0...=, k1:hP3s...=` (make a key with `openssl rand -base64 32`). `Debug`
/// shows the ids, never a key.
#[derive(Clone)]
pub struct KeyRing {
    keys: Vec<(String, Secret)>,
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRing")
            .field(
                "ids",
                &self.keys.iter().map(|(id, _)| id).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// A key ring that cannot be used. Its message says which entry, never a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct KeyRingError(String);

/// The length of a key, in bytes.
const KEY_BYTES: usize = 32;

impl KeyRing {
    /// A key ring from its text form.
    ///
    /// # Errors
    /// An entry without `:`, an id out of its alphabet, a repeated id, a key that is not
    /// 32 bytes of base64, or no entry at all.
    pub fn parse(text: &str) -> Result<Self, KeyRingError> {
        let mut keys: Vec<(String, Secret)> = Vec::new();
        let entries = text
            .lines()
            .filter(|line| !line.trim_start().starts_with('#'))
            .flat_map(|line| line.split([',', ' ', '\t']))
            .map(str::trim)
            .filter(|entry| !entry.is_empty());
        for (n, entry) in entries.enumerate() {
            let position = n + 1;
            let Some((id, key)) = entry.split_once(':') else {
                return Err(KeyRingError(format!(
                    "key ring entry {position} is not ID:KEY"
                )));
            };
            let id_ok = (1..=64).contains(&id.len())
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
            if !id_ok {
                return Err(KeyRingError(format!(
                    "key ring entry {position}: the id must be 1 to 64 of A-Z a-z 0-9 . _ -"
                )));
            }
            if keys.iter().any(|(seen, _)| seen == id) {
                return Err(KeyRingError(format!(
                    "key ring entry {position}: the id {id} is used twice"
                )));
            }
            let trimmed = key.trim_end_matches('=');
            let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
                .decode(trimmed)
                .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(trimmed))
                .ok()
                .filter(|bytes| bytes.len() == KEY_BYTES)
                .ok_or_else(|| {
                    KeyRingError(format!(
                        "key ring entry {position} ({id}): the key is not {KEY_BYTES} bytes of \
                         base64 (make one with `openssl rand -base64 32`)"
                    ))
                })?;
            keys.push((
                id.to_owned(),
                Secret::new(base64::engine::general_purpose::STANDARD.encode(bytes)),
            ));
        }
        if keys.is_empty() {
            return Err(KeyRingError("the key ring holds no key".into()));
        }
        Ok(Self { keys })
    }

    /// The key ring in the environment variable `name`.
    ///
    /// # Errors
    /// The variable is unset or not a key ring.
    pub fn from_env(name: &str) -> Result<Self, KeyRingError> {
        let text = std::env::var(name)
            .map_err(|_| KeyRingError(format!("the variable {name} holds no key ring")))?;
        Self::parse(&text).map_err(|error| KeyRingError(format!("{name}: {error}")))
    }

    /// The key ring in a file.
    ///
    /// # Errors
    /// The file cannot be read or is not a key ring.
    pub fn from_file(path: &Path) -> Result<Self, KeyRingError> {
        let text = std::fs::read_to_string(path).map_err(|error| {
            KeyRingError(format!(
                "the key file {} cannot be read: {error}",
                path.display()
            ))
        })?;
        Self::parse(&text).map_err(|error| KeyRingError(format!("{}: {error}", path.display())))
    }

    /// The id of the key new writes are sealed with.
    pub fn current_id(&self) -> &str {
        &self.keys[0].0
    }

    fn key(&self, id: &str) -> Option<LessSafeKey> {
        let (_, key) = self.keys.iter().find(|(known, _)| known == id)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(key.expose())
            .ok()?;
        UnboundKey::new(&AES_256_GCM, &bytes)
            .ok()
            .map(LessSafeKey::new)
    }

    /// A key ring of one random key under `id`, for what one process seals and opens
    /// itself (nothing sealed with it opens anywhere else, or after a restart).
    ///
    /// # Errors
    /// `id` is out of the ids' alphabet, or the system has no randomness to give.
    pub fn random(id: &str) -> Result<Self, KeyRingError> {
        let mut key = [0u8; KEY_BYTES];
        SystemRandom::new()
            .fill(&mut key)
            .map_err(|_| KeyRingError("the system gave no random key".into()))?;
        Self::parse(&format!(
            "{id}:{}",
            base64::engine::general_purpose::STANDARD.encode(key)
        ))
    }

    /// Seals `plain` (AES-256-GCM under the current key, a random nonce), bound to
    /// `context`: what it belongs to, which must be given again to open it (a sealed
    /// value moved to another record, or another use, does not open). Returns the key id
    /// and the nonce followed by the ciphertext and tag.
    ///
    /// Every use of a ring seals under its own `context` prefix, so that what one use
    /// sealed never opens as another's.
    pub fn seal(&self, context: &[u8], plain: &[u8]) -> Option<(String, Vec<u8>)> {
        let id = self.current_id();
        let key = self.key(id)?;
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new().fill(&mut nonce).ok()?;
        let mut sealed = plain.to_vec();
        key.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(context),
            &mut sealed,
        )
        .ok()?;
        let mut out = nonce.to_vec();
        out.append(&mut sealed);
        Some((id.to_owned(), out))
    }

    /// Opens what [`KeyRing::seal`] sealed with the key `id` for `context`.
    ///
    /// # Errors
    /// Why it does not open, without a key: the id is not in the ring, or the value is
    /// cut short, was altered, was sealed for another context or under another key.
    pub fn open(&self, id: &str, context: &[u8], sealed: &[u8]) -> Result<Vec<u8>, KeyRingError> {
        let key = self.key(id).ok_or_else(|| {
            KeyRingError(format!(
                "it was sealed with the key {id}, which the key ring does not hold"
            ))
        })?;
        if sealed.len() < NONCE_LEN {
            return Err(KeyRingError("its sealed secrets are cut short".into()));
        }
        let (nonce, ciphertext) = sealed.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce)
            .map_err(|_| KeyRingError("bad nonce".into()))?;
        let mut buffer = ciphertext.to_vec();
        let plain = key
            .open_in_place(nonce, Aad::from(context), &mut buffer)
            .map_err(|_| {
                KeyRingError(format!("its sealed secrets do not open with the key {id} (another key under that id, or an altered record)"))
            })?;
        Ok(plain.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K1: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    const K2: &str = "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8";

    #[test]
    fn key_rings_parse_and_say_what_is_wrong() {
        let ring = KeyRing::parse(&format!("# keys\nk2:{K2}\n k1:{K1} ,")).unwrap();
        assert_eq!(ring.current_id(), "k2");
        let debug = format!("{ring:?}");
        assert!(debug.contains("k1") && !debug.contains(K1), "{debug}");
        for (text, message) in [
            ("", "holds no key"),
            ("k1", "entry 1 is not ID:KEY"),
            (&format!("k 1:{K1}")[..], "entry 1 is not ID:KEY"),
            (&format!("k/1:{K1}"), "the id must be"),
            (&format!("k1:{K1},k1:{K2}"), "used twice"),
            ("k1:c2hvcnQ=", "not 32 bytes"),
        ] {
            let error = KeyRing::parse(text).unwrap_err().to_string();
            assert!(error.contains(message), "{text:?}: {error}");
            assert!(!error.contains(K1) && !error.contains(K2), "{error}");
        }
    }

    #[test]
    fn sealed_secrets_open_with_their_key_and_context_only() {
        let old = KeyRing::parse(&format!("k1:{K1}")).unwrap();
        let (id, sealed) = old.seal(b"tenant a", b"refresh-token").unwrap();
        assert_eq!(id, "k1");
        assert!(
            !sealed.windows(7).any(|w| w == b"refresh"),
            "sealed in clear"
        );
        assert_eq!(
            old.open("k1", b"tenant a", &sealed).unwrap(),
            b"refresh-token"
        );
        // Another record's context, another key under the id, an unknown id, a flipped bit.
        assert!(old.open("k1", b"tenant b", &sealed).is_err());
        let other = KeyRing::parse(&format!("k1:{K2}")).unwrap();
        assert!(other.open("k1", b"tenant a", &sealed).is_err());
        assert!(
            old.open("k9", b"tenant a", &sealed)
                .unwrap_err()
                .to_string()
                .contains("k9")
        );
        let mut flipped = sealed.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(old.open("k1", b"tenant a", &flipped).is_err());
        // Rotated: the new key seals, the old one still opens what it sealed.
        let rotated = KeyRing::parse(&format!("k2:{K2},k1:{K1}")).unwrap();
        assert_eq!(
            rotated.open("k1", b"tenant a", &sealed).unwrap(),
            b"refresh-token"
        );
        let (id, resealed) = rotated.seal(b"tenant a", b"refresh-token").unwrap();
        assert_eq!(id, "k2");
        assert!(old.open("k2", b"tenant a", &resealed).is_err());
        // Two seals of one value differ (a fresh nonce each).
        assert_ne!(
            old.seal(b"c", b"v").unwrap().1,
            old.seal(b"c", b"v").unwrap().1
        );
    }

    #[test]
    fn a_random_ring_opens_only_what_it_sealed() {
        let one = KeyRing::random("local").unwrap();
        let two = KeyRing::random("local").unwrap();
        let (id, sealed) = one.seal(b"c", b"v").unwrap();
        assert_eq!(one.open(&id, b"c", &sealed).unwrap(), b"v");
        assert!(two.open(&id, b"c", &sealed).is_err());
        assert!(KeyRing::random("no spaces").is_err());
    }
}
