//! The words of a finding: its path and its message, safe to print.

use std::fmt::Write as _;

use crate::eval::{At, Seg, Vars};

/// A path relative to the binding: `name`, `input_schema`, `input_schema.properties.q`,
/// `input_schema.properties["a b"]`, `input_schema.anyOf[0]`.
pub(crate) fn render_at(at: &At) -> String {
    match at {
        At::Name => "name".to_owned(),
        At::Schema(path) => {
            let mut out = "input_schema".to_owned();
            for seg in path {
                match seg {
                    Seg::Key(key) if is_plain_key(key) => {
                        let _ = write!(out, ".{key}");
                    }
                    Seg::Key(key) => {
                        let quoted = serde_json::to_string(key).unwrap_or_default();
                        let _ = write!(out, "[{}]", escape(&quoted));
                    }
                    Seg::Index(index) => {
                        let _ = write!(out, "[{index}]");
                    }
                }
            }
            out
        }
    }
}

fn is_plain_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '-')
}

/// Fills a message template: `{path}`, `{value}`, `{key}`, `{keyword}`, `{value_type}`,
/// `{count}`, `{max}`, `{detail}`; `{{` and `}}` are braces. Values come from schemas
/// (a server's, through discovery), so they are escaped: a message is one line that
/// cannot drive a terminal.
pub(crate) fn fill(template: &str, vars: &Vars, max: Option<usize>, path: Option<&str>) -> String {
    let lookup = |name: &str| -> Option<String> {
        match name {
            "path" => path.map(str::to_owned),
            "value" => vars.value.clone(),
            "key" => vars.key.clone(),
            "keyword" => vars.keyword.clone(),
            "value_type" => vars.value_type.clone(),
            "count" => vars.count.map(|n| n.to_string()),
            "max" => max.map(|n| n.to_string()),
            "detail" => vars.detail.clone(),
            _ => None,
        }
    };
    let mut out = String::new();
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(after) = tail.strip_prefix("{{") {
            out.push('{');
            rest = after;
        } else if let Some(after) = tail.strip_prefix("}}") {
            out.push('}');
            rest = after;
        } else if let (Some(after), Some(end)) = (tail.strip_prefix('{'), tail.find('}')) {
            let name = &after[..end - 1];
            match lookup(name) {
                Some(value) => out.push_str(&escape(&value)),
                None => out.push_str(&tail[..=end]),
            }
            rest = &tail[end + 1..];
        } else {
            out.push_str(&tail[..1]);
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// The one escaping rule (the config crate's): what could drive a terminal or mislead
/// the reader, as `\u{..}` escapes.
pub(crate) fn escape(text: &str) -> String {
    brain_tools_config::text::escape(text, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_quote_keys_that_are_not_plain() {
        let at = At::Schema(vec![
            Seg::Key("properties".into()),
            Seg::Key("a b\u{1b}".into()),
            Seg::Key("anyOf".into()),
            Seg::Index(0),
        ]);
        assert_eq!(
            render_at(&at),
            r#"input_schema.properties["a b\u001b"].anyOf[0]"#
        );
        assert_eq!(render_at(&At::Name), "name");
        assert_eq!(render_at(&At::Schema(Vec::new())), "input_schema");
    }

    #[test]
    fn templates_fill_escape_and_keep_braces() {
        let vars = Vars {
            value: Some("evil\u{202e}gnp.exe\u{1b}[31m".into()),
            count: Some(3),
            ..Vars::default()
        };
        assert_eq!(
            fill(
                "{{literal}} {value} at {path}: {count} of {max}, {unknown}",
                &vars,
                Some(2),
                Some("name")
            ),
            "{literal} evil\\u{202e}gnp.exe\\u{1b}[31m at name: 3 of 2, {unknown}"
        );
    }
}
