//! Reading a host config without trusting its size.

use std::{io::Read, path::Path};

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
pub(crate) fn read_existing(path: &Path) -> Result<Vec<u8>, Exit> {
    read_bounded(path)?
        .ok_or_else(|| Exit::Failed(format!("cannot read {}: no such file", path.display())))
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
