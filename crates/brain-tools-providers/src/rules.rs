//! The rules: the shipped data (`rules.json`), parsed and compiled once.

use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use crate::eval::{self, Compiled};

/// The shipped rules.
const RULES: &str = include_str!("rules.json");

/// The Gemini form of function declaration the rules are checked for: `parameters` (the
/// OpenAPI subset most clients send), not `parametersJsonSchema`.
const GEMINI_VARIANT: &str = "parameters";

/// A model provider whose rules for tool definitions this crate knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Provider {
    /// OpenAI function calling (Chat Completions and Responses; strict mode).
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic tool use (Messages API; strict tool use).
    Anthropic,
    /// Google Gemini function declarations (`parameters`, the OpenAPI subset).
    Gemini,
}

impl Provider {
    /// Every provider, in the order reports list them.
    pub const ALL: [Provider; 3] = [Provider::OpenAi, Provider::Anthropic, Provider::Gemini];

    /// Its id in the rules and on the command line: `openai`, `anthropic`, `gemini`.
    pub fn id(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
        }
    }

    /// The provider of an id, if it is one of [`Provider::ALL`].
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|provider| provider.id() == id)
    }
}

/// What a provider does with a definition that breaks a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Effect {
    /// The API refuses the definition (and with it the whole request) in ordinary
    /// function calling.
    Rejected,
    /// Refused (or changed) only when the host sends the tool with strict mode on
    /// (OpenAI's function `strict`, Anthropic's tool `strict`).
    StrictMode,
    /// A documented rule whose breach the provider may not refuse.
    Warning,
}

/// Why a rule is believed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Evidence {
    /// The provider's documentation says it.
    Documented,
    /// Not in the documentation, but the provider's own API error is quoted in public
    /// reports (the rule's source).
    ReportedByUsers,
}

/// What a provider's own SDK does that makes a rule's findings go away before the tool is
/// sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SdkFix {
    /// The SDK and its function, e.g. `google-genai (Python) mcp_to_gemini_tool`.
    pub sdk: String,
    /// What it changes in the schema.
    pub does: String,
    /// Its code.
    pub source: String,
    /// Which findings of the rule it covers.
    #[serde(skip)]
    pub(crate) covers: Covers,
}

/// Which findings of a rule an SDK's fix covers: all of them unless narrowed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub(crate) struct Covers {
    /// Only a finding whose offending value has this JSON type.
    #[serde(default)]
    pub(crate) when_value_type: Option<String>,
    /// Only a finding where the keyword is absent.
    #[serde(default)]
    pub(crate) when_absent: bool,
    /// Only an object that declares at least one property.
    #[serde(default)]
    pub(crate) when_properties: bool,
}

#[derive(Debug, Deserialize)]
struct SdkFixData {
    sdk: String,
    does: String,
    source: String,
    #[serde(flatten)]
    covers: Covers,
}

impl From<SdkFixData> for SdkFix {
    fn from(data: SdkFixData) -> Self {
        Self {
            sdk: data.sdk,
            does: data.does,
            source: data.source,
            covers: data.covers,
        }
    }
}

/// One rule of a provider.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rule {
    /// `provider.what`, e.g. `gemini.schema-field-allowlist`.
    pub id: String,
    /// Whose rule it is.
    pub provider: Provider,
    /// What the provider does with a definition that breaks it.
    pub effect: Effect,
    /// Why it is believed.
    pub evidence: Evidence,
    /// Whether it judges a whole request (every binding a tenant may use, as if sent
    /// together) rather than one binding.
    pub per_request: bool,
    /// The page it comes from.
    pub source: String,
    /// What the provider's own SDK does about it, if anything.
    pub sdk_fix: Option<SdkFix>,
}

#[derive(Debug, Deserialize)]
struct RuleFile {
    format_version: u32,
    providers: Vec<ProviderData>,
}

#[derive(Debug, Deserialize)]
struct ProviderData {
    id: String,
    rules: Vec<RuleData>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Severity {
    Error,
    Warning,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Default,
    Strict,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
enum Status {
    #[serde(rename = "confirmed")]
    Confirmed,
    #[serde(rename = "observed-only")]
    ObservedOnly,
}

#[derive(Debug, Deserialize)]
struct RuleData {
    id: String,
    severity: Severity,
    mode: Mode,
    status: Status,
    #[serde(default)]
    applies_to: Vec<String>,
    check: eval::Check,
    message: String,
    source: String,
    #[serde(default)]
    sdk_fix: Option<SdkFixData>,
}

/// A rule ready to run: what it is, its message template and its compiled check.
#[derive(Debug)]
pub(crate) struct Ready {
    pub(crate) rule: Rule,
    pub(crate) message: String,
    pub(crate) check: Compiled,
}

/// Every shipped rule that applies to what this crate checks, in the data's order.
pub(crate) fn shipped() -> &'static [Ready] {
    static SHIPPED: LazyLock<Vec<Ready>> = LazyLock::new(|| {
        // The data is part of the crate and its unit tests parse it: a failure here is a
        // bug in this crate, not in anything a caller did.
        parse(RULES).expect("the shipped rules parse")
    });
    &SHIPPED
}

/// Every rule this crate checks, in the order reports list them (by provider, then as
/// the data lists them).
pub fn rules() -> impl Iterator<Item = &'static Rule> {
    Provider::ALL
        .into_iter()
        .flat_map(|provider| {
            shipped()
                .iter()
                .filter(move |r| r.rule.provider == provider)
        })
        .map(|ready| &ready.rule)
}

pub(crate) fn parse(text: &str) -> Result<Vec<Ready>, String> {
    let file: RuleFile = serde_json::from_str(text)
        .map_err(|error| format!("the model rules do not parse: {error}"))?;
    if file.format_version != 1 {
        return Err(format!(
            "the model rules are format {}, this version reads format 1",
            file.format_version
        ));
    }
    let mut rules = Vec::new();
    for provider in file.providers {
        let Some(id) = Provider::from_id(&provider.id) else {
            return Err(format!("unknown provider {:?} in the rules", provider.id));
        };
        for data in provider.rules {
            if !(data.applies_to.is_empty() || data.applies_to.iter().any(|v| v == GEMINI_VARIANT))
            {
                continue;
            }
            let check = Compiled::new(data.check.clone())
                .map_err(|error| format!("model rule {}: {error}", data.id))?;
            let effect = match (data.severity, data.mode) {
                (_, Mode::Strict) => Effect::StrictMode,
                (Severity::Error, Mode::Default) => Effect::Rejected,
                (Severity::Warning, Mode::Default) => Effect::Warning,
            };
            let evidence = match data.status {
                Status::Confirmed => Evidence::Documented,
                Status::ObservedOnly => Evidence::ReportedByUsers,
            };
            rules.push(Ready {
                rule: Rule {
                    id: data.id,
                    provider: id,
                    effect,
                    evidence,
                    per_request: check.is_set(),
                    source: data.source,
                    sdk_fix: data.sdk_fix.map(SdkFix::from),
                },
                message: data.message,
                check,
            });
        }
    }
    Ok(rules)
}
