//! The public API as a host uses it at config load.

use brain_tools_config::HostConfig;
use brain_tools_providers::{Effect, Provider, Verdict, check, check_some, check_tool};
use serde_json::json;

fn config() -> HostConfig {
    let document = json!({"tools": [
        {
            "name": "read_file",
            "input_schema": {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "properties": {"path": {"type": "string"}, "head": {"type": "number"}},
                "required": ["path"],
                "additionalProperties": false
            },
            "command": {"program": "mcp-server-filesystem", "args": ["/data"]},
            "mcp_tool": "read_file",
            "tenants": ["local"]
        },
        {
            "name": "pick",
            "input_schema": {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
                             "properties": {"a": {"type": "string"}, "b": {"type": "string"}}},
            "url": "https://mcp.example.com/mcp",
            "mcp_tool": "pick",
            "tenants": ["local", "other"]
        }
    ]});
    HostConfig::from_json_value_with_env(&document, |_| true)
        .unwrap()
        .config
}

/// The whole report as JSON: what a script or a host log reads.
#[test]
fn the_report_is_data() {
    let config = config();
    let report = check(&config.tools, &Provider::ALL);
    insta::assert_json_snapshot!(report);
}

#[test]
fn verdicts_say_what_each_provider_does() {
    let config = config();
    let report = check(&config.tools, &Provider::ALL);
    let read_file = |provider| report.verdict(0, provider).unwrap();
    // `$schema` and `additionalProperties` are not Gemini Schema fields; google-genai
    // leaves them out when it converts an MCP tool.
    assert_eq!(
        read_file(Provider::Gemini).default,
        Verdict::AcceptedAfterSdk
    );
    assert_eq!(read_file(Provider::OpenAi).default, Verdict::Accepted);
    // Strict mode wants `head` required: the Agents SDK makes it so.
    assert_eq!(
        read_file(Provider::OpenAi).strict,
        Verdict::AcceptedAfterSdk
    );
    assert_eq!(read_file(Provider::Anthropic).strict, Verdict::Accepted);
    let pick = |provider| report.verdict(1, provider).unwrap();
    for provider in [Provider::OpenAi, Provider::Anthropic] {
        assert_eq!(pick(provider).default, Verdict::Rejected, "{provider:?}");
    }
}

#[test]
fn only_the_bindings_asked_about_are_reported() {
    let config = config();
    let report = check_some(&config.tools, &[Provider::OpenAi], |index| index == 1);
    assert!(report.verdicts.iter().all(|v| v.index == 1));
    assert!(!report.is_empty());
}

#[test]
fn one_tool_without_a_config() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}});
    let findings = check_tool("count", schema.as_object().unwrap(), Provider::Anthropic);
    let rules: Vec<(&str, Effect, Option<&str>)> = findings
        .iter()
        .map(|f| (f.rule.as_str(), f.effect, f.path.as_deref()))
        .collect();
    assert_eq!(
        rules,
        [
            (
                "anthropic.strict-additional-properties-false",
                Effect::StrictMode,
                Some("input_schema")
            ),
            (
                "anthropic.strict-unsupported-constraints",
                Effect::StrictMode,
                Some("input_schema.properties.n.minimum")
            ),
        ]
    );
    assert!(findings.iter().all(|f| f.sdk_fix.is_some()));
    assert_eq!(Provider::from_id("gemini"), Some(Provider::Gemini));
    assert_eq!(Provider::from_id("mistral"), None);
}
