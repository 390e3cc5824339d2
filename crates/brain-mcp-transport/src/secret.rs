//! Secrets: tokens that never show up in Debug output, logs or errors; the [`Redactor`]
//! that hides them in whatever a server sends back; and the shortening of server text for
//! messages.

use std::{
    borrow::Cow,
    fmt,
    sync::{Arc, PoisonError, RwLock},
};

use serde_json::Value;

/// What replaces a secret.
pub(crate) const REDACTED: &str = "<redacted>";

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

    /// Whether the token can follow `Bearer ` in an HTTP header: non-empty visible ASCII,
    /// no spaces (RFC 6750's `b64token` is narrower; servers' keys sometimes are not, so
    /// this is the bound a header sets).
    pub fn is_header_safe(&self) -> bool {
        !self.0.is_empty() && self.0.bytes().all(|byte| byte.is_ascii_graphic())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// The secrets of one server (its token, the tokens issued for it, keys in its URL or
/// environment), hidden in everything it sends before anything else reads it: results,
/// progress, log notifications, errors. Cheap to clone; clones share the set, so a token
/// issued later (OAuth) is hidden from then on by every holder.
#[derive(Clone, Default)]
pub(crate) struct Redactor {
    /// Longest first, so a secret inside another leaves nothing of the longer behind.
    secrets: Arc<RwLock<Vec<Arc<str>>>>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.read().len())
            .finish()
    }
}

impl Redactor {
    /// A redactor for these secrets (empty ones are ignored).
    pub(crate) fn new<'a>(secrets: impl IntoIterator<Item = &'a str>) -> Self {
        let redactor = Self::default();
        for secret in secrets {
            redactor.add(secret);
        }
        redactor
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<str>>> {
        self.secrets.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hides one more secret from now on.
    pub(crate) fn add(&self, secret: &str) {
        if secret.is_empty() {
            return;
        }
        let mut secrets = self.secrets.write().unwrap_or_else(PoisonError::into_inner);
        if secrets.iter().any(|known| **known == *secret) {
            return;
        }
        secrets.push(Arc::from(secret));
        secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
    }

    /// Plain text with every secret replaced.
    pub(crate) fn text<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let secrets = self.read();
        let mut text = Cow::Borrowed(text);
        for secret in secrets.iter() {
            if text.contains(&**secret) {
                text = Cow::Owned(text.replace(&**secret, REDACTED));
            }
        }
        text
    }

    /// A JSON document with every secret replaced in its strings (keys and values),
    /// however the document escapes it; the structure is never touched. Unchanged (and
    /// not re-serialized) when no secret can be in it, which is the common case: a
    /// literal search, and a parse only when a secret occurs or escapes could hide one.
    pub(crate) fn json<'t>(&self, json: &'t str) -> Cow<'t, str> {
        let secrets = self.read();
        if secrets.is_empty() {
            return Cow::Borrowed(json);
        }
        // `\uXXXX` can spell any character; `\/` a slash.
        let escapes_may_hide = json.contains("\\u")
            || (json.contains("\\/") && secrets.iter().any(|secret| secret.contains('/')));
        let literal = secrets
            .iter()
            .any(|secret| json.contains(&**secret) || json.contains(escaped(secret).as_ref()));
        if !literal && !escapes_may_hide {
            return Cow::Borrowed(json);
        }
        match serde_json::from_str::<Value>(json) {
            Ok(mut value) => {
                if scrub_value(&mut value, &secrets) {
                    Cow::Owned(value.to_string())
                } else {
                    Cow::Borrowed(json)
                }
            }
            // Not JSON: nothing will parse it as a message either; hide what shows.
            Err(_) => {
                drop(secrets);
                self.text(json)
            }
        }
    }
}

/// A secret as a JSON string spells it (without the quotes).
fn escaped(secret: &str) -> Cow<'_, str> {
    if secret.contains(['"', '\\']) || secret.chars().any(char::is_control) {
        let quoted = Value::from(secret).to_string();
        Cow::Owned(quoted[1..quoted.len() - 1].to_owned())
    } else {
        Cow::Borrowed(secret)
    }
}

/// Replaces secrets in every string of a value; true when something changed.
fn scrub_value(value: &mut Value, secrets: &[Arc<str>]) -> bool {
    let scrub = |text: &mut String| {
        let mut changed = false;
        for secret in secrets {
            if text.contains(&**secret) {
                *text = text.replace(&**secret, REDACTED);
                changed = true;
            }
        }
        changed
    };
    match value {
        Value::String(text) => scrub(text),
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |changed, item| scrub_value(item, secrets) | changed),
        Value::Object(object) => {
            let mut changed = false;
            let keyed: Vec<String> = object
                .keys()
                .filter(|key| secrets.iter().any(|secret| key.contains(&**secret)))
                .cloned()
                .collect();
            for key in keyed {
                if let Some(item) = object.remove(&key) {
                    let mut renamed = key;
                    scrub(&mut renamed);
                    object.insert(renamed, item);
                    changed = true;
                }
            }
            object.values_mut().fold(changed, |changed, item| {
                scrub_value(item, secrets) | changed
            })
        }
        _ => false,
    }
}

/// Shortens server-provided text for a message: one line, at most `max` characters.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    // Control characters, and the format characters that reorder or hide text at a
    // terminal (bidirectional overrides and isolates, zero-width marks), become spaces.
    let hidden = |c: char| {
        c.is_control()
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
    };
    let mut line: String = text
        .chars()
        .map(|c| if hidden(c) { ' ' } else { c })
        .take(max)
        .collect();
    if text.chars().count() > max {
        line.push('…');
    }
    line
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const TOKEN: &str = "sk-live-0123456789abcdef";

    #[test]
    fn one_line_hides_what_reorders_or_hides_text() {
        let cases = [
            ("a\nb\tc", "a b c"),
            ("evil\u{202e}gnp.exe", "evil gnp.exe"),
            ("x\u{2066}y\u{2069}z\u{200b}", "x y z "),
            ("plain é ü", "plain é ü"),
        ];
        for (text, shown) in cases {
            assert_eq!(one_line(text, 100), shown, "{text:?}");
        }
    }

    #[test]
    fn json_is_scrubbed_however_it_is_written() {
        let redactor = Redactor::new([TOKEN, "pw/with/slash-0001"]);
        let cases: Vec<(String, Value)> = vec![
            // Plain, in a value, in a key, nested.
            (
                json!({"text": format!("your key is {TOKEN}")}).to_string(),
                json!({"text": "your key is <redacted>"}),
            ),
            (
                json!({TOKEN: 1, "a": [{"b": TOKEN}]}).to_string(),
                json!({"<redacted>": 1, "a": [{"b": "<redacted>"}]}),
            ),
            // Escaped: \u for every character, \/ for a slash.
            (
                format!(
                    r#"{{"text":"{}"}}"#,
                    TOKEN
                        .chars()
                        .map(|c| format!("\\u{:04x}", c as u32))
                        .collect::<String>()
                ),
                json!({"text": "<redacted>"}),
            ),
            (
                r#"{"text":"pw\/with\/slash-0001!"}"#.to_owned(),
                json!({"text": "<redacted>!"}),
            ),
        ];
        for (input, expected) in cases {
            let scrubbed = redactor.json(&input);
            assert_eq!(
                serde_json::from_str::<Value>(&scrubbed).unwrap(),
                expected,
                "{input}"
            );
        }
    }

    #[test]
    fn json_without_secrets_is_left_as_it_is() {
        let redactor = Redactor::new([TOKEN]);
        let text =
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"caf\u00e9"}]}}"#;
        assert!(matches!(redactor.json(text), Cow::Borrowed(_)));
        assert!(matches!(Redactor::default().json(text), Cow::Borrowed(_)));
        // Not JSON: the literal occurrences go.
        assert_eq!(redactor.json(&format!("oops {TOKEN}")), "oops <redacted>");
    }

    #[test]
    fn secrets_added_later_are_hidden_by_every_clone() {
        let redactor = Redactor::default();
        let clone = redactor.clone();
        redactor.add("issued-token-42");
        redactor.add("issued-token-42-longer");
        assert_eq!(
            clone.text("a issued-token-42-longer b issued-token-42"),
            "a <redacted> b <redacted>"
        );
        assert!(!format!("{clone:?}").contains("issued"));
    }

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
