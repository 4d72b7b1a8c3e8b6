//! Where paraphrases come from: the offline bilingual rewrite banks (the default), or any
//! OpenAI-compatible endpoint (`--paraphraser URL`), cached by content hash.
//!
//! The endpoint rewrites a whole text (a description, a rule line, a feedback message) in one of a
//! few styles; train and eval pools use different styles, so held-out variants read differently from
//! anything seen in training. A rewrite is used only if it keeps every protected span (`code`,
//! `{{ template }}`, `{% tag %}`) and every number of the original, so tool names, template
//! variables and limits survive; otherwise, or when the endpoint fails, the bank paraphrase is used
//! and the fallback is counted. The cache (memory, plus a JSONL file when given) keeps every verdict,
//! rejections included, so a rerun with the same seed reproduces its output without the endpoint.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::config::Pool;
use super::text::{paraphrase, protected_spans};
use crate::policy::openai::{OpenAi, OpenAiConfig};
use crate::policy::{Conversation, Policy};
use crate::record::{Message, Role};
use crate::rng::Rng;
use crate::sim::success::numbers;

/// Rewrite styles asked of the endpoint, split like the banks into train and eval halves.
const TRAIN_STYLES: [&str; 3] = [
    "more formal and precise",
    "shorter and plainer",
    "in a friendlier, conversational tone",
];
const EVAL_STYLES: [&str; 2] = [
    "as terse imperative instructions",
    "reordered clause by clause, with different wording",
];

const INSTRUCTIONS: &str = "You paraphrase text from an AI agent's configuration (tool and skill \
descriptions, rules, feedback messages). Rewrite the user's text {style}. Keep the meaning, the \
language mix (Chinese and/or English) and every number exactly. Copy verbatim, unchanged, anything \
in backticks and anything inside {{ }} or {% %}. Reply with the rewritten text only.";

/// The source of paraphrases. Cheap to clone.
#[derive(Clone, Default)]
pub enum Paraphraser {
    /// The offline rewrite banks (`banks.rs`).
    #[default]
    Bank,
    Endpoint(Arc<Endpoint>),
}

impl std::fmt::Debug for Paraphraser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Paraphraser::Bank => write!(f, "Bank"),
            Paraphraser::Endpoint(e) => write!(f, "Endpoint({})", e.model),
        }
    }
}

impl Paraphraser {
    /// Rewrites `text`. Bank: each known phrase with probability `rate`. Endpoint: the whole text
    /// with probability `rate`, falling back to the bank when the rewrite is unusable.
    pub fn paraphrase(&self, text: &str, pool: Pool, rate: f64, rng: &mut Rng) -> String {
        match self {
            Paraphraser::Bank => paraphrase(text, pool, rate, rng),
            Paraphraser::Endpoint(e) => {
                let styles: &[&str] = match pool {
                    Pool::Train => &TRAIN_STYLES,
                    Pool::Eval => &EVAL_STYLES,
                };
                let style = styles[rng.below(styles.len())];
                let (head, core, tail) = frame(text);
                if core.is_empty() || !rng.chance(rate) {
                    return text.to_string();
                }
                match e.rewrite(core, style) {
                    Some(new) => format!("{head}{new}{tail}"),
                    None => {
                        e.fallbacks.fetch_add(1, Ordering::Relaxed);
                        paraphrase(text, pool, rate, rng)
                    }
                }
            }
        }
    }
}

/// Splits `text` into (leading space and list marker, content, trailing space): only the content
/// goes to the endpoint, so a rule line keeps its `- ` or `2. ` and its newline.
fn frame(text: &str) -> (&str, &str, &str) {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(r"^(\s*(?:[-*+]\s+|\d+[.)]\s+)?)").expect("static regex")
    });
    let head_len = re.find(text).map_or(0, |m| m.end());
    let rest = &text[head_len..];
    let core = rest.trim_end();
    (&text[..head_len], core, &rest[core.len()..])
}

/// An OpenAI-compatible endpoint with a content-addressed cache of its verdicts.
pub struct Endpoint {
    client: OpenAi,
    model: String,
    /// Key → the accepted rewrite, or `None` for a rejected one (replayed as a bank fallback).
    cache: Mutex<HashMap<String, Option<String>>>,
    cache_file: Option<Mutex<File>>,
    /// Texts whose rewrite failed or broke a protected span (the bank was used instead).
    pub fallbacks: AtomicU64,
    /// Rewrites served from the cache / fetched from the endpoint.
    pub hits: AtomicU64,
    pub calls: AtomicU64,
}

impl Endpoint {
    /// `cache`: a JSONL file of `{"key", "text"}` lines, read if present and appended to.
    pub fn new(cfg: OpenAiConfig, cache: Option<PathBuf>) -> Result<Endpoint> {
        let mut entries = HashMap::new();
        let cache_file = match cache {
            Some(path) => {
                if path.exists() {
                    read_cache(&path, &mut entries)?;
                }
                let file = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .with_context(|| {
                        format!("{}: cannot open the paraphrase cache", path.display())
                    })?;
                Some(Mutex::new(file))
            }
            None => None,
        };
        Ok(Endpoint {
            model: cfg.model.clone(),
            client: OpenAi::new(cfg)?,
            cache: Mutex::new(entries),
            cache_file,
            fallbacks: AtomicU64::new(0),
            hits: AtomicU64::new(0),
            calls: AtomicU64::new(0),
        })
    }

    /// The cached or fetched rewrite of `text`, if it keeps the protected spans and numbers.
    /// Transport failures are not cached (a rerun asks again); rejected rewrites are.
    fn rewrite(&self, text: &str, style: &str) -> Option<String> {
        let key = cache_key(&self.model, style, text);
        if let Some(hit) = self.cache.lock().ok()?.get(&key).cloned() {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return hit;
        }
        self.calls.fetch_add(1, Ordering::Relaxed);
        let messages = [
            Message::text(Role::System, INSTRUCTIONS.replace("{style}", style)),
            Message::text(Role::User, text.to_string()),
        ];
        let conv = Conversation {
            messages: &messages,
            tools: &[],
            turn_start: messages.len(),
            task: None,
            session: None,
        };
        let reply = self.client.respond(&conv).ok()?;
        let new = reply.text_content().trim().to_string();
        let verdict = keeps_invariants(text, &new).then_some(new);
        self.cache.lock().ok()?.insert(key.clone(), verdict.clone());
        if let Some(file) = &self.cache_file {
            let line = json!({"key": key, "text": verdict}).to_string();
            let mut f = file.lock().ok()?;
            // A lost cache line only costs a repeated request; the variant is still correct.
            let _ = writeln!(f, "{line}");
        }
        verdict
    }
}

/// `sha256(model, style, text)`: the same text asked in the same style hits the cache.
fn cache_key(model: &str, style: &str, text: &str) -> String {
    let mut h = Sha256::new();
    for part in [model, style, text] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    format!("{:x}", h.finalize())
}

fn read_cache(path: &Path, into: &mut HashMap<String, Option<String>>) -> Result<()> {
    let file = File::open(path).with_context(|| format!("{}: cannot read", path.display()))?;
    for (n, line) in BufReader::new(file).lines().enumerate() {
        let line =
            line.with_context(|| format!("{}:{}: unreadable line", path.display(), n + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let entry: serde_json::Value = serde_json::from_str(&line)
            .with_context(|| format!("{}:{}: not JSON", path.display(), n + 1))?;
        let (Some(key), Some(text)) = (entry["key"].as_str(), entry.get("text")) else {
            anyhow::bail!(
                "{}:{}: field 'key' or 'text' missing",
                path.display(),
                n + 1
            );
        };
        into.insert(key.to_string(), text.as_str().map(str::to_string));
    }
    Ok(())
}

/// A rewrite is usable when it is non-empty and keeps the protected spans (in order) and the
/// multiset of numbers of the original.
fn keeps_invariants(original: &str, new: &str) -> bool {
    let sorted = |s: &str| {
        let mut v = numbers(s);
        v.sort();
        v
    };
    !new.is_empty()
        && protected_spans(original) == protected_spans(new)
        && sorted(original) == sorted(new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_must_keep_spans_and_numbers() {
        let orig =
            "调用 `get_product_detail` 查询，回复不超过 {{ limits.max_reply_chars }} 字，最多 3 次";
        assert!(keeps_invariants(
            orig,
            "最多 3 次：先用 `get_product_detail` 查，回复限 {{ limits.max_reply_chars }} 字"
        ));
        assert!(!keeps_invariants(
            orig,
            "用 `get_detail` 查询，回复不超过 {{ limits.max_reply_chars }} 字，最多 3 次"
        ));
        assert!(!keeps_invariants(
            orig,
            "调用 `get_product_detail`，不超过 {{ limit }} 字，最多 3 次"
        ));
        assert!(!keeps_invariants(
            orig,
            "调用 `get_product_detail`，不超过 {{ limits.max_reply_chars }} 字，最多 5 次"
        ));
        assert!(!keeps_invariants(orig, ""));
    }

    #[test]
    fn frames_keep_list_markers_and_newlines() {
        assert_eq!(frame("  - 先查库存\n"), ("  - ", "先查库存", "\n"));
        assert_eq!(frame("2. Ask first. \n"), ("2. ", "Ask first.", " \n"));
        assert_eq!(frame("plain"), ("", "plain", ""));
        assert_eq!(frame(" \n"), (" \n", "", ""));
    }

    #[test]
    fn cache_keys_separate_models_styles_and_texts() {
        let k = cache_key("m", "s", "t");
        assert_eq!(k, cache_key("m", "s", "t"));
        assert_ne!(k, cache_key("m2", "s", "t"));
        assert_ne!(k, cache_key("m", "s2", "t"));
        assert_ne!(k, cache_key("m", "s", "t2"));
        assert_ne!(cache_key("ab", "c", "t"), cache_key("a", "bc", "t"));
    }
}
