//! Product ids renamed at random per record: every catalog id (`p` and three or more digits) in a
//! record's task and messages — room state, viewer turns, tool calls, tool results, replies — is replaced,
//! consistently within the record, by an id drawn for that record. A model trained on such rows cannot
//! lower its loss by memorising which ids the catalog has, only by copying the id from its prompt: the
//! same move HSA makes for tool and skill names, applied to the data (docs/learning-default.md).

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::record::Trajectory;
use crate::rng::Rng;

/// How many fresh ids there are: `p000` … `p999`.
pub const ID_SPACE: usize = 1000;

/// The fresh id numbered `n` (below [`ID_SPACE`]).
pub fn fresh_id(n: usize) -> String {
    format!("p{n:03}")
}

/// `record` with its product ids renamed; the draw depends on `seed` and the record's id only, so the
/// same record gets the same ids in any file and order.
pub fn rename_product_ids(record: Trajectory, seed: u64) -> Result<Trajectory> {
    let id = record.id.clone();
    let mut value = serde_json::to_value(record)?;
    let mut found = Vec::new();
    for key in ["task", "messages"] {
        visit_strings(&mut value[key], &mut |s| {
            for old in product_ids(s) {
                if !found.contains(&old) {
                    found.push(old);
                }
            }
        });
    }
    if found.len() > ID_SPACE {
        bail!("record {id}: {} distinct product ids, more than the {ID_SPACE} a renamed record can draw from", found.len());
    }
    let fresh = Rng::derive(seed, &id).distinct(ID_SPACE, found.len());
    let rename = |old: &str| -> String {
        let k = found
            .iter()
            .position(|f| f == old)
            .expect("collected above");
        fresh_id(fresh[k])
    };
    for key in ["task", "messages"] {
        visit_strings(&mut value[key], &mut |s| *s = replace_ids(s, &rename));
    }
    serde_json::from_value(value).with_context(|| format!("record {id} after renaming its ids"))
}

/// Calls `f` on every string inside `value`, object keys excepted.
pub(crate) fn visit_strings(value: &mut Value, f: &mut dyn FnMut(&mut String)) {
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter_mut().for_each(|v| visit_strings(v, f)),
        Value::Object(map) => map.values_mut().for_each(|v| visit_strings(v, f)),
        _ => {}
    }
}

/// The byte ranges of product ids in `s`: `p`, then three or more ASCII digits, with no letter or digit
/// on either side (so `sp001`, `p12` and `p0012x` are not ids).
fn id_spans(s: &str) -> Vec<(usize, usize)> {
    let b = s.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts_word = i == 0 || !b[i - 1].is_ascii_alphanumeric();
        if b[i] == b'p' && starts_word {
            let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
            let end = i + 1 + digits;
            if digits >= 3 && b.get(end).is_none_or(|c| !c.is_ascii_alphanumeric()) {
                spans.push((i, end));
                i = end;
                continue;
            }
        }
        i += 1;
    }
    spans
}

fn product_ids(s: &str) -> Vec<String> {
    id_spans(s)
        .into_iter()
        .map(|(a, b)| s[a..b].to_string())
        .collect()
}

fn replace_ids(s: &str, rename: &dyn Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for (a, b) in id_spans(s) {
        out.push_str(&s[last..a]);
        out.push_str(&rename(&s[a..b]));
        last = b;
    }
    out.push_str(&s[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> Trajectory {
        serde_json::from_value(serde_json::json!({
            "id": "room-3#first-turn",
            "task": {"intent": "product_qa", "room": {"current": "p007", "queue": ["p007", "p123"]},
                "expected": {"tool_calls": [{"tool": "get_product_detail", "args": {"product_id": "p123"}}]}},
            "messages": [
                {"role": "system", "content": "# Room state\n- 1号链接 （product_id=p007）\n- 2号链接 （product_id=p123）"},
                {"role": "user", "content": "2号链接 sp001 p12 p0012x 多少钱"},
                {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                    "function": {"name": "get_product_detail", "arguments": "{\"product_id\":\"p123\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "{\"product_id\": \"p123\", \"price\": 99}"},
            ],
        }))
        .unwrap()
    }

    #[test]
    fn ids_are_renamed_consistently_and_nothing_else_changes() {
        let before = record();
        let after = rename_product_ids(before.clone(), 5).unwrap();
        let text = |r: &Trajectory| serde_json::to_string(r).unwrap();
        let (old, new) = (text(&before), text(&after));
        // The first id in the text is p007's new name, the first other one p123's.
        let seen = product_ids(&new);
        let a = seen[0].clone();
        let b = seen.iter().find(|id| **id != a).unwrap().clone();
        // Renaming back gives the original text: the map is one-to-one and touched only ids.
        let back = new.replace(&a, "<A>").replace(&b, "<B>");
        assert_eq!(back, old.replace("p007", "<A>").replace("p123", "<B>"));
        // The call, its result and the ground truth name the same renamed id.
        assert_eq!(
            after.messages[2].tool_calls[0].function.arguments,
            format!("{{\"product_id\":\"{b}\"}}")
        );
        assert!(after.messages[3].text_content().contains(&b));
        assert_eq!(
            after.task.unwrap().expected.unwrap().tool_calls[0].args["product_id"],
            b
        );
        // Not ids: a word ending in p-digits, two digits, a run that continues into a letter.
        assert!(new.contains("sp001 p12 p0012x"));
    }

    #[test]
    fn the_draw_depends_on_the_seed_and_the_record_only() {
        let once = rename_product_ids(record(), 5).unwrap();
        assert_eq!(once, rename_product_ids(record(), 5).unwrap());
        let others: Vec<Trajectory> = (6..12)
            .map(|s| rename_product_ids(record(), s).unwrap())
            .collect();
        assert!(
            others.iter().any(|o| o.messages != once.messages),
            "other seeds, other ids"
        );
    }
}
