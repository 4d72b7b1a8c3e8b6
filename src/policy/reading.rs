//! The reading oracle: the oracle teacher's decisions (`oracle.rs`) without its names map. It knows the
//! original harness — each tool's description and parameter schema, each skill's description — and is
//! given only what the model is given: the tool specs and the messages, the system prompt first. Each
//! turn it finds the surface name of every original tool, argument key and skill by matching those texts
//! against the episode's tool specs and the skills the prompt lists, then decides as the oracle does.
//!
//! Under the original harness it plays exactly like the oracle; under a variant, the drop in its success
//! says how much of what a reader needs to find the right tool and skill the variant destroyed
//! (`tests/hsa.rs::reading_oracle_success_per_op`, `docs/hsa-fidelity.md`). The numbers it keeps to
//! (reply length, rounds, tool calls) still come from the harness it plays, as the oracle's do: the
//! prompt states them, and what this oracle measures is finding names.

use std::collections::HashSet;

use anyhow::{Context, Result};
use serde_json::Value;

use super::oracle::{Limits, Oracle, Surface};
use super::{Conversation, Policy};
use crate::harness::{Harness, SkillsMode};
use crate::record::{Message, Names, Role, Tool};

/// Pairs scoring below this are not taken as the same tool, argument or skill: a skill the variant
/// masked must read as absent, not as whichever list item resembles it least badly.
const MIN_MATCH: f64 = 0.25;

pub struct ReadingOracle {
    /// The original's tools: canonical id, description and parameter texts, and argument keys
    /// (canonical key, the key's text) in schema order.
    tools: Vec<KnownTool>,
    /// Canonical id and description of each original skill.
    skills: Vec<(String, Grams)>,
    /// Canonical id of the skill-loading tool, when the original loads skills through a tool.
    load_tool: Option<String>,
    limits: Limits,
}

struct KnownTool {
    canonical: String,
    text: ToolText,
}

/// What a tool spec says, as character bigrams: its description, its parameters as a whole (keys,
/// types, descriptions) and each parameter without its key (a renamed key keeps its type and text).
struct ToolText {
    description: Grams,
    params: Grams,
    each: Vec<(String, Grams)>,
}

impl ToolText {
    fn of(tool: &Tool) -> ToolText {
        let props = tool
            .function
            .parameters
            .get("properties")
            .and_then(Value::as_object);
        let each: Vec<(String, String)> = props
            .into_iter()
            .flatten()
            .map(|(key, schema)| {
                let field = |f: &str| schema.get(f).map(Value::to_string).unwrap_or_default();
                (
                    key.clone(),
                    format!(
                        "{} {} {}",
                        field("type"),
                        field("description"),
                        field("enum")
                    ),
                )
            })
            .collect();
        let all: String = each.iter().map(|(k, t)| format!("{k} {t}\n")).collect();
        ToolText {
            description: Grams::of(tool.function.description.as_deref().unwrap_or_default()),
            params: Grams::of(&all),
            each: each.into_iter().map(|(k, t)| (k, Grams::of(&t))).collect(),
        }
    }

    fn similarity(&self, other: &ToolText) -> f64 {
        self.description.dice(&other.description) + self.params.dice(&other.params)
    }
}

impl ReadingOracle {
    /// A reading oracle that knows `original` — whose surface names are `original_names` (canonical →
    /// surface; empty for a harness that uses the canonical ids) — and plays `episode`, keeping to the
    /// limits of that harness.
    pub fn new(
        original: &Harness,
        original_names: &Names,
        episode: &Harness,
    ) -> Result<ReadingOracle> {
        let mut tools = Vec::new();
        for spec in original.openai_tools() {
            let mut tool: Tool = serde_json::from_value(spec)
                .context("the original harness's tools are not OpenAI function specs")?;
            let name = tool.function.name.clone();
            let canonical = original_names
                .tool_canonical(&name)
                .unwrap_or(&name)
                .to_string();
            // Argument keys in canonical form, so what is read back maps canonical → surface.
            if let Some(Value::Object(props)) = tool.function.parameters.get_mut("properties") {
                *props = std::mem::take(props)
                    .into_iter()
                    .map(|(k, v)| {
                        let key = original_names
                            .param_canonical(&canonical, &k)
                            .unwrap_or(&k)
                            .to_string();
                        (key, v)
                    })
                    .collect();
            }
            tools.push(KnownTool {
                canonical,
                text: ToolText::of(&tool),
            });
        }
        let skills = original
            .skills()
            .iter()
            .map(|s| {
                let canonical = original_names.skill_canonical(s.name()).unwrap_or(s.name());
                (canonical.to_string(), Grams::of(s.description()))
            })
            .collect();
        let load = &original.manifest().skills.load_tool;
        let load_tool = (original.skills_mode() == SkillsMode::Tool
            && original.tool(load).is_some())
        .then(|| {
            original_names
                .tool_canonical(load)
                .unwrap_or(load)
                .to_string()
        });
        Ok(ReadingOracle {
            tools,
            skills,
            load_tool,
            limits: Limits::of(episode),
        })
    }

    /// The episode harness's surface names, as far as the tool specs and the system prompt show them.
    pub fn read(&self, conv: &Conversation<'_>) -> Surface {
        let mut names = Names::default();
        let specs: Vec<ToolText> = conv.tools.iter().map(ToolText::of).collect();
        let tool_pairs = assign(&self.tools, &specs, |k, s| k.text.similarity(s));
        for (i, j) in tool_pairs {
            let known = &self.tools[i];
            let surface = &conv.tools[j].function.name;
            if *surface != known.canonical {
                names.tools.insert(known.canonical.clone(), surface.clone());
            }
            // A key the variant kept is the same argument; a renamed one keeps its type and description.
            let keys = assign(&known.text.each, &specs[j].each, |(a, ta), (b, tb)| {
                if a == b {
                    2.0
                } else {
                    ta.dice(tb)
                }
            });
            for (a, b) in keys {
                let (canonical_key, key) = (&known.text.each[a].0, &specs[j].each[b].0);
                if canonical_key != key {
                    let renames = names.params.entry(known.canonical.clone()).or_default();
                    renames.insert(canonical_key.clone(), key.clone());
                }
            }
        }
        let prompt = conv
            .messages
            .iter()
            .find(|m| matches!(m.role, Role::System | Role::Developer))
            .map(Message::text_content)
            .unwrap_or_default();
        let listed: Vec<(String, Grams)> = listed_skills(&prompt, conv.tools)
            .into_iter()
            .map(|(name, description)| (name, Grams::of(&description)))
            .collect();
        let mut skills = HashSet::new();
        for (i, j) in assign(&self.skills, &listed, |(_, a), (_, b)| a.dice(b)) {
            let (canonical, surface) = (&self.skills[i].0, &listed[j].0);
            skills.insert(surface.clone());
            if canonical != surface {
                names.skills.insert(canonical.clone(), surface.clone());
            }
        }
        let load_tool = self
            .load_tool
            .as_deref()
            .map(|c| names.tool_surface(c).to_string())
            .filter(|surface| conv.tools.iter().any(|t| t.function.name == *surface));
        Surface {
            names,
            load_tool,
            skills,
        }
    }
}

impl Policy for ReadingOracle {
    fn name(&self) -> &str {
        "reading-oracle"
    }

    fn respond(&self, conv: &Conversation<'_>) -> Result<Message> {
        Oracle::decide(conv, &self.read(conv), &self.limits)
    }
}

/// One-to-one pairs of `left` and `right`, best-scoring first: each item is paired at most once, and
/// never below [`MIN_MATCH`].
fn assign<L, R>(left: &[L], right: &[R], score: impl Fn(&L, &R) -> f64) -> Vec<(usize, usize)> {
    let mut scored: Vec<(f64, usize, usize)> = Vec::new();
    for (i, l) in left.iter().enumerate() {
        for (j, r) in right.iter().enumerate() {
            scored.push((score(l, r), i, j));
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let (mut used_left, mut used_right) = (HashSet::new(), HashSet::new());
    let mut out = Vec::new();
    for (s, i, j) in scored {
        if s >= MIN_MATCH && !used_left.contains(&i) && !used_right.contains(&j) {
            used_left.insert(i);
            used_right.insert(j);
            out.push((i, j));
        }
    }
    out
}

/// The skills a system prompt lists: lines that open with a name — a list item (`- name: …`,
/// `* name — …`) or a heading (`## name`) — with the text after the colon or dash, or the next line
/// when the name stands alone (`When: …` under a heading). Tool names are not skills.
fn listed_skills(prompt: &str, tools: &[Tool]) -> Vec<(String, String)> {
    let lines: Vec<&str> = prompt.lines().collect();
    let mut out = Vec::new();
    // A line read as the description of the name above it (`When: …`) is not a name itself.
    let mut described = None;
    for (i, line) in lines.iter().enumerate() {
        if described == Some(i) {
            continue;
        }
        let rest = line
            .trim_start()
            .trim_start_matches(['-', '*', '#'])
            .trim_start();
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .unwrap_or(rest.len());
        let (name, after) = rest.split_at(end);
        if !name.chars().any(|c| c.is_ascii_alphabetic())
            || tools.iter().any(|t| t.function.name == name)
        {
            continue;
        }
        let after = after.trim();
        // `name: description`, or a dash between them (`name — description`, `name - description`).
        let separated = [':', '—', '–', '-']
            .iter()
            .find_map(|sep| after.strip_prefix(*sep))
            .map(str::trim);
        let description = match separated {
            Some(d) if !d.is_empty() => d,
            // A sentence that starts with an ASCII word, not a name.
            None if !after.is_empty() => continue,
            _ => match lines[i + 1..].iter().position(|l| !l.trim().is_empty()) {
                Some(k) => {
                    described = Some(i + 1 + k);
                    lines[i + 1 + k].trim()
                }
                None => "",
            },
        };
        out.push((name.to_string(), description.to_string()));
    }
    out
}

/// A text's character bigrams (lowercased, whitespace left out), sorted, for the Dice coefficient:
/// robust to the partial paraphrases and identifier renames HSA makes, and to Chinese, which has no
/// word boundaries.
struct Grams(Vec<u64>);

impl Grams {
    fn of(text: &str) -> Grams {
        let chars: Vec<char> = text
            .chars()
            .filter(|c| !c.is_whitespace())
            .flat_map(char::to_lowercase)
            .collect();
        let mut grams: Vec<u64> = chars
            .windows(2)
            .map(|w| (u64::from(w[0]) << 32) | u64::from(w[1]))
            .collect();
        grams.sort_unstable();
        Grams(grams)
    }

    /// 2·|shared bigrams| / (|a| + |b|), counting repeated bigrams as often as both have them.
    fn dice(&self, other: &Grams) -> f64 {
        let (a, b) = (&self.0, &other.0);
        if a.is_empty() && b.is_empty() {
            return 1.0;
        }
        let (mut i, mut j, mut shared) = (0, 0, 0usize);
        while i < a.len() && j < b.len() {
            match a[i].cmp(&b[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    shared += 1;
                    i += 1;
                    j += 1;
                }
            }
        }
        2.0 * shared as f64 / (a.len() + b.len()) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dice_counts_shared_bigrams() {
        assert_eq!(Grams::of("abc").dice(&Grams::of("abc")), 1.0);
        assert_eq!(Grams::of("abcd").dice(&Grams::of("xyz")), 0.0);
        // ab, bc shared of (ab bc cd) and (ab bc): 2·2 / 5.
        assert!((Grams::of("abcd").dice(&Grams::of("ABC")) - 0.8).abs() < 1e-9);
    }

    #[test]
    fn skills_are_read_from_list_items_and_headings() {
        let prompt = "# Role\nYou are a host.\n- Keep replies short.\n- product-qa: 回答商品问题\n\n## refund-request\nWhen: the viewer wants money back\n- load_skill: not a skill\n* stock-check — Is it in stock\n";
        let tool: Tool = serde_json::from_value(serde_json::json!({
            "type": "function", "function": {"name": "load_skill", "parameters": {}}
        }))
        .unwrap();
        let listed = listed_skills(prompt, &[tool]);
        let names: Vec<(&str, &str)> = listed
            .iter()
            .map(|(n, d)| (n.as_str(), d.as_str()))
            .collect();
        assert_eq!(
            names,
            vec![
                ("Role", "You are a host."),
                ("product-qa", "回答商品问题"),
                ("refund-request", "When: the viewer wants money back"),
                ("stock-check", "Is it in stock"),
            ]
        );
    }
}
