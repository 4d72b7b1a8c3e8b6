//! Tokenizers: load a Hugging Face `tokenizer.json`, and train the small byte-level BPE of the embedded
//! default model.
//!
//! The trained tokenizer has the shape of Qwen2/Qwen3's, so the same code paths serve the tiny model and a
//! real checkpoint: NFC normalisation, the Qwen2 pre-tokenisation regex (digits split one by one, which keeps
//! prices and stock counts tokenised uniformly), byte-level BPE over all 256 bytes (no unknown token, any
//! UTF-8 round-trips), `<|endoftext|>`, `<|im_start|>`, `<|im_end|>` as special tokens, and the markup
//! tokens of the chat template (`<tool_call>`, `<think>`, …) as ordinary added tokens — they must survive
//! decoding with `skip_special_tokens`.

use std::collections::HashSet;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};
use tokenizers::models::bpe::{BpeTrainerBuilder, BPE};
use tokenizers::normalizers::unicode::NFC;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{
    AddedToken, DecoderWrapper, NormalizerWrapper, PostProcessorWrapper, PreTokenizerWrapper,
    SplitDelimiterBehavior, Tokenizer, TokenizerImpl,
};

/// The chat template shipped with trained tokenizers (Qwen3's, so tool calls use `<tool_call>{json}`).
pub const QWEN3_CHAT_TEMPLATE: &str = include_str!("../templates/chat/qwen3.jinja");

/// Qwen2's pre-tokenisation pattern (tokenizer.json of Qwen2/Qwen3 models).
const QWEN2_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Special tokens, in id order right after the BPE vocabulary.
pub const SPECIAL_TOKENS: [&str; 3] = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];

/// Chat-template markup that the model must generate and see as single tokens, yet is not "special".
pub const MARKUP_TOKENS: [&str; 6] = [
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
];

/// Load `tokenizer.json` from a file or from a model directory.
pub fn load(path: &Path) -> Result<Tokenizer> {
    let file = if path.is_dir() {
        path.join("tokenizer.json")
    } else {
        path.to_path_buf()
    };
    Tokenizer::from_file(&file)
        .map_err(|e| anyhow!("cannot load tokenizer '{}': {e}", file.display()))
}

/// Settings of [`train_bpe`].
#[derive(Debug, Clone)]
pub struct TrainOptions {
    /// Total vocabulary size including the 256 byte symbols and the special and markup tokens.
    pub vocab_size: usize,
    /// A pair must occur this often to be merged.
    pub min_frequency: u64,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            vocab_size: 4096,
            min_frequency: 2,
        }
    }
}

/// Train a byte-level BPE tokenizer on the given texts. The result is deterministic for a given corpus
/// order and options.
pub fn train_bpe<S: AsRef<str> + Send>(
    corpus: Vec<S>,
    options: &TrainOptions,
) -> Result<Tokenizer> {
    let reserved = SPECIAL_TOKENS.len() + MARKUP_TOKENS.len();
    if options.vocab_size < 256 + reserved + 1 {
        bail!(
            "vocab size {} is too small: byte-level BPE needs at least {}",
            options.vocab_size,
            257 + reserved
        );
    }
    let split = Split::new(
        SplitPattern::Regex(QWEN2_PATTERN.into()),
        SplitDelimiterBehavior::Isolated,
        false,
    )
    .map_err(|e| anyhow!("pre-tokenizer pattern: {e}"))?;
    let byte_level = ByteLevel::new(false, false, false);
    let mut tokenizer: TokenizerImpl<
        BPE,
        NormalizerWrapper,
        PreTokenizerWrapper,
        PostProcessorWrapper,
        DecoderWrapper,
    > = TokenizerImpl::new(BPE::default());
    tokenizer.with_normalizer(Some(NFC));
    tokenizer.with_pre_tokenizer(Some(Sequence::new(vec![split.into(), byte_level.into()])));
    tokenizer.with_decoder(Some(ByteLevel::default()));

    let mut trainer = BpeTrainerBuilder::new()
        .vocab_size(options.vocab_size - reserved)
        .min_frequency(options.min_frequency)
        .initial_alphabet(ByteLevel::alphabet().into_iter().collect::<HashSet<char>>())
        .show_progress(false)
        .build();
    tokenizer
        .train(&mut trainer, corpus.into_iter())
        .map_err(|e| anyhow!("BPE training failed: {e}"))?;

    let special: Vec<AddedToken> = SPECIAL_TOKENS
        .iter()
        .map(|t| AddedToken::from(*t, true))
        .collect();
    tokenizer.add_special_tokens(&special);
    let markup: Vec<AddedToken> = MARKUP_TOKENS
        .iter()
        .map(|t| AddedToken::from(*t, false))
        .collect();
    tokenizer.add_tokens(&markup);
    Ok(Tokenizer::from(tokenizer))
}

/// Write `tokenizer.json` and a transformers-style `tokenizer_config.json` (with the chat template) into
/// `dir`, so that `AutoTokenizer.from_pretrained(dir)` and our own loader both read it.
pub fn save_hf(
    tokenizer: &Tokenizer,
    dir: &Path,
    chat_template: &str,
    model_max_length: usize,
) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create '{}'", dir.display()))?;
    let json_path = dir.join("tokenizer.json");
    tokenizer
        .save(&json_path, false)
        .map_err(|e| anyhow!("cannot write '{}': {e}", json_path.display()))?;

    let mut added = serde_json::Map::new();
    for (id, token) in tokenizer.get_added_tokens_decoder() {
        added.insert(
            id.to_string(),
            json!({"content": token.content, "lstrip": token.lstrip, "normalized": token.normalized,
                   "rstrip": token.rstrip, "single_word": token.single_word, "special": token.special}),
        );
    }
    let mut sorted: Vec<(String, Value)> = added.into_iter().collect();
    sorted.sort_by_key(|(id, _)| id.parse::<u32>().unwrap_or(u32::MAX));
    let config = json!({
        "add_bos_token": false,
        "add_prefix_space": false,
        "added_tokens_decoder": sorted.into_iter().collect::<serde_json::Map<_, _>>(),
        "bos_token": null,
        "chat_template": chat_template,
        "clean_up_tokenization_spaces": false,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": model_max_length,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": false,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": null,
    });
    let config_path = dir.join("tokenizer_config.json");
    std::fs::write(&config_path, serde_json::to_string_pretty(&config)? + "\n")
        .with_context(|| format!("cannot write '{}'", config_path.display()))
}

/// The id of a token that must exist (special and markup tokens), with an error naming it otherwise.
pub fn required_id(tokenizer: &Tokenizer, token: &str) -> Result<u32> {
    tokenizer.token_to_id(token).ok_or_else(|| {
        anyhow!("the tokenizer has no '{token}' token; it does not fit the Qwen chat format")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus() -> Vec<String> {
        let mut texts = Vec::new();
        for i in 0..200 {
            texts.push(format!(
                "宝宝们，这款羽绒服现在只要¥{}，库存还有{}件！",
                100 + i,
                i % 37
            ));
            texts.push(format!(
                "Do you have size L in black? Order #{i} ships tomorrow."
            ));
            texts.push(format!("<tool_call>\n{{\"name\": \"check_inventory\", \"arguments\": {{\"product_id\": \"p-{i:04}\"}}}}\n</tool_call>"));
        }
        texts
    }

    #[test]
    fn trained_tokenizer_round_trips_text_and_keeps_markup_whole() {
        let tok = train_bpe(
            corpus(),
            &TrainOptions {
                vocab_size: 600,
                min_frequency: 2,
            },
        )
        .unwrap();
        // The small corpus runs out of pairs to merge before 600; merges were learned all the same.
        let size = tok.get_vocab_size(true);
        assert!(size > 300 && size <= 600, "vocab size {size}");
        for text in [
            "宝宝们，库存还有12件！🎉 emoji",
            "<tool_call>\n{\"a\": 1}\n</tool_call><|im_end|>",
            "tab\there\r\n",
        ] {
            let enc = tok.encode(text, false).unwrap();
            assert_eq!(tok.decode(enc.get_ids(), false).unwrap(), text);
        }
        let enc = tok
            .encode(
                "<|im_start|>assistant\n<think>\n\n</think>\n\n<tool_call>",
                false,
            )
            .unwrap();
        for t in ["<|im_start|>", "<think>", "</think>", "<tool_call>"] {
            assert!(
                enc.get_ids().contains(&required_id(&tok, t).unwrap()),
                "{t} is one token"
            );
        }
        // Markup is not special: skipping special tokens keeps it, drops <|im_end|>.
        let ids = tok
            .encode("<think>x</think><|im_end|>", false)
            .unwrap()
            .get_ids()
            .to_vec();
        assert_eq!(tok.decode(&ids, true).unwrap(), "<think>x</think>");
        // Digits are split one by one, as in Qwen2.
        let digits = tok.encode("12345", false).unwrap();
        assert_eq!(digits.get_ids().len(), 5);
    }

    #[test]
    fn training_is_deterministic_and_saves_a_loadable_hf_directory() {
        let opts = TrainOptions {
            vocab_size: 500,
            min_frequency: 2,
        };
        let a = train_bpe(corpus(), &opts).unwrap();
        let b = train_bpe(corpus(), &opts).unwrap();
        assert_eq!(a.to_string(false).unwrap(), b.to_string(false).unwrap());

        let dir = tempfile::tempdir().unwrap();
        save_hf(&a, dir.path(), QWEN3_CHAT_TEMPLATE, 2048).unwrap();
        let loaded = load(dir.path()).unwrap();
        assert_eq!(
            loaded.to_string(false).unwrap(),
            a.to_string(false).unwrap()
        );
        let config: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("tokenizer_config.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(config["eos_token"], "<|im_end|>");
        assert_eq!(config["chat_template"], QWEN3_CHAT_TEMPLATE);
        let im_end = required_id(&a, "<|im_end|>").unwrap().to_string();
        assert_eq!(config["added_tokens_decoder"][&im_end]["special"], true);
    }

    #[test]
    fn errors_name_the_problem() {
        let err = train_bpe(
            corpus(),
            &TrainOptions {
                vocab_size: 100,
                min_frequency: 2,
            },
        )
        .unwrap_err();
        assert!(err.to_string().contains("too small"));
        let err = load(Path::new("/nonexistent/tok")).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/tok"));
    }
}
