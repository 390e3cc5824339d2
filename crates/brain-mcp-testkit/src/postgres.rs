//! A throwaway PostgreSQL server for tests (feature `postgres`): a cluster of its own in a
//! folder the test names (under `target/`), listening on a unix socket only (no TCP at
//! all), stopped and removed when dropped. The server binaries are the machine's (the
//! Debian package `postgresql`, which `.ci/run` installs): found in
//! `/usr/lib/postgresql/<version>/bin`, on `PATH`, or in `BRAIN_PG_BINDIR`.
//!
//! PostgreSQL refuses to run as root: when the tests run as root, the server runs as the
//! `postgres` user the package creates, as the package's own scripts do.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

/// A running (or stopped) throwaway PostgreSQL server.
#[derive(Debug)]
pub struct Postgres {
    bin: PathBuf,
    root: PathBuf,
    /// Run as (uid, gid), when the tests run as root.
    user: Option<(u32, u32)>,
}

/// The folder of the server binaries, if the machine has them.
pub fn postgres_bindir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("BRAIN_PG_BINDIR") {
        return Some(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_string_lossy().parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .find(|dir| dir.join("initdb").exists() && dir.join("pg_ctl").exists())
    })
}

/// The uid and gid of a user, from `/etc/passwd`.
fn user_ids(name: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.first() == Some(&name) && fields.len() > 3)
            .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))?
    })
}

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("Uid:"))
                .and_then(|line| line.split_whitespace().nth(2).map(|euid| euid == "0"))
        })
        .unwrap_or(false)
}

/// The build's `target/` folder (the first folder above this executable that cargo
/// marked with `CACHEDIR.TAG`), else the system's temporary folder.
fn target_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            exe.ancestors()
                .find(|dir| dir.join("CACHEDIR.TAG").exists())
                .map(Path::to_path_buf)
        })
        .unwrap_or_else(std::env::temp_dir)
}

impl Postgres {
    /// Makes a cluster under `target/tmp/` and starts it.
    ///
    /// # Errors
    /// See [`Postgres::start_in`].
    pub fn start_new() -> Result<Self, String> {
        Self::start_in(&target_dir().join("tmp"))
    }

    /// Makes a cluster in a new folder under `parent` and starts it.
    ///
    /// # Errors
    /// No server binaries on this machine (the message says what to install), or the
    /// cluster could not be made or started (the message holds the server's log).
    pub fn start_in(parent: &Path) -> Result<Self, String> {
        let bin = postgres_bindir().ok_or(
            "PostgreSQL's server binaries are not on this machine: install the Debian package \
             `postgresql` (`.ci/run` does), or set BRAIN_PG_BINDIR",
        )?;
        let user = if running_as_root() {
            Some(user_ids("postgres").ok_or(
                "running as root, and there is no `postgres` user to run the server as \
                 (the Debian package `postgresql` creates it)",
            )?)
        } else {
            None
        };
        std::fs::create_dir_all(parent)
            .map_err(|error| format!("{}: {error}", parent.display()))?;
        let root = tempfile_dir(parent)?;
        let server = Self { bin, root, user };
        for dir in [server.root.clone(), server.socket_dir()] {
            std::fs::create_dir_all(&dir).map_err(|error| format!("{}: {error}", dir.display()))?;
            server.give(&dir)?;
        }
        server.run(
            "initdb",
            &[
                "-D",
                &server.data_dir().to_string_lossy(),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "--encoding=UTF8",
                "--no-instructions",
            ],
        )?;
        server.start()?;
        Ok(server)
    }

    fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }

    fn socket_dir(&self) -> PathBuf {
        self.root.join("run")
    }

    /// The connection string (over the unix socket, as the `postgres` superuser).
    pub fn url(&self) -> String {
        format!(
            "host={} port=5432 user=postgres dbname=postgres",
            self.socket_dir().display()
        )
    }

    /// The connection string as a `postgres://` URL (the unix socket's folder
    /// percent-encoded as its host), the form `mcp-tools --store` takes.
    pub fn uri(&self) -> String {
        let dir = self.socket_dir().display().to_string();
        let host: String = dir
            .bytes()
            .map(|byte| match byte {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    char::from(byte).to_string()
                }
                other => format!("%{other:02X}"),
            })
            .collect();
        format!("postgres://postgres@{host}:5432/postgres")
    }

    /// Runs SQL in the database as its superuser (`psql`), as a person would by hand.
    ///
    /// # Errors
    /// `psql` could not run the statements (the message holds its output).
    pub fn sql(&self, sql: &str) -> Result<(), String> {
        self.run(
            "psql",
            &[
                "-h",
                &self.socket_dir().to_string_lossy(),
                "-U",
                "postgres",
                "-d",
                "postgres",
                "-v",
                "ON_ERROR_STOP=1",
                "-q",
                "-c",
                sql,
            ],
        )
    }

    /// Starts the server (again, after [`Postgres::stop`]) and waits until it accepts
    /// connections.
    ///
    /// # Errors
    /// It did not start (the message holds its log).
    pub fn start(&self) -> Result<(), String> {
        let options = format!(
            "-k {} -c listen_addresses='' -c fsync=off -c full_page_writes=off -c max_connections=200",
            self.socket_dir().display()
        );
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data_dir().to_string_lossy(),
                "-l",
                &self.root.join("server.log").to_string_lossy(),
                "-o",
                &options,
                "-w",
                "start",
            ],
        )
        .map_err(|error| format!("{error}\n{}", self.log()))
    }

    /// Stops the server now (connections are cut, as when a database goes down).
    ///
    /// # Errors
    /// `pg_ctl` failed.
    pub fn stop(&self) -> Result<(), String> {
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data_dir().to_string_lossy(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
        )
    }

    /// The server's log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.root.join("server.log")).unwrap_or_default()
    }

    /// Runs a server program, as the server's user.
    fn run(&self, program: &str, args: &[&str]) -> Result<(), String> {
        let mut command = Command::new(self.bin.join(program));
        command
            .args(args)
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .env("LC_ALL", "C");
        #[cfg(unix)]
        if let Some((uid, gid)) = self.user {
            use std::os::unix::process::CommandExt;
            command.uid(uid).gid(gid);
        }
        let output = command
            .output()
            .map_err(|error| format!("{program} could not be run: {error}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{program} failed ({}): {}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    }

    /// Makes a folder the server's user's.
    fn give(&self, dir: &Path) -> Result<(), String> {
        #[cfg(unix)]
        if let Some((uid, gid)) = self.user {
            std::os::unix::fs::chown(dir, Some(uid), Some(gid))
                .map_err(|error| format!("{}: {error}", dir.display()))?;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
                .map_err(|error| format!("{}: {error}", dir.display()))?;
        }
        Ok(())
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = self.stop();
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A new folder under `parent`, named for this process and a counter.
fn tempfile_dir(parent: &Path) -> Result<PathBuf, String> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    loop {
        let dir = parent.join(format!(
            "pg-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                let _ = std::fs::remove_dir_all(&dir);
            }
            Err(error) => return Err(format!("{}: {error}", dir.display())),
        }
    }
}
