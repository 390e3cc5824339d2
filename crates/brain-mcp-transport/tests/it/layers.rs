//! The architecture invariant of this crate: its top-level modules depend one way,
//! lowest first (docs/ARCHITECTURE.md). A module may use itself and any module below
//! it, never one above.

use std::{collections::BTreeMap, path::Path};

/// The layers, lowest first.
const ORDER: &[&str] = &[
    "secret",
    "endpoint",
    "grant",
    "progress",
    "api",
    "error",
    "call_state",
    "wire",
    "auth",
    "protocol",
    "context",
    "client",
];

/// The top-level module a source file belongs to (`src/wire/http/post.rs` -> `wire`).
fn module_of(relative: &Path) -> Option<String> {
    let first = relative.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib").then(|| name.to_owned())
}

/// Every top-level module named after `crate::` in the source, grouped imports included
/// (`use crate::{a::b, c};`).
fn uses(source: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = source;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The top-level names of a group: depth-1 items before `::`, `,` or `}`.
            let mut depth = 1;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' | ',' if depth == 1 => {
                        push_name(&item, &mut found);
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
        } else {
            push_name(rest, &mut found);
        }
    }
    found
}

fn push_name(text: &str, found: &mut Vec<String>) {
    let name: String = text
        .trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    if !name.is_empty() {
        found.push(name);
    }
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
    let rank = |name: &str| ORDER.iter().position(|layer| *layer == name);
    let mut graph: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    let mut wrong = Vec::new();
    for (file, source) in &files {
        let Some(module) = module_of(file) else {
            continue;
        };
        let own = rank(&module)
            .unwrap_or_else(|| panic!("{}: module {module} is in no layer", file.display()));
        for used in uses(source) {
            let Some(theirs) = rank(&used) else {
                continue; // `crate::JsonObject` and other re-exports at the root
            };
            if used != module {
                graph
                    .entry(module.clone())
                    .or_default()
                    .insert(used.clone());
            }
            if theirs > own {
                wrong.push(format!("{} ({module}) uses {used}", file.display()));
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
            graph.values().any(|used| used.contains(*layer)),
            "{layer} is used by no module"
        );
    }
}

#[test]
fn the_use_parser_reads_groups_and_paths() {
    let source = "use crate::{\n    api::{CallRequest, Era},\n    error::CallError,\n    secret,\n};\nlet x = crate::wire::http::X;";
    assert_eq!(uses(source), ["api", "error", "secret", "wire"]);
}
