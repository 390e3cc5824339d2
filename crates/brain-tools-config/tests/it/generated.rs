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

#[test]
fn input_over_the_size_limit_is_refused_before_parsing() {
    let mut bytes = vec![b' '; brain_tools_config::MAX_CONFIG_BYTES + 1];
    bytes[0] = b'{';
    insta::assert_snapshot!(crate::render(&bytes), @"
    the host config has 1 problem:
      config: is larger than 67108864 bytes (64 MiB); write a smaller host config
    ");
    // At the limit, the size is fine: parsing starts (and stops at the first byte that
    // is wrong, so the test need not read 64 MiB).
    bytes.pop();
    bytes[1] = b']';
    *bytes.last_mut().unwrap() = b'}';
    assert!(
        crate::render(&bytes).contains("at line 1, column 2"),
        "{}",
        crate::render(&bytes)
    );
}

#[test]
fn many_repeated_keys_are_listed_up_to_a_bound_and_counted() {
    let repeats: Vec<String> = (0..130)
        .map(|i| format!(r#""k{i}": {{}}, "k{i}": {{}}"#))
        .collect();
    let text = format!(
        r#"{{"tools": [{{"name": "t", "input_schema": {{"type": "object", "properties": {{{}}}}},
            "url": "https://mcp.example.com/mcp", "mcp_tool": "t", "tenants": ["local"]}}]}}"#,
        repeats.join(", ")
    );
    let errors = brain_tools_config::HostConfig::from_json_bytes(text.as_bytes()).unwrap_err();
    assert_eq!(errors.len(), 101, "{errors}");
    assert_eq!(
        errors.errors()[0].to_string(),
        "tools[0] (t).input_schema.properties.k0: appears twice; keep one"
    );
    assert_eq!(
        errors.errors()[100].to_string(),
        "config: repeats 30 more keys (not listed); keep one of each"
    );
}
