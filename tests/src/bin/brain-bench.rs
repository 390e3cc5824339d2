//! `brain-bench`: the client side of `cargo xtask bench`. See `brain_conformance::bench`.

fn main() -> std::process::ExitCode {
    brain_conformance::bench::main_with_args(std::env::args().skip(1).collect())
}
