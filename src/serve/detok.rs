//! Incremental detokenization with stop strings: turns a growing list of generated token ids into text
//! deltas that are safe to send. Text is held back while it could still be the start of a stop string
//! or ends in an incomplete UTF-8 character (byte-level BPE splits characters across tokens), so a stop
//! string never leaks to the client and no delta ever contains a replacement character that a later
//! token would have completed.

use tokenizers::Tokenizer;

pub struct Detokenizer {
    ids: Vec<u32>,
    /// Bytes of the decoded text already handed out.
    sent: usize,
    stop: Vec<String>,
}

/// What one new token produced.
#[derive(Debug, Default, PartialEq)]
pub struct Delta {
    pub text: String,
    /// A stop string was completed; `text` ends just before it and generation must end.
    pub stopped: bool,
}

impl Detokenizer {
    pub fn new(stop: Vec<String>) -> Detokenizer {
        Detokenizer {
            ids: Vec::new(),
            sent: 0,
            stop,
        }
    }

    /// Adds one token; returns the text that may be sent now.
    pub fn push(&mut self, tok: &Tokenizer, id: u32) -> Delta {
        self.ids.push(id);
        let text = self.text(tok);
        if let Some(cut) = self
            .stop
            .iter()
            .filter_map(|s| {
                text[self.sent.min(text.len())..]
                    .find(s.as_str())
                    .map(|i| i + self.sent)
            })
            .min()
        {
            let delta = text.get(self.sent..cut).unwrap_or_default().to_string();
            self.sent = cut;
            return Delta {
                text: delta,
                stopped: true,
            };
        }
        let mut safe = text.len();
        if text.ends_with('\u{FFFD}') {
            safe -= '\u{FFFD}'.len_utf8();
        }
        // Hold back the longest tail that is a proper prefix of a stop string.
        let end = safe;
        for s in &self.stop {
            let prefixes: Vec<&str> = s.char_indices().skip(1).map(|(i, _)| &s[..i]).collect();
            if let Some(p) = prefixes.iter().rev().find(|p| text[..end].ends_with(**p)) {
                safe = safe.min(end - p.len());
            }
        }
        let safe = safe.max(self.sent);
        let delta = text.get(self.sent..safe).unwrap_or_default().to_string();
        self.sent = safe;
        Delta {
            text: delta,
            stopped: false,
        }
    }

    /// Whatever was held back, at the end of generation (no stop string completed it).
    pub fn flush(&mut self, tok: &Tokenizer) -> String {
        let text = self.text(tok);
        let rest = text.get(self.sent..).unwrap_or_default().to_string();
        self.sent = text.len();
        rest
    }

    fn text(&self, tok: &Tokenizer) -> String {
        // Special tokens (end of turn) are not text; markup like <tool_call> is an ordinary added token
        // and stays.
        tok.decode(&self.ids, true).unwrap_or_default()
    }
}
