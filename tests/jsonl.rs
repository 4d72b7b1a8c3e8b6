//! The JSONL layer: error policy, rejects, sharding, tolerant line handling, atomic output.

use std::io::Cursor;

use hat::jsonl::{JsonlWriter, LineReader, OnError, Records, Rejects, Shard};
use hat::record::Trajectory;
use serde_json::Value;

fn record(id: &str) -> String {
    format!(r#"{{"id":"{id}","messages":[{{"role":"user","content":"有货吗 {id}"}}]}}"#)
}

fn stream(bytes: Vec<u8>, on_error: OnError) -> Records<Trajectory> {
    Records::new(
        LineReader::from_reader("in.jsonl", Cursor::new(bytes)),
        on_error,
    )
}

#[test]
fn bad_line_fails_by_default_naming_file_line_and_column() {
    let input = format!(
        "{}\n{}\n{{\"id\": 3, oops}}\n{}\n",
        record("a"),
        record("b"),
        record("d")
    );
    let results: Vec<_> = stream(input.into_bytes(), OnError::Fail).collect();
    assert_eq!(
        results.len(),
        3,
        "two good records, then the error, then nothing"
    );
    assert!(results[0].is_ok() && results[1].is_ok());
    let err = format!("{:#}", results[2].as_ref().unwrap_err());
    assert!(err.contains("in.jsonl:3:"), "{err}");
    assert!(
        err.contains("--on-error skip"),
        "the error says how to go on: {err}"
    );
}

#[test]
fn skip_keeps_every_good_line_in_order_and_rejects_exactly_the_bad_ones() {
    let dir = tempfile::tempdir().unwrap();
    let rejects_path = dir.path().join("R");
    let bad = [
        "{not json".to_string(),
        r#"{"messages":[]}"#.to_string(), // missing id
        r#"{"id":"x","messages":[{"role":"robot"}]}"#.to_string(), // unknown role
    ];
    let mut lines = Vec::new();
    let mut good_ids = Vec::new();
    for i in 0..20 {
        if i % 7 == 3 {
            lines.push(bad[(i / 7) % bad.len()].clone());
        } else {
            let id = format!("r{i}");
            lines.push(record(&id));
            good_ids.push(id);
        }
    }
    let input = lines.join("\n") + "\n";
    let mut records = stream(input.into_bytes(), OnError::Skip)
        .with_rejects(Rejects::create(&rejects_path).unwrap());
    let ids: Vec<String> = records.by_ref().map(|r| r.unwrap().id).collect();
    assert_eq!(ids, good_ids);
    assert_eq!(records.stats().rejected, 3);
    drop(records);

    let rejected = std::fs::read_to_string(&rejects_path).unwrap();
    let expected: Vec<&str> = lines
        .iter()
        .filter(|l| !l.contains("\"id\":\"r"))
        .map(String::as_str)
        .collect();
    assert_eq!(rejected.lines().collect::<Vec<_>>(), expected);
    let reasons = std::fs::read_to_string(dir.path().join("R.reasons.jsonl")).unwrap();
    let reasons: Vec<Value> = reasons
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        reasons
            .iter()
            .map(|r| r["line"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        vec![4, 11, 18]
    );
    assert!(reasons[1]["error"]
        .as_str()
        .unwrap()
        .contains("missing field `id`"));
    assert!(reasons[2]["error"].as_str().unwrap().contains("robot"));
}

#[test]
fn bom_crlf_and_blank_lines_are_tolerated() {
    let mut input = b"\xEF\xBB\xBF".to_vec();
    input
        .extend_from_slice(format!("{}\r\n\r\n   \n{}\r\n\n", record("a"), record("b")).as_bytes());
    let ids: Vec<String> = stream(input, OnError::Fail)
        .map(|r| r.unwrap().id)
        .collect();
    assert_eq!(ids, ["a", "b"]);
}

#[test]
fn invalid_utf8_is_reported_by_line_not_a_panic() {
    let mut input = format!("{}\n", record("a")).into_bytes();
    input.extend_from_slice(b"{\"id\":\"b\xff\xfe\"}\n");
    input.extend_from_slice(format!("{}\n", record("c")).as_bytes());
    let results: Vec<_> = stream(input.clone(), OnError::Fail).collect();
    let err = format!("{:#}", results[1].as_ref().unwrap_err());
    assert!(
        err.contains("in.jsonl:2:9") && err.contains("invalid UTF-8"),
        "{err}"
    );

    let ids: Vec<String> = stream(input, OnError::Skip)
        .map(|r| r.unwrap().id)
        .collect();
    assert_eq!(ids, ["a", "c"]);
}

#[test]
fn lines_of_tens_of_megabytes_are_read() {
    let big = "好".repeat(8_000_000); // 24 MB of UTF-8
    let input = format!(
        "{}\n{{\"id\":\"big\",\"messages\":[{{\"role\":\"user\",\"content\":\"{big}\"}}]}}\n{}\n",
        record("a"),
        record("c")
    );
    let records: Vec<Trajectory> = stream(input.into_bytes(), OnError::Fail)
        .map(Result::unwrap)
        .collect();
    assert_eq!(records.len(), 3);
    assert_eq!(records[1].messages[0].text_content().len(), big.len());
}

#[test]
fn shards_partition_the_records_stably() {
    let ids: Vec<String> = (0..500).map(|i| format!("task-{i}")).collect();
    let input = ids
        .iter()
        .map(|id| record(id))
        .collect::<Vec<_>>()
        .join("\n");
    let mut seen = Vec::new();
    for k in 0..4 {
        let shard: Shard = format!("{k}/4").parse().unwrap();
        let part: Vec<String> = stream(input.clone().into_bytes(), OnError::Fail)
            .with_shard(shard)
            .map(|r| r.unwrap().id)
            .collect();
        assert!(
            part.len() > 80 && part.len() < 170,
            "shard {k} has {} of 500",
            part.len()
        );
        seen.extend(part);
    }
    seen.sort();
    let mut all = ids.clone();
    all.sort();
    assert_eq!(seen, all, "every record lands in exactly one shard");
    // The split depends only on the id: FNV-1a of "task-0" modulo 4, fixed forever.
    assert_eq!(hat::jsonl::fnv1a64(b"task-0"), 0x0b62_5266_02ec_4fb9);
    assert!(
        "4/4".parse::<Shard>().is_err()
            && "1/0".parse::<Shard>().is_err()
            && "x".parse::<Shard>().is_err()
    );
}

#[test]
fn file_output_appears_only_when_finished() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("out.jsonl");
    let path = target.to_str().unwrap();

    let mut aborted = JsonlWriter::create(path).unwrap();
    aborted.write(&serde_json::json!({"id": "a"})).unwrap();
    drop(aborted);
    assert!(!target.exists());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no temporary file left behind"
    );

    let mut writer = JsonlWriter::create(path).unwrap();
    writer
        .write(&serde_json::json!({"id": "a", "x": "é"}))
        .unwrap();
    writer.write_raw(br#"{"id":"b"}"#).unwrap();
    writer.finish().unwrap();
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "{\"id\":\"a\",\"x\":\"é\"}\n{\"id\":\"b\"}\n"
    );
}
