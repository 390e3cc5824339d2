//! Extremes that are easier to generate than to store: huge and deeply nested schemas.

use serde_json::{Value, json};

fn with_schema(schema: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"tools": [{
        "name": "t",
        "input_schema": schema,
        "url": "https://mcp.example.com/mcp",
        "mcp_tool": "t",
        "tenants": ["local"]
    }]}))
    .unwrap()
}

fn nested(depth: usize) -> String {
    let mut schema = String::from(r#"{"type": "string"}"#);
    for _ in 0..depth {
        schema = format!(r#"{{"type": "object", "properties": {{"a": {schema}}}}}"#);
    }
    format!(
        r#"{{"tools": [{{"name": "t", "input_schema": {schema}, "url": "https://mcp.example.com/mcp", "mcp_tool": "t", "tenants": ["local"]}}]}}"#
    )
}

#[test]
fn huge_schema_loads_verbatim() {
    let properties: serde_json::Map<String, Value> = (0..10_000)
        .map(|i| (format!("p{i}"), json!({"type": "integer", "minimum": i})))
        .collect();
    let schema = json!({"type": "object", "properties": properties});
    let rendered = crate::render(&with_schema(schema.clone()));
    assert!(rendered.starts_with("loads\n"), "{}", &rendered[..200]);
    let loaded =
        brain_tools_config::HostConfig::from_json_bytes(&with_schema(schema.clone())).unwrap();
    assert_eq!(
        Value::Object(loaded.config.tools[0].input_schema.clone()),
        schema
    );
}

#[test]
fn nesting_within_the_parser_limit_loads() {
    // 40 schema levels are 120 JSON levels, under serde_json's limit of 128.
    assert!(crate::render(nested(40).as_bytes()).starts_with("loads\n"));
}

#[test]
fn nesting_past_the_parser_limit_is_one_clear_error() {
    insta::assert_snapshot!(crate::render(nested(200).as_bytes()));
}

#[test]
fn bad_external_reference_deep_inside_names_its_path() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "array", "items": {
        "anyOf": [{"type": "null"}, {"$ref": "https://example.com/x.json"}]
    }}}});
    insta::assert_snapshot!(crate::render(&with_schema(schema)));
}
