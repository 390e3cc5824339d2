//! `cargo xtask api [--bless]`: the public API of each published library crate, one
//! item per line, checked against `xtask/api/<crate>.txt`.
//!
//! No version of ours is published yet, so `cargo-semver-checks` has no baseline to
//! compare with (and building it takes longer than a CI run should spend on it). Until a
//! first release, this is how the public API is reviewed: a change to a public item (a
//! signature, a field, a variant, a trait impl, a re-export, `#[non_exhaustive]`, an auto
//! trait such as `Send`) changes a listing; `cargo xtask test` fails until the listing is
//! updated with `--bless`, so the change shows up in review as a diff of `xtask/api/`.
//!
//! The listing comes from rustdoc's JSON output (`--output-format json`, unstable: run
//! with `RUSTC_BOOTSTRAP=1` on the stable toolchain, as the fuzz targets are). Items are
//! listed under the path a user writes (`brain_tools::ToolHost`, not the private module
//! that defines it); types in signatures under their full path (`alloc::string::String`),
//! so a dependency's type in our API is plain to see. Blanket impls (`impl<T> From<T>`)
//! and the unstable auto traits are left out.

use std::{
    collections::{BTreeSet, HashMap},
    fmt::Write as _,
    path::PathBuf,
};

use anyhow::Context as _;
use serde_json::Value;

use crate::util;

/// The published library crates (`mcp-tools` is a binary: it has no library API).
pub(crate) const CRATES: &[&str] = &[
    "brain-tools-auth",
    "brain-tools-config",
    "brain-tools-policy",
    "brain-tools-events",
    "brain-tools-providers",
    "brain-mcp-transport",
    "brain-tools",
    "brain-mcp-gateway",
];

/// The rustdoc JSON format this renderer was written against (rustc 1.95).
const FORMAT_VERSION: u64 = 57;

/// The auto traits that are part of a type's API (rustdoc also lists unstable ones).
const AUTO_TRAITS: &[&str] = &["Send", "Sync", "Unpin", "UnwindSafe", "RefUnwindSafe"];

/// Trait impls that say nothing to a user (the compiler's marker for derived `PartialEq`).
const HIDDEN_TRAITS: &[&str] = &["StructuralPartialEq"];

/// The crates whose types may appear in our public API: ours, the standard library, and
/// the dependencies whose types we show on purpose (serde's traits and `serde_json::Value`
/// for schemas and arguments; tokio's `Instant` and tokio-util's `CancellationToken`,
/// re-exported by `brain-tools`; with the `otel` feature, `opentelemetry_http`'s
/// `HttpClient`, which `ExportHttpClient` implements for OTLP exporters: its version is
/// part of ours; `async_trait`'s attribute, re-exported by `brain-tools` for a host's
/// own stores and authorizers). rmcp, jsonschema, reqwest, hyper, http and oauth2 may
/// not: a listing that names one fails, `--bless` or not.
const ALLOWED_CRATES: &[&str] = &[
    "brain_tools_auth",
    "brain_tools_config",
    "brain_tools_policy",
    "brain_tools_events",
    "brain_tools_providers",
    "brain_mcp_transport",
    "brain_tools",
    "brain_mcp_gateway",
    // Re-exported on purpose by the gateway (its router): its version is part of ours.
    "axum",
    "core",
    "alloc",
    "std",
    "serde_core",
    "serde_json",
    "tokio",
    "tokio_util",
    "opentelemetry_http",
    "async_trait",
];

/// The lines of a listing that name a crate outside [`ALLOWED_CRATES`], with the crate.
fn foreign_types(listing: &str) -> Vec<(String, &str)> {
    let mut found = Vec::new();
    for line in listing.lines() {
        let paths = line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'));
        for path in paths {
            let Some((root, _)) = path.split_once("::") else {
                continue;
            };
            if !root.is_empty() && !ALLOWED_CRATES.contains(&root) {
                found.push((root.to_owned(), line));
                break;
            }
        }
    }
    found
}

/// The subcommand.
pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let bless = match args {
        [] => false,
        [flag] if flag == "--bless" => true,
        _ => anyhow::bail!("unknown arguments {args:?} (option: --bless)"),
    };
    let dir = util::workspace_root().join("xtask").join("api");
    let mut changed = Vec::new();
    let mut ours = HashMap::new();
    let mut foreign = Vec::new();
    rustdoc_json()?;
    for package in CRATES {
        let listing = listing(package, &mut ours)?;
        for (root, line) in foreign_types(&listing) {
            foreign.push(format!("{package}: {root} in `{line}`"));
        }
        let file = dir.join(format!("{package}.txt"));
        if bless {
            std::fs::create_dir_all(&dir)?;
            std::fs::write(&file, &listing)
                .with_context(|| format!("cannot write {}", file.display()))?;
            eprintln!(
                "wrote {} ({} items)",
                file.display(),
                listing.lines().count()
            );
            continue;
        }
        let reviewed = std::fs::read_to_string(&file).unwrap_or_default();
        if reviewed == listing {
            eprintln!(
                "{package}: public API unchanged ({} items)",
                listing.lines().count()
            );
        } else {
            eprintln!(
                "{package}: the public API differs from {}:\n{}",
                file.display(),
                diff(&reviewed, &listing)
            );
            changed.push(*package);
        }
    }
    anyhow::ensure!(
        foreign.is_empty(),
        "another crate's type in our public API (allowed: {}):\n{}",
        ALLOWED_CRATES.join(", "),
        foreign.join("\n")
    );
    anyhow::ensure!(
        changed.is_empty(),
        "the public API of {} changed: review the lines above, then run \
         `cargo xtask api --bless` and commit xtask/api/ with the change",
        changed.join(", ")
    );
    Ok(())
}

/// Lines only in `old` (`-`) and only in `new` (`+`); both are sorted listings.
fn diff(old: &str, new: &str) -> String {
    let old: BTreeSet<&str> = old.lines().collect();
    let new: BTreeSet<&str> = new.lines().collect();
    let mut text = String::new();
    for line in old.difference(&new) {
        let _ = writeln!(text, "  - {line}");
    }
    for line in new.difference(&old) {
        let _ = writeln!(text, "  + {line}");
    }
    text
}

/// Set for xtask when cargo runs it as `RUSTDOC`: the rustdoc to run, with
/// `RUSTC_BOOTSTRAP=1` (see [`unstable_rustdoc`]).
pub(crate) const UNSTABLE_RUSTDOC: &str = "BRAIN_XTASK_UNSTABLE_RUSTDOC";

/// xtask as cargo's `RUSTDOC` for the listing: runs `rustdoc` (the value of
/// [`UNSTABLE_RUSTDOC`]) with xtask's arguments and `RUSTC_BOOTSTRAP=1`, which rustdoc's
/// JSON output needs on the stable toolchain; returns its exit code.
pub(crate) fn unstable_rustdoc(rustdoc: std::ffi::OsString) -> u8 {
    let status = std::process::Command::new(&rustdoc)
        .args(std::env::args_os().skip(1))
        .env("RUSTC_BOOTSTRAP", "1")
        .env_remove(UNSTABLE_RUSTDOC)
        .status();
    match status {
        Ok(status) => status
            .code()
            .and_then(|code| u8::try_from(code).ok())
            .unwrap_or(1),
        Err(error) => {
            eprintln!("xtask: cannot run {}: {error}", rustdoc.to_string_lossy());
            1
        }
    }
}

/// The rustdoc JSON of every crate in [`CRATES`], in one `cargo doc` with every feature
/// (as the `docs` step builds their HTML, so the dependencies it checks are the ones
/// already checked).
///
/// rustdoc alone runs with `RUSTC_BOOTSTRAP` (through `unstable_rustdoc`): set for
/// cargo, it would reach the build scripts that watch it and change the fingerprint of
/// most of the graph, so the dependencies the earlier steps checked would be checked
/// again.
fn rustdoc_json() -> anyhow::Result<()> {
    let mut command = util::cargo();
    command
        .env(
            "RUSTDOC",
            std::env::current_exe().context("cannot find xtask's own executable")?,
        )
        // The rustdoc cargo would run: `RUSTDOC`, else the one on `PATH` (a
        // `build.rustdoc` in cargo's config is not consulted).
        .env(
            UNSTABLE_RUSTDOC,
            std::env::var_os("RUSTDOC").unwrap_or_else(|| "rustdoc".into()),
        )
        .env("RUSTDOCFLAGS", "-Z unstable-options --output-format json")
        .args(["doc", "--quiet", "--no-deps", "--all-features"]);
    for package in CRATES {
        command.args(["-p", package]);
    }
    util::run(&mut command)
}

/// Renders a crate's public API from its rustdoc JSON ([`rustdoc_json`]).
/// `ours` maps the defining path of each public item of the crates listed before to the
/// path a user writes; this crate's items are added to it.
fn listing(package: &str, ours: &mut HashMap<String, String>) -> anyhow::Result<String> {
    let target = util::target_dir();
    let file: PathBuf = target
        .join("doc")
        .join(format!("{}.json", package.replace('-', "_")));
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("cannot read {}", file.display()))?;
    let doc: Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))?;
    let version = doc["format_version"].as_u64().unwrap_or(0);
    if version != FORMAT_VERSION {
        eprintln!(
            "warning: rustdoc JSON format {version}, this renderer knows {FORMAT_VERSION}: \
             if the listing changed without an API change, update xtask/src/api.rs"
        );
    }
    let mut api = Api::new(&doc, ours)?;
    let lines = api.render()?;
    let defined: Vec<(String, String)> = api
        .public
        .iter()
        .filter_map(|(id, public)| Some((api.defined_path(id)?, public.clone())))
        .collect();
    ours.extend(defined);
    let mut listing = String::new();
    for line in lines {
        listing.push_str(&line);
        listing.push('\n');
    }
    Ok(listing)
}

/// One crate's rustdoc JSON.
struct Api<'a> {
    index: &'a serde_json::Map<String, Value>,
    paths: &'a serde_json::Map<String, Value>,
    /// The public paths of the crates listed before, by defining path.
    ours: &'a HashMap<String, String>,
    root: String,
    /// The public path of each local item reached from the root.
    public: HashMap<String, String>,
}

impl<'a> Api<'a> {
    fn new(doc: &'a Value, ours: &'a HashMap<String, String>) -> anyhow::Result<Self> {
        Ok(Self {
            index: doc["index"].as_object().context("no index")?,
            paths: doc["paths"].as_object().context("no paths")?,
            ours,
            root: key(&doc["root"]),
            public: HashMap::new(),
        })
    }

    fn item(&self, id: &str) -> Option<&'a Value> {
        self.index.get(id)
    }

    /// Every public item, as sorted lines.
    fn render(&mut self) -> anyhow::Result<Vec<String>> {
        let root = self.item(&self.root).context("no root module")?;
        let name = root["name"].as_str().unwrap_or_default().to_owned();
        // First the public path of every item, so that signatures can name them.
        let mut reached = Vec::new();
        self.reach(
            &self.root.clone(),
            &name,
            &mut reached,
            &mut BTreeSet::new(),
        );
        // Item by item, in path order: its own line, then its fields, variants, members
        // and impls, then an empty line.
        let mut items: Vec<(String, String, BTreeSet<String>)> =
            vec![(name.clone(), format!("pub mod {name}"), BTreeSet::new())];
        for (id, path) in &reached {
            let (head, lines) = self.item_lines(id, path);
            // A finished line (`pub use PATH = ...`, `pub mod PATH`) sorts by its path.
            let key = path
                .trim_start_matches("pub use ")
                .trim_start_matches("pub mod ")
                .split(" = ")
                .next()
                .unwrap_or_default()
                .to_owned();
            items.push((key, head, lines));
        }
        items.sort();
        items.dedup();
        let mut lines = Vec::new();
        for (_, head, members) in items {
            lines.push(head);
            lines.extend(members);
            lines.push(String::new());
        }
        Ok(lines)
    }

    /// Walks the public modules and re-exports: (item id, public path), in order.
    fn reach(
        &mut self,
        module: &str,
        prefix: &str,
        out: &mut Vec<(String, String)>,
        seen: &mut BTreeSet<String>,
    ) {
        let Some(items) = self
            .item(module)
            .and_then(|m| m["inner"]["module"]["items"].as_array())
        else {
            return;
        };
        for item_id in items {
            let item_id = key(item_id);
            let Some(item) = self.item(&item_id) else {
                continue;
            };
            if item["visibility"] != "public" {
                continue;
            }
            if let Some(usage) = item["inner"].get("use") {
                let target = key(&usage["id"]);
                let local = self.item(&target);
                if usage["is_glob"] == true {
                    if local.is_some() {
                        self.reach(&target, prefix, out, seen);
                    } else {
                        out.push((
                            String::new(),
                            format!(
                                "pub use {prefix}::* = {}",
                                usage["source"].as_str().unwrap_or("?")
                            ),
                        ));
                    }
                    continue;
                }
                let name = usage["name"].as_str().unwrap_or("?");
                let path = format!("{prefix}::{name}");
                match local {
                    Some(target_item) if target_item["inner"].get("module").is_some() => {
                        out.push((String::new(), format!("pub mod {path}")));
                        self.public.entry(target.clone()).or_insert(path.clone());
                        if seen.insert(target.clone()) {
                            self.reach(&target, &path, out, seen);
                        }
                    }
                    Some(_) => {
                        self.public.entry(target.clone()).or_insert(path.clone());
                        out.push((target, path));
                    }
                    None => {
                        // An item of another crate, re-exported: its API is that crate's.
                        let from = self
                            .external_path(&target)
                            .unwrap_or_else(|| usage["source"].as_str().unwrap_or("?").to_owned());
                        out.push((String::new(), format!("pub use {path} = {from}")));
                    }
                }
                continue;
            }
            let Some(name) = item["name"].as_str() else {
                continue;
            };
            let path = format!("{prefix}::{name}");
            self.public.entry(item_id.clone()).or_insert(path.clone());
            if item["inner"].get("module").is_some() {
                out.push((String::new(), format!("pub mod {path}")));
                if seen.insert(item_id.clone()) {
                    self.reach(&item_id, &path, out, seen);
                }
            } else {
                out.push((item_id, path));
            }
        }
    }

    /// Where an item is defined (`brain_tools_config::binding::ToolBinding`).
    fn defined_path(&self, id: &str) -> Option<String> {
        let path = self.paths.get(id)?["path"].as_array()?;
        Some(
            path.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("::"),
        )
    }

    /// Another crate's item: the path a user writes if it is one of ours listed before
    /// (`brain_tools_config::ToolBinding`), else where it is defined.
    fn external_path(&self, id: &str) -> Option<String> {
        let defined = self.defined_path(id)?;
        Some(self.ours.get(&defined).cloned().unwrap_or(defined))
    }

    /// The line of one item reached at `path` and the lines of its fields, variants,
    /// members and impls (an empty id is a finished line).
    fn item_lines(&self, id: &str, path: &str) -> (String, BTreeSet<String>) {
        let mut set = BTreeSet::new();
        if id.is_empty() {
            return (path.to_owned(), set);
        }
        let Some(item) = self.item(id) else {
            return (path.to_owned(), set);
        };
        let lines = &mut set;
        let head;
        let attrs = attributes(item);
        let inner = &item["inner"];
        if let Some(s) = inner.get("struct") {
            let generics = self.generics(&s["generics"]);
            let body = match s["kind"].as_object().and_then(|k| k.iter().next()) {
                Some((kind, fields)) if kind == "tuple" => {
                    let fields: Vec<String> = fields
                        .as_array()
                        .into_iter()
                        .flatten()
                        // A private field is `null`.
                        .map(|field| match self.item(&key(field)) {
                            Some(field) => {
                                format!("pub {}", self.ty(&field["inner"]["struct_field"]))
                            }
                            None => "_".to_owned(),
                        })
                        .collect();
                    format!("({})", fields.join(", "))
                }
                Some((kind, fields)) if kind == "plain" => {
                    self.fields(&fields["fields"], path, lines);
                    if fields["has_stripped_fields"] == true {
                        " { /* private fields */ }".to_owned()
                    } else {
                        String::new()
                    }
                }
                _ => String::new(),
            };
            head = format!(
                "{attrs}pub struct {path}{}{body}{}",
                generics.params, generics.clauses
            );
            self.impls(&s["impls"], path, lines);
        } else if let Some(e) = inner.get("enum") {
            let generics = self.generics(&e["generics"]);
            head = format!(
                "{attrs}pub enum {path}{}{}",
                generics.params, generics.clauses
            );
            for variant in e["variants"].as_array().into_iter().flatten() {
                self.variant(&key(variant), path, lines);
            }
            self.impls(&e["impls"], path, lines);
        } else if let Some(u) = inner.get("union") {
            let generics = self.generics(&u["generics"]);
            head = format!(
                "{attrs}pub union {path}{}{}",
                generics.params, generics.clauses
            );
            self.fields(&u["fields"], path, lines);
            self.impls(&u["impls"], path, lines);
        } else if let Some(f) = inner.get("function") {
            head = format!("{attrs}pub {}", self.function(f, path));
        } else if let Some(t) = inner.get("trait") {
            let generics = self.generics(&t["generics"]);
            let bounds = self.bounds(&t["bounds"]);
            let bounds = if bounds.is_empty() {
                String::new()
            } else {
                format!(": {bounds}")
            };
            let unsafety = if t["is_unsafe"] == true {
                "unsafe "
            } else {
                ""
            };
            head = format!(
                "{attrs}pub {unsafety}trait {path}{}{bounds}{}",
                generics.params, generics.clauses
            );
            for member in t["items"].as_array().into_iter().flatten() {
                if let Some(member) = self.item(&key(member)) {
                    let name = member["name"].as_str().unwrap_or("?");
                    self.member(member, &format!("{path}::{name}"), "", lines);
                }
            }
            self.impls(&t["implementations"], path, lines);
        } else if let Some(c) = inner.get("constant") {
            // The expression as written, or its value when it is not a literal.
            let expr = c["const"]["expr"].as_str().unwrap_or("?");
            let value = match c["const"]["value"].as_str() {
                Some(value) if expr == "_" => value,
                _ => expr,
            };
            head = format!("{attrs}pub const {path}: {} = {value}", self.ty(&c["type"]));
        } else if let Some(s) = inner.get("static") {
            let mutability = if s["is_mutable"] == true { "mut " } else { "" };
            head = format!(
                "{attrs}pub static {mutability}{path}: {}",
                self.ty(&s["type"])
            );
        } else if let Some(t) = inner.get("type_alias") {
            let generics = self.generics(&t["generics"]);
            head = format!(
                "{attrs}pub type {path}{}{} = {}",
                generics.params,
                generics.clauses,
                self.ty(&t["type"])
            );
        } else if inner.get("macro").is_some() || inner.get("proc_macro").is_some() {
            head = format!("{attrs}pub macro {path}!");
        } else if let Some((kind, _)) = inner.as_object().and_then(|o| o.iter().next()) {
            head = format!("{attrs}pub {kind} {path}");
        } else {
            head = format!("{attrs}pub {path}");
        }
        (head, set)
    }

    fn fields(&self, fields: &Value, owner: &str, lines: &mut BTreeSet<String>) {
        for field in fields.as_array().into_iter().flatten() {
            let Some(field) = self.item(&key(field)) else {
                continue;
            };
            if field["visibility"] != "public" {
                continue;
            }
            lines.insert(format!(
                "{}pub {owner}::{}: {}",
                attributes(field),
                field["name"].as_str().unwrap_or("?"),
                self.ty(&field["inner"]["struct_field"])
            ));
        }
    }

    fn variant(&self, id: &str, owner: &str, lines: &mut BTreeSet<String>) {
        let Some(variant) = self.item(id) else {
            return;
        };
        let name = variant["name"].as_str().unwrap_or("?");
        let path = format!("{owner}::{name}");
        let inner = &variant["inner"]["variant"];
        let kind = &inner["kind"];
        let body = if let Some(fields) = kind.get("tuple") {
            let fields: Vec<String> = fields
                .as_array()
                .into_iter()
                .flatten()
                .map(|field| match self.item(&key(field)) {
                    Some(field) => self.ty(&field["inner"]["struct_field"]),
                    None => "_".to_owned(),
                })
                .collect();
            format!("({})", fields.join(", "))
        } else if let Some(plain) = kind.get("struct") {
            // A variant's fields are as public as the enum.
            let mut fields: Vec<String> = plain["fields"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|field| self.item(&key(field)))
                .map(|field| {
                    format!(
                        "{}: {}",
                        field["name"].as_str().unwrap_or("?"),
                        self.ty(&field["inner"]["struct_field"])
                    )
                })
                .collect();
            if plain["has_stripped_fields"] == true {
                fields.push("/* private fields */".to_owned());
            }
            format!(" {{ {} }}", fields.join(", "))
        } else {
            String::new()
        };
        let discriminant = inner["discriminant"]["expr"]
            .as_str()
            .map(|expr| format!(" = {expr}"))
            .unwrap_or_default();
        lines.insert(format!(
            "{}pub {path}{body}{discriminant}",
            attributes(variant)
        ));
    }

    /// A trait's or an inherent impl's member: a function, an associated type or const.
    fn member(&self, member: &Value, path: &str, vis: &str, lines: &mut BTreeSet<String>) {
        let attrs = attributes(member);
        let inner = &member["inner"];
        if let Some(f) = inner.get("function") {
            lines.insert(format!("{attrs}{vis}{}", self.function(f, path)));
        } else if let Some(t) = inner.get("assoc_type") {
            let bounds = self.bounds(&t["bounds"]);
            let bounds = if bounds.is_empty() {
                String::new()
            } else {
                format!(": {bounds}")
            };
            let value = if t["type"].is_object() {
                format!(" = {}", self.ty(&t["type"]))
            } else {
                String::new()
            };
            lines.insert(format!("{attrs}{vis}type {path}{bounds}{value}"));
        } else if let Some(c) = inner.get("assoc_const") {
            let value = c["value"]
                .as_str()
                .map(|v| format!(" = {v}"))
                .unwrap_or_default();
            lines.insert(format!(
                "{attrs}{vis}const {path}: {}{value}",
                self.ty(&c["type"])
            ));
        }
    }

    /// Inherent impls: their public members under the type's path. Trait impls: one line
    /// each (with their associated types), except blanket impls and unstable auto traits.
    fn impls(&self, impls: &Value, owner: &str, lines: &mut BTreeSet<String>) {
        let mut auto = Vec::new();
        for impl_id in impls.as_array().into_iter().flatten() {
            let Some(item) = self.item(&key(impl_id)) else {
                continue;
            };
            let Some(imp) = item["inner"].get("impl") else {
                continue;
            };
            if !imp["blanket_impl"].is_null() {
                continue;
            }
            let for_type = self.ty(&imp["for"]);
            let generics = self.generics(&imp["generics"]);
            if imp["trait"].is_null() {
                for member in imp["items"].as_array().into_iter().flatten() {
                    let Some(member) = self.item(&key(member)) else {
                        continue;
                    };
                    if member["visibility"] != "public" {
                        continue;
                    }
                    let name = member["name"].as_str().unwrap_or("?");
                    let owner = if generics.params.is_empty() && generics.clauses.is_empty() {
                        for_type.clone()
                    } else {
                        format!("impl{} {for_type}{}", generics.params, generics.clauses)
                    };
                    self.member(member, &format!("{owner}::{name}"), "pub ", lines);
                }
                continue;
            }
            let trait_name = imp["trait"]["path"].as_str().unwrap_or("?");
            let trait_name = trait_name.rsplit("::").next().unwrap_or(trait_name);
            if imp["is_synthetic"] == true {
                // One line for the auto traits, below.
                if AUTO_TRAITS.contains(&trait_name) && imp["is_negative"] != true {
                    auto.push(trait_name);
                }
                continue;
            }
            if HIDDEN_TRAITS.contains(&trait_name) {
                continue;
            }
            let negative = if imp["is_negative"] == true { "!" } else { "" };
            let unsafety = if imp["is_unsafe"] == true {
                "unsafe "
            } else {
                ""
            };
            let mut assoc = Vec::new();
            for member in imp["items"].as_array().into_iter().flatten() {
                let Some(member) = self.item(&key(member)) else {
                    continue;
                };
                if let Some(t) = member["inner"].get("assoc_type") {
                    assoc.push(format!(
                        "type {} = {};",
                        member["name"].as_str().unwrap_or("?"),
                        self.ty(&t["type"])
                    ));
                }
            }
            let assoc = if assoc.is_empty() {
                String::new()
            } else {
                format!(" {{ {} }}", assoc.join(" "))
            };
            lines.insert(format!(
                "{unsafety}impl{} {negative}{} for {for_type}{}{assoc}",
                generics.params,
                self.path(&imp["trait"]),
                generics.clauses
            ));
        }
        if !auto.is_empty() {
            auto.sort_by_key(|name| AUTO_TRAITS.iter().position(|known| known == name));
            lines.insert(format!("auto traits of {owner}: {}", auto.join(" + ")));
        }
    }

    fn function(&self, f: &Value, path: &str) -> String {
        let header = &f["header"];
        let mut qualifiers = String::new();
        for (key, word) in [
            ("is_const", "const "),
            ("is_async", "async "),
            ("is_unsafe", "unsafe "),
        ] {
            if header[key] == true {
                qualifiers.push_str(word);
            }
        }
        let generics = self.generics(&f["generics"]);
        let sig = &f["sig"];
        let inputs: Vec<String> = sig["inputs"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|input| {
                let name = input[0].as_str().unwrap_or("_");
                let ty = &input[1];
                if name == "self" {
                    match (ty.get("borrowed_ref"), ty.get("generic")) {
                        (Some(r), _) if r["type"]["generic"] == "Self" => {
                            let lifetime = r["lifetime"]
                                .as_str()
                                .map(|l| format!("{l} "))
                                .unwrap_or_default();
                            let mutable = if r["is_mutable"] == true { "mut " } else { "" };
                            format!("&{lifetime}{mutable}self")
                        }
                        (_, Some(g)) if g == "Self" => "self".to_owned(),
                        _ => format!("self: {}", self.ty(ty)),
                    }
                } else {
                    format!("{name}: {}", self.ty(ty))
                }
            })
            .collect();
        let output = if sig["output"].is_null() {
            String::new()
        } else {
            format!(" -> {}", self.ty(&sig["output"]))
        };
        format!(
            "{qualifiers}fn {path}{}({}){output}{}",
            generics.params,
            inputs.join(", "),
            generics.clauses
        )
    }

    fn generics(&self, generics: &Value) -> Generics {
        let params: Vec<String> = generics["params"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|param| {
                let name = param["name"].as_str().unwrap_or("?");
                let kind = &param["kind"];
                if let Some(lifetime) = kind.get("lifetime") {
                    let outlives: Vec<&str> = lifetime["outlives"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect();
                    Some(if outlives.is_empty() {
                        name.to_owned()
                    } else {
                        format!("{name}: {}", outlives.join(" + "))
                    })
                } else if let Some(ty) = kind.get("type") {
                    // `impl Trait` in argument position: shown where it is written.
                    if ty["is_synthetic"] == true {
                        return None;
                    }
                    let bounds = self.bounds(&ty["bounds"]);
                    let mut text = name.to_owned();
                    if !bounds.is_empty() {
                        let _ = write!(text, ": {bounds}");
                    }
                    if ty["default"].is_object() {
                        let _ = write!(text, " = {}", self.ty(&ty["default"]));
                    }
                    Some(text)
                } else if let Some(c) = kind.get("const") {
                    Some(format!("const {name}: {}", self.ty(&c["type"])))
                } else {
                    Some(name.to_owned())
                }
            })
            .collect();
        let clauses: Vec<String> = generics["where_predicates"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|predicate| {
                if let Some(b) = predicate.get("bound_predicate") {
                    Some(format!(
                        "{}: {}",
                        self.ty(&b["type"]),
                        self.bounds(&b["bounds"])
                    ))
                } else if let Some(l) = predicate.get("lifetime_predicate") {
                    let outlives: Vec<&str> = l["outlives"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect();
                    Some(format!(
                        "{}: {}",
                        l["lifetime"].as_str().unwrap_or("?"),
                        outlives.join(" + ")
                    ))
                } else {
                    predicate
                        .get("eq_predicate")
                        .map(|e| format!("{} = {}", self.ty(&e["lhs"]), self.term(&e["rhs"])))
                }
            })
            .collect();
        Generics {
            params: if params.is_empty() {
                String::new()
            } else {
                format!("<{}>", params.join(", "))
            },
            clauses: if clauses.is_empty() {
                String::new()
            } else {
                format!(" where {}", clauses.join(", "))
            },
        }
    }

    fn bounds(&self, bounds: &Value) -> String {
        let bounds: Vec<String> = bounds
            .as_array()
            .into_iter()
            .flatten()
            .map(|bound| {
                if let Some(t) = bound.get("trait_bound") {
                    let modifier = match t["modifier"].as_str() {
                        Some("maybe") => "?",
                        Some("maybe_const") => "~const ",
                        _ => "",
                    };
                    format!(
                        "{}{modifier}{}",
                        self.higher_ranked(&t["generic_params"]),
                        self.path(&t["trait"])
                    )
                } else if let Some(l) = bound.get("outlives") {
                    l.as_str().unwrap_or("?").to_owned()
                } else if let Some(captures) = bound.get("use") {
                    let captures: Vec<String> = captures
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|c| {
                            c.as_str()
                                .map(str::to_owned)
                                .or_else(|| {
                                    c.as_object()
                                        .and_then(|o| o.values().next())
                                        .and_then(Value::as_str)
                                        .map(str::to_owned)
                                })
                                .unwrap_or_else(|| "?".to_owned())
                        })
                        .collect();
                    format!("use<{}>", captures.join(", "))
                } else {
                    "?".to_owned()
                }
            })
            .collect();
        bounds.join(" + ")
    }

    fn higher_ranked(&self, params: &Value) -> String {
        let names: Vec<&str> = params
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["name"].as_str())
            .collect();
        if names.is_empty() {
            String::new()
        } else {
            format!("for<{}> ", names.join(", "))
        }
    }

    /// A path to a type or trait: its public path if it is ours, else its full path.
    fn path(&self, path: &Value) -> String {
        let target = key(&path["id"]);
        let name = self
            .public
            .get(&target)
            .cloned()
            .or_else(|| self.external_path(&target))
            .unwrap_or_else(|| path["path"].as_str().unwrap_or("?").to_owned());
        format!("{name}{}", self.args(&path["args"]))
    }

    fn args(&self, args: &Value) -> String {
        if let Some(angle) = args.get("angle_bracketed") {
            let mut parts: Vec<String> = angle["args"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|arg| {
                    if let Some(l) = arg.get("lifetime") {
                        l.as_str().unwrap_or("?").to_owned()
                    } else if let Some(t) = arg.get("type") {
                        self.ty(t)
                    } else if let Some(c) = arg.get("const") {
                        c["expr"].as_str().unwrap_or("?").to_owned()
                    } else {
                        "_".to_owned()
                    }
                })
                .collect();
            for constraint in angle["constraints"].as_array().into_iter().flatten() {
                let name = constraint["name"].as_str().unwrap_or("?");
                let binding = &constraint["binding"];
                if let Some(equality) = binding.get("equality") {
                    parts.push(format!("{name} = {}", self.term(equality)));
                } else if let Some(bounds) = binding.get("constraint") {
                    parts.push(format!("{name}: {}", self.bounds(bounds)));
                }
            }
            if parts.is_empty() {
                String::new()
            } else {
                format!("<{}>", parts.join(", "))
            }
        } else if let Some(p) = args.get("parenthesized") {
            let inputs: Vec<String> = p["inputs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| self.ty(t))
                .collect();
            let output = if p["output"].is_null() {
                String::new()
            } else {
                format!(" -> {}", self.ty(&p["output"]))
            };
            format!("({}){output}", inputs.join(", "))
        } else {
            String::new()
        }
    }

    fn term(&self, term: &Value) -> String {
        if let Some(t) = term.get("type") {
            self.ty(t)
        } else if let Some(c) = term.get("constant") {
            c["expr"].as_str().unwrap_or("?").to_owned()
        } else {
            "?".to_owned()
        }
    }

    fn ty(&self, ty: &Value) -> String {
        if let Some(path) = ty.get("resolved_path") {
            return self.path(path);
        }
        if let Some(name) = ty.get("generic").or_else(|| ty.get("primitive")) {
            return name.as_str().unwrap_or("?").to_owned();
        }
        if let Some(r) = ty.get("borrowed_ref") {
            let lifetime = r["lifetime"]
                .as_str()
                .map(|l| format!("{l} "))
                .unwrap_or_default();
            let mutable = if r["is_mutable"] == true { "mut " } else { "" };
            return format!("&{lifetime}{mutable}{}", self.ty(&r["type"]));
        }
        if let Some(inner) = ty.get("slice") {
            return format!("[{}]", self.ty(inner));
        }
        if let Some(a) = ty.get("array") {
            return format!(
                "[{}; {}]",
                self.ty(&a["type"]),
                a["len"].as_str().unwrap_or("?")
            );
        }
        if let Some(items) = ty.get("tuple") {
            let items: Vec<String> = items
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| self.ty(t))
                .collect();
            return if items.len() == 1 {
                format!("({},)", items[0])
            } else {
                format!("({})", items.join(", "))
            };
        }
        if let Some(bounds) = ty.get("impl_trait") {
            return format!("impl {}", self.bounds(bounds));
        }
        if let Some(d) = ty.get("dyn_trait") {
            let mut traits: Vec<String> = d["traits"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| {
                    format!(
                        "{}{}",
                        self.higher_ranked(&t["generic_params"]),
                        self.path(&t["trait"])
                    )
                })
                .collect();
            if let Some(lifetime) = d["lifetime"].as_str() {
                traits.push(lifetime.to_owned());
            }
            return format!("dyn {}", traits.join(" + "));
        }
        if let Some(p) = ty.get("raw_pointer") {
            let mutability = if p["is_mutable"] == true {
                "mut"
            } else {
                "const"
            };
            return format!("*{mutability} {}", self.ty(&p["type"]));
        }
        if let Some(f) = ty.get("function_pointer") {
            let inputs: Vec<String> = f["sig"]["inputs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|input| self.ty(&input[1]))
                .collect();
            let output = if f["sig"]["output"].is_null() {
                String::new()
            } else {
                format!(" -> {}", self.ty(&f["sig"]["output"]))
            };
            return format!(
                "{}fn({}){output}",
                self.higher_ranked(&f["generic_params"]),
                inputs.join(", ")
            );
        }
        if let Some(q) = ty.get("qualified_path") {
            let self_type = self.ty(&q["self_type"]);
            let name = q["name"].as_str().unwrap_or("?");
            return if q["trait"].is_object() {
                format!("<{self_type} as {}>::{name}", self.path(&q["trait"]))
            } else {
                format!("{self_type}::{name}")
            };
        }
        if ty == "infer" {
            return "_".to_owned();
        }
        if let Some(p) = ty.get("pat") {
            return self.ty(&p["type"]);
        }
        "?".to_owned()
    }
}

/// Generic parameters (`<T: Bound>`) and where clauses (` where ...`), rendered.
struct Generics {
    params: String,
    clauses: String,
}

/// The attributes that are part of the API: `#[non_exhaustive]`, `#[repr(...)]`,
/// `#[must_use]`.
fn attributes(item: &Value) -> String {
    let mut text = String::new();
    for attr in item["attrs"].as_array().into_iter().flatten() {
        if attr == "non_exhaustive" {
            text.push_str("#[non_exhaustive] ");
        } else if attr.get("must_use").is_some() {
            text.push_str("#[must_use] ");
        } else if attr.get("repr").is_some() {
            text.push_str("#[repr] ");
        }
    }
    text
}

/// An id as an index key (ids are numbers in the JSON, strings as keys).
fn key(value: &Value) -> String {
    match value {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreign_types_are_found_by_their_crate() {
        let listing = "pub fn brain_tools::ToolHost::new(config: &brain_tools_config::Config) -> core::result::Result<Self, brain_tools::HostError>
pub fn brain_mcp_transport::X::peer(&self) -> rmcp::service::Peer<rmcp::RoleClient>
pub brain_mcp_transport::CallRequest::cancel: tokio_util::sync::cancellation_token::CancellationToken
impl serde_core::ser::Serialize for brain_tools_events::ToolEvent
pub fn brain_tools_config::compile(s: &serde_json::Value) -> jsonschema::Validator";
        let found: Vec<String> = foreign_types(listing)
            .into_iter()
            .map(|(root, _)| root)
            .collect();
        assert_eq!(found, ["rmcp", "jsonschema"]);
    }
}
