//! The architecture invariant of this crate: its top-level modules depend one way,
//! lowest first (docs/ARCHITECTURE.md). A module may use itself and any module below
//! it, never one above. The layer table of docs/ARCHITECTURE.md is generated from
//! [`ORDER`] and checked against it here.

use std::{collections::BTreeMap, path::Path};

/// A layer: one top-level module.
struct Layer {
    module: &'static str,
    /// Put between two layers after they were numbered: it takes the number of the
    /// layer below it and a half (`2½`), so that the numbers contributors know stay.
    between: bool,
}

const fn layer(module: &'static str) -> Layer {
    Layer {
        module,
        between: false,
    }
}

const fn between(module: &'static str) -> Layer {
    Layer {
        module,
        between: true,
    }
}

/// The layers, lowest first.
const ORDER: &[Layer] = &[
    layer("secret"),
    between("dpop"),
    layer("endpoint"),
    between("telemetry"),
    layer("grant"),
    layer("progress"),
    layer("api"),
    layer("error"),
    between("features"),
    layer("call_state"),
    layer("wire"),
    layer("auth"),
    layer("protocol"),
    layer("context"),
    layer("client"),
];

/// Each layer's number as the map shows it (`1`, `1½`, `2`, ...), with its module.
fn numbered() -> Vec<(String, &'static str)> {
    let mut whole = 0;
    ORDER
        .iter()
        .map(|layer| {
            if layer.between {
                (format!("{whole}½"), layer.module)
            } else {
                whole += 1;
                (whole.to_string(), layer.module)
            }
        })
        .collect()
}

/// The module path of a source file: `src/wire/http/post.rs` -> `[wire, http, post]`,
/// `src/wire/http/mod.rs` -> `[wire, http]`. A stand-in for a compiled-out module is
/// that module: `src/dpop_off.rs` (`#[path = "dpop_off.rs"] mod dpop;`) -> `[dpop]`.
fn module_path(relative: &Path) -> Vec<String> {
    let mut path: Vec<String> = relative
        .iter()
        .filter_map(|part| part.to_str())
        .map(|part| part.strip_suffix(".rs").unwrap_or(part))
        .map(|part| part.strip_suffix("_off").unwrap_or(part).to_owned())
        .collect();
    if path
        .last()
        .is_some_and(|last| last == "mod" || last == "lib")
    {
        path.pop();
    }
    path
}

/// The names re-exported at the crate root, and the module each comes from
/// (`pub use client::{ClientOptions, McpClient};` -> `ClientOptions` -> `client`).
fn root_exports(lib: &str) -> BTreeMap<String, String> {
    let mut exports = BTreeMap::new();
    for statement in lib.split(';') {
        let Some(at) = statement.find("pub use ") else {
            continue;
        };
        let statement = &statement[at + "pub use ".len()..];
        let Some((module, rest)) = statement.split_once("::") else {
            continue;
        };
        let names = rest.trim().trim_start_matches('{').trim_end_matches('}');
        for name in names.split(',') {
            let name = name.rsplit("::").next().unwrap_or_default().trim();
            if !name.is_empty() {
                exports.insert(name.to_owned(), module.trim().to_owned());
            }
        }
    }
    exports
}

/// Every path into the crate that the source names, as the first name after the crate
/// root: `crate::a::b` and `use crate::{a::b, c}` give `a` and `c`; `super::` paths
/// that climb to the crate root (from a file `depth` modules deep) count too.
fn uses(source: &str, depth: usize) -> Vec<Used> {
    let mut found = Vec::new();
    let mut rest = source;
    loop {
        let crate_at = rest.find("crate::");
        let super_at = rest.find("super::");
        let (at, absolute) = match (crate_at, super_at) {
            (Some(c), Some(s)) if s < c => (s, false),
            (Some(c), _) => (c, true),
            (None, Some(s)) => (s, false),
            (None, None) => break,
        };
        let before = rest[..at].chars().next_back();
        rest = &rest[at..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            // `$crate::`, `my_crate::`: not ours.
            rest = &rest[1..];
            continue;
        }
        let reaches_root = if absolute {
            rest = &rest["crate::".len()..];
            true
        } else {
            let mut climbs = 0;
            while let Some(after) = rest.strip_prefix("super::") {
                climbs += 1;
                rest = after;
            }
            climbs >= depth
        };
        if !reaches_root {
            continue;
        }
        let names = match rest.strip_prefix('{') {
            Some(group) => group_names(group),
            None => name_of(rest).into_iter().collect(),
        };
        found.extend(names.into_iter().map(|name| Used { name, absolute }));
    }
    found
}

/// A name the source reaches from the crate root.
#[derive(Debug, PartialEq, Eq)]
struct Used {
    name: String,
    /// Through `crate::` (so it must be a module or a root re-export), not `super::`.
    absolute: bool,
}

/// The top-level names of a `{...}` group: depth-1 items before `::`, `,` or `}`.
fn group_names(group: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut depth = 1;
    let mut item = String::new();
    for c in group.chars() {
        match c {
            '{' => depth += 1,
            '}' | ',' if depth == 1 => {
                names.extend(name_of(&item));
                item.clear();
                if c == '}' {
                    break;
                }
                continue;
            }
            '}' => depth -= 1,
            _ => {}
        }
        if depth == 1 {
            item.push(c);
        }
    }
    names
}

fn name_of(text: &str) -> Option<String> {
    let name: String = text
        .trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty() && name != "self").then_some(name)
}

fn sources(dir: &Path, root: &Path, out: &mut Vec<(std::path::PathBuf, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, root, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let relative = path.strip_prefix(root).unwrap().to_path_buf();
            out.push((relative, std::fs::read_to_string(&path).unwrap()));
        }
    }
}

#[test]
fn modules_depend_one_way_lowest_first() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &root, &mut files);
    let lib = std::fs::read_to_string(root.join("lib.rs")).unwrap();
    let exports = root_exports(&lib);
    let rank = |name: &str| ORDER.iter().position(|layer| layer.module == name);
    let mut graph: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    let mut wrong = Vec::new();
    for (file, source) in &files {
        let path = module_path(file);
        let Some(module) = path.first().cloned() else {
            continue; // lib.rs
        };
        let own = rank(&module)
            .unwrap_or_else(|| panic!("{}: module {module} is in no layer", file.display()));
        for used in uses(source, path.len()) {
            // A module, or a name re-exported at the root from one.
            let Some(used_module) = rank(&used.name)
                .map(|_| used.name.clone())
                .or_else(|| exports.get(&used.name).cloned())
            else {
                // `super::` from an inline module (`mod tests`) may name a local item.
                assert!(
                    !used.absolute,
                    "{}: crate::{} is neither a module nor a root re-export",
                    file.display(),
                    used.name
                );
                continue;
            };
            let theirs = rank(&used_module)
                .unwrap_or_else(|| panic!("{}: {used_module} is in no layer", file.display()));
            if used_module != module {
                graph
                    .entry(module.clone())
                    .or_default()
                    .insert(used_module.clone());
            }
            if theirs > own {
                wrong.push(format!(
                    "{} ({module}) uses {} ({used_module})",
                    file.display(),
                    used.name
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "upward dependencies:\n{}",
        wrong.join("\n")
    );
    // Every layer is used by something above it, or is the top.
    for layer in &ORDER[..ORDER.len() - 1] {
        assert!(
            graph.values().any(|used| used.contains(layer.module)),
            "{} is used by no module",
            layer.module
        );
    }
    eprintln!("the module graph (what each module uses):");
    for (module, used) in &graph {
        let used: Vec<&str> = used.iter().map(String::as_str).collect();
        eprintln!("  {module}: {}", used.join(", "));
    }
}

/// Where the layer table stands in the map, from the crate's folder.
const MAP: &str = "../../docs/ARCHITECTURE.md";
const TABLE_BEGIN: &str = "<!-- layers: generated from ORDER in crates/brain-mcp-transport/tests/it/layers.rs; \
                           UPDATE_ARCHITECTURE=1 cargo test -p brain-mcp-transport --test it layers rewrites it -->";
const TABLE_END: &str = "<!-- layers: end -->";
const TABLE_HEAD: &str = "| layer | modules | what it holds |\n|---|---|---|\n";
/// What a new layer's row says until someone writes what it holds.
const TO_DESCRIBE: &str = "(what it holds: to be written)";

/// The rows of a layer table: (number, module, what it holds).
fn rows(table: &str) -> Vec<(String, String, String)> {
    table
        .lines()
        .skip(2)
        .filter_map(|line| {
            let mut cells = line
                .trim()
                .strip_prefix('|')?
                .strip_suffix('|')?
                .splitn(3, '|');
            let number = cells.next()?.trim().to_owned();
            let module = cells.next()?.trim().trim_matches('`').to_owned();
            let holds = cells.next()?.trim().to_owned();
            Some((number, module, holds))
        })
        .collect()
}

/// The table [`ORDER`] gives: each layer's number and module, in order, and what it
/// holds as `current` says (a module `current` lacks gets [`TO_DESCRIBE`]).
fn table(current: &[(String, String, String)]) -> String {
    let mut table = TABLE_HEAD.to_owned();
    for (number, module) in numbered() {
        let holds = current
            .iter()
            .find(|(_, theirs, _)| theirs == module)
            .map_or(TO_DESCRIBE, |(_, _, holds)| holds.as_str());
        table.push_str(&format!("| {number} | `{module}` | {holds} |\n"));
    }
    table
}

#[test]
fn the_architecture_map_shows_the_layers_in_order() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(MAP);
    let map = std::fs::read_to_string(&path).unwrap();
    let (before, rest) = map
        .split_once(&format!("{TABLE_BEGIN}\n"))
        .unwrap_or_else(|| panic!("{MAP}: no line {TABLE_BEGIN}"));
    let (current, after) = rest
        .split_once(&format!("{TABLE_END}\n"))
        .unwrap_or_else(|| panic!("{MAP}: no line {TABLE_END} after the table"));
    let expected = table(&rows(current));
    if current == expected {
        return;
    }
    if std::env::var_os("UPDATE_ARCHITECTURE").is_some() {
        let map = format!("{before}{TABLE_BEGIN}\n{expected}{TABLE_END}\n{after}");
        std::fs::write(&path, map).unwrap();
        return;
    }
    panic!(
        "{MAP}'s layer table differs from ORDER in tests/it/layers.rs; it should read \
         (run with UPDATE_ARCHITECTURE=1 to write it, then describe any new layer):\n\n{expected}"
    );
}

#[test]
fn the_table_is_numbered_from_order_and_keeps_what_it_says() {
    let numbers: Vec<String> = numbered().into_iter().map(|(number, _)| number).collect();
    assert_eq!(numbers[..5], ["1", "1½", "2", "2½", "3"]);
    let current = rows(
        "| layer | modules | what it holds |\n|---|---|---|\n| 1 | `secret` | `Secret` |\n\
         | 9 | `client` | the client |\n| 4 | `gone` | a module no more |\n",
    );
    let table = table(&current);
    assert!(table.starts_with(TABLE_HEAD), "{table}");
    assert!(table.contains("| 1 | `secret` | `Secret` |\n"), "{table}");
    assert!(
        table.contains(&format!("| 1½ | `dpop` | {TO_DESCRIBE} |\n")),
        "{table}"
    );
    assert!(table.ends_with("| `client` | the client |\n"), "{table}");
    assert!(!table.contains("gone"), "{table}");
}

#[test]
fn the_use_parser_reads_groups_paths_supers_and_reexports() {
    let names = |source: &str, depth| -> Vec<String> {
        uses(source, depth)
            .into_iter()
            .map(|used| used.name)
            .collect()
    };
    let source = "use crate::{\n    api::{CallRequest, Era},\n    error::CallError,\n    secret,\n};\nlet x = crate::wire::http::X;";
    assert_eq!(names(source, 1), ["api", "error", "secret", "wire"]);
    // From `src/context/legacy.rs` (depth 2): one `super` stays in `context`, two reach
    // the root; from `src/context/mod.rs` (depth 1), one does.
    let source = "use super::Shared; use super::super::client::McpClient;";
    assert_eq!(names(source, 2), ["client"]);
    assert_eq!(names(source, 1), ["Shared", "client"]);
    assert_eq!(names("use super::{client, api::X};", 1), ["client", "api"]);
    // A root re-export names its module.
    let exports =
        root_exports("pub use client::{ClientOptions, McpClient};\npub use secret::Secret;");
    assert_eq!(exports["McpClient"], "client");
    assert_eq!(exports["Secret"], "secret");
    // Not ours.
    assert!(names("$crate::x; my_crate::y;", 1).is_empty());
}
