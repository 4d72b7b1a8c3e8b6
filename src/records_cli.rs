//! `hat records …`: check and normalise trajectory JSONL, the same way every stage reads it.

use std::io::Write;

use anyhow::{bail, Result};
use clap::Subcommand;

use crate::evidence::quote_evidence;
use crate::fresh_ids::rename_product_ids;
use crate::fresh_names::rename_prompt_tools;
use crate::jsonl::JsonlArgs;
use crate::record::Trajectory;

/// Subcommands of `hat records`.
#[derive(Debug, Subcommand)]
pub enum RecordsCommand {
    /// Parse trajectory records and write them back out (unknown fields kept), one per line.
    ///
    /// Use it to check a file before a long run, to split bad lines off
    /// (`--on-error skip --rejects bad.jsonl`), or to take one shard of a data set (`--shard 2/8`).
    /// A summary goes to stderr. Exit status: 0 when every line was read, 1 when lines were
    /// rejected, 2 on an error (the first bad line under the default `--on-error fail`).
    Cat {
        #[command(flatten)]
        io: JsonlArgs,
        /// Cut each record after its first assistant turn (id suffixed `#first-turn`, judge scores
        /// dropped; records without one are left out). Such rows train the opening decision, which
        /// skill and tool, at a sixth of a full record's tokens once the shared prompt is paid for.
        #[arg(long)]
        first_turn: bool,
        /// Drop the system prompt and the tools, keeping the conversation (id suffixed `#dialogue`).
        /// Rows for a base stage that learns the domain's language — the viewers' words, the host's
        /// calls and replies — with loss on every token (`teacher-distill train
        /// --assistant-only-loss false`), at a tenth of a full record's tokens.
        #[arg(long)]
        dialogue_only: bool,
        /// With `--dialogue-only`: keep the prompt's sections whose `#` heading contains one of these
        /// (`'Room state|Current product'`), so a row keeps the ~200 tokens a decision needs (which
        /// product the viewer means) without the ~2,500 of the whole harness.
        #[arg(
            long,
            value_name = "A|B|…",
            requires = "dialogue_only",
            value_delimiter = '|'
        )]
        keep_sections: Vec<String>,
        /// Rename every product id in each record (task and messages, consistently) to one drawn at
        /// random for that record from this seed: memorising ids then lowers no loss, only copying
        /// the id from the prompt does (`src/fresh_ids.rs`).
        #[arg(long, value_name = "SEED")]
        rename_ids: Option<u64>,
        /// In a share of records (`--fresh-tool-share`), rename each tool the system prompt names in
        /// backticks (the skill loader) everywhere in the record to a name drawn for that record from
        /// HSA's train pool, from this seed: memorising the loader's name then lowers no loss, only
        /// copying it from the prompt does (`src/fresh_names.rs`). Runs before `--dialogue-only` and
        /// `--quote-evidence`.
        #[arg(long, value_name = "SEED")]
        fresh_tool_names: Option<u64>,
        /// With `--fresh-tool-names`: the share of records renamed (the rest keep the harness's names).
        #[arg(long, default_value_t = 0.5, requires = "fresh_tool_names")]
        fresh_tool_share: f64,
        /// Before each call whose argument the prompt states as `key=value` (a product id from the
        /// room state), add reasoning that names the message's calls (the plan: which skill and tool)
        /// and then quotes the prompt's entry for the argument, from the viewer's words to the id
        /// (`src/evidence.rs`): the lookup becomes two copies a small model learns. Messages that
        /// already carry reasoning are kept as they are.
        #[arg(long)]
        quote_evidence: bool,
        /// With `--quote-evidence`: open the reasoning of a call whose tool the prompt names in
        /// backticks (the skill loader) with the prompt's clause that names it
        /// (`需要细则时调用 `load_skill``), before the plan. Opt-in: measured in
        /// docs/learning-default.md, forty-fourth session.
        #[arg(long, requires = "quote_evidence")]
        quote_names: bool,
    },
}

/// Runs one `hat records` subcommand; the return value is the exit code.
pub fn run(cmd: &RecordsCommand, err: &mut dyn Write) -> Result<i32> {
    match cmd {
        RecordsCommand::Cat {
            io,
            first_turn: cut,
            dialogue_only,
            keep_sections,
            rename_ids,
            fresh_tool_names,
            fresh_tool_share,
            quote_evidence: quote,
            quote_names,
        } => {
            if !(0.0..=1.0).contains(fresh_tool_share) {
                bail!("--fresh-tool-share {fresh_tool_share}: give a share between 0 and 1");
            }
            let mut records = io.records::<Trajectory>()?;
            let mut writer = io.writer()?;
            let mut written = 0;
            for record in records.by_ref() {
                let record = record?;
                let record = if *cut {
                    record.first_turn()
                } else {
                    Some(record)
                };
                // Before --dialogue-only, which drops the tool list the names are found in.
                let record = match (record, fresh_tool_names) {
                    (Some(r), Some(seed)) => {
                        Some(rename_prompt_tools(r, *seed, *fresh_tool_share)?)
                    }
                    (other, _) => other,
                };
                let record = match record {
                    Some(r) if *dialogue_only => Some(r.dialogue_only(keep_sections)),
                    other => other,
                };
                let record = record.map(|r| {
                    if *quote {
                        quote_evidence(r, *quote_names)
                    } else {
                        r
                    }
                });
                let record = match (record, rename_ids) {
                    (Some(r), Some(seed)) => Some(rename_product_ids(r, *seed)?),
                    (other, _) => other,
                };
                if let Some(r) = record {
                    writer.write(&r)?;
                    written += 1;
                }
            }
            writer.finish()?;
            let stats = records.stats();
            writeln!(
                err,
                "{}: {} records read, {written} written, {} rejected, {} outside shard",
                records.source(),
                stats.read,
                stats.rejected,
                stats.out_of_shard
            )?;
            Ok(if stats.rejected > 0 { 1 } else { 0 })
        }
    }
}
