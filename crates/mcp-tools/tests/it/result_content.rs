//! What the model reads of a result with structured content and text, per binding
//! (`result_content`), on the python SDK peer (PyPI `mcp`, installed by `cargo xtask test`),
//! whose `-> str` tools say everything twice: `{"result": "Echo: hi"}` and `Echo: hi`.

use serde_json::{Value, json};

use crate::support::mcp_tools;

/// The venv's python and the peer script.
fn python_peer() -> (String, String) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("peers/venv/bin/python");
    assert!(
        python.exists(),
        "the python peer is not installed at {}: run `cargo xtask test` (or `cargo xtask conformance`), which installs the pinned peers",
        python.display()
    );
    let script = root.join("tests/peers/py_server.py");
    (
        python.display().to_string(),
        script.canonicalize().unwrap().display().to_string(),
    )
}

/// The content blocks of the call's result, each as `json` or `text:...`.
async fn read(host: &str, tool: &str, arguments: &str) -> Vec<String> {
    let run = mcp_tools(
        &[
            "call", "--config", host, "--tenant", "local", "--tool", tool, "--args", arguments,
            "--format", "json",
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let result: Value = serde_json::from_str(run.stdout.lines().last().unwrap()).unwrap();
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| match block["type"].as_str().unwrap() {
            "text" => format!("text:{}", block["text"].as_str().unwrap()),
            other => other.to_owned(),
        })
        .collect()
}

#[tokio::test]
async fn the_model_reads_each_piece_once_unless_the_binding_says_otherwise() {
    let (python, script) = python_peer();
    let dir = tempfile::tempdir().unwrap();
    let host = dir.path().join("host.json");
    let host = host.to_str().unwrap();
    let run = mcp_tools(
        &[
            "--command",
            &format!("'{python}' '{script}' stdio"),
            "--tenant",
            "local",
            "--tools",
            "echo,structured",
            "--merge",
            host,
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    // The default: a wrapped string is read as its text; a weather report as its JSON.
    assert_eq!(
        read(host, "echo", r#"{"message": "hi"}"#).await,
        ["text:Echo: hi"]
    );
    assert_eq!(
        read(host, "structured", r#"{"city": "Paris"}"#).await,
        ["json"]
    );

    let mut config: Value = serde_json::from_slice(&std::fs::read(host).unwrap()).unwrap();
    for (index, form) in ["both", "content"].into_iter().enumerate() {
        config["tools"][index]["result_content"] = json!(form);
    }
    std::fs::write(host, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    assert_eq!(
        read(host, "echo", r#"{"message": "hi"}"#).await,
        ["json", "text:Echo: hi"]
    );
    let structured = read(host, "structured", r#"{"city": "Paris"}"#).await;
    assert_eq!(structured.len(), 1);
    assert!(structured[0].starts_with("text:{"), "{structured:?}");
}
