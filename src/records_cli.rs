//! `hat records …`: check and normalise trajectory JSONL, the same way every stage reads it.

use std::io::Write;

use anyhow::Result;
use clap::Subcommand;

use crate::jsonl::JsonlArgs;
use crate::record::{Role, Scores, Trajectory};

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
    },
}

/// `rec` up to and including its first assistant message, as a record of its own; `None` without one.
pub fn first_turn(mut rec: Trajectory) -> Option<Trajectory> {
    let first = rec
        .messages
        .iter()
        .position(|m| m.role == Role::Assistant)?;
    rec.messages.truncate(first + 1);
    rec.id.push_str("#first-turn");
    rec.scores = Scores::default();
    Some(rec)
}

/// Runs one `hat records` subcommand; the return value is the exit code.
pub fn run(cmd: &RecordsCommand, err: &mut dyn Write) -> Result<i32> {
    match cmd {
        RecordsCommand::Cat {
            io,
            first_turn: cut,
        } => {
            let mut records = io.records::<Trajectory>()?;
            let mut writer = io.writer()?;
            let mut written = 0;
            for record in records.by_ref() {
                let record = record?;
                let record = if *cut {
                    first_turn(record)
                } else {
                    Some(record)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn record(messages: serde_json::Value) -> Trajectory {
        serde_json::from_value(serde_json::json!({
            "id": "r1",
            "messages": messages,
            "scores": {"accuracy": 1.0},
        }))
        .unwrap()
    }

    #[test]
    fn first_turn_keeps_the_history_and_the_first_assistant_turn_only() {
        let rec = record(serde_json::json!([
            {"role": "system", "content": "host"},
            {"role": "user", "content": "阿杰：还有货吗"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "check_inventory", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "{\"stock\": 3}"},
            {"role": "assistant", "content": "还有 3 件"},
        ]));
        assert!(!rec.scores.is_empty());
        let cut = first_turn(rec.clone()).unwrap();
        assert_eq!(cut.id, "r1#first-turn");
        assert_eq!(cut.messages, rec.messages[..3]);
        assert!(cut.scores.is_empty(), "scores judged the whole episode");
        let no_assistant = record(serde_json::json!([{"role": "user", "content": "hi"}]));
        assert_eq!(first_turn(no_assistant), None);
    }
}
