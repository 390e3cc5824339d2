//! Discovery with `--merge` and `--prefix`: bindings into a real host config, in place.

use brain_mcp_testkit::Era;
use serde_json::{Value, json};

use crate::support::{mcp_tools, redact, server};

/// A host config as a host keeps it: other parts of the host's settings around the tools.
const CONFIG: &str = r#"{
  "listen": "127.0.0.1:7000",
  "tools": [
    {
      "name": "weather",
      "description": "Today's weather.",
      "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
      "url": "https://weather.example.com/mcp",
      "mcp_tool": "forecast",
      "tenants": ["local"],
      "timeout_seconds": 20
    }
  ],
  "sessions": {"max": 8}
}
"#;

#[tokio::test]
async fn merge_adds_prefixed_bindings_in_place_and_refuses_taken_names() {
    let server = server(Era::Both).await;
    let url = server.url();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("host.json");
    std::fs::write(&path, CONFIG).unwrap();
    let shown = path.to_str().unwrap();
    let merge = |extra: &'static [&'static str]| {
        let url = url.clone();
        let shown = shown.to_owned();
        async move {
            let mut args = vec![
                "-url",
                &url,
                "-tenant",
                "local",
                "-tools",
                "echo,structured",
                "--prefix",
                "docs_",
                "--merge",
                &shown,
            ];
            args.extend_from_slice(extra);
            mcp_tools(&args, &[]).await
        }
    };

    let run = merge(&[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(without_task_note(&run.stderr).is_empty(), "{}", run.stderr);
    insta::assert_snapshot!("summary", run.stdout.replace(shown, "host.json"));
    let after = std::fs::read_to_string(&path).unwrap();
    insta::assert_snapshot!("before", CONFIG);
    insta::assert_snapshot!("after", redact(&after, &server));

    let merged: Value = serde_json::from_str(&after).unwrap();
    let original: Value = serde_json::from_str(CONFIG).unwrap();
    let keys: Vec<&String> = merged.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["listen", "tools", "sessions"], "order kept");
    assert_eq!(
        merged["tools"][0], original["tools"][0],
        "the existing binding untouched"
    );
    assert_eq!(merged["tools"][1]["name"], "docs_echo");
    assert_eq!(merged["tools"][1]["mcp_tool"], "echo");
    assert_eq!(merged["tools"][2]["name"], "docs_structured");
    let check = mcp_tools(&["check", "--config", shown], &[]).await;
    assert_eq!(check.code, 0, "the merged config loads: {}", check.stderr);

    // The same names again: refused, nothing written.
    let run = merge(&[]).await;
    assert_eq!(run.code, 1);
    assert_eq!(
        without_task_note(&run.stderr).replace(shown, "host.json"),
        "mcp-tools: host.json already has bindings named docs_echo, docs_structured; nothing was merged: add --replace to replace them, or --prefix to bind the tools under other names\n"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), after);

    // --replace with the same bindings: unchanged, nothing to write.
    let run = merge(&["--replace"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("unchanged"), "{}", run.stdout);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), after);

    // --replace with another tenant: replaced in place.
    let run = mcp_tools(
        &[
            "-url",
            &url,
            "-tenant",
            "local,ops",
            "-tools",
            "echo",
            "--prefix",
            "docs_",
            "--merge",
            shown,
            "--replace",
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with("replaced   tools[1] docs_echo"),
        "{}",
        run.stdout
    );
    let replaced: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(replaced["tools"][1]["tenants"], json!(["local", "ops"]));
    assert_eq!(replaced["tools"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn merge_creates_a_missing_config_and_never_writes_an_invalid_one() {
    let server = server(Era::Both).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.json");
    let shown = path.to_str().unwrap();
    let run = mcp_tools(
        &[
            "-url",
            &server.url(),
            "-tenant",
            "local",
            "-tools",
            "echo",
            "--merge",
            shown,
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .ends_with("created; 1 added, 0 replaced, 0 unchanged; 1 binding in all\n"),
        "{}",
        run.stdout
    );
    assert!(mcp_tools(&["check", "--config", shown], &[]).await.code == 0);

    // A config that does not load is left alone.
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, r#"{"tools": [{"name": "x y"}]}"#).unwrap();
    let run = mcp_tools(
        &[
            "-url",
            &server.url(),
            "-tenant",
            "local",
            "-tools",
            "echo",
            "--merge",
            broken.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("does not load, so nothing was merged"),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(&broken).unwrap(),
        r#"{"tools": [{"name": "x y"}]}"#
    );
}

/// `--prefix` names bindings PREFIX + the server's name and leaves `mcp_tool` alone.
#[tokio::test]
async fn prefix_renames_bindings_only() {
    let server = server(Era::Both).await;
    let run = mcp_tools(
        &[
            "-url",
            &server.url(),
            "-tenant",
            "local",
            "-tools",
            "echo,image",
            "-prefix",
            "kit-",
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let bindings: Value = serde_json::from_str(&run.stdout).unwrap();
    let pairs: Vec<(&str, &str)> = bindings
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["name"].as_str().unwrap(), b["mcp_tool"].as_str().unwrap()))
        .collect();
    assert_eq!(pairs, [("kit-echo", "echo"), ("kit-image", "image")]);
}

/// stderr without the note that the testkit (2026-07-28) may run any call as a task.
fn without_task_note(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|line| !line.contains("may run any call as a task"))
        .map(|line| format!("{line}\n"))
        .collect()
}
