//! The architecture invariant of the CLI (docs/ARCHITECTURE.md): commands over a shared
//! runtime. Its modules stand in four layers, lowest first:
//!
//! 1. `cli`: the clap types and the Go-style flag rewrite; it uses no module of ours.
//! 2. `runtime::*`: what the commands share (exit codes, output, configs, clients,
//!    stores, ...); its modules use `cli` and each other, never a command.
//! 3. `commands::*`: one module per command; a command uses `cli` and the runtime, never
//!    another command.
//! 4. `dispatch`: parses, runs the command, maps its outcome to the exit status.
//!
//! Nothing uses a layer above its own, and no modules use each other in a circle.
//! `main.rs` only declares the modules and calls `dispatch::run`.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

/// The layers, lowest first: a top-level module, or a folder whose modules are each a
/// unit of the graph.
const LAYERS: &[&str] = &["cli", "runtime", "commands", "dispatch"];

/// The folders whose modules are each a unit (`commands::call`, `runtime::output`).
const FOLDERS: &[&str] = &["commands", "runtime"];

/// The module path of a source file: `commands/call.rs` -> `[commands, call]`,
/// `runtime/output/mod.rs` -> `[runtime, output]`, `main.rs` -> `[]`.
fn module_path(relative: &Path) -> Vec<String> {
    let mut path: Vec<String> = relative
        .iter()
        .filter_map(|part| part.to_str())
        .map(|part| part.strip_suffix(".rs").unwrap_or(part).to_owned())
        .collect();
    if path
        .last()
        .is_some_and(|last| last == "mod" || last == "main")
    {
        path.pop();
    }
    path
}

/// The unit of the graph a module path belongs to: `[runtime, output, human]` ->
/// `runtime::output`, `[cli]` -> `cli`; `None` for a folder alone (`[runtime]`).
fn unit(path: &[String]) -> Option<String> {
    let first = path.first()?;
    if FOLDERS.contains(&first.as_str()) {
        return path.get(1).map(|second| format!("{first}::{second}"));
    }
    Some(first.clone())
}

/// The layer of a unit: its index in [`LAYERS`].
fn layer(unit: &str) -> Option<usize> {
    let top = unit.split("::").next().unwrap_or(unit);
    LAYERS.iter().position(|layer| *layer == top)
}

/// A path into the crate that a source names, from the crate root.
#[derive(Debug, PartialEq, Eq)]
struct Used {
    path: Vec<String>,
    /// Through `crate::` (so it must name a module), not `super::`.
    absolute: bool,
}

/// Every path into the crate that `source` names: `crate::a::b`, the leaves of
/// `use crate::{a::b, c::{d, e}}`, and `super::` paths resolved from `module` (the
/// file's module path; a `super::` in an inline `mod tests` is read as the file's own,
/// so such a path may name a local item and is only counted when it names a module).
fn uses(source: &str, module: &[String]) -> Vec<Used> {
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
        let base: Vec<String> = if absolute {
            rest = &rest["crate::".len()..];
            Vec::new()
        } else {
            let mut climbs = 0;
            while let Some(after) = rest.strip_prefix("super::") {
                climbs += 1;
                rest = after;
            }
            module[..module.len().saturating_sub(climbs)].to_vec()
        };
        let (paths, _) = tree(rest);
        for path in paths {
            let mut whole = base.clone();
            whole.extend(path);
            found.push(Used {
                path: whole,
                absolute,
            });
        }
    }
    found
}

/// The paths of a use tree at the start of `text` (`a::{b, c::d}` -> `[a, b]`, `[a, c,
/// d]`), and the text after it. `self` and `*` end a path where they stand.
fn tree(text: &str) -> (Vec<Vec<String>>, &str) {
    let text = text.trim_start();
    if let Some(mut rest) = text.strip_prefix('{') {
        let mut paths = Vec::new();
        loop {
            rest = rest.trim_start();
            if let Some(after) = rest.strip_prefix('}') {
                return (paths, after);
            }
            if rest.is_empty() {
                return (paths, rest);
            }
            let (items, after) = tree(rest);
            paths.extend(items);
            // Past an alias (`x as y`) to the next item or the group's end.
            let end = after.find([',', '}']).unwrap_or(after.len());
            rest = &after[end..];
            rest = rest.strip_prefix(',').unwrap_or(rest);
        }
    }
    let name: String = text
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    let after = &text[name.len()..];
    if name.is_empty() || name == "self" {
        return (vec![Vec::new()], after);
    }
    let Some(next) = after.strip_prefix("::") else {
        return (vec![vec![name]], after);
    };
    let (paths, rest) = tree(next);
    let paths = paths
        .into_iter()
        .map(|path| std::iter::once(name.clone()).chain(path).collect())
        .collect();
    (paths, rest)
}

fn sources(dir: &Path, root: &Path, out: &mut Vec<(PathBuf, String)>) {
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

/// The units that use each other in a loop: the strongly connected components of more
/// than one unit (Tarjan's algorithm).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        circles: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, unit: &'a str) {
            let at = self.index.len();
            self.index.insert(unit, at);
            self.low.insert(unit, at);
            self.stack.push(unit);
            for next in self.graph.get(unit).into_iter().flatten() {
                if !self.index.contains_key(next.as_str()) {
                    self.visit(next);
                    let low = self.low[unit].min(self.low[next.as_str()]);
                    self.low.insert(unit, low);
                } else if self.stack.contains(&next.as_str()) {
                    let low = self.low[unit].min(self.index[next.as_str()]);
                    self.low.insert(unit, low);
                }
            }
            if self.low[unit] == self.index[unit] {
                let from = self.stack.iter().rposition(|u| *u == unit).unwrap();
                let mut members: Vec<String> =
                    self.stack.drain(from..).map(str::to_owned).collect();
                if members.len() > 1 {
                    members.sort();
                    self.circles.push(members);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        circles: Vec::new(),
    };
    for unit in graph.keys() {
        if !walk.index.contains_key(unit.as_str()) {
            walk.visit(unit);
        }
    }
    walk.circles
}

#[test]
fn commands_use_the_runtime_and_never_each_other() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &root, &mut files);
    files.sort();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(file, _)| module_path(file)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut wrong = BTreeSet::new();
    for (file, source) in &files {
        let path = module_path(file);
        let Some(own) = unit(&path) else {
            continue; // main.rs, commands/mod.rs, runtime/mod.rs: module declarations
        };
        graph.entry(own.clone()).or_default();
        if layer(&own).is_none() {
            wrong.insert(format!(
                "{}: {own} is in no layer (cli.rs, runtime/, commands/, dispatch.rs)",
                file.display()
            ));
        }
        for used in uses(source, &path) {
            // The longest module the path names.
            let module = (1..=used.path.len())
                .rev()
                .map(|len| &used.path[..len])
                .find(|prefix| modules.contains(*prefix));
            let Some(theirs) = module.and_then(unit) else {
                // `super::` from an inline module (`mod tests`) may name a local item.
                assert!(
                    !used.absolute,
                    "{}: crate::{} names no module of a layer (write crate::runtime::NAME, not crate::runtime)",
                    file.display(),
                    used.path.join("::")
                );
                continue;
            };
            if theirs == own {
                continue;
            }
            graph.entry(own.clone()).or_default().insert(theirs.clone());
            let (Some(mine), Some(their_layer)) = (layer(&own), layer(&theirs)) else {
                continue;
            };
            let what = used.path.join("::");
            if their_layer > mine {
                wrong.insert(format!(
                    "{}: {own} ({}) uses {what}, in {theirs} ({}), a layer above",
                    file.display(),
                    LAYERS[mine],
                    LAYERS[their_layer]
                ));
            } else if LAYERS[mine] == "commands" && their_layer == mine {
                wrong.insert(format!(
                    "{}: the command {own} uses {what}, of the command {theirs}",
                    file.display()
                ));
            }
        }
    }
    for circle in circles(&graph) {
        wrong.insert(format!(
            "{} modules use each other in a circle: {}",
            circle.len(),
            circle.join(", ")
        ));
    }
    let mut shown = String::from("the module graph (what each module uses), top layer first:\n");
    let mut units: Vec<&String> = graph.keys().collect();
    units.sort_by_key(|unit| (std::cmp::Reverse(layer(unit)), *unit));
    for unit in units {
        let used: Vec<&str> = graph[unit].iter().map(String::as_str).collect();
        shown.push_str(&format!("  {unit} -> {}\n", used.join(", ")));
    }
    eprint!("{shown}");
    assert!(
        wrong.is_empty(),
        "{}\n\n{shown}",
        wrong.into_iter().collect::<Vec<_>>().join("\n")
    );
    // The layout this test guards is there.
    assert!(graph.contains_key("dispatch"), "no dispatch.rs");
    assert!(
        graph.keys().any(|unit| unit.starts_with("commands::")),
        "no module in commands/"
    );
}

#[test]
fn the_use_parser_reads_trees_supers_and_macros() {
    let paths = |source: &str, module: &[&str]| -> Vec<String> {
        let module: Vec<String> = module.iter().map(|part| part.to_string()).collect();
        uses(source, &module)
            .into_iter()
            .map(|used| used.path.join("::"))
            .collect()
    };
    let source = "use crate::{\n    cli::{CallArgs, Format},\n    runtime::{client::{self, era}, exit::Exit as E, output::{out, outln}},\n};\nlet x = crate::runtime::store::open(y);";
    assert_eq!(
        paths(source, &["commands", "call"]),
        [
            "cli::CallArgs",
            "cli::Format",
            "runtime::client",
            "runtime::client::era",
            "runtime::exit::Exit",
            "runtime::output::out",
            "runtime::output::outln",
            "runtime::store::open",
        ]
    );
    // From `runtime/output/human.rs`: one `super` is `runtime::output`, two `runtime`.
    let source = "use super::escape::escape; use super::super::exit::Exit;";
    assert_eq!(
        paths(source, &["runtime", "output", "human"]),
        ["runtime::output::escape::escape", "runtime::exit::Exit"]
    );
    assert_eq!(paths("use super::*;", &["commands", "call"]), ["commands"]);
    // Not ours.
    assert!(paths("$crate::x; my_crate::y;", &["cli"]).is_empty());
    assert_eq!(
        unit(&["runtime".into(), "output".into(), "human".into()]).unwrap(),
        "runtime::output"
    );
    assert_eq!(unit(&["runtime".into()]), None);
    assert_eq!(
        module_path(Path::new("runtime/output/mod.rs")),
        ["runtime", "output"]
    );
    assert!(module_path(Path::new("main.rs")).is_empty());
}

#[test]
fn circles_are_found() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a", "d"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(unit, used)| {
        (
            unit.to_owned(),
            used.into_iter().map(str::to_owned).collect(),
        )
    })
    .collect();
    assert_eq!(circles(&graph), [["a", "b", "c"]]);
}
