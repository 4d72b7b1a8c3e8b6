//! Fresh tool names per record: in a share of records, each tool the system prompt names in backticks —
//! the skill loader, which the skills section introduces as `需要细则时调用 `load_skill` 工具` — is
//! renamed everywhere in the record (prompt, tool list, calls, tool results, reasoning, the harness's
//! name map) to a name drawn for that record from HSA's train pool (`src/hsa/naming.rs`, half the verbs
//! coined).
//!
//! HSA's variants rename the loader too, but a data set holds a few dozen variants, so a few dozen
//! loader names, and a small model learns them as vocabulary: it then ranks a held-out loader name 7th
//! or lower of the 12 tools its prompt lists, and upsampling the renamed records tenfold only teaches
//! the same names better (docs/learning-default.md, thirty-seventh session). A name drawn fresh for every
//! record lowers no loss by memory, only by copying it from the prompt, where `--quote-evidence
//! --quote-names` quotes the clause that names it before the call (`src/evidence.rs`) — the move
//! `--rename-ids` makes for product ids (`src/fresh_ids.rs`), made for the names of tools. Measured
//! once (docs/learning-default.md, forty-fourth session): the model learnt to write names shaped like
//! the prompt's from this generator's parts, not to copy the name; opt-in, not in `make reproduce`.

use anyhow::{Context, Result};

use crate::fresh_ids::visit_strings;
use crate::hsa::config::Pool;
use crate::hsa::naming::tool_name;
use crate::record::Trajectory;
use crate::rng::Rng;

/// The chance that a drawn name's verb is coined (`tavomi`) rather than taken from the train bank.
const COINED_VERBS: f64 = 0.5;

/// How many names are drawn for one tool before the record is refused.
const DRAWS: usize = 100;

/// The tools the prompt names in backticks, in order of first mention.
pub fn prompt_named_tools(record: &Trajectory) -> Vec<String> {
    let Some(prompt) = record.system_prompt() else {
        return Vec::new();
    };
    let mut named: Vec<String> = Vec::new();
    for (k, piece) in prompt.split('`').enumerate() {
        let is_tool = record.tools.iter().any(|t| t.function.name == piece);
        if k % 2 == 1 && is_tool && !named.iter().any(|n| n == piece) {
            named.push(piece.to_string());
        }
    }
    named
}

/// `record` with its prompt-named tools renamed, with probability `share`; the draw depends on `seed`
/// and the record's id only, so the same record gets the same names in any file and order.
pub fn rename_prompt_tools(record: Trajectory, seed: u64, share: f64) -> Result<Trajectory> {
    let mut rng = Rng::derive(seed, &format!("fresh-names:{}", record.id));
    let named = prompt_named_tools(&record);
    if named.is_empty() || !rng.chance(share) {
        return Ok(record);
    }
    let taken: Vec<String> = record
        .tools
        .iter()
        .map(|t| t.function.name.clone())
        .collect();
    // The canonical name picks the noun phrases (`skill body`, `playbook` for the loader).
    let canonical = |old: &str| -> String {
        let names = record.harness.as_ref().map(|h| &h.names.tools);
        names
            .and_then(|m| m.iter().find(|(_, v)| *v == old).map(|(k, _)| k.clone()))
            .unwrap_or_else(|| old.to_string())
    };
    let renames: Vec<(String, String)> = named
        .into_iter()
        .map(|old| (canonical(&old), old))
        .collect();
    let id = record.id.clone();
    let mut value = serde_json::to_value(record)?;
    for (canonical, old) in renames {
        // A name no other tool has and that does not hold the old one (so no trace of the old name
        // is left); an old name that every draw holds (`a`) makes the record an error.
        let new = (0..DRAWS)
            .map(|_| tool_name(&canonical, Pool::Train, COINED_VERBS, &mut rng))
            .find(|name| !taken.contains(name) && !name.contains(&old))
            .with_context(|| {
                format!("record {id}: no name in {DRAWS} draws for tool {old:?} that differs from it and the record's other tools")
            })?;
        visit_strings(&mut value, &mut |s| {
            if s.contains(&old) {
                *s = s.replace(&old, &new);
            }
        });
    }
    serde_json::from_value(value).with_context(|| format!("record {id} after renaming its tools"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(id: &str) -> Trajectory {
        serde_json::from_value(json!({
            "id": id,
            "harness": {"name": "taolive", "version": "1", "hash": "sha256:0", "names": {"tools": {"load_skill": "fetch_skill_body"}}},
            "tools": [
                {"type": "function", "function": {"name": "fetch_skill_body", "parameters": {}}},
                {"type": "function", "function": {"name": "get_product_detail", "parameters": {}}}],
            "messages": [
                {"role": "system", "content": "# Skills\n需要细则时调用 `fetch_skill_body` 工具。Call `fetch_skill_body` first. Prices: `price`."},
                {"role": "user", "content": "多少钱"},
                {"role": "assistant", "reasoning_content": "fetch_skill_body product-qa", "tool_calls": [
                    {"id": "c0", "type": "function", "function": {"name": "fetch_skill_body", "arguments": "{\"name\":\"product-qa\"}"}}]},
                {"role": "tool", "tool_call_id": "c0", "name": "fetch_skill_body", "content": "# Product Q&A"},
            ],
        }))
        .unwrap()
    }

    #[test]
    fn only_tools_the_prompt_names_in_backticks_count() {
        assert_eq!(prompt_named_tools(&record("r")), ["fetch_skill_body"]);
    }

    #[test]
    fn the_loader_is_renamed_everywhere_in_the_record() {
        let after = rename_prompt_tools(record("r"), 3, 1.0).unwrap();
        let new = after.tools[0].function.name.clone();
        assert_ne!(new, "fetch_skill_body");
        let text = serde_json::to_string(&after).unwrap();
        assert!(!text.contains("fetch_skill_body"), "{text}");
        assert_eq!(after.messages[2].tool_calls[0].function.name, new);
        assert!(after.messages[0]
            .text_content()
            .contains(&format!("`{new}`")));
        assert_eq!(
            after.messages[2].reasoning_content.as_deref(),
            Some(format!("{new} product-qa").as_str())
        );
        assert_eq!(after.harness.unwrap().names.tools["load_skill"], new);
        assert_eq!(after.tools[1].function.name, "get_product_detail");
    }

    #[test]
    fn the_share_and_the_seed_decide_and_repeat() {
        let r = record("r");
        assert_eq!(rename_prompt_tools(r.clone(), 3, 0.0).unwrap(), r);
        assert_eq!(
            rename_prompt_tools(r.clone(), 3, 1.0).unwrap(),
            rename_prompt_tools(r.clone(), 3, 1.0).unwrap()
        );
        let names: std::collections::HashSet<String> = (0..40)
            .map(|i| {
                rename_prompt_tools(record(&format!("r{i}")), 3, 1.0)
                    .unwrap()
                    .tools[0]
                    .function
                    .name
                    .clone()
            })
            .collect();
        assert!(names.len() >= 30, "a name per record: {names:?}");
        let renamed = (0..200)
            .filter(|i| {
                rename_prompt_tools(record(&format!("r{i}")), 3, 0.5).unwrap()
                    != record(&format!("r{i}"))
            })
            .count();
        assert!(
            (70..=130).contains(&renamed),
            "{renamed} of 200 at share 0.5"
        );
    }
}
