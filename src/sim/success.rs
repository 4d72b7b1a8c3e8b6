//! Did an episode do what the task needed? A verifiable check against the task's canonical ground truth
//! (`task.expected`), read through the harness's name map so it holds under any renamed harness.
//! Richer scoring (partial credit, judges) lives in the judge; this is the pass/fail the simulator and
//! the teacher filter use.

use serde_json::Value;

use crate::record::{Expected, Message, Names, Role, Trajectory};

/// The outcome, with one line per unmet requirement.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub success: bool,
    pub failures: Vec<String>,
}

/// Canonical tools that only read state the prompt already shows, or load rules: calling them never
/// counts as acting on an ambiguous request.
const NEUTRAL_TOOLS: [&str; 2] = ["load_skill", "get_room_state"];

/// Check `traj` against its task. A record without `task.expected` cannot be checked and fails.
pub fn check(traj: &Trajectory) -> Verdict {
    let mut failures = Vec::new();
    let Some(expected) = traj.task.as_ref().and_then(|t| t.expected.as_ref()) else {
        return Verdict {
            success: false,
            failures: vec!["no task.expected to check against".into()],
        };
    };
    let names = traj.names();
    let turn = traj.current_turn();
    let calls: Vec<(String, Value)> = turn
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| &m.tool_calls)
        .map(|c| {
            let canonical = names
                .tool_canonical(&c.function.name)
                .unwrap_or("")
                .to_string();
            // Arguments in canonical keys, as the ground truth states them.
            let args = c
                .function
                .parsed_arguments()
                .map(|a| Value::Object(names.args_canonical(&canonical, &a)))
                .unwrap_or(Value::Null);
            (canonical, args)
        })
        .collect();
    let reply = final_reply(turn);

    if expected.silent {
        if let Some(r) = reply.as_deref().filter(|r| !r.trim().is_empty()) {
            failures.push(format!("should stay silent but replied {r:?}"));
        }
        return Verdict {
            success: failures.is_empty(),
            failures,
        };
    }
    let Some(reply) = reply.filter(|r| !r.trim().is_empty()) else {
        failures.push("no final reply".into());
        return Verdict {
            success: false,
            failures,
        };
    };
    if expected.clarify {
        if !reply.contains('?') && !reply.contains('？') {
            failures.push(format!(
                "should ask a clarifying question, replied {reply:?}"
            ));
        }
        if let Some((tool, _)) = calls
            .iter()
            .find(|(t, _)| !NEUTRAL_TOOLS.contains(&t.as_str()))
        {
            failures.push(format!(
                "called {tool} on an ambiguous request instead of asking"
            ));
        }
    }
    check_calls(traj, expected, &names, &calls, &mut failures);
    check_skill(traj, expected, &names, &calls, &mut failures);
    for fact in &expected.facts {
        if !states(&reply, fact) {
            failures.push(format!("reply does not state {fact:?}"));
        }
    }
    let lower = reply.to_lowercase();
    for term in &expected.forbidden {
        if lower.contains(&term.to_lowercase()) {
            failures.push(format!("reply says forbidden {term:?}"));
        }
    }
    Verdict {
        success: failures.is_empty(),
        failures,
    }
}

/// The text of the last assistant message of the turn, if it is a reply (no tool calls).
fn final_reply(turn: &[Message]) -> Option<String> {
    let last = turn.iter().rev().find(|m| m.role == Role::Assistant)?;
    last.tool_calls.is_empty().then(|| last.text_content())
}

fn check_calls(
    traj: &Trajectory,
    expected: &Expected,
    names: &Names,
    calls: &[(String, Value)],
    failures: &mut Vec<String>,
) {
    for want in &expected.tool_calls {
        // Only arguments the harness's version of the tool takes can be required.
        let surface = names.tool_surface(&want.tool);
        let params: Option<Vec<String>> = traj
            .tools
            .iter()
            .find(|t| t.function.name == surface)
            .and_then(|t| {
                t.function
                    .parameters
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|p| {
                        p.keys()
                            .filter_map(|k| names.param_canonical(&want.tool, k))
                            .map(str::to_string)
                            .collect()
                    })
            });
        let hit = calls.iter().any(|(tool, args)| {
            tool == &want.tool
                && want.args.iter().all(|(k, v)| {
                    params.as_ref().is_some_and(|p| !p.contains(k))
                        || args.get(k).is_some_and(|got| same_value(got, v))
                })
        });
        if !hit {
            failures.push(format!(
                "no call to {} with {}",
                want.tool,
                Value::Object(want.args.clone())
            ));
        }
    }
}

/// Skill selection is observable only when the harness loads skill bodies through a tool.
fn check_skill(
    traj: &Trajectory,
    expected: &Expected,
    names: &Names,
    calls: &[(String, Value)],
    failures: &mut Vec<String>,
) {
    let Some(skill) = &expected.skill else { return };
    let load = names.tool_surface("load_skill");
    if !traj.tools.iter().any(|t| t.function.name == load) {
        return;
    }
    let loaded: Vec<&str> = calls
        .iter()
        .filter(|(t, _)| t == "load_skill")
        .filter_map(|(_, a)| a.get("name").and_then(Value::as_str))
        .filter_map(|s| names.skill_canonical(s))
        .collect();
    if !loaded.contains(&skill.as_str()) {
        failures.push(format!("did not load skill {skill} (loaded {loaded:?})"));
    }
}

/// Equal as JSON, with strings compared case-insensitively and numbers by value ("2" = 2 = 2.0).
fn same_value(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::String(a), Value::String(b)) => a.trim().eq_ignore_ascii_case(b.trim()),
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::String(a), Value::Number(b)) | (Value::Number(b), Value::String(a)) => {
            a.trim().parse::<f64>().ok() == b.as_f64()
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y))
        }
        _ => got == want,
    }
}

/// Whether `reply` states `fact`: numbers must appear as whole numbers ("199" is not in "1199"), short
/// Latin words as whole words ("M" is not in "Medium"), anything else as a case-insensitive substring.
pub fn states(reply: &str, fact: &str) -> bool {
    let fact = fact.trim();
    if !fact.is_empty() && fact.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return numbers(reply).iter().any(|n| n == fact);
    }
    let (r, f) = (reply.to_lowercase(), fact.to_lowercase());
    if f.chars().all(|c| c.is_ascii_alphanumeric()) && f.len() <= 3 {
        return r
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| w == f);
    }
    r.contains(&f)
}

/// The numbers written in a text, as digit strings ("1,299" → "1299").
pub fn numbers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let joins = (c == '.' || c == ',')
            && !cur.is_empty()
            && chars.get(i + 1).is_some_and(|n| n.is_ascii_digit());
        if c.is_ascii_digit() {
            cur.push(c);
        } else if joins {
            if c == '.' {
                cur.push('.');
            }
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_match_whole_numbers_and_words() {
        assert!(states("到手价¥199，冲！", "199"));
        assert!(!states("到手价¥1199", "199"));
        assert!(states("price 1,299 yuan", "1299"));
        assert!(states("建议选M码", "M"));
        assert!(!states("Medium is fine", "M"));
        assert!(states("Ships with SF Express in 2 days", "sf express"));
        assert_eq!(numbers("3.5折, 20件, p001"), vec!["3.5", "20", "001"]);
    }

    #[test]
    fn values_compare_loosely() {
        assert!(same_value(&serde_json::json!("2"), &serde_json::json!(2)));
        assert!(same_value(&serde_json::json!(2.0), &serde_json::json!(2)));
        assert!(!same_value(
            &serde_json::json!("p001"),
            &serde_json::json!("p002")
        ));
    }
}
