//! JSON text to a `Value`, noting every repeated object key with its path.
//!
//! `serde_json::Value` keeps the last of two equal keys without a word, so a config with
//! `"timeout_seconds"` twice would silently lose one limit. This parser builds the same
//! `Value` in one pass over the text and notes each repeated key instead. It keeps the
//! *first* occurrence and skips the value of every later one without building it, so the
//! problems it notes always belong to the value that is validated. Time is linear in the
//! input; memory is the `Value` plus at most [`MAX_LISTED_DUPLICATES`] noted paths.
//! Nesting stays bounded by serde_json's recursion limit (128).

use std::{collections::HashMap, fmt};

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::path::Path;

/// At most this many repeated keys are listed; the rest are counted.
pub(crate) const MAX_LISTED_DUPLICATES: usize = 100;

/// A parsed document and the repeated keys found in the part this crate reads (`tools`).
#[derive(Debug)]
pub(crate) struct Parsed {
    pub(crate) value: Value,
    /// Listed repeated keys, in document order (of their second occurrence).
    pub(crate) duplicates: Vec<Duplicate>,
    /// Further occurrences of repeated keys, past [`MAX_LISTED_DUPLICATES`].
    pub(crate) unlisted: usize,
}

/// A key that appears more than once in one object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Duplicate {
    /// The path of the key, e.g. `tools[0].timeout_seconds`.
    pub(crate) path: Path,
    /// How many times it appears (at least 2).
    pub(crate) count: usize,
}

/// Parses a whole document: one JSON value, nothing after it but whitespace.
pub(crate) fn parse(text: &str) -> Result<Parsed, serde_json::Error> {
    let mut state = State {
        path: Path::root(),
        duplicates: Vec::new(),
        unlisted: 0,
    };
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = Node { state: &mut state }.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(Parsed {
        value,
        duplicates: state.duplicates,
        unlisted: state.unlisted,
    })
}

struct State {
    /// Where the parser is, used as a stack.
    path: Path,
    duplicates: Vec<Duplicate>,
    unlisted: usize,
}

impl State {
    /// Repeated keys matter in `tools` and below; the rest of the document belongs to
    /// other parts of the host.
    fn watches(&self, key: &str) -> bool {
        if self.path.is_root() {
            key == "tools"
        } else {
            self.path.is_in_tools()
        }
    }
}

/// One JSON value at the state's path.
struct Node<'s> {
    state: &'s mut State,
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        // As serde_json's own `Value` does (the parser never yields a non-finite number).
        Ok(Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        loop {
            self.state.path.push_index(items.len());
            let item = seq.next_element_seed(Node {
                state: &mut *self.state,
            });
            self.state.path.pop();
            match item? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        // Keys already listed as repeated in this object -> their index in `duplicates`.
        let mut listed: HashMap<String, usize> = HashMap::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                map.next_value::<IgnoredAny>()?;
                if !self.state.watches(&key) {
                    continue;
                }
                if let Some(&index) = listed.get(&key) {
                    self.state.duplicates[index].count += 1;
                } else if self.state.duplicates.len() < MAX_LISTED_DUPLICATES {
                    let mut path = self.state.path.clone();
                    path.push_key(key.clone());
                    listed.insert(key, self.state.duplicates.len());
                    self.state.duplicates.push(Duplicate { path, count: 2 });
                } else {
                    self.state.unlisted += 1;
                }
                continue;
            }
            self.state.path.push_key(key);
            let value = map.next_value_seed(Node {
                state: &mut *self.state,
            });
            let key = self.state.path.pop().unwrap_or_default();
            object.insert(key, value?);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn duplicates(text: &str) -> Vec<(String, usize)> {
        parse(text)
            .unwrap()
            .duplicates
            .into_iter()
            .map(|d| (d.path.to_string(), d.count))
            .collect()
    }

    #[test]
    fn builds_the_same_value_as_serde_json() {
        let text = r#"{"tools": [{"a": [1, -2, 3.5, 5.0, 1e3, 18446744073709551615, true, null,
            "\u00e9\n", {"": {}}], "b": {"c": [[]]}}], "other": "x"}"#;
        let expected: Value = serde_json::from_str(text).unwrap();
        let parsed = parse(text).unwrap();
        assert_eq!(parsed.value, expected);
        assert_eq!(
            serde_json::to_string(&parsed.value).unwrap(),
            serde_json::to_string(&expected).unwrap(),
            "same key order and number forms"
        );
        assert!(parsed.duplicates.is_empty());
    }

    #[test]
    fn notes_repeated_keys_with_their_paths_and_keeps_the_first() {
        let text = r#"{"tools": [
            {"name": "a", "tenants": ["x"], "tenants": ["y"], "tenants": [],
             "command": {"env": {"K": "1", "K": "2"}}},
            {"input_schema": {"type": "object", "properties": {"a b": {}, "a b": {}}}}
        ]}"#;
        assert_eq!(
            duplicates(text),
            [
                ("tools[0].tenants".to_owned(), 3),
                ("tools[0].command.env.K".to_owned(), 2),
                (r#"tools[1].input_schema.properties["a b"]"#.to_owned(), 2),
            ]
        );
        let value = parse(text).unwrap().value;
        assert_eq!(value["tools"][0]["tenants"], json!(["x"]));
        assert_eq!(value["tools"][0]["command"]["env"]["K"], "1");
    }

    #[test]
    fn the_inside_of_a_skipped_repeat_is_not_looked_at() {
        let text = r#"{"tools": [], "tools": [{"a": 1, "a": 2}], "x": 1, "x": 2,
                       "logging": {"level": 1, "level": 2}}"#;
        assert_eq!(duplicates(text), [("tools".to_owned(), 2)]);
        assert_eq!(parse(text).unwrap().value["tools"], json!([]));
    }

    #[test]
    fn listing_is_bounded() {
        let keys: Vec<String> = (0..MAX_LISTED_DUPLICATES + 7)
            .map(|i| format!(r#""k{i}": 1, "k{i}": 2"#))
            .collect();
        let text = format!(r#"{{"tools": [{{{}}}]}}"#, keys.join(", "));
        let parsed = parse(&text).unwrap();
        assert_eq!(parsed.duplicates.len(), MAX_LISTED_DUPLICATES);
        assert_eq!(parsed.unlisted, 7);
    }

    #[test]
    fn syntax_errors_and_trailing_text_are_serde_json_errors() {
        let error = parse("{\"tools\": [1,]}").unwrap_err();
        assert!(error.to_string().starts_with("trailing comma"), "{error}");
        assert!(parse("{} {}").is_err());
        let deep = "[".repeat(200) + &"]".repeat(200);
        let error = parse(&deep).unwrap_err();
        assert!(error.to_string().starts_with("recursion limit"), "{error}");
    }
}
