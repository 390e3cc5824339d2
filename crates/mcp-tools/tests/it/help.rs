//! `--help` for each command.

use crate::support::mcp_tools;

#[tokio::test]
async fn help_for_each_command() {
    for (name, args) in [
        ("main", vec!["--help"]),
        ("call", vec!["call", "--help"]),
        ("check", vec!["check", "--help"]),
    ] {
        let run = mcp_tools(&args, &[]).await;
        assert_eq!(run.code, 0);
        insta::assert_snapshot!(name, run.stdout);
    }
}
