//! Target `ifeval`: IFEval's `input_data.jsonl` (instruction ids and their kwargs) and a response
//! to score. Every line either builds its checkers or is rejected naming file and line, and the
//! loose score never fails an instruction the strict score passes (loose tries the response and
//! lenient variants of it).

use std::io::Cursor;

use super::split_at_nul;
use crate::jsonl::{LineReader, OnError, Records};
use crate::judge::ifeval::{follow, InputExample, Mode};

const SOURCE: &str = "input_data.jsonl";

/// The input lines, a NUL, then the response every prompt is scored on.
pub fn check(data: &[u8]) {
    let (inputs, response) = split_at_nul(data);
    let response = String::from_utf8_lossy(response);
    let reader = LineReader::from_reader(SOURCE, Cursor::new(inputs.to_vec()));
    let mut records: Records<InputExample> = Records::new(reader, OnError::Fail);
    while let Some(next) = records.next_numbered() {
        let (line, input) = match next {
            Ok(next) => next,
            Err(e) => {
                assert_names_line(&format!("{e:#}"));
                return;
            }
        };
        let instructions = match input.instructions() {
            Ok(instructions) => instructions,
            Err(e) => {
                // What `judge ifeval` adds around it: the file and line of the prompt.
                let shown = format!("{SOURCE}:{}: {e:#}", line.number);
                assert!(shown.contains("instruction"), "{shown}");
                continue;
            }
        };
        let strict = follow(&instructions, &response, Mode::Strict);
        let loose = follow(&instructions, &response, Mode::Loose);
        assert_eq!(strict.len(), instructions.len());
        assert_eq!(loose.len(), instructions.len());
        // Loose skips variants that are blank after Python's strip(); with a letter or digit in the
        // response the response itself is always tried.
        if response.chars().any(char::is_alphanumeric) {
            for (i, (s, l)) in strict.iter().zip(&loose).enumerate() {
                assert!(
                    !s || *l,
                    "instruction {} ({}) passes strict but fails loose",
                    i + 1,
                    input.instruction_id_list[i]
                );
            }
        }
    }
}

/// `shown` says `input_data.jsonl:LINE:` somewhere (the reader puts advice before it).
fn assert_names_line(shown: &str) {
    let prefix = format!("{SOURCE}:");
    let named = shown
        .match_indices(&prefix)
        .any(|(i, _)| shown[i + prefix.len()..].starts_with(|c: char| c.is_ascii_digit()));
    assert!(named, "rejection does not name file and line: {shown}");
}
