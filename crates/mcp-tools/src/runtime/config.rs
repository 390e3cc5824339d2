//! Host configs as the commands read them: without trusting their size, loaded and
//! validated as the host loads them (every problem and warning on stderr), and a binding
//! found by its name.

use std::{io::Read, path::Path};

use brain_tools_config::{HostConfig, Loaded, ToolBinding};

use crate::runtime::exit::Exit;

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

/// Reads (at most [`MAX_CONFIG_BYTES`]) and validates a host config; prints every
/// problem (and warning) on stderr.
pub(crate) fn load(path: &Path) -> Result<Loaded, Exit> {
    let bytes = read_existing(path)?;
    match HostConfig::from_json_bytes(&bytes) {
        Ok(loaded) => {
            for warning in &loaded.warnings {
                eprintln!("warning: {warning}");
            }
            Ok(loaded)
        }
        Err(errors) => {
            eprintln!("{}: {errors}", path.display());
            Err(Exit::Reported)
        }
    }
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

    #[cfg(unix)]
    #[test]
    fn an_endless_file_stops_one_byte_past_the_limit() {
        assert!(read_at_most(Path::new("/dev/zero"), 1024).is_err());
    }
}
