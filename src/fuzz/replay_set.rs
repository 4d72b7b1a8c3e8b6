//! Target `replay_set`: a replay set (JSONL of task records, each with the `request` to replay).
//! An accepted set writes every line back as the same JSON; a rejected one names the line.

use serde_json::Value;

use super::jsonl_record::assert_round_trip;
use crate::replay::set::{parse, Entry};

const SOURCE: &str = "fuzz.jsonl";

pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return; // read as a UTF-8 file: an invalid one fails before parsing
    };
    let entries = match parse(SOURCE, text) {
        Ok(entries) => entries,
        Err(e) => {
            let shown = format!("{e:#}");
            assert!(
                shown.starts_with(&format!("{SOURCE}:")),
                "rejection does not name the line: {shown}"
            );
            return;
        }
    };
    let lines = text.lines().filter(|l| !l.trim().is_empty());
    for (line, entry) in lines.zip(&entries) {
        let read: Value = serde_json::from_str(line).expect("the line parsed as an entry");
        let written = entry.to_json().expect("an entry always serializes");
        let again = Entry::from_json(written).expect("a written entry reads back");
        assert_eq!(again.request, read["request"], "request changed");
        let mut record = read;
        record.as_object_mut().map(|o| o.remove("request"));
        assert_round_trip(&record, &again.record);
        assert_eq!(
            again.record, entry.record,
            "record changed through write and read"
        );
    }
}
