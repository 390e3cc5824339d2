//! `brain-conformance`: the official MCP conformance suite's client, our scenario suite
//! against the testkit, and the interop checks against real servers. See the crate docs.

fn main() -> std::process::ExitCode {
    brain_conformance::main_with_args(std::env::args().skip(1).collect())
}
