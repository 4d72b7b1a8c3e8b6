//! The evaluation shared by every stage: rollout summaries with intervals and the paired test between
//! models, and the teacher-forced probe of opening decisions.

use std::collections::BTreeMap;

use burn::backend::NdArray;
use hat::eval::probe::{paired, probe, Decision, Probe};
use hat::eval::rollout::{paired_right_tool, paired_scores, summarise};
use hat::model::{presets, CausalLm};
use hat::record::{HarnessRef, Trajectory};
use hat::tokenizer::{save_hf, train_bpe, TrainOptions, QWEN3_CHAT_TEMPLATE};
use hat::train::trainer::dev_metrics;
use hat::train::view::ViewBuilder;
use serde_json::json;
use tempfile::TempDir;

/// An episode of intent `intent` that expected `check_inventory` and called `called`, scored `acc`.
fn episode(id: &str, intent: &str, called: &str, acc: f64) -> Trajectory {
    serde_json::from_value(json!({
        "id": id,
        "task": {"intent": intent, "room": {}, "viewer": {},
                 "expected": {"skill": "product-qa", "tool_calls": [{"tool": "check_inventory"}]}},
        "messages": [
            {"role": "user", "content": "Is p1 in stock?"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": called, "arguments": "{\"product_id\": \"p1\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "{\"stock\": 3}"},
            {"role": "assistant", "content": "Yes, 3 left."}
        ],
        "scores": {"accuracy": acc, "effectiveness": acc, "tool_rationality": acc, "skill_selection": 1.0},
        "meta": {"success": acc == 1.0}
    }))
    .unwrap()
}

#[test]
fn rollout_rates_come_with_their_interval_and_n() {
    let eps: Vec<Trajectory> = (0..10)
        .map(|i| {
            let called = if i < 7 {
                "check_inventory"
            } else {
                "get_product_detail"
            };
            episode(
                &format!("t{i}"),
                "product_qa",
                called,
                f64::from(u8::from(i < 5)),
            )
        })
        .collect();
    let s = summarise("original", &eps, 1);
    assert_eq!((s.episodes, s.errors), (10, 1));
    assert_eq!(s.right_tool.n, 10);
    assert!((s.right_tool.value - 0.7).abs() < 1e-12);
    // Wilson 7/10 (statsmodels): (0.396778, 0.892209).
    assert!(
        (s.right_tool.lo - 0.396_778).abs() < 1e-6 && (s.right_tool.hi - 0.892_209).abs() < 1e-6
    );
    assert!((s.accuracy.value - 0.5).abs() < 1e-12 && s.accuracy.lo < 0.5 && s.accuracy.hi > 0.5);
    assert!((s.success.value - 0.5).abs() < 1e-12 && s.success.n == 10);
}

#[test]
fn the_paired_rollout_test_counts_only_discordant_tasks() {
    let a: Vec<Trajectory> = (0..12)
        .map(|i| {
            episode(
                &format!("t{i}"),
                "product_qa",
                if i < 2 { "check_inventory" } else { "x" },
                1.0,
            )
        })
        .collect();
    // B is right on every task A got right and on ten more; one task only A played.
    let mut b: Vec<Trajectory> = (0..12)
        .map(|i| episode(&format!("t{i}"), "product_qa", "check_inventory", 1.0))
        .collect();
    b.push(episode("only-b", "product_qa", "check_inventory", 1.0));
    let (b_only, a_only, p) = paired_right_tool(&a, &b);
    assert_eq!((b_only, a_only), (10, 0));
    assert!((p - 2.0 * 0.5f64.powi(10)).abs() < 1e-12, "{p}");
}

#[test]
fn the_paired_score_tests_count_higher_scores_and_leave_ties_out() {
    // Accuracy (and effectiveness, tool rationality) 0.5 for A everywhere; B 1.0 on 7 tasks, 0.0 on 2,
    // 0.5 (a tie) on 3. Skill selection is 1.0 on both sides: all ties.
    let a: Vec<Trajectory> = (0..12)
        .map(|i| episode(&format!("t{i}"), "product_qa", "x", 0.5))
        .collect();
    let b: Vec<Trajectory> = (0..12)
        .map(|i| {
            let acc = match i {
                0..7 => 1.0,
                7..9 => 0.0,
                _ => 0.5,
            };
            episode(&format!("t{i}"), "product_qa", "x", acc)
        })
        .collect();
    let tests = paired_scores(&a, &b);
    let get = |name: &str| tests.iter().find(|(n, _)| *n == name).unwrap().1;
    let (higher, lower, p) = get("accuracy");
    assert_eq!((higher, lower), (7, 2));
    // Two-sided sign test, 2 of 9: 2 · P(X ≤ 2), X ~ Bin(9, 1/2) = 2 · 46/512.
    assert!((p - 2.0 * 46.0 / 512.0).abs() < 1e-12, "{p}");
    assert_eq!(get("effectiveness").0, 7);
    assert_eq!(get("skill selection"), (0, 0, 1.0));
}

fn decision(id: &str, hit: Option<bool>) -> Decision {
    Decision {
        id: id.into(),
        intent: "chat".into(),
        opening_exact: hit,
        opening_said: None,
        reply_exact: None,
        reply_said: None,
        calls: 1,
        calls_exact: usize::from(hit == Some(true)),
    }
}

#[test]
fn the_paired_probe_test_joins_records_by_id() {
    let a = Probe {
        decisions: vec![
            decision("r1", Some(true)),
            decision("r2", Some(false)),
            decision("r3", Some(false)),
            decision("r4", None),
        ],
        ..Probe::default()
    };
    let b = Probe {
        decisions: vec![
            decision("r3", Some(true)),
            decision("r2", Some(true)),
            decision("r1", Some(false)),
            decision("r4", Some(true)),
            decision("r9", Some(true)),
        ],
        ..Probe::default()
    };
    // r2, r3: B only; r1: A only; r4 (A has no opening call) and r9 (A never saw it) are not paired.
    let (b_only, a_only, p) = paired(&a, &b);
    assert_eq!((b_only, a_only), (2, 1));
    assert_eq!(p, 1.0);
}

/// A small BPE tokenizer with the Qwen3 chat template.
fn tokenizer_dir() -> TempDir {
    let corpus: Vec<String> = (0..60)
        .map(|i| format!("<|im_start|>user\nIs p{i} in stock? Yes, {i} left.<|im_end|>\n<tool_call>\n{{\"name\": \"check_inventory\", \"arguments\": {{\"product_id\": \"p{i}\"}}}}\n</tool_call>"))
        .collect();
    let tok = train_bpe(
        corpus,
        &TrainOptions {
            vocab_size: 600,
            min_frequency: 2,
        },
    )
    .unwrap();
    let dir = TempDir::new().unwrap();
    save_hf(&tok, dir.path(), QWEN3_CHAT_TEMPLATE, 4096).unwrap();
    dir
}

/// The probe scores every record once, by intent, says what the model would have called, and
/// agrees with the trainer's dev metric on the same views.
#[test]
fn the_probe_reports_opening_calls_by_intent_and_what_was_said() {
    let dir = tokenizer_dir();
    let b = ViewBuilder::from_dir(dir.path()).unwrap();
    let records: Vec<Trajectory> = (0..6)
        .map(|i| {
            episode(
                &format!("t{i}"),
                if i % 2 == 0 { "chat" } else { "product_qa" },
                "check_inventory",
                1.0,
            )
        })
        .collect();
    let cfg = presets::preset("tiny", Some(b.tokenizer().get_vocab_size(true))).unwrap();
    let d = Default::default();
    let model = CausalLm::<NdArray<f32>>::init(&cfg, 3, &d).unwrap();
    let p = probe(&model, &b, &records, 0, 4096, &d).unwrap();
    assert_eq!((p.records, p.skipped), (6, 0));
    assert_eq!(p.opening.n, 6);
    let by: BTreeMap<&str, u64> = p
        .opening_by_intent
        .iter()
        .map(|(k, r)| (k.as_str(), r.n))
        .collect();
    assert_eq!(by, BTreeMap::from([("chat", 3), ("product_qa", 3)]));
    assert_eq!(p.reply.n, 6, "every record ends with a reply");
    assert!(p.decisions.iter().all(|d| {
        d.opening_said.as_deref().is_some_and(|s| !s.is_empty())
            && d.reply_said.as_deref().is_some_and(|s| !s.is_empty())
    }));
    let views: Vec<_> = records.iter().map(|r| b.build(r).unwrap()).collect();
    let dev = dev_metrics(&model, &views, 0, 4096, &d).unwrap().unwrap();
    assert_eq!(dev.first_call_exact, Some(p.opening.value()));
    assert_eq!(dev.final_reply_exact, Some(p.reply.value()));
    assert!(
        (dev.loss - p.loss).abs() < 1e-4 * dev.loss,
        "{} vs {}",
        dev.loss,
        p.loss
    );
}

/// `hat report` over what the reproduce stages write: the paper's table with intervals, the paired test
/// between adjacent stages, each claim checked in a sentence — reproduced or not — and the plot.
#[test]
fn the_reproduce_report_lays_out_the_table_tests_adjacent_stages_and_checks_the_claims() {
    use hat::eval::report::{write, ReportArgs};
    let dir = TempDir::new().unwrap();
    let eval = dir.path().join("eval");
    std::fs::create_dir_all(&eval).unwrap();
    std::fs::create_dir_all(dir.path().join("ifeval")).unwrap();
    // The first `right` of 20 tasks solved (accuracy 1), the rest not. Held out, the last five tasks run
    // under a variant that renames the skill loader, the others under one that keeps it.
    let renamed: HarnessRef =
        serde_json::from_value(json!({"name": "shop", "hash": "sha256:aaaa1111ffff",
        "names": {"tools": {"load_skill": "fetch_body", "check_inventory": "stock"}}}))
        .unwrap();
    let kept: HarnessRef =
        serde_json::from_value(json!({"name": "shop", "hash": "sha256:bbbb2222ffff",
        "names": {"skills": {"product-qa": "qa"}}}))
        .unwrap();
    let write_set = |stage: &str, set: &str, right: usize| {
        let lines: Vec<String> = (0..20)
            .map(|i| {
                let ok = i < right;
                let mut t = episode(
                    &format!("t{i}"),
                    "product_qa",
                    if ok { "check_inventory" } else { "x" },
                    f64::from(u8::from(ok)),
                );
                if set == "heldout" {
                    t.harness = Some(if i >= 15 {
                        renamed.clone()
                    } else {
                        kept.clone()
                    });
                }
                serde_json::to_string(&t).unwrap()
            })
            .collect();
        std::fs::write(
            eval.join(format!("{stage}.{set}.jsonl")),
            lines.join("\n") + "\n",
        )
        .unwrap();
    };
    // (stage, primary, heldout) right of 20; phrasings only for the oracle.
    for (stage, primary, heldout) in [
        ("base", 2, 1),
        ("fixed", 16, 4),
        ("hsa", 16, 14),
        ("opd", 16, 14),
        ("rl", 15, 14),
        ("opd-fixed", 12, 4),
        ("oracle", 20, 20),
    ] {
        write_set(stage, "primary", primary);
        write_set(stage, "heldout", heldout);
    }
    write_set("oracle", "phrasings", 20);
    let ifeval = |strict: usize| {
        let rate = |k: usize| json!({"value": k as f64 / 100.0, "correct": k, "total": 100, "low": 0.0, "high": 1.0});
        json!({"prompt_strict": rate(strict), "prompt_loose": rate(strict), "instruction_strict": rate(strict), "instruction_loose": rate(strict)}).to_string()
    };
    for (stage, strict) in [
        ("base", 40),
        ("fixed", 20),
        ("hsa", 20),
        ("opd", 38),
        ("opd-fixed", 38),
    ] {
        std::fs::write(
            dir.path().join(format!("ifeval/{stage}.json")),
            ifeval(strict) + "\n",
        )
        .unwrap();
    }
    // Per-prompt answers of base and fixed SFT: fixed fails 8 of the 10 prompts base passes.
    for (stage, fails) in [("base", 0), ("fixed", 8)] {
        let rows: Vec<String> = (0..10)
            .map(|i| {
                let pass = i >= fails;
                json!({"id": format!("{i}"), "prompt": "p", "response": "r", "instruction_id_list": ["punctuation:no_comma"],
                       "strict": [pass], "loose": [pass], "prompt_strict": pass, "prompt_loose": pass})
                .to_string()
            })
            .collect();
        std::fs::write(
            dir.path().join(format!("ifeval/{stage}.answers.jsonl")),
            rows.join("\n") + "\n",
        )
        .unwrap();
    }
    // hsa was run twice: its second time replaces the first.
    std::fs::write(
        dir.path().join("times.tsv"),
        "base\t120\nhsa\t900\nhsa\t300\n",
    )
    .unwrap();
    let output = dir.path().join("report.md");
    let args = ReportArgs {
        dir: dir.path().to_path_buf(),
        stages: [
            "base=Base",
            "fixed=Fixed SFT",
            "hsa=HSA-SFT",
            "opd=+ OPD",
            "rl=+ RL",
        ]
        .map(String::from)
        .to_vec(),
        oracle: Some("oracle=Teacher".into()),
        output: output.clone(),
        plot: None,
    };
    let md = write(&args).unwrap();
    assert_eq!(std::fs::read_to_string(&output).unwrap(), md);
    // 16 of 20 solved = 80.0 [58.4, 91.9] (Wilson), and an empty cell where a set was not measured.
    assert!(
        md.contains("| HSA-SFT | 80.0 [58.4, 91.9] (n = 20) |"),
        "{md}"
    );
    assert!(md.contains("(n = 20) | 70.0 ["), "{md}");
    assert!(
        md.contains("| – | 20.0 ["),
        "phrasings not measured for HSA-SFT, IFEval 20/100: {md}"
    );
    // Paired test HSA vs fixed on held-out variants: HSA right on 10 tasks fixed got wrong, none the
    // other way: p = 2 · 0.5^10.
    assert!(
        md.contains("| HSA-SFT vs Fixed SFT | Harness-Variant QA-lite | 10 / 0, p = 1.95e-3 |"),
        "{md}"
    );
    assert!(md.contains("ahead of fixed-harness SFT on Harness-Variant QA-lite by ≥ 20 points (paired p < 0.01): reproduces — +50.0 points"), "{md}");
    // SFT lost 20 IFEval-lite points, OPD recovered 18: 90%.
    assert!(
        md.contains(
            "loss: reproduces — SFT lost 20.0 points (base 40.0 → 20.0), OPD recovered 90%"
        ),
        "{md}"
    );
    assert!(
        md.contains(
            "RL adds ≥ 2 points on Harness-Variant QA-lite: does NOT reproduce — +0.0 points"
        ),
        "{md}"
    );
    assert!(md.contains("within 5 points of the teacher on Live-Stream QA-lite: does NOT reproduce — teacher 100.0, final 75.0"), "{md}");
    assert!(
        md.contains("| base | 120 |\n| hsa | 300 |\n| total | 420 |"),
        "{md}"
    );
    // IFEval-lite paired on the prompts: fixed passes none that base fails, fails 8 base passes.
    assert!(
        md.contains("| Fixed SFT vs Base | IFEval-lite (prompt strict) | 0 / 8, p = 7.81e-3 | – |"),
        "{md}"
    );
    // Held-out variants one by one: no stage solves a task under the renamed loader.
    assert!(
        md.contains("| `bbbb222`: loader kept; renamed: tools 0, skills 1, argument keys 0 | 1 / 15 | 4 / 15 | 14 / 15 | 14 / 15 | 14 / 15 |"),
        "{md}"
    );
    assert!(md.contains("No stage solves a task under 1 of the 2 variants: `aaaa111`: loader → `fetch_body`; renamed: tools 2, skills 0, argument keys 0."), "{md}");
    assert!(md.contains("OPD from HSA-SFT keeps Live-Stream right tool within 2 points: reproduces — 0.800 → 0.800 (+0.0 points)"), "{md}");
    let svg = std::fs::read_to_string(dir.path().join("scores.svg")).unwrap();
    // 6 rows × 3 QA sets + 4 IFEval bars (the rest absent), plus 6 legend keys.
    assert_eq!(svg.matches("<rect x=").count(), 6 * 2 + 1 + 4 + 6, "{svg}");

    // make opd's report: OPD from the fixed-harness SFT model wins back 18 of the 20 points but loses
    // a fifth of the right tools.
    let args = ReportArgs {
        stages: ["base=Base", "fixed=Fixed SFT", "opd-fixed=+ OPD"]
            .map(String::from)
            .to_vec(),
        oracle: None,
        output: dir.path().join("opd.md"),
        ..args
    };
    let md = write(&args).unwrap();
    assert!(md.contains("OPD from Fixed SFT recovers ≥ 80% of SFT's IFEval-lite loss: reproduces — SFT lost 20.0 points (base 40.0 → 20.0), OPD recovered 90% (38.0)"), "{md}");
    assert!(md.contains("OPD from Fixed SFT keeps Live-Stream right tool within 2 points: does NOT reproduce — 0.800 → 0.600 (-20.0 points)"), "{md}");
    // Only the claims about its stages: no HSA-SFT, no RL.
    assert!(!md.contains("OPD from HSA-SFT"), "{md}");
    assert!(
        !md.contains("HSA-SFT vs fixed") && !md.contains("RL"),
        "{md}"
    );
}

/// `teacher-distill eval` of two models with `--dtype` given once per value of `dtypes`, on files that
/// do not exist: fails either way; stderr says why.
fn eval_two_models_with(dtypes: &[&str]) -> String {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_teacher-distill"));
    cmd.args(["eval", "--model", "a=missing", "--model", "b=missing"])
        .args(["--set", "s=missing", "--tasks", "missing.jsonl"]);
    for d in dtypes {
        cmd.args(["--dtype", d]);
    }
    let out = cmd.output().unwrap();
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `teacher-distill eval --dtype` takes one value for every model or one per model, and says so
/// before it reads anything when it gets another count.
#[test]
fn eval_takes_one_dtype_or_one_per_model() {
    let err = eval_two_models_with(&["f32", "bf16", "int8"]);
    assert!(err.contains("--dtype: 3 values for 2 models"), "{err}");
    // Two values for two models get past the check, to the missing task file.
    let err = eval_two_models_with(&["f32", "int8"]);
    assert!(err.contains("missing.jsonl"), "{err}");
}
