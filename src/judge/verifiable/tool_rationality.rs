//! Tool rationality: the needed tools were called, by this variant's surface names, with the right key
//! arguments; nothing was invented, repeated or called where the task wanted none; failures were handled.
//!
//! score = recall × precision × recovery, where
//! * recall    = expected calls matched (name through the name map, key arguments equal) / expected calls;
//! * precision = 1 − bad calls / calls, a bad call being hallucinated (a name the record does not offer,
//!   including the old name of a renamed tool), malformed (arguments not a JSON object), redundant (the
//!   same tool and arguments as an earlier call that succeeded) or unnecessary (a data tool on a request
//!   that needed a clarifying question or silence);
//! * recovery  = failed calls followed by a later call to the same tool / failed calls. The simulator's
//!   faults are transient, so a retry is the right recovery.
//!
//! Each factor is 1 when its denominator is 0.

use serde_json::{json, Map, Value};

use super::episode::{Call, Episode};
use super::{Dimension, FailureKind};
use crate::record::{Names, Trajectory};

/// Tools that only read what the prompt shows or load rules; calling them never acts on a request.
const NEUTRAL_TOOLS: [&str; 2] = ["load_skill", "get_room_state"];

pub fn score(traj: &Trajectory, ep: &Episode) -> Dimension {
    let mut notes: Vec<String> = Vec::new();
    let needed = ep.expected.map_or(&[][..], |e| &e.tool_calls[..]);
    let mut missed: Vec<&str> = Vec::new();
    for want in needed {
        let params = schema_params(traj, &ep.names, &want.tool);
        let hit = ep.calls.iter().any(|c| {
            c.canonical.as_deref() == Some(want.tool.as_str())
                && c.args.as_ref().is_ok_and(|args| {
                    want.args.iter().all(|(k, v)| {
                        params.as_ref().is_some_and(|p| !p.contains(k))
                            || args.get(k).is_some_and(|got| same_value(got, v))
                    })
                })
        });
        if !hit {
            missed.push(&want.tool);
        }
    }
    let matched = needed.len() - missed.len();

    let quiet = ep.expected.is_some_and(|e| e.clarify || e.silent);
    let (mut hallucinated, mut malformed, mut redundant, mut unnecessary) =
        (Vec::new(), 0usize, Vec::new(), Vec::new());
    for (i, c) in ep.calls.iter().enumerate() {
        let Some(canonical) = &c.canonical else {
            hallucinated.push(c.surface.as_str());
            continue;
        };
        if c.args.is_err() {
            malformed += 1;
        } else if ep.calls[..i].iter().any(|p| !p.failed() && same_call(p, c)) {
            redundant.push(c.surface.as_str());
        } else if quiet && !NEUTRAL_TOOLS.contains(&canonical.as_str()) {
            unnecessary.push(c.surface.as_str());
        }
    }
    let bad = hallucinated.len() + malformed + redundant.len() + unnecessary.len();
    let failed: Vec<usize> = (0..ep.calls.len())
        .filter(|&i| ep.calls[i].canonical.is_some() && ep.calls[i].failed())
        .collect();
    let recovered = failed
        .iter()
        .filter(|&&i| {
            ep.calls[i + 1..]
                .iter()
                .any(|later| later.canonical == ep.calls[i].canonical)
        })
        .count();

    let ratio = |num: usize, den: usize| {
        if den == 0 {
            1.0
        } else {
            num as f64 / den as f64
        }
    };
    let recall = ratio(matched, needed.len());
    let precision = 1.0
        - if ep.calls.is_empty() {
            0.0
        } else {
            bad as f64 / ep.calls.len() as f64
        };
    let recovery = ratio(recovered, failed.len());

    let canonical = |c: &Call| c.canonical.clone().unwrap_or_default();
    let mut shortfalls: Vec<(FailureKind, String)> = Vec::new();
    shortfalls.extend(
        missed
            .iter()
            .map(|t| (FailureKind::MissingCall, t.to_string())),
    );
    shortfalls.extend(
        hallucinated
            .iter()
            .map(|t| (FailureKind::HallucinatedTool, t.to_string())),
    );
    for (i, c) in ep.calls.iter().enumerate() {
        if c.canonical.is_some() && c.args.is_err() {
            shortfalls.push((FailureKind::MalformedArgs, canonical(c)));
        }
        if failed.contains(&i)
            && !ep.calls[i + 1..]
                .iter()
                .any(|later| later.canonical == c.canonical)
        {
            shortfalls.push((FailureKind::FaultNotRecovered, canonical(c)));
        }
    }
    let by_surface = |kind: FailureKind, list: &[&str]| -> Vec<(FailureKind, String)> {
        list.iter()
            .map(|s| (kind, ep.names.tool_canonical(s).unwrap_or(s).to_string()))
            .collect()
    };
    shortfalls.extend(by_surface(FailureKind::RedundantCall, &redundant));
    shortfalls.extend(by_surface(FailureKind::UnnecessaryCall, &unnecessary));

    if needed.is_empty() {
        notes.push("no calls required".into());
    } else if missed.is_empty() {
        notes.push(format!("all {} required calls made", needed.len()));
    } else {
        notes.push(format!(
            "missing or wrong-argument calls to {} ({matched}/{})",
            missed.join(", "),
            needed.len()
        ));
    }
    if !hallucinated.is_empty() {
        notes.push(format!(
            "called tools not offered: {}",
            hallucinated.join(", ")
        ));
    }
    if malformed > 0 {
        notes.push(format!("{malformed} calls with malformed arguments"));
    }
    if !redundant.is_empty() {
        notes.push(format!(
            "repeated successful calls: {}",
            redundant.join(", ")
        ));
    }
    if !unnecessary.is_empty() {
        notes.push(format!(
            "data calls where none was wanted: {}",
            unnecessary.join(", ")
        ));
    }
    if !failed.is_empty() {
        notes.push(format!("{recovered}/{} failed calls retried", failed.len()));
    }
    let details = json!({
        "needed": needed.len(), "matched": matched, "calls": ep.calls.len(),
        "hallucinated": hallucinated.len(), "malformed": malformed, "redundant": redundant.len(),
        "unnecessary": unnecessary.len(), "failed": failed.len(), "recovered": recovered,
    });
    let mut d =
        Dimension::new(recall * precision * recovery, notes.join("; ")).with_details(details);
    d.shortfalls = shortfalls;
    d
}

/// Canonical keys of the arguments the variant's version of canonical tool `tool` takes; only those
/// can be required of it.
fn schema_params(traj: &Trajectory, names: &Names, tool: &str) -> Option<Vec<String>> {
    let surface = names.tool_surface(tool);
    traj.tools
        .iter()
        .find(|t| t.function.name == surface)
        .and_then(|t| {
            t.function
                .parameters
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| {
                    p.keys()
                        .filter_map(|k| names.param_canonical(tool, k))
                        .map(str::to_string)
                        .collect()
                })
        })
}

/// Same tool and same arguments, compared as values (key order and number spelling do not matter).
fn same_call(a: &Call, b: &Call) -> bool {
    a.canonical == b.canonical
        && match (&a.args, &b.args) {
            (Ok(x), Ok(y)) => same_map(x, y),
            _ => false,
        }
}

fn same_map(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    a.len() == b.len()
        && a.iter()
            .all(|(k, v)| b.get(k).is_some_and(|w| same_value(v, w)))
}

/// Equal as JSON, with strings compared trimmed and case-insensitively and numbers by value, so "2",
/// 2 and 2.0 agree (models stringify numbers; ids differ in case between systems).
pub fn same_value(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::String(a), Value::String(b)) => a.trim().eq_ignore_ascii_case(b.trim()),
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::String(a), Value::Number(b)) | (Value::Number(b), Value::String(a)) => {
            a.trim().parse::<f64>().ok() == b.as_f64()
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y))
        }
        (Value::Object(a), Value::Object(b)) => same_map(a, b),
        _ => got == want,
    }
}
