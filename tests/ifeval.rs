//! IFEval port vs. the official Python implementation, on real model responses.
//!
//! `testdata/ifeval/golden_*.jsonl` hold the official strict and loose verdicts per instruction
//! (made by `scripts/ifeval_golden.py`: google-research `instruction_following_eval`, nltk 3.10.4,
//! langdetect 1.0.9 seeded with 0). Each golden line names the prompt by `key` in
//! `testdata/ifeval/input_data.jsonl` and carries the response.

use hat::jsonl::OnError;
use hat::judge::ifeval::files::{evaluate, read_inputs, read_responses, write_outputs, Prepared};
use hat::judge::ifeval::instruction::Instruction;
use hat::judge::ifeval::report::Report;
use hat::judge::ifeval::{follow, InputExample, Mode};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;

const INPUT: &str = "testdata/ifeval/input_data.jsonl";

#[derive(Deserialize)]
struct Golden {
    key: i64,
    instruction_id_list: Vec<String>,
    response: String,
    strict: Vec<bool>,
    loose: Vec<bool>,
}

fn inputs() -> HashMap<i64, Prepared> {
    let (prepared, rejected) = read_inputs(INPUT, OnError::Fail).expect("input data parses");
    assert_eq!(rejected, 0);
    prepared.into_iter().map(|p| (p.input.key, p)).collect()
}

/// Compares every verdict; prints each disagreement; returns (agreeing, total).
fn agreement(golden_file: &str) -> (usize, usize) {
    let inputs = inputs();
    let text = std::fs::read_to_string(golden_file).expect("golden file");
    let (mut agree, mut total) = (0, 0);
    for line in text.lines() {
        let g: Golden = serde_json::from_str(line).expect("golden line");
        let p = &inputs[&g.key];
        assert_eq!(
            p.input.instruction_id_list, g.instruction_id_list,
            "key {}",
            g.key
        );
        for (mode, expected) in [(Mode::Strict, &g.strict), (Mode::Loose, &g.loose)] {
            let got = follow(&p.instructions, &g.response, mode);
            for (i, (a, b)) in got.iter().zip(expected).enumerate() {
                total += 1;
                if a == b {
                    agree += 1;
                } else {
                    eprintln!(
                        "DISAGREE {golden_file} key {} {:?} {}: rust {a}, official {b}",
                        g.key, mode, g.instruction_id_list[i]
                    );
                }
            }
        }
    }
    (agree, total)
}

fn assert_agreement(golden_file: &str) {
    let (agree, total) = agreement(golden_file);
    let rate = agree as f64 / total as f64;
    eprintln!(
        "{golden_file}: {agree}/{total} verdicts agree ({:.3}%)",
        100.0 * rate
    );
    assert!(total > 1600, "golden file too small: {total}");
    assert!(rate >= 0.995, "agreement {rate:.4} below 99.5%");
}

#[test]
fn agrees_with_official_on_gpt4_responses() {
    assert_agreement("testdata/ifeval/golden_gpt4_20231107.jsonl");
}

#[test]
fn agrees_with_official_on_llama31_8b_responses() {
    assert_agreement("testdata/ifeval/golden_llama31_8b_instruct.jsonl");
}

#[derive(Deserialize)]
struct Cross {
    src: String,
    key: i64,
    transform: String,
    instructions: Vec<(i64, usize)>,
    strict: Vec<bool>,
    loose: Vec<bool>,
}

/// The transforms of `scripts/ifeval_cross_golden.py`, with Python's string semantics.
fn transform(name: &str, text: &str) -> String {
    match name {
        "none" => text.to_string(),
        "upper" => text.to_uppercase(),
        "lower" => text.to_lowercase(),
        "no_commas" => text.replace(',', ""),
        "first_third" => {
            let lines: Vec<&str> = text.split('\n').collect();
            lines[..(lines.len() / 3).max(1)].join("\n")
        }
        other => panic!("unknown transform {other}"),
    }
}

/// Every checker on many more texts: real responses (some transformed) against instructions
/// drawn from other prompts (`testdata/ifeval/golden_cross.jsonl`).
#[test]
fn agrees_with_official_on_cross_pairs() {
    let inputs = inputs();
    let mut responses: HashMap<(String, i64), String> = HashMap::new();
    for (src, file) in [
        ("gpt4", "golden_gpt4_20231107.jsonl"),
        ("llama", "golden_llama31_8b_instruct.jsonl"),
    ] {
        for line in std::fs::read_to_string(format!("testdata/ifeval/{file}"))
            .unwrap()
            .lines()
        {
            let g: Golden = serde_json::from_str(line).unwrap();
            responses.insert((src.to_string(), g.key), g.response);
        }
    }
    let (mut agree, mut total) = (0, 0);
    for line in std::fs::read_to_string("testdata/ifeval/golden_cross.jsonl")
        .unwrap()
        .lines()
    {
        let c: Cross = serde_json::from_str(line).unwrap();
        let response = transform(&c.transform, &responses[&(c.src.clone(), c.key)]);
        let instructions: Vec<_> = c
            .instructions
            .iter()
            .map(|&(k, i)| {
                let input = &inputs[&k].input;
                Instruction::parse(&input.instruction_id_list[i], &input.kwargs[i]).unwrap()
            })
            .collect();
        for (mode, expected) in [(Mode::Strict, &c.strict), (Mode::Loose, &c.loose)] {
            for (i, (a, b)) in follow(&instructions, &response, mode)
                .iter()
                .zip(expected)
                .enumerate()
            {
                total += 1;
                if a == b {
                    agree += 1;
                } else {
                    let (k, idx) = c.instructions[i];
                    eprintln!(
                        "DISAGREE cross {}:{} {} {:?} {}: rust {a}, official {b}",
                        c.src, c.key, c.transform, mode, inputs[&k].input.instruction_id_list[idx]
                    );
                }
            }
        }
    }
    let rate = agree as f64 / total as f64;
    eprintln!(
        "golden_cross.jsonl: {agree}/{total} verdicts agree ({:.3}%)",
        100.0 * rate
    );
    assert!(
        total >= 9000 && rate >= 0.995,
        "agreement {rate:.4} over {total}"
    );
}

/// The file-level path: responses matched by prompt text, official output lines and the
/// summary's accuracies.
#[test]
fn files_round_trip_and_report() {
    let dir = tempfile::tempdir().unwrap();
    let responses = dir.path().join("responses.jsonl");
    let inputs = inputs();
    let text = std::fs::read_to_string("testdata/ifeval/golden_llama31_8b_instruct.jsonl").unwrap();
    let goldens: Vec<Golden> = text
        .lines()
        .take(40)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let lines: Vec<String> = goldens
        .iter()
        .map(|g| {
            serde_json::json!({"prompt": inputs[&g.key].input.prompt, "response": g.response})
                .to_string()
        })
        .collect();
    std::fs::write(&responses, lines.join("\n") + "\n").unwrap();

    let (prepared, _) = read_inputs(INPUT, OnError::Fail).unwrap();
    let (map, _) = read_responses(responses.to_str().unwrap(), OnError::Fail, None).unwrap();
    let err = evaluate(read_inputs(INPUT, OnError::Fail).unwrap().0, &map, false)
        .err()
        .expect("missing responses are an error");
    assert!(
        err.to_string().contains("501 prompt(s) have no response"),
        "{err}"
    );
    let (evaluated, missing) = evaluate(prepared, &map, true).unwrap();
    assert_eq!((evaluated.len(), missing), (40, 501));

    let out = dir.path().join("out");
    write_outputs(&out, &evaluated).unwrap();
    let strict = std::fs::read_to_string(out.join("eval_results_strict.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(strict.lines().next().unwrap()).unwrap();
    let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "follow_all_instructions",
            "follow_instruction_list",
            "instruction_id_list",
            "prompt",
            "response"
        ]
    );
    assert!(
        strict
            .lines()
            .next()
            .unwrap()
            .starts_with("{\"follow_all_instructions\": "),
        "Python json.dumps separators"
    );

    let report = Report::new(&evaluated);
    let followed: usize = goldens
        .iter()
        .map(|g| g.strict.iter().filter(|&&b| b).count())
        .sum();
    let all: usize = goldens.iter().map(|g| g.strict.len()).sum();
    assert_eq!(report.instructions, all);
    assert_eq!(report.strict.instruction_level.total, all);
    assert!((report.strict.instruction_level.correct as i64 - followed as i64).abs() <= 1);
    assert!(report.loose.prompt_level.correct >= report.strict.prompt_level.correct);
    assert!(report.table().contains("prompt-level"));
}

/// Bad input lines are reported with file and line.
#[test]
fn malformed_input_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, body: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        p.to_str().unwrap().to_string()
    };
    let good = r#"{"key": 1, "prompt": "p", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}"#;
    let cases: [(&str, Vec<u8>, &str); 4] = [
        (
            "unknown_id.jsonl",
            format!(
                "{good}\n{}\n",
                good.replace("punctuation:no_comma", "punctuation:no_dots")
            )
            .into_bytes(),
            ":2: prompt key 1: instruction 1 (punctuation:no_dots): unknown instruction id",
        ),
        (
            "missing_field.jsonl",
            b"{\"key\": 1, \"prompt\": \"p\", \"kwargs\": []}\n".to_vec(),
            ":1",
        ),
        (
            "bad_json.jsonl",
            format!("{good}\n{good}\n{{oops\n").into_bytes(),
            ":3",
        ),
        (
            "not_utf8.jsonl",
            [good.as_bytes(), b"\n\xff\xfe\n"].concat(),
            ":2",
        ),
    ];
    for (name, body, expected) in cases {
        let path = write(name, &body);
        let err = read_inputs(&path, OnError::Fail)
            .err()
            .unwrap_or_else(|| panic!("{name} should fail"));
        let msg = format!("{err:#}");
        assert!(
            msg.contains(&format!("{path}{expected}"))
                || msg.contains(expected) && msg.contains(&path),
            "{name}: {msg}"
        );
    }
    // With skip, the bad line is left out and counted.
    let path = write("skip.jsonl", format!("{good}\n{{oops\n{good}\n").as_bytes());
    let (ok, rejected) = read_inputs(&path, OnError::Skip).unwrap();
    assert_eq!((ok.len(), rejected), (2, 1));
    // A response that is not a string.
    let path = write(
        "responses.jsonl",
        b"{\"prompt\": \"p\", \"response\": null}\n",
    );
    let msg = format!(
        "{:#}",
        read_responses(&path, OnError::Fail, None).unwrap_err()
    );
    assert!(msg.contains(&format!("{path}:1")), "{msg}");
    let _: Option<InputExample> = None;
    assert!(Path::new(INPUT).exists());
}
