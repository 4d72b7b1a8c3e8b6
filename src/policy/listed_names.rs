//! Tool-call names restricted to the tools listed in the prompt (`--tool-names listed`).
//!
//! Once a generated call reaches its tool's name, only tokens that keep the name a prefix of a listed
//! tool's name (followed by the format's end of name) may be sampled; everything else the model writes
//! is left alone. OpenAI's strict function calling and vLLM's structured tool choice give the same
//! guarantee. For evaluation it asks a sharper question than free decoding: a model that recalls a
//! training name (`load_skill` where the harness lists `obtain_skill_body`) must pick among the names
//! its prompt lists, so what it picks shows whether it ranks the right listed name first.

use clap::ValueEnum;
use tokenizers::Tokenizer;

use crate::chat::ToolCallFormat;

/// Which names a local model may write in a tool call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum ToolNames {
    /// Whatever the model writes (a name the harness lacks gets the runtime's `unknown_tool`).
    #[default]
    Free,
    /// Only names of the tools listed in the prompt.
    Listed,
}

/// Each token's text, to test what a token would add to a name.
pub struct ListedNames {
    pieces: Vec<String>,
}

impl ListedNames {
    pub fn new(tokenizer: &Tokenizer) -> Self {
        let pieces = (0..tokenizer.get_vocab_size(true) as u32)
            .map(|id| tokenizer.decode(&[id], false).unwrap_or_default())
            .collect();
        Self { pieces }
    }

    /// Sets to −∞ the logits of tokens that would write a tool name other than one of `names`,
    /// given the `text` generated so far. Tokens that do not reach into a name are untouched; so
    /// are all tokens if none would fit (nothing is forced into a dead end).
    pub fn mask(&self, format: ToolCallFormat, names: &[String], text: &str, logits: &mut [f32]) {
        let open = format.name_open();
        let end = format.name_end();
        let names: Vec<String> = names.iter().map(|n| format!("{n}{end}")).collect();
        // What a token extends: the name typed so far, or the end of the text that may be the
        // start of a call's opening markup (`{"name` before `": "`).
        let (before, in_name) = match text.rfind(open) {
            Some(at) if !text[at + open.len()..].contains(end) => (&text[at..], true),
            _ => (markup_tail(text, open), false),
        };
        if before.is_empty() && !in_name {
            return;
        }
        let fits = |piece: &str| {
            let joined = format!("{before}{piece}");
            match joined.strip_prefix(open) {
                Some(name) => {
                    !piece.is_empty()
                        && names
                            .iter()
                            .any(|n| n.starts_with(name) || name.starts_with(n.as_str()))
                }
                None => !in_name, // still in the markup, or not a call at all
            }
        };
        let allowed: Vec<bool> = self.pieces.iter().map(|p| fits(p)).collect();
        if !allowed.iter().any(|&a| a) {
            return;
        }
        for (logit, ok) in logits.iter_mut().zip(allowed) {
            if !ok {
                *logit = f32::NEG_INFINITY;
            }
        }
    }
}

/// The longest end of `text` that is a proper start of `open` (empty when none is).
fn markup_tail<'a>(text: &'a str, open: &str) -> &'a str {
    (1..open.len())
        .rev()
        .filter(|&k| k <= text.len() && text.is_char_boundary(text.len() - k))
        .map(|k| &text[text.len() - k..])
        .find(|tail| open.starts_with(tail))
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table of pieces without a tokenizer: the tests name the vocabulary.
    fn table(pieces: &[&str]) -> ListedNames {
        ListedNames {
            pieces: pieces.iter().map(|p| p.to_string()).collect(),
        }
    }

    fn allowed(t: &ListedNames, names: &[&str], text: &str) -> Vec<String> {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut logits = vec![0.0; t.pieces.len()];
        t.mask(ToolCallFormat::Hermes, &names, text, &mut logits);
        t.pieces
            .iter()
            .zip(logits)
            .filter(|(_, l)| l.is_finite())
            .map(|(p, _)| p.clone())
            .collect()
    }

    const VOCAB: &[&str] = &[
        "load",
        "_skill",
        "obtain",
        "_body",
        "\"",
        "\",",
        "get",
        "hello",
        "\": \"",
        "\": \"load",
        "<|im_end|>",
        "",
    ];

    #[test]
    fn inside_a_name_only_listed_names_continue() {
        let t = table(VOCAB);
        let open = "<think>\n\n</think>\n\n<tool_call>\n{\"name\": \"";
        let listed = ["obtain_skill_body", "get"];
        assert_eq!(allowed(&t, &listed, open), ["obtain", "get"]);
        assert_eq!(allowed(&t, &listed, &format!("{open}obtain")), ["_skill"]);
        // The name complete: its end, alone or with whatever follows it in the same token.
        let ends = ["\"", "\",", "\": \"", "\": \"load"];
        assert_eq!(
            allowed(&t, &listed, &format!("{open}obtain_skill_body")),
            ends
        );
        assert_eq!(allowed(&t, &listed, &format!("{open}get")), ends);
    }

    #[test]
    fn a_token_that_crosses_into_the_name_is_checked_too() {
        let t = table(VOCAB);
        let text = "<tool_call>\n{\"name";
        let got = allowed(&t, &["obtain_skill_body"], text);
        assert!(got.contains(&"\": \"".to_string()));
        assert!(!got.contains(&"\": \"load".to_string()), "{got:?}");
        assert!(allowed(&t, &["load_skill"], text).contains(&"\": \"load".to_string()));
    }

    #[test]
    fn text_outside_calls_and_finished_names_are_free() {
        let t = table(VOCAB);
        let all: Vec<String> = VOCAB.iter().map(|p| p.to_string()).collect();
        assert_eq!(allowed(&t, &["get"], "您好，请问"), all);
        let done = "<tool_call>\n{\"name\": \"get\", \"arguments\": {\"id\": \"";
        assert_eq!(allowed(&t, &["get"], done), all);
    }

    #[test]
    fn no_listed_name_fits_leaves_the_logits_alone() {
        let t = table(VOCAB);
        let open = "<tool_call>\n{\"name\": \"";
        assert_eq!(allowed(&t, &["zzz"], open).len(), VOCAB.len());
    }
}
