//! Target `jsonl_record`: a JSONL trajectory stream, read line by line as every stage reads it.
//! A line that reads writes back the same JSON, unknown fields kept (DESIGN §3; see [`lost`] for
//! what "the same" allows), and what is written reads back to the same record and writes back
//! byte-identical; a line that does not read is rejected naming its file and line.

use std::io::Cursor;

use serde_json::Value;

use super::kept::lost;
use crate::jsonl::{parse_line, LineReader};
use crate::record::Trajectory;

const SOURCE: &str = "fuzz.jsonl";

pub fn check(data: &[u8]) {
    let mut lines = LineReader::from_reader(SOURCE, Cursor::new(data.to_vec()));
    while let Some(line) = lines.next_line() {
        let line = line.expect("reading from memory cannot fail");
        let record: Trajectory = match parse_line(SOURCE, &line) {
            Ok(record) => record,
            Err(e) => {
                let shown = e.to_string();
                assert!(
                    shown.starts_with(&format!("{SOURCE}:{}:", line.number)),
                    "rejection does not name file and line: {shown}"
                );
                continue;
            }
        };
        let read: Value = serde_json::from_slice(&line.bytes).expect("the line parsed as a record");
        assert_round_trip(&read, &record);
    }
}

/// `record`, read from `read`, writes back the same JSON and reads back equal. Shared with the
/// replay-set target, whose lines are records too.
pub(super) fn assert_round_trip(read: &Value, record: &Trajectory) {
    let written = serde_json::to_string(record).expect("a record always serializes");
    let written_json: Value = serde_json::from_str(&written).expect("serde_json writes JSON");
    if let Some(path) = lost(read, &written_json) {
        panic!("written record lost {path}:\nread    {read}\nwritten {written}");
    }
    let again: Trajectory = serde_json::from_str(&written)
        .unwrap_or_else(|e| panic!("written record does not read back: {e}\n{written}"));
    assert_eq!(&again, record, "record changed through write and read");
    let rewritten = serde_json::to_string(&again).expect("a record always serializes");
    assert_eq!(
        rewritten, written,
        "a written record does not write back the same"
    );
}
