//! A small structural diff of two JSON values, for `check --live`: lines for a person,
//! the server's keys and values in them escaped
//! ([`crate::runtime::output::escape::escape`]).

use serde_json::Value;

use crate::runtime::output::escape::escape;

/// At most this many differences are listed per comparison.
const MAX_LINES: usize = 20;

/// Lines like `- properties.query.type: "string"` / `+ properties.query.type: "integer"`.
pub(crate) fn diff(old: &Value, new: &Value) -> Vec<String> {
    let mut lines = Vec::new();
    walk(old, new, "", &mut lines);
    if lines.len() > MAX_LINES {
        let more = lines.len() - MAX_LINES;
        lines.truncate(MAX_LINES);
        lines.push(format!("  ... and {more} more"));
    }
    lines.iter().map(|line| escape(line, false)).collect()
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn show(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 120 {
        format!("{}…", text.chars().take(120).collect::<String>())
    } else {
        text
    }
}

fn walk(old: &Value, new: &Value, path: &str, lines: &mut Vec<String>) {
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            for (key, old_value) in old {
                match new.get(key) {
                    Some(new_value) => walk(old_value, new_value, &join(path, key), lines),
                    None => lines.push(format!("- {}: {}", join(path, key), show(old_value))),
                }
            }
            for (key, new_value) in new {
                if !old.contains_key(key) {
                    lines.push(format!("+ {}: {}", join(path, key), show(new_value)));
                }
            }
        }
        (Value::Array(old_items), Value::Array(new_items))
            if old_items.len() == new_items.len() =>
        {
            for (i, (old, new)) in old_items.iter().zip(new_items).enumerate() {
                walk(old, new, &format!("{path}[{i}]"), lines);
            }
        }
        _ if old == new => {}
        _ => {
            let at = if path.is_empty() { "(whole)" } else { path };
            lines.push(format!("- {at}: {}", show(old)));
            lines.push(format!("+ {at}: {}", show(new)));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reports_changed_added_and_removed_paths() {
        let old = json!({"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}});
        let new = json!({"type": "object", "properties": {"q": {"type": "integer"}, "k": {"type": "string"}}});
        assert_eq!(
            diff(&old, &new),
            [
                "- properties.q.type: \"string\"",
                "+ properties.q.type: \"integer\"",
                "- properties.n: {\"type\":\"integer\"}",
                "+ properties.k: {\"type\":\"string\"}",
            ]
        );
        assert!(diff(&old, &old).is_empty());
    }

    #[test]
    fn the_servers_keys_and_values_are_escaped() {
        use crate::runtime::output::escape::hostile::{TEXT, assert_escaped};
        let old = json!({"properties": {"a": 1}});
        let new = json!({"properties": {"a": 1, TEXT: TEXT}});
        let lines = diff(&old, &new);
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].starts_with("+ properties.x\\u{1b}[31m"),
            "{lines:?}"
        );
        assert_escaped(&lines[0]);
    }
}
