//! `brain-mcp-testkit-stdio`: the testkit's scripted MCP tools over stdin/stdout, for stdio client tests.
//!
//! Flags: `--era legacy|modern|both` (default both), `--page-size N`, `--extra-tools N`, `--conformance-tools`
//! (also serve the official conformance suite's tools), and the faults
//! `--exit-before-handshake` (exit 3 at once), `--garbage-stdout`, `--flood-stderr`, `--ignore-stdin-close`,
//! `--spawn-grandchild PIDFILE` (start `sleep 1000` in our process group, write its pid),
//! `--spawn-setsid-grandchild PIDFILE` (the same in a session of its own, out of our process group, holding our
//! stdout and stderr), `--exit-mid-call`, `--crash-mid-call segv|STATUS` (at the first `tools/call`, die of
//! SIGSEGV, or exit with STATUS: 139 is how a shell reports a child that died of SIGSEGV); and `--env-file FILE` (write the names of the environment variables we
//! were started with, one per line); `--pid-log FILE` (append our own pid to FILE, one line per process);
//! `--stderr-line TEXT` (write TEXT to stderr at once) and `--stderr-env NAME` (write `NAME=value` of that
//! variable), before the flags after them: with `--exit-before-handshake`, a server that says why it fails;
//! `--start-delay-ms MS` (sleep that long before reading stdin: a server slow to start, like Node on busy cores).
//! Env `TESTKIT_COUNTERS=FILE`: keep the counters there as JSON (see `brain_mcp_testkit::read_counters_file`).

use std::path::PathBuf;
use std::process::ExitCode;

use brain_mcp_testkit::{Era, StdioOptions, serve_stdio};

const USAGE: &str = "usage: brain-mcp-testkit-stdio [--era legacy|modern|both] [--page-size N] [--extra-tools N] [--conformance-tools] \
[--exit-before-handshake] [--garbage-stdout] [--flood-stderr] [--ignore-stdin-close] \
[--spawn-grandchild PIDFILE] [--spawn-setsid-grandchild PIDFILE] [--exit-mid-call] [--crash-mid-call segv|STATUS] [--env-file FILE] [--pid-log FILE] \
[--stderr-line TEXT] [--stderr-env NAME] [--start-delay-ms MS]";

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(message) => {
            eprintln!("brain-mcp-testkit-stdio: {message}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn value(args: &mut impl Iterator<Item = String>, flag: &str) -> Result<String, String> {
    args.next().ok_or_else(|| format!("{flag} needs a value"))
}

fn number(args: &mut impl Iterator<Item = String>, flag: &str) -> Result<usize, String> {
    let raw = value(args, flag)?;
    raw.parse()
        .map_err(|_| format!("{flag} needs a number, not {raw:?}"))
}

fn run() -> Result<ExitCode, String> {
    let mut options = StdioOptions::new(Era::Both);
    let mut grandchild_pidfile: Option<PathBuf> = None;
    let mut setsid_pidfile: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--era" => options.era = value(&mut args, "--era")?.parse()?,
            "--page-size" => options.page_size = Some(number(&mut args, "--page-size")?),
            "--extra-tools" => options.extra_tools = number(&mut args, "--extra-tools")?,
            "--conformance-tools" => options.conformance_tools = true,
            "--start-delay-ms" => {
                let delay = number(&mut args, "--start-delay-ms")?;
                std::thread::sleep(std::time::Duration::from_millis(delay as u64));
            }
            "--exit-before-handshake" => return Ok(ExitCode::from(3)),
            "--stderr-line" => eprintln!("{}", value(&mut args, "--stderr-line")?),
            "--stderr-env" => {
                let name = value(&mut args, "--stderr-env")?;
                eprintln!("{name}={}", std::env::var(&name).unwrap_or_default());
            }
            "--garbage-stdout" => options.garbage_stdout = true,
            "--hold-discover" => options.hold_discover = true,
            "--flood-stderr" => options.flood_stderr = true,
            "--ignore-stdin-close" => options.ignore_stdin_close = true,
            "--exit-mid-call" => options.exit_mid_call = true,
            "--crash-mid-call" => {
                options.crash_mid_call = Some(value(&mut args, "--crash-mid-call")?.parse()?);
            }
            "--spawn-grandchild" => {
                grandchild_pidfile = Some(value(&mut args, "--spawn-grandchild")?.into());
            }
            "--spawn-setsid-grandchild" => {
                setsid_pidfile = Some(value(&mut args, "--spawn-setsid-grandchild")?.into());
            }
            "--pid-log" => {
                // Appends our own pid, one per line: a test can tell its server processes apart.
                use std::io::Write as _;
                let path = PathBuf::from(value(&mut args, "--pid-log")?);
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .and_then(|mut file| writeln!(file, "{}", std::process::id()))
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            }
            "--env-file" => {
                let path = PathBuf::from(value(&mut args, "--env-file")?);
                let names: String = std::env::vars_os()
                    .map(|(name, _)| format!("{}\n", name.to_string_lossy()))
                    .collect();
                std::fs::write(&path, names)
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            }
            "-h" | "--help" => {
                eprintln!("{USAGE}");
                return Ok(ExitCode::SUCCESS);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    options.counters_file = std::env::var_os("TESTKIT_COUNTERS").map(PathBuf::from);

    if let Some(pidfile) = grandchild_pidfile {
        // Same process group and the same stdin/stdout/stderr as we have, like the node process that `npx`
        // starts: a client that kills only its direct child leaves it behind, holding the pipes open.
        let child = std::process::Command::new("sleep")
            .arg("1000")
            .spawn()
            .map_err(|e| format!("cannot spawn the grandchild: {e}"))?;
        write_pid(&pidfile, child.id())?;
    }
    if let Some(pidfile) = setsid_pidfile {
        // A daemon-like descendant: `setsid` puts it in a session (and process group) of its own, so killing
        // our group does not reach it, and it keeps our stdout and stderr open. Its stdin is not ours.
        let child = std::process::Command::new("setsid")
            .args(["sleep", "1000"])
            .stdin(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot spawn the setsid grandchild: {e}"))?;
        write_pid(&pidfile, child.id())?;
    }

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime
        .block_on(serve_stdio(options))
        .map_err(|e| format!("stdio failed: {e}"))?;
    // stdin may still be read by a blocking thread: do not wait for it.
    runtime.shutdown_background();
    Ok(ExitCode::SUCCESS)
}

/// Writes a pid atomically (a reader never sees half a file).
fn write_pid(pidfile: &std::path::Path, pid: u32) -> Result<(), String> {
    let tmp = pidfile.with_extension("tmp");
    std::fs::write(&tmp, pid.to_string())
        .and_then(|()| std::fs::rename(&tmp, pidfile))
        .map_err(|e| format!("cannot write {}: {e}", pidfile.display()))
}
