//! Policy checks as the call path sees them.

use brain_tools_config::HostConfig;
use brain_tools_policy::{Denied, MAX_LISTED_VIOLATIONS, Policy};
use serde_json::{Value, json};

fn policy() -> Policy {
    let config = json!({"tools": [
        {
            "name": "search",
            "url": "https://mcp.example.com/mcp", "mcp_tool": "search",
            "input_schema": {
                "type": "object",
                "required": ["query"],
                "additionalProperties": false,
                "properties": {
                    "query": {"type": "string", "minLength": 1},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50},
                    "filters": {"type": "array", "items": {"$ref": "#/$defs/filter"}}
                },
                "$defs": {"filter": {
                    "type": "object", "required": ["field"],
                    "properties": {"field": {"enum": ["title", "body"]}}
                }}
            },
            "output_schema": {
                "type": "object", "required": ["hits"],
                "properties": {"hits": {"type": "integer", "minimum": 0}}
            },
            "tenants": ["local", "acme"]
        },
        {
            "name": "admin_reset",
            "url": "https://mcp.example.com/mcp", "mcp_tool": "reset",
            "input_schema": {"type": "object"},
            "tenants": ["ops"]
        },
        {
            "name": "wide",
            "url": "https://mcp.example.com/mcp", "mcp_tool": "wide",
            "input_schema": {
                "type": "object",
                "patternProperties": {"^n": {"type": "integer"}}
            },
            "tenants": ["local"]
        }
    ]});
    let loaded = HostConfig::from_json_value_with_env(&config, |_| true).unwrap();
    Policy::new(&loaded.config).unwrap()
}

fn denied(tenant: &str, tool: &str, arguments: Value) -> Denied {
    policy().check(tenant, tool, &arguments).unwrap_err()
}

#[test]
fn tenants_see_only_their_tools_in_config_order() {
    let policy = policy();
    let names = |tenant| {
        policy
            .tools_for(tenant)
            .map(|b| b.name.as_str())
            .collect::<Vec<_>>()
    };
    assert_eq!(names("local"), ["search", "wide"]);
    assert_eq!(names("acme"), ["search"]);
    assert_eq!(names("ops"), ["admin_reset"]);
    assert!(names("nobody").is_empty());
}

#[test]
fn a_forbidden_tool_answers_exactly_like_an_unknown_one() {
    let forbidden = denied("local", "admin_reset", json!({}));
    let unknown = denied("local", "admin_resat", json!({}));
    assert_eq!(
        forbidden,
        Denied::UnknownTool {
            tool: "admin_reset".into()
        }
    );
    assert_eq!(
        forbidden.to_string().replace("admin_reset", "X"),
        unknown.to_string().replace("admin_resat", "X")
    );
    // Even invalid arguments do not reveal that the tool exists.
    assert_eq!(
        denied("local", "admin_reset", json!("not an object")),
        forbidden
    );
}

#[test]
fn allowed_calls_carry_the_binding_and_limits() {
    let allowed = policy()
        .check(
            "acme",
            "search",
            &json!({"query": "rust", "limit": 5, "filters": [{"field": "title"}]}),
        )
        .unwrap();
    assert_eq!(allowed.binding().name, "search");
    assert_eq!(allowed.limits().timeout.as_secs(), 300);
    assert_eq!(allowed.limits().max_output_bytes, 1_048_576);
}

#[test]
fn every_argument_violation_is_listed_with_its_path_and_without_its_value() {
    let Denied::InvalidArguments { tool, violations } = denied(
        "local",
        "search",
        json!({"limit": "sk-secret-value", "filters": [{"field": "sk-secret-2"}, {}], "extra": 1}),
    ) else {
        panic!("invalid arguments")
    };
    assert_eq!(tool, "search");
    let text = violations.to_string();
    assert!(!text.contains("sk-secret"), "{text}");
    let mut paths: Vec<_> = violations
        .items()
        .iter()
        .map(|v| v.instance_path.as_str())
        .collect();
    paths.sort();
    assert_eq!(paths, ["", "", "/filters/0/field", "/filters/1", "/limit"]);
    insta::assert_snapshot!(text);
}

#[test]
fn arguments_must_be_an_object() {
    let Denied::InvalidArguments { violations, .. } = denied("local", "search", json!([1, 2]))
    else {
        panic!("invalid arguments")
    };
    assert_eq!(violations.items()[0].instance_path, "");
    assert!(
        violations.to_string().contains("\"object\""),
        "{violations}"
    );
}

#[test]
fn the_violation_list_is_bounded_and_counts_the_rest() {
    let arguments: serde_json::Map<String, Value> =
        (0..25).map(|i| (format!("n{i}"), json!("x"))).collect();
    let Denied::InvalidArguments { violations, .. } =
        denied("local", "wide", Value::Object(arguments))
    else {
        panic!("invalid arguments")
    };
    assert_eq!(violations.total(), 25);
    assert_eq!(violations.items().len(), MAX_LISTED_VIOLATIONS);
    assert!(
        violations.to_string().ends_with("; and 15 more"),
        "{violations}"
    );
}

#[test]
fn output_is_checked_against_output_schema() {
    let policy = policy();
    let allowed = policy
        .check("local", "search", &json!({"query": "q"}))
        .unwrap();
    assert!(allowed.has_output_schema());
    assert!(allowed.check_output(Some(&json!({"hits": 3}))).is_ok());
    let violations = allowed
        .check_output(Some(&json!({"hits": -1})))
        .unwrap_err();
    assert_eq!(violations.items()[0].instance_path, "/hits");
    let missing = allowed.check_output(None).unwrap_err();
    assert_eq!(
        missing.to_string(),
        "(root): the result has no structured content"
    );

    let free = policy.check("local", "wide", &json!({})).unwrap();
    assert!(!free.has_output_schema());
    assert!(free.check_output(None).is_ok());
    assert!(free.check_output(Some(&json!([1]))).is_ok());
}
