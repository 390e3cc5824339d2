//! Host configs as the commands read them: without trusting their size, loaded and
//! validated as the host loads them (every problem and warning on stderr), and a binding
//! found by its name.

use std::{io::Read, path::Path};

use brain_tools_config::{HostConfig, Loaded, ToolBinding, Warning};

use crate::runtime::{exit::Exit, output::bindings_named};

/// The largest host config read (64 MiB, the bound the config loader applies); a larger
/// file is refused after reading one byte past it, so `--config /dev/zero` fails at once
/// instead of filling memory.
pub(crate) use brain_tools_config::MAX_CONFIG_BYTES;

/// Reads at most [`MAX_CONFIG_BYTES`] of `path`. `Ok(None)` when the file does not exist.
pub(crate) fn read_bounded(path: &Path) -> Result<Option<Vec<u8>>, Exit> {
    read_at_most(path, MAX_CONFIG_BYTES as u64)
}

fn read_at_most(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, Exit> {
    let shown = path.display();
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(Exit::Failed(format!("cannot read {shown}: {error}"))),
    };
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| Exit::Failed(format!("cannot read {shown}: {error}")))?;
    if bytes.len() as u64 > limit {
        return Err(Exit::Failed(format!(
            "{shown} is larger than {} MiB, the most a host config may be",
            limit / (1024 * 1024)
        )));
    }
    Ok(Some(bytes))
}

/// Reads a file that must exist.
fn read_existing(path: &Path) -> Result<Vec<u8>, Exit> {
    read_bounded(path)?
        .ok_or_else(|| Exit::Failed(format!("cannot read {}: no such file", path.display())))
}

/// Which of a config's warnings a command prints.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Warn<'a> {
    /// Every one (`check`): a warning several bindings share (one unset variable) once,
    /// naming them.
    All,
    /// Those of the binding the command is about (`call`, a login, a listing), and of
    /// the config as a whole: a warning about another binding is not this command's.
    Binding(&'a str),
}

/// Reads (at most [`MAX_CONFIG_BYTES`]) and validates a host config; prints every
/// problem, and the warnings `warn` asks for, on stderr.
pub(crate) fn load(path: &Path, warn: Warn<'_>) -> Result<Loaded, Exit> {
    let bytes = read_existing(path)?;
    match HostConfig::from_json_bytes(&bytes) {
        Ok(loaded) => {
            for line in warnings(&loaded.warnings, warn) {
                eprintln!("warning: {line}");
            }
            Ok(loaded)
        }
        Err(errors) => {
            eprintln!("{}: {errors}", path.display());
            Err(Exit::Reported)
        }
    }
}

/// The lines of the warnings `warn` asks for, in the config's order: warnings that say
/// the same thing of several bindings (the same variable unset, the same host over plain
/// http) are one line naming where.
fn warnings(all: &[Warning], warn: Warn<'_>) -> Vec<String> {
    let chosen = all.iter().filter(|warning| match warn {
        Warn::All => true,
        Warn::Binding(tool) => warning.tool.as_deref().is_none_or(|name| name == tool),
    });
    let mut groups: Vec<Vec<&Warning>> = Vec::new();
    for warning in chosen {
        match groups
            .iter_mut()
            .find(|group| group[0].kind == warning.kind)
        {
            Some(group) => group.push(warning),
            None => groups.push(vec![warning]),
        }
    }
    groups
        .into_iter()
        .map(|group| {
            if group.len() == 1 {
                return group[0].to_string();
            }
            // What the warning says, without where: the same text as a warning about the
            // config as a whole, less its `config: `.
            let mut bare = group[0].clone();
            bare.path = String::new();
            bare.tool = None;
            let bare = bare.to_string();
            let message = bare.strip_prefix("config: ").unwrap_or(&bare);
            let places: Vec<String> = group
                .iter()
                .map(|warning| {
                    let text = warning.to_string();
                    text.strip_suffix(message)
                        .and_then(|place| place.strip_suffix(": "))
                        .map_or_else(|| warning.path.clone(), str::to_owned)
                })
                .collect();
            let named = bindings_named(&places);
            format!("{named}: {message}")
        })
        .collect()
}

/// The binding named `tool` in a loaded config.
pub(crate) fn find_binding<'a>(
    tools: &'a [ToolBinding],
    tool: &str,
    config: &Path,
) -> Result<&'a ToolBinding, Exit> {
    tools
        .iter()
        .find(|binding| binding.name == tool)
        .ok_or_else(|| {
            let names: Vec<&str> = tools.iter().take(30).map(|b| b.name.as_str()).collect();
            Exit::Failed(format!(
                "{} has no tool named {tool}; it has: {}",
                config.display(),
                if names.is_empty() {
                    "no tools".to_owned()
                } else {
                    names.join(", ")
                }
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_up_to_the_limit_and_refuses_past_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("host.json");
        std::fs::write(&path, b"0123456789").unwrap();
        assert_eq!(read_at_most(&path, 10).unwrap().unwrap(), b"0123456789");
        let Err(Exit::Failed(message)) = read_at_most(&path, 9) else {
            panic!("a file past the limit is refused");
        };
        assert!(
            message.ends_with("the most a host config may be"),
            "{message}"
        );
        assert!(
            read_at_most(&dir.path().join("missing"), 10)
                .unwrap()
                .is_none()
        );
    }

    fn config_naming(tools: usize, variable: &str) -> Loaded {
        let tools: Vec<serde_json::Value> = (0..tools)
            .map(|i| {
                serde_json::json!({
                    "name": format!("t{i}"), "input_schema": {"type": "object"},
                    "url": "https://h/mcp", "mcp_tool": "x", "tenants": ["local"],
                    "token_env": variable
                })
            })
            .collect();
        HostConfig::from_json_value_with_env(&serde_json::json!({ "tools": tools }), |_| false)
            .unwrap()
    }

    /// An unset variable named by every binding: one warning, for the binding called;
    /// for a check, one line naming the bindings.
    #[test]
    fn a_warning_shared_by_bindings_is_said_once() {
        let loaded = config_naming(5, "MCP_API_KEY");
        assert_eq!(loaded.warnings.len(), 5);
        let call = warnings(&loaded.warnings, Warn::Binding("t3"));
        insta::assert_snapshot!("call", call.join("\n"));
        assert_eq!(call.len(), 1);
        let check = warnings(&loaded.warnings, Warn::All);
        insta::assert_snapshot!("check", check.join("\n"));
        assert_eq!(check.len(), 1);
        let two = config_naming(2, "MCP_API_KEY");
        assert_eq!(
            warnings(&two.warnings, Warn::All),
            [
                "tools[0] (t0).token_env, tools[1] (t1).token_env: names MCP_API_KEY, which is not set now; calls fail with missing_token until it is"
            ]
        );
        assert!(warnings(&loaded.warnings, Warn::Binding("other")).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn an_endless_file_stops_one_byte_past_the_limit() {
        assert!(read_at_most(Path::new("/dev/zero"), 1024).is_err());
    }
}
