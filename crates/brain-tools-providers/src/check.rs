//! Running the rules over bindings: findings, and a verdict per binding and provider.

use brain_tools_config::{JsonObject, ToolBinding};
use serde::Serialize;

use crate::{
    eval::{At, Vars},
    rules::{Effect, Evidence, Provider, Ready, SdkFix, shipped},
    text::{fill, render_at},
};

/// Where a finding is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Place {
    /// One binding.
    Binding {
        /// Its index in the `tools` array.
        index: usize,
        /// Its name (the name the model sees).
        name: String,
    },
    /// Every binding a group of tenants may use, judged as one request.
    Request {
        /// The tenants that see exactly these bindings.
        tenants: Vec<String>,
        /// How many bindings that is.
        bindings: usize,
    },
}

/// One place where a provider's rule fires.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Finding {
    /// The rule's id, e.g. `gemini.schema-field-allowlist`.
    pub rule: String,
    /// Whose rule it is.
    pub provider: Provider,
    /// What the provider does about it.
    pub effect: Effect,
    /// Why the rule is believed.
    pub evidence: Evidence,
    /// The binding, or the request, it is about.
    pub place: Place,
    /// Where in the binding, relative to it: `name`, `input_schema`,
    /// `input_schema.properties.q`, `input_schema.properties["a b"]`; none for a request.
    pub path: Option<String>,
    /// What is wrong, in one line (values from the schema escaped).
    pub message: String,
    /// The page the rule comes from.
    pub source: String,
    /// What the provider's own SDK does that removes this finding, if it does.
    pub sdk_fix: Option<SdkFix>,
}

/// Whether a provider takes a binding's definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Verdict {
    /// No rule refuses it.
    Accepted,
    /// Every rule that refuses it is one the provider's own SDK fixes before the tool is
    /// sent (the finding's [`Finding::sdk_fix`] says how; judged rule by rule).
    AcceptedAfterSdk,
    /// A rule refuses it that no SDK fixes.
    Rejected,
}

/// The verdicts of one provider on one binding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct BindingVerdict {
    /// The binding's index in the `tools` array.
    pub index: usize,
    /// Its name.
    pub name: String,
    /// The provider.
    pub provider: Provider,
    /// In ordinary function calling: the [`Effect::Rejected`] rules.
    pub default: Verdict,
    /// With strict mode on: those and the [`Effect::StrictMode`] rules.
    pub strict: Verdict,
}

/// What a check found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Report {
    /// The providers checked, in the order asked, each once.
    pub providers: Vec<Provider>,
    /// Every finding: by binding, then by provider in [`providers`](Self::providers)
    /// order, then rule order; then the requests' findings.
    pub findings: Vec<Finding>,
    /// A verdict per checked binding and provider, in binding order.
    pub verdicts: Vec<BindingVerdict>,
}

impl Report {
    /// No finding at all.
    pub fn is_empty(&self) -> bool {
        self.findings.is_empty()
    }

    /// The verdicts of `provider` on the binding at `index`, if it was checked.
    pub fn verdict(&self, index: usize, provider: Provider) -> Option<&BindingVerdict> {
        self.verdicts
            .iter()
            .find(|v| v.index == index && v.provider == provider)
    }
}

/// A binding as the rules see it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Subject<'a> {
    pub(crate) index: usize,
    pub(crate) name: &'a str,
    pub(crate) input_schema: &'a JsonObject,
    pub(crate) tenants: &'a [String],
    /// Whether its own findings are reported (all of them count for request rules).
    pub(crate) reported: bool,
}

/// Checks every binding against the rules of `providers`: each binding's findings, the
/// findings of each tenant's request (every binding the tenant may use, as if sent in one
/// request: OpenAI's 128 tools, Anthropic's limits across strict tools), and a verdict per
/// binding and provider.
pub fn check(bindings: &[ToolBinding], providers: &[Provider]) -> Report {
    check_some(bindings, providers, |_| true)
}

/// [`check`], reporting only the bindings whose index `reported` accepts: the others
/// still count for the requests they are part of (a request is reported when it holds a
/// reported binding). For example, the bindings a discovery is about to add to a config.
pub fn check_some(
    bindings: &[ToolBinding],
    providers: &[Provider],
    reported: impl Fn(usize) -> bool,
) -> Report {
    let subjects: Vec<Subject<'_>> = bindings
        .iter()
        .enumerate()
        .map(|(index, binding)| Subject {
            index,
            name: &binding.name,
            input_schema: &binding.input_schema,
            tenants: &binding.tenants,
            reported: reported(index),
        })
        .collect();
    evaluate(&subjects, providers)
}

/// The findings of one tool definition (a name and an input schema) for one provider,
/// without a config: the rules about one binding (request rules need the whole set). The
/// place of each finding is binding 0 under `name`.
pub fn check_tool(name: &str, input_schema: &JsonObject, provider: Provider) -> Vec<Finding> {
    let subject = Subject {
        index: 0,
        name,
        input_schema,
        tenants: &[],
        reported: true,
    };
    evaluate(&[subject], &[provider]).findings
}

/// The rules of `providers`, in the order asked (each provider once), then data order.
fn ordered(providers: &[Provider]) -> (Vec<Provider>, Vec<&'static Ready>) {
    let mut unique = Vec::new();
    for provider in providers {
        if !unique.contains(provider) {
            unique.push(*provider);
        }
    }
    let rules = unique
        .iter()
        .flat_map(|provider| {
            shipped()
                .iter()
                .filter(move |ready| ready.rule.provider == *provider)
        })
        .collect();
    (unique, rules)
}

pub(crate) fn evaluate(subjects: &[Subject<'_>], providers: &[Provider]) -> Report {
    let (providers, rules) = ordered(providers);
    let mut findings = Vec::new();
    let mut verdicts = Vec::new();
    for subject in subjects.iter().filter(|subject| subject.reported) {
        let first = findings.len();
        let place = Place::Binding {
            index: subject.index,
            name: subject.name.to_owned(),
        };
        for ready in rules.iter().filter(|ready| !ready.rule.per_request) {
            for hit in ready.check.hits(subject.name, subject.input_schema) {
                findings.push(finding(ready, place.clone(), Some(&hit.at), &hit.vars));
            }
        }
        for provider in &providers {
            let own: Vec<&Finding> = findings[first..]
                .iter()
                .filter(|f| f.provider == *provider)
                .collect();
            verdicts.push(BindingVerdict {
                index: subject.index,
                name: subject.name.to_owned(),
                provider: *provider,
                default: verdict(&own, &[Effect::Rejected]),
                strict: verdict(&own, &[Effect::Rejected, Effect::StrictMode]),
            });
        }
    }
    // Request rules: once per group of tenants that see the same bindings (as if the host
    // sent every tool a tenant may use in one request).
    let mut groups: Vec<(Vec<String>, Vec<usize>)> = Vec::new();
    let mut tenants: Vec<&String> = subjects.iter().flat_map(|s| s.tenants).collect();
    tenants.sort();
    tenants.dedup();
    for tenant in tenants {
        let members: Vec<usize> = (0..subjects.len())
            .filter(|&i| subjects[i].tenants.contains(tenant))
            .collect();
        match groups.iter_mut().find(|(_, m)| *m == members) {
            Some((names, _)) => names.push(tenant.clone()),
            None => groups.push((vec![tenant.clone()], members)),
        }
    }
    for (names, members) in &groups {
        // Only a request that holds a reported binding is about this check.
        if !members.iter().any(|&i| subjects[i].reported) {
            continue;
        }
        let schemas: Vec<&JsonObject> = members.iter().map(|&i| subjects[i].input_schema).collect();
        for ready in rules.iter().filter(|ready| ready.rule.per_request) {
            if let Some(count) = ready.check.set_count(&schemas) {
                let place = Place::Request {
                    tenants: names.clone(),
                    bindings: members.len(),
                };
                let vars = Vars {
                    count: Some(count),
                    ..Vars::default()
                };
                findings.push(finding(ready, place, None, &vars));
            }
        }
    }
    Report {
        providers,
        findings,
        verdicts,
    }
}

fn finding(ready: &Ready, place: Place, at: Option<&At>, vars: &Vars) -> Finding {
    let path = at.map(render_at);
    let message = fill(&ready.message, vars, ready.check.max(), path.as_deref());
    let rule = &ready.rule;
    let sdk_fix = rule
        .sdk_fix
        .as_ref()
        .filter(|fix| covers(fix, vars))
        .cloned();
    Finding {
        rule: rule.id.clone(),
        provider: rule.provider,
        effect: rule.effect,
        evidence: rule.evidence,
        place,
        path,
        message,
        source: rule.source.clone(),
        sdk_fix,
    }
}

/// Whether an SDK's fix covers this finding (some fix only one shape of it).
fn covers(fix: &SdkFix, vars: &Vars) -> bool {
    let fix = &fix.covers;
    let value_type = fix
        .when_value_type
        .as_ref()
        .is_none_or(|wanted| vars.value_type.as_ref() == Some(wanted));
    let absent = !fix.when_absent || vars.value.is_none();
    let properties = !fix.when_properties || vars.declares_properties == Some(true);
    value_type && absent && properties
}

/// The verdict of the findings whose effect is one of `effects`.
fn verdict(findings: &[&Finding], effects: &[Effect]) -> Verdict {
    let mut refusing = findings.iter().filter(|f| effects.contains(&f.effect));
    let Some(first) = refusing.next() else {
        return Verdict::Accepted;
    };
    if first.sdk_fix.is_some() && refusing.all(|f| f.sdk_fix.is_some()) {
        Verdict::AcceptedAfterSdk
    } else {
        Verdict::Rejected
    }
}
