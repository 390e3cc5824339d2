//! The runtime the commands share: everything below them. A command uses these modules
//! and `cli`; nothing here uses a command or `dispatch`, and these modules use each other
//! one way (the test `tests/it/layers.rs` keeps both so).
//!
//! - `exit`: how a command ends, and the exit status that means;
//! - `output`: stdout, the one escaping rule, and what a person reads and sees (a call's
//!   result as text or JSON lines, the spinner and the progress bar);
//! - `logs`: the binary's logs on stderr; `telemetry`: OpenTelemetry's export, as the
//!   `OTEL_*` variables say (feature `otel`);
//! - `config`: host configs, read within a bound, loaded as the host loads them;
//! - `client`: the MCP client of a run, what it is asked, and how the run ends with it;
//!   `signals`: the signals that ask a run to stop;
//! - `store`: the credential store; `auth`: a person's side of OAuth; `shell`: the
//!   commands a message suggests;
//! - logic a command applies, apart and with its own tests: `stdio` (a stdio server from
//!   `--command`), `merge` (bindings into a host config), `diff` (a binding's schemas and
//!   its server's), `models` (the providers' report for a person).

pub(crate) mod auth;
pub(crate) mod client;
pub(crate) mod config;
pub(crate) mod diff;
pub(crate) mod exit;
pub(crate) mod logs;
pub(crate) mod merge;
pub(crate) mod models;
pub(crate) mod output;
pub(crate) mod shell;
pub(crate) mod signals;
pub(crate) mod stdio;
pub(crate) mod store;
pub(crate) mod telemetry;
