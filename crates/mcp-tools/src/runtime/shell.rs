//! The commands a message suggests a person run (`mcp-tools login ...`), written so that
//! a POSIX shell reads each word back as it was.

use std::path::Path;

use crate::{
    cli::{GrantTarget, StoreArgs},
    runtime::store,
};

/// A word as a POSIX shell reads it back: bare when it is plain, else quoted; a word with
/// a control, bidirectional or invisible character as `$'...'`, so that the command holds
/// none raw (`brain_tools_config::text::shell_word`).
pub(crate) fn word(word: &str) -> String {
    brain_tools_config::text::shell_word(word)
}

/// The flags that name a config's binding, as `login` and discovery take them.
pub(crate) fn binding_flags(config: &Path, tool: &str) -> String {
    format!(
        "--config {} --tool {}",
        word(&config.display().to_string()),
        word(tool)
    )
}

/// The flags that name the server of a `login` or `logout`, as given.
pub(crate) fn target_flags(target: &GrantTarget) -> String {
    match (&target.config, &target.tool, &target.url, &target.auth) {
        (Some(config), Some(tool), _, _) => binding_flags(config, tool),
        (_, _, Some(url), Some(auth)) => format!("--url {} --auth {}", word(url), word(auth)),
        _ => String::new(),
    }
}

/// `mcp-tools login FLAGS --tenant TENANT STORE-FLAGS`.
pub(crate) fn login(flags: &str, tenant: &str, store: &StoreArgs) -> String {
    format!(
        "mcp-tools login {flags} --tenant {}{}",
        word(tenant),
        store_flags(store)
    )
}

/// The store flags as given, to repeat in a suggested command (a URL is not repeated: it
/// may hold a password).
pub(crate) fn store_flags(args: &StoreArgs) -> String {
    let mut flags = String::new();
    if let Some(location) = &args.location {
        if store::is_database(location) {
            flags.push_str(" --store \"$MCP_TOOLS_STORE\"");
        } else {
            flags.push_str(&format!(" --store {}", word(location)));
        }
    }
    if let Some(keys) = &args.keys {
        flags.push_str(&format!(
            " --store-keys {}",
            word(&keys.display().to_string())
        ));
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_survive_a_shell() {
        assert_eq!(word("acme"), "acme");
        assert_eq!(word("host config.json"), "'host config.json'");
        assert_eq!(word("it's"), r#""it's""#);
        assert_eq!(word(""), "''");
        assert_eq!(word("a\u{1b}[2Jb"), r"$'a\x1b[2Jb'");
    }
}
