//! `hat records …`: check and normalise trajectory JSONL, the same way every stage reads it.

use std::io::Write;

use anyhow::Result;
use clap::Subcommand;

use crate::evidence::quote_evidence;
use crate::fresh_ids::rename_product_ids;
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
        /// Before each call whose argument the prompt states as `key=value` (a product id from the
        /// room state), add reasoning that names the message's calls (the plan: which skill and tool)
        /// and then quotes the prompt's entry for the argument, from the viewer's words to the id
        /// (`src/evidence.rs`): the lookup becomes two copies a small model learns. Messages that
        /// already carry reasoning are kept as they are.
        #[arg(long)]
        quote_evidence: bool,
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
            quote_evidence: quote,
        } => {
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
                let record = match record {
                    Some(r) if *dialogue_only => Some(r.dialogue_only(keep_sections)),
                    other => other,
                };
                let record = record.map(|r| if *quote { quote_evidence(r) } else { r });
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
