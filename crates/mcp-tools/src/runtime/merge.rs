//! `--merge`: discovered bindings into a host config's `tools` array, in place.
//!
//! The plan is pure: the file's bytes and the bindings in, the new bytes and what changed
//! out. Other top-level keys keep their values and order, existing bindings are kept as
//! written, and the result must load (`HostConfig::from_json_bytes`, as `check` does)
//! before anything is written. The write is atomic: a temporary file in the same folder,
//! flushed to disk, then renamed over the config.

use std::{
    fmt::Write as _,
    io::Write as _,
    path::{Path, PathBuf},
};

use brain_tools_config::{HostConfig, Loaded, ToolBinding};
use serde_json::Value;

use crate::runtime::{
    exit::Exit,
    output::{escape::escape, json},
};

/// What the merge does to one binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChangeKind {
    /// New in the config.
    Added,
    /// Replaces a binding of the same name (`--replace`).
    Replaced,
    /// Already there, the same.
    Unchanged,
}

/// One merged binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    pub(crate) kind: ChangeKind,
    pub(crate) name: String,
    pub(crate) mcp_tool: String,
    /// Its index in the config's `tools` array.
    pub(crate) index: usize,
}

/// The merged config, ready to write.
#[derive(Debug)]
pub(crate) struct Plan {
    /// The new file.
    pub(crate) bytes: Vec<u8>,
    /// What happens to each discovered binding, in discovery order.
    pub(crate) changes: Vec<Change>,
    /// The merged config, loaded.
    pub(crate) loaded: Loaded,
    /// The file did not exist.
    pub(crate) created: bool,
}

impl Plan {
    /// Whether the file needs writing.
    pub(crate) fn writes(&self) -> bool {
        self.created
            || self
                .changes
                .iter()
                .any(|change| change.kind != ChangeKind::Unchanged)
    }
}

/// Merges `bindings` into the config `original` (`None`: no file yet). A binding whose
/// name is taken is refused unless `replace`; then it replaces the old one in place.
pub(crate) fn plan(
    original: Option<&[u8]>,
    shown: &str,
    bindings: &[ToolBinding],
    replace: bool,
) -> Result<Plan, Exit> {
    let (mut document, old, indent, created) = match original {
        None => (
            serde_json::json!({ "tools": [] }),
            None,
            "  ".to_owned(),
            true,
        ),
        Some(bytes) => {
            let loaded = HostConfig::from_json_bytes(bytes).map_err(|errors| {
                Exit::Failed(format!(
                    "{shown} does not load, so nothing was merged (run mcp-tools check --config {shown}): {errors}"
                ))
            })?;
            // The loader may accept a UTF-8 byte-order mark; JSON itself has none.
            let body = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
            let document: Value = serde_json::from_slice(body)
                .map_err(|error| Exit::Failed(format!("{shown} is not JSON: {error}")))?;
            (document, Some(loaded), indentation(bytes), false)
        }
    };
    let Value::Object(root) = &mut document else {
        return Err(Exit::Failed(format!("{shown} is not a JSON object")));
    };
    let tools = root
        .entry("tools")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Value::Array(tools) = tools else {
        return Err(Exit::Failed(format!("{shown}: tools is not an array")));
    };
    let position = |tools: &[Value], name: &str| {
        tools
            .iter()
            .position(|tool| tool.get("name").and_then(Value::as_str) == Some(name))
    };
    let taken: Vec<&str> = bindings
        .iter()
        .map(|binding| binding.name.as_str())
        .filter(|name| position(tools, name).is_some())
        .collect();
    if !taken.is_empty() && !replace {
        return Err(Exit::Failed(format!(
            "{shown} already has {} named {}; nothing was merged: add --replace to replace {}, or --prefix to bind the tools under other names",
            if taken.len() == 1 {
                "a binding"
            } else {
                "bindings"
            },
            taken.join(", "),
            if taken.len() == 1 { "it" } else { "them" },
        )));
    }
    let mut changes = Vec::new();
    let mut replaced: Vec<(usize, Value)> = Vec::new();
    let mut added: Vec<Value> = Vec::new();
    for binding in bindings {
        let value = serde_json::to_value(binding).map_err(|error| {
            Exit::Failed(format!(
                "cannot write the binding {}: {error}",
                binding.name
            ))
        })?;
        let mcp_tool = binding
            .mcp()
            .map(|mcp| mcp.mcp_tool.clone())
            .unwrap_or_default();
        let (kind, index) = match position(tools, &binding.name) {
            Some(index) => {
                let same = old.as_ref().is_some_and(|old| {
                    old.config
                        .tools
                        .iter()
                        .any(|existing| existing.name == binding.name && existing == binding)
                });
                if same {
                    // Kept as written (its omitted defaults, its key order).
                    (ChangeKind::Unchanged, index)
                } else {
                    replaced.push((index, value.clone()));
                    tools[index] = value;
                    (ChangeKind::Replaced, index)
                }
            }
            None => {
                added.push(value.clone());
                tools.push(value);
                (ChangeKind::Added, tools.len() - 1)
            }
        };
        changes.push(Change {
            kind,
            name: binding.name.clone(),
            mcp_tool,
            index,
        });
    }
    // The file as it was, with only the changed bindings written into it; when that
    // cannot be done (no `tools` key yet), or does not give exactly the merged document,
    // the whole document is written out.
    let spliced = original.and_then(|bytes| {
        let text = std::str::from_utf8(bytes).ok()?;
        let (bom, text) = match text.strip_prefix('\u{feff}') {
            Some(rest) => ("\u{feff}", rest),
            None => ("", text),
        };
        let out = splice(text, &replaced, &added, &indent)?;
        let same = serde_json::from_str::<Value>(&out).ok()? == document;
        same.then(|| format!("{bom}{out}").into_bytes())
    });
    let bytes = match spliced {
        Some(bytes) => bytes,
        None => pretty(&document, &indent)
            .map_err(|error| Exit::Failed(format!("cannot write the merged config: {error}")))?,
    };
    let loaded = HostConfig::from_json_bytes(&bytes).map_err(|errors| {
        Exit::Failed(format!(
            "nothing was written: {shown} would not load after the merge: {errors}"
        ))
    })?;
    Ok(Plan {
        bytes,
        changes,
        loaded,
        created,
    })
}

/// The indentation the file uses (its first indented line), two spaces when it has none.
fn indentation(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.lines()
        .skip(1)
        .map(|line| {
            line.chars()
                .take_while(|c| *c == ' ' || *c == '\t')
                .collect::<String>()
        })
        .find(|indent| !indent.is_empty())
        .unwrap_or_else(|| "  ".to_owned())
}

fn pretty(document: &Value, indent: &str) -> serde_json::Result<Vec<u8>> {
    let mut text = json::indented(document, indent.as_bytes())?;
    text.push('\n');
    Ok(text.into_bytes())
}

/// A span of the text: `start..end` in bytes.
type Span = (usize, usize);

/// The members of an object or the items of an array, in a JSON text known to be valid:
/// `(key span, value span)` (no key for array items).
fn items(text: &[u8], container: Span) -> Option<Vec<(Option<Span>, Span)>> {
    let mut scanner = Scanner {
        text,
        pos: container.0 + 1,
    };
    let object = text.get(container.0) == Some(&b'{');
    let mut out = Vec::new();
    loop {
        scanner.space();
        match text.get(scanner.pos)? {
            b'}' | b']' => return Some(out),
            b',' => {
                scanner.pos += 1;
                continue;
            }
            _ => {}
        }
        let key = if object {
            let key = scanner.value()?;
            scanner.space();
            if text.get(scanner.pos) != Some(&b':') {
                return None;
            }
            scanner.pos += 1;
            Some(key)
        } else {
            None
        };
        let value = scanner.value()?;
        out.push((key, value));
    }
}

/// Finds the spans of values in a JSON text (already known to be valid).
struct Scanner<'a> {
    text: &'a [u8],
    pos: usize,
}

impl Scanner<'_> {
    fn space(&mut self) {
        while matches!(self.text.get(self.pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn value(&mut self) -> Option<Span> {
        self.space();
        let start = self.pos;
        match self.text.get(self.pos)? {
            b'"' => {
                self.pos += 1;
                loop {
                    match self.text.get(self.pos)? {
                        b'\\' => self.pos += 2,
                        b'"' => {
                            self.pos += 1;
                            break;
                        }
                        _ => self.pos += 1,
                    }
                }
            }
            open @ (b'{' | b'[') => {
                let close = if *open == b'{' { b'}' } else { b']' };
                let inner = items(self.text, (start, start))?;
                self.pos = inner.last().map_or(start + 1, |(_, value)| value.1);
                loop {
                    self.space();
                    match self.text.get(self.pos)? {
                        b',' => self.pos += 1,
                        c if *c == close => {
                            self.pos += 1;
                            break;
                        }
                        _ => return None,
                    }
                }
            }
            _ => {
                while !matches!(
                    self.text.get(self.pos),
                    None | Some(b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r')
                ) {
                    self.pos += 1;
                }
            }
        }
        Some((start, self.pos))
    }
}

/// The whitespace that starts the line `at` is on.
fn line_indent(text: &str, at: usize) -> &str {
    let line = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let rest = &text[line..];
    &rest[..rest.len() - rest.trim_start_matches([' ', '\t']).len()]
}

/// `text` with the bindings at `replaced` (indexes into `tools`) rewritten and `added`
/// appended to the `tools` array, everything else byte for byte as it was. `None` when
/// the document has no `tools` array.
fn splice(text: &str, replaced: &[(usize, Value)], added: &[Value], unit: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let root = Scanner {
        text: bytes,
        pos: 0,
    }
    .value()?;
    let members = items(bytes, root)?;
    let (_, tools) = members
        .iter()
        .rev()
        .find(|(key, _)| key.is_some_and(|(s, e)| &text[s..e] == "\"tools\""))?;
    let tools = *tools;
    if bytes.get(tools.0) != Some(&b'[') {
        return None;
    }
    let elements = items(bytes, tools)?;
    let closing = line_indent(text, tools.0).to_owned();
    let multiline = match elements.first() {
        Some((_, first)) => text[tools.0..first.0].contains('\n'),
        None => true,
    };
    let indent = match elements.first() {
        Some((_, first)) if multiline => line_indent(text, first.0).to_owned(),
        _ => format!("{closing}{unit}"),
    };
    let render = |value: &Value| -> Option<String> {
        if multiline {
            let pretty = String::from_utf8(pretty(value, unit).ok()?).ok()?;
            Some(pretty.trim_end().replace('\n', &format!("\n{indent}")))
        } else {
            json::to_string(value).ok()
        }
    };
    // Edits from the end of the text backwards, so earlier spans stay valid.
    let mut edits: Vec<(Span, String)> = Vec::new();
    if !added.is_empty() {
        let separator = if multiline {
            format!(",\n{indent}")
        } else {
            ", ".to_owned()
        };
        let rendered = added.iter().map(render).collect::<Option<Vec<_>>>()?;
        let joined = rendered.join(&separator);
        match elements.last() {
            Some((_, last)) => edits.push(((last.1, last.1), format!("{separator}{joined}"))),
            None => edits.push((tools, format!("[\n{indent}{joined}\n{closing}]"))),
        }
    }
    for (index, value) in replaced {
        let (_, span) = elements.get(*index)?;
        edits.push((*span, render(value)?));
    }
    edits.sort_by_key(|(span, _)| std::cmp::Reverse(span.0));
    let mut out = text.to_owned();
    for ((start, end), replacement) in edits {
        out.replace_range(start..end, &replacement);
    }
    Some(out)
}

/// What changed, for stdout.
pub(crate) fn summary(plan: &Plan, shown: &str) -> String {
    let mut out = String::new();
    // Columns as wide as their widest cell: `tools[9]` and `tools[10]` line up, and so
    // do the names after them (escaped, as they are printed).
    let rows: Vec<(&str, String, String)> = plan
        .changes
        .iter()
        .map(|change| {
            let kind = match change.kind {
                ChangeKind::Added => "added",
                ChangeKind::Replaced => "replaced",
                ChangeKind::Unchanged => "unchanged",
            };
            (
                kind,
                format!("tools[{}]", change.index),
                escape(&change.name, false),
            )
        })
        .collect();
    let width = |cell: fn(&(&str, String, String)) -> usize| rows.iter().map(cell).max();
    let at = width(|row| row.1.chars().count()).unwrap_or(0);
    let named = width(|row| row.2.chars().count()).unwrap_or(0);
    for ((kind, at_index, name), change) in rows.iter().zip(&plan.changes) {
        let _ = writeln!(
            out,
            "{kind:<9}  {at_index:<at$} {name:<named$}  (mcp_tool {})",
            escape(&change.mcp_tool, false)
        );
    }
    let count = |kind| plan.changes.iter().filter(|c| c.kind == kind).count();
    let total = plan.loaded.config.tools.len();
    let shown = escape(shown, false);
    let _ = writeln!(
        out,
        "{shown}: {}{} added, {} replaced, {} unchanged; {total} binding{} in all",
        if plan.created { "created; " } else { "" },
        count(ChangeKind::Added),
        count(ChangeKind::Replaced),
        count(ChangeKind::Unchanged),
        if total == 1 { "" } else { "s" },
    );
    if !plan.writes() {
        let _ = writeln!(out, "{shown}: nothing to write");
    }
    out
}

/// Replaces the file at `path` (through a symbolic link, its target) with `bytes`
/// atomically: written to a temporary file beside it, flushed, given the old file's
/// permissions, then renamed over it. A failure leaves the old file as it was.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<PathBuf> {
    let target = match std::fs::canonicalize(path) {
        Ok(target) => target,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => path.to_path_buf(),
        Err(error) => return Err(error),
    };
    let dir = target
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut builder = tempfile::Builder::new();
    builder.prefix(".mcp-tools-merge-").suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        // As a new file would be: 0666 less the umask.
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut temp = builder.tempfile_in(dir)?;
    temp.write_all(bytes)?;
    if let Ok(metadata) = std::fs::metadata(&target) {
        temp.as_file().set_permissions(metadata.permissions())?;
    }
    temp.as_file().sync_all()?;
    temp.persist(&target).map_err(|error| error.error)?;
    if let Ok(dir) = std::fs::File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use brain_tools_config::{McpServer, McpTarget, Target};
    use serde_json::json;

    use super::*;

    fn binding(name: &str, mcp_tool: &str) -> ToolBinding {
        let schema = json!({"type": "object", "properties": {"q": {"type": "string"}}});
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        ToolBinding::new(
            name,
            schema,
            vec!["local".into()],
            Target::Mcp(McpTarget::new(
                McpServer::http("https://mcp.example.com/mcp", None),
                mcp_tool,
            )),
        )
    }

    const CONFIG: &str = r#"{
    "server": {"port": 8080},
    "tools": [
        {"name": "docs_search", "input_schema": {"type": "object"}, "url": "https://old.example.com/mcp", "mcp_tool": "search", "tenants": ["local"], "timeout_seconds": 60}
    ],
    "logging": "info"
}
"#;

    fn failed(outcome: Result<Plan, Exit>) -> String {
        match outcome {
            Err(Exit::Failed(message)) => message,
            other => panic!("not a failure: {other:?}"),
        }
    }

    #[test]
    fn adds_in_place_keeping_other_keys_and_bindings() {
        let plan = plan(
            Some(CONFIG.as_bytes()),
            "host.json",
            &[binding("docs_fetch", "fetch")],
            false,
        )
        .unwrap();
        let merged: Value = serde_json::from_slice(&plan.bytes).unwrap();
        let keys: Vec<&String> = merged.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["server", "tools", "logging"]);
        let original: Value = serde_json::from_str(CONFIG).unwrap();
        assert_eq!(merged["tools"][0], original["tools"][0], "kept as written");
        assert_eq!(merged["tools"][1]["name"], "docs_fetch");
        assert_eq!(merged["server"], original["server"]);
        assert!(
            plan.bytes.starts_with(b"{\n    \"server\""),
            "the file's indentation"
        );
        assert_eq!(
            plan.changes,
            [Change {
                kind: ChangeKind::Added,
                name: "docs_fetch".into(),
                mcp_tool: "fetch".into(),
                index: 1
            }]
        );
        assert_eq!(
            summary(&plan, "host.json"),
            "added      tools[1] docs_fetch  (mcp_tool fetch)\nhost.json: 1 added, 0 replaced, 0 unchanged; 2 bindings in all\n"
        );
    }

    /// A person reads the summary as a table: from `tools[10]` on, the names stay in
    /// the column they started in.
    #[test]
    fn the_summary_columns_hold_past_ten_bindings() {
        let bindings: Vec<ToolBinding> = (0..12)
            .map(|i| binding(&format!("t{i}"), &format!("tool_{i}")))
            .collect();
        let plan = plan(None, "host.json", &bindings, false).unwrap();
        let shown = summary(&plan, "host.json");
        insta::assert_snapshot!(shown);
        let columns: Vec<usize> = shown
            .lines()
            .filter(|line| line.starts_with("added"))
            .map(|line| line.find(" t").unwrap() + 1)
            .collect();
        assert_eq!(columns.len(), 12);
        assert!(columns.iter().all(|&c| c == columns[0]), "{shown}");
        let mcp_tool: Vec<usize> = shown
            .lines()
            .filter_map(|line| line.find("(mcp_tool"))
            .collect();
        assert!(mcp_tool.iter().all(|&c| c == mcp_tool[0]), "{shown}");
    }

    #[test]
    fn the_summary_escapes_the_servers_tool_names() {
        use crate::runtime::output::escape::hostile::{TEXT, assert_escaped};
        let plan = plan(
            Some(CONFIG.as_bytes()),
            "host.json",
            &[binding("docs_fetch", TEXT)],
            false,
        )
        .unwrap();
        let shown = summary(&plan, "host.json");
        assert!(
            shown.starts_with("added      tools[1] docs_fetch  (mcp_tool x\\u{1b}"),
            "{shown}"
        );
        assert_escaped(&shown);
    }

    #[test]
    fn what_a_server_chose_is_written_with_json_escapes_and_reads_back_the_same() {
        use crate::runtime::output::escape::hostile::TEXT;
        let mut hostile = binding("docs_fetch", TEXT);
        hostile.description = format!("fetches {TEXT}");
        // Spliced into the file as it was, and written whole (no `tools` key yet).
        for original in [
            Some(CONFIG.as_bytes()),
            Some(br#"{"tools": []}"#.as_slice()),
            None,
        ] {
            let plan = plan(original, "host.json", &[hostile.clone()], false).unwrap();
            let text = std::str::from_utf8(&plan.bytes).unwrap();
            let raw: Vec<char> = text
                .chars()
                .filter(|&c| brain_tools_config::text::is_hidden(c) && c != '\n')
                .collect();
            assert!(raw.is_empty(), "{raw:?} raw in {text}");
            assert!(text.contains(r"x\u001b[31m\u009b2J\u202e\u2066\u200b\udb40\udc41y"));
            let merged: Value = serde_json::from_slice(&plan.bytes).unwrap();
            let added = merged["tools"].as_array().unwrap().last().unwrap().clone();
            assert_eq!(added["mcp_tool"], TEXT);
            assert_eq!(added["description"], format!("fetches {TEXT}"));
        }
    }

    #[test]
    fn a_taken_name_is_refused_unless_replace() {
        let message = failed(plan(
            Some(CONFIG.as_bytes()),
            "host.json",
            &[binding("docs_search", "search")],
            false,
        ));
        assert_eq!(
            message,
            "host.json already has a binding named docs_search; nothing was merged: add --replace to replace it, or --prefix to bind the tools under other names"
        );
        let plan = plan(
            Some(CONFIG.as_bytes()),
            "host.json",
            &[binding("docs_search", "search")],
            true,
        )
        .unwrap();
        let merged: Value = serde_json::from_slice(&plan.bytes).unwrap();
        assert_eq!(merged["tools"].as_array().unwrap().len(), 1);
        assert_eq!(merged["tools"][0]["url"], "https://mcp.example.com/mcp");
        assert_eq!(plan.changes[0].kind, ChangeKind::Replaced);
    }

    #[test]
    fn the_same_binding_again_is_unchanged_and_nothing_is_written() {
        let first = plan(None, "host.json", &[binding("echo", "echo")], false).unwrap();
        assert!(first.created && first.writes());
        let again = plan(
            Some(&first.bytes),
            "host.json",
            &[binding("echo", "echo")],
            true,
        )
        .unwrap();
        assert_eq!(again.changes[0].kind, ChangeKind::Unchanged);
        assert!(!again.writes());
        assert_eq!(again.bytes, first.bytes);
    }

    #[test]
    fn an_invalid_result_or_original_is_never_written() {
        let mut bad = binding("bad", "bad");
        bad.input_schema.insert("type".into(), json!("string"));
        let message = failed(plan(Some(CONFIG.as_bytes()), "host.json", &[bad], false));
        assert!(message.starts_with("nothing was written: host.json would not load after the merge: the host config has 1 problem:"), "{message}");
        let message = failed(plan(
            Some(b"{\"tools\": [{}]}"),
            "host.json",
            &[binding("a", "a")],
            false,
        ));
        assert!(
            message.starts_with("host.json does not load, so nothing was merged"),
            "{message}"
        );
    }

    /// Replacing and adding touch only those bindings' text; a compact array stays
    /// compact; an empty one gets its first element; no `tools` key is added at the end.
    #[test]
    fn splicing_keeps_the_rest_of_the_text() {
        let text = "{\"a\": 1, \"tools\": [{\"name\": \"x\"}, {\"name\": \"y\"}], \"b\": [1,2]}";
        let out = splice(
            text,
            &[(1, json!({"name": "Y"}))],
            &[json!({"name": "z"})],
            "  ",
        )
        .unwrap();
        assert_eq!(
            out,
            "{\"a\": 1, \"tools\": [{\"name\": \"x\"}, {\"name\":\"Y\"}, {\"name\":\"z\"}], \"b\": [1,2]}"
        );
        let text = "{\n\t\"tools\": [],\n\t\"x\": \"]\\\"}\"\n}";
        let out = splice(
            text,
            &[],
            &[json!({"name": "a"}), json!({"name": "b"})],
            "\t",
        )
        .unwrap();
        assert_eq!(
            out,
            "{\n\t\"tools\": [\n\t\t{\n\t\t\t\"name\": \"a\"\n\t\t},\n\t\t{\n\t\t\t\"name\": \"b\"\n\t\t}\n\t],\n\t\"x\": \"]\\\"}\"\n}"
        );
        assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["x"], "]\"}");
        assert!(splice("{\"other\": 1}", &[], &[json!({})], "  ").is_none());
    }

    #[test]
    fn the_write_is_atomic_and_keeps_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("host.json");
        std::fs::write(&path, CONFIG).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        }
        write_atomically(&path, b"{\"tools\": []}\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"tools\": []}\n");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o640);
        }
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left behind");
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_keeps_pointing_at_the_config() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        let link = dir.path().join("host.json");
        std::fs::write(&real, CONFIG).unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomically(&link, b"{}\n").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read(&real).unwrap(), b"{}\n");
    }
}
