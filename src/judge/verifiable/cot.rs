//! The chain-of-thought length regulariser: 0 up to 100 tokens of reasoning, falling linearly to −0.1
//! at 200 tokens and staying there beyond. Reasoning is the turn's `reasoning_content` (or inline
//! `<think>` blocks). Tokens come from a Hugging Face tokenizer when one is given; otherwise from an
//! approximation that needs no model: each CJK character is one token and each whitespace-separated run
//! of other characters is one token (close to BPE counts for Chinese, an undercount of about 1.3× for
//! English, which is why a tokenizer should be passed when the policy's is at hand).

use anyhow::{anyhow, Context, Result};

/// No penalty up to this many reasoning tokens.
pub const FREE_TOKENS: f64 = 100.0;
/// Full penalty from this many tokens on.
pub const FULL_PENALTY_TOKENS: f64 = 200.0;
/// The penalty at and beyond `FULL_PENALTY_TOKENS`.
pub const MAX_PENALTY: f64 = -0.1;

/// How reasoning tokens are counted.
pub enum TokenCounter {
    Approximate,
    Tokenizer(Box<tokenizers::Tokenizer>),
}

impl TokenCounter {
    /// Load a `tokenizer.json`.
    pub fn from_file(path: &str) -> Result<TokenCounter> {
        let tok = tokenizers::Tokenizer::from_file(path)
            .map_err(|e| anyhow!("{e}"))
            .with_context(|| format!("cannot load tokenizer '{path}'"))?;
        Ok(TokenCounter::Tokenizer(Box::new(tok)))
    }

    pub fn count(&self, text: &str) -> usize {
        match self {
            TokenCounter::Approximate => approximate_tokens(text),
            // An encoding error on text we already hold as UTF-8 cannot come from the input; fall back
            // to the approximation rather than fail the record.
            TokenCounter::Tokenizer(t) => t
                .encode(text, false)
                .map_or_else(|_| approximate_tokens(text), |e| e.len()),
        }
    }
}

/// CJK characters count one each; other non-space runs count one each.
pub fn approximate_tokens(text: &str) -> usize {
    let mut n = 0;
    let mut in_word = false;
    for c in text.chars() {
        if is_cjk(c) {
            n += 1;
            in_word = false;
        } else if c.is_whitespace() {
            in_word = false;
        } else if !in_word {
            n += 1;
            in_word = true;
        }
    }
    n
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3000..=0x303F | 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF
        | 0xF900..=0xFAFF | 0xFF00..=0xFFEF | 0x20000..=0x2FA1F)
}

/// The penalty for `tokens` reasoning tokens, in [−0.1, 0].
pub fn penalty(tokens: usize) -> f64 {
    let t = tokens as f64;
    if t <= FREE_TOKENS {
        0.0
    } else if t >= FULL_PENALTY_TOKENS {
        MAX_PENALTY
    } else {
        MAX_PENALTY * (t - FREE_TOKENS) / (FULL_PENALTY_TOKENS - FREE_TOKENS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn penalty_ramps_between_thresholds() {
        assert_eq!(penalty(0), 0.0);
        assert_eq!(penalty(100), 0.0);
        assert!((penalty(150) + 0.05).abs() < 1e-12);
        assert_eq!(penalty(200), -0.1);
        assert_eq!(penalty(5000), -0.1);
    }

    #[test]
    fn approximation_counts_cjk_chars_and_words() {
        assert_eq!(approximate_tokens("用户问价格 check the price"), 8);
        assert_eq!(approximate_tokens("  "), 0);
        assert_eq!(approximate_tokens("¥199，现货"), 4);
    }
}
