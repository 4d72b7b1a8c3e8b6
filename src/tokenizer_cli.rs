//! `hat tokenizer …`: train the embedded default's tokenizer from the domain corpus, and inspect encodings.
//!
//! The corpus is what the model will read: trajectory records rendered through the chat template (system
//! prompts, tool schemas, tool calls and results, replies — exactly the text training sees), the harness
//! files, and general instruction text so general ability is not tokenised as noise.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use clap::Subcommand;
use serde_json::Value;

use crate::chat::{ChatTemplate, RenderInput};
use crate::jsonl::{LineReader, OnError, Records};
use crate::tokenizer::{self, TrainOptions, QWEN3_CHAT_TEMPLATE};

/// Subcommands of `hat tokenizer`.
#[derive(Debug, Subcommand)]
pub enum TokenizerCommand {
    /// Train a byte-level BPE (Qwen2-shaped) and write tokenizer.json + tokenizer_config.json.
    ///
    /// Example: hat tokenizer train --records teacher.jsonl --harness harness-samples/taolive
    ///          --text testdata/corpus/general.jsonl --vocab-size 4096 --out out/tokenizer
    Train {
        /// Trajectory JSONL; each record is rendered with the chat template (messages and tools).
        #[arg(long, value_name = "FILE")]
        records: Vec<PathBuf>,
        /// Harness directory; every file's text joins the corpus.
        #[arg(long, value_name = "DIR")]
        harness: Vec<PathBuf>,
        /// Plain text (one document per line), or JSONL whose `prompt`/`response`/`text` fields are used.
        #[arg(long, value_name = "FILE")]
        text: Vec<PathBuf>,
        /// Vocabulary size, including 256 byte symbols and the special and markup tokens.
        #[arg(long, default_value_t = 4096)]
        vocab_size: usize,
        /// Minimum pair frequency for a merge.
        #[arg(long, default_value_t = 2)]
        min_frequency: u64,
        /// Context length written as model_max_length.
        #[arg(long, default_value_t = 4096)]
        model_max_length: usize,
        /// Output directory.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Print the token ids (and pieces with --pieces) of a text, as JSON.
    Encode {
        /// tokenizer.json, or a directory containing it.
        tokenizer: PathBuf,
        /// The text to encode.
        text: String,
        /// Also print each token's string.
        #[arg(long)]
        pieces: bool,
    },
}

/// Runs one `hat tokenizer` subcommand; the return value is the exit code.
pub fn run(cmd: &TokenizerCommand, out: &mut dyn Write, err: &mut dyn Write) -> Result<i32> {
    match cmd {
        TokenizerCommand::Train {
            records,
            harness,
            text,
            vocab_size,
            min_frequency,
            model_max_length,
            out: dir,
        } => {
            let mut corpus = Vec::new();
            let template = ChatTemplate::from_str(QWEN3_CHAT_TEMPLATE)?;
            for path in records {
                add_records(&mut corpus, path, &template)?;
            }
            for dir in harness {
                add_harness(&mut corpus, dir)?;
            }
            for path in text {
                add_text(&mut corpus, path)?;
            }
            if corpus.is_empty() {
                anyhow::bail!("the corpus is empty: give --records, --harness or --text");
            }
            let bytes: usize = corpus.iter().map(String::len).sum();
            let options = TrainOptions {
                vocab_size: *vocab_size,
                min_frequency: *min_frequency,
            };
            let tok = tokenizer::train_bpe(corpus.clone(), &options)?;
            tokenizer::save_hf(&tok, dir, QWEN3_CHAT_TEMPLATE, *model_max_length)?;
            let tokens: usize = corpus
                .iter()
                .map(|doc| {
                    tok.encode(doc.as_str(), false)
                        .map(|e| e.len())
                        .unwrap_or(0)
                })
                .sum();
            writeln!(
                err,
                "trained on {} documents ({:.1} MB): vocab {} , {:.2} bytes/token; wrote {}",
                corpus.len(),
                bytes as f64 / 1e6,
                tok.get_vocab_size(true),
                bytes as f64 / tokens.max(1) as f64,
                dir.display()
            )?;
            Ok(0)
        }
        TokenizerCommand::Encode {
            tokenizer: path,
            text,
            pieces,
        } => {
            let tok = tokenizer::load(path)?;
            let enc = tok
                .encode(text.as_str(), false)
                .map_err(|e| anyhow!("cannot encode: {e}"))?;
            let mut result = serde_json::json!({"ids": enc.get_ids()});
            if *pieces {
                result["pieces"] = serde_json::json!(enc.get_tokens());
            }
            writeln!(out, "{result}")?;
            Ok(0)
        }
    }
}

fn add_records(corpus: &mut Vec<String>, path: &Path, template: &ChatTemplate) -> Result<()> {
    let name = path.to_string_lossy();
    let records: Records<Value> = Records::new(LineReader::open(&name)?, OnError::Fail);
    for record in records {
        let mut record = record?;
        let mut messages = record
            .get_mut("messages")
            .map(Value::take)
            .unwrap_or(Value::Array(vec![]));
        // OpenAI sends `content: null` (or nothing) on tool-call turns; Qwen templates need a string.
        for message in messages.as_array_mut().into_iter().flatten() {
            if message.get("content").is_none_or(Value::is_null) {
                message["content"] = Value::String(String::new());
            }
        }
        let input = serde_json::json!({
            "messages": messages,
            "tools": record.get_mut("tools").map(Value::take).unwrap_or(Value::Null),
        });
        let rendered = template
            .render(&RenderInput::from_json(&input)?)
            .with_context(|| format!("{name}: cannot render record through the chat template"))?;
        corpus.push(rendered);
    }
    Ok(())
}

fn add_harness(corpus: &mut Vec<String>, dir: &Path) -> Result<()> {
    let (files, problems) = crate::harness::files::read_dir(dir);
    if let Some(problem) = problems.first() {
        anyhow::bail!("{}: {problem}", dir.display());
    }
    corpus.extend(
        files
            .values()
            .filter_map(|f| String::from_utf8(f.bytes.clone()).ok()),
    );
    Ok(())
}

fn add_text(corpus: &mut Vec<String>, path: &Path) -> Result<()> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read '{}'", path.display()))?;
    let is_jsonl = path.extension().is_some_and(|e| e == "jsonl");
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        if !is_jsonl {
            corpus.push(line.to_string());
            continue;
        }
        let value: Value = serde_json::from_str(line)
            .with_context(|| format!("{}:{}: not valid JSON", path.display(), i + 1))?;
        for field in ["prompt", "response", "text"] {
            if let Some(s) = value.get(field).and_then(Value::as_str) {
                corpus.push(s.to_string());
            }
        }
    }
    Ok(())
}
