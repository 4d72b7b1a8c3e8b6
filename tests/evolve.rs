//! Harness evolution end to end, through the `hat` and `judge` binaries: on a copy of the sample
//! harness whose shipping-info skill no longer says what it is for (`testdata/evolve/taolive-broken`),
//! played by a reading oracle that writes over-long replies on 15% of first attempts, the offline loop
//! rejects relaxing the reply-length hook as a regression, then finds the damaged skill, fixes it and
//! records everything; with an endpoint proposer, unsafe and invalid edits are refused and a harmful one
//! is rejected as a regression; the ledger agrees with `judge compare` and the history commands read it
//! back.

mod fake_endpoint;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use fake_endpoint::serve;
use serde_json::{json, Value};

const BROKEN: &str = "testdata/evolve/taolive-broken";
const ORIGINAL: &str = "harness-samples/taolive";

fn bin(name: &str, args: &[&str]) -> Output {
    let exe = match name {
        "hat" => env!("CARGO_BIN_EXE_hat"),
        "judge" => env!("CARGO_BIN_EXE_judge"),
        _ => unreachable!(),
    };
    let out = Command::new(exe)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{name} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// 300 dev tasks (22 of them shipping questions) in `dir`.
fn dev_tasks(dir: &Path) -> PathBuf {
    let tasks = dir.join("dev.jsonl");
    bin(
        "hat",
        &[
            "sim",
            "tasks",
            "--n",
            "300",
            "--split",
            "dev",
            "--seed",
            "1",
            "-o",
            path(&tasks),
        ],
    );
    tasks
}

fn ledger(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("ledger.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn decisions(entries: &[Value]) -> Vec<&str> {
    entries
        .iter()
        .map(|e| e["decision"].as_str().unwrap())
        .collect()
}

fn evolve(tasks: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "evolve",
        "run",
        "--harness",
        BROKEN,
        "--tasks",
        path(tasks),
        "--out",
        path(out),
        "--policy",
        "reading-oracle",
        "--original",
        ORIGINAL,
    ];
    args.extend_from_slice(extra);
    bin("hat", &args)
}

/// The reading oracle, erring with over-long replies only.
const NOISY: [&str; 13] = [
    "--noisy",
    "--noise-long-reply",
    "0.15",
    "--noise-forbidden-term",
    "0",
    "--noise-ungrounded-price",
    "0",
    "--noise-over-quantity",
    "0",
    "--noise-malformed-args",
    "0",
    "--noise-wrong-tool",
    "0",
];

#[test]
fn the_offline_loop_rejects_a_harmful_edit_fixes_the_damaged_skill_and_keeps_the_ledger() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = dev_tasks(tmp.path());
    let out = tmp.path().join("evo");
    let run = [&["--rounds", "3"][..], &NOISY].concat();
    evolve(&tasks, &out, &run);

    let entries = ledger(&out);
    assert_eq!(
        decisions(&entries),
        ["baseline", "regression", "accept"],
        "{entries:#?}"
    );
    let (v0, v1, v2) = (&entries[0], &entries[1], &entries[2]);
    assert!(v0["figures"]["skill_selection"].as_f64().unwrap() < 0.95);

    // The hook that fired most was relaxed first: over-long replies then reached the viewers.
    assert_eq!(v1["proposal"]["cluster"], "hooks/hook_fired: reply_length");
    let why = v1["reason"].as_str().unwrap();
    assert!(why.starts_with("worse on effectiveness 0/"), "{why}");
    let effectiveness = |e: &Value| e["figures"]["effectiveness"].as_f64().unwrap();
    assert!(effectiveness(v1) < effectiveness(v0));

    // Then the damaged skill, built on v0 and not on the regression.
    assert_eq!(
        v2["proposal"]["cluster"],
        "skill_selection/no_skill: shipping-info"
    );
    assert_eq!(v2["parent"], 0);
    assert_eq!(v2["figures"]["skill_selection"], 1.0);
    assert_eq!(effectiveness(v2), effectiveness(v0));

    // The diagnosis named both clusters and their files; each diff touches only its file.
    let report = std::fs::read_to_string(out.join("diagnosis/v0.md")).unwrap();
    assert!(
        report.contains("| 1 | hooks/hook_fired: reply_length |")
            && report.contains("| 2 | skill_selection/no_skill: shipping-info | 22 |")
            && report.contains("skills/shipping-info/SKILL.md"),
        "{report}"
    );
    let diff = |v: usize| std::fs::read_to_string(out.join(format!("diffs/v{v}.diff"))).unwrap();
    let touched = |v: usize| -> Vec<String> {
        diff(v)
            .lines()
            .filter(|l| l.starts_with("+++ "))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(touched(1), ["+++ b/hooks/hooks.json"]);
    assert_eq!(touched(2), ["+++ b/skills/shipping-info/SKILL.md"]);
    let direct_diff = bin("hat", &["evolve", "diff", path(&out), "0", "2"]).stdout;
    assert_eq!(String::from_utf8(direct_diff).unwrap(), diff(2));

    // Each comparison in the ledger is what `judge compare` says on the same runs.
    for (v, entry) in [(1, v1), (2, v2)] {
        for c in entry["comparisons"].as_array().unwrap() {
            let metric = c["metric"].as_str().unwrap().replace('_', "-");
            let runs = [
                out.join("runs/v0.jsonl"),
                out.join(format!("runs/v{v}.jsonl")),
            ];
            let args = [
                "compare",
                path(&runs[0]),
                path(&runs[1]),
                "--metric",
                &metric,
                "--format",
                "json",
            ];
            let direct: Value = serde_json::from_slice(&bin("judge", &args).stdout).unwrap();
            let ours = [
                &c["wins"],
                &c["losses"],
                &c["ties"],
                &c["p_value"],
                &c["verdict"],
            ];
            let theirs = [
                &direct["tally"]["wins"],
                &direct["tally"]["losses"],
                &direct["tally"]["ties"],
                &direct["p_value"],
                &direct["verdict"],
            ];
            assert_eq!(ours, theirs, "v{v} {metric}");
        }
    }

    // History, checkout of the best version, and a second run that has nothing left to try.
    let history = String::from_utf8(bin("hat", &["evolve", "history", path(&out)]).stdout).unwrap();
    assert!(
        history.contains("| v1 | v0 |") && history.contains("| v2 | v0 |"),
        "{history}"
    );
    let best = tmp.path().join("best");
    bin(
        "hat",
        &["evolve", "checkout", path(&out), "--to", path(&best)],
    );
    let hash = String::from_utf8(bin("hat", &["harness", "hash", path(&best)]).stdout).unwrap();
    assert!(hash.contains(v2["hash"].as_str().unwrap()), "{hash}");
    let again = evolve(&tasks, &out, &run);
    assert!(String::from_utf8_lossy(&again.stderr).contains("no cluster has an untried proposal"));
    assert_eq!(
        ledger(&out).len(),
        3,
        "a continued run adds nothing when nothing is left"
    );
}

#[test]
fn endpoint_edits_that_escape_do_not_validate_or_do_harm_are_refused_or_rejected() {
    let good = std::fs::read_to_string(format!(
        "{}/{ORIGINAL}/skills/shipping-info/SKILL.md",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let product_qa = std::fs::read_to_string(format!(
        "{}/{ORIGINAL}/skills/product-qa/SKILL.md",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let vague = product_qa
        .lines()
        .map(|l| {
            if l.starts_with("description:") {
                "description: \"有问题都可以用。\"".to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let answers = [
        json!({"title": "escape", "edits": [{"path": "../../outside.txt", "content": "written"}]}),
        json!({"title": "broken tool", "edits": [{"path": "tools/get_shipping_info.json", "content": "{not json"}]}),
        json!({"title": "blur product-qa", "edits": [{"path": "skills/product-qa/SKILL.md", "content": vague}]}),
        json!({"title": "restore shipping-info", "rationale": "its description lost its cases",
               "edits": [{"path": "skills/shipping-info/SKILL.md", "content": good}]}),
    ];
    let (url, _) = serve(move |body, n| {
        assert!(
            body.contains("no_skill: shipping-info")
                && body.contains("File skills/shipping-info/SKILL.md"),
            "the prompt carries the cluster and its file"
        );
        (
            200,
            format!("Here is my edit:\n```json\n{}\n```", answers[n.min(3)]),
        )
    });
    let tmp = tempfile::tempdir().unwrap();
    let tasks = dev_tasks(tmp.path());
    let out = tmp.path().join("evo");
    evolve(
        &tasks,
        &out,
        &[
            "--rounds",
            "4",
            "--patience",
            "4",
            "--propose-url",
            &url,
            "--propose-model",
            "fixed",
        ],
    );
    let entries = ledger(&out);
    assert_eq!(
        decisions(&entries),
        ["baseline", "refused", "refused", "regression", "accept"],
        "{entries:#?}"
    );
    let reason = |i: usize| entries[i]["reason"].as_str().unwrap();
    assert!(
        reason(1).contains("leaves the harness directory"),
        "{}",
        reason(1)
    );
    assert!(
        reason(2).contains("tools/get_shipping_info.json"),
        "{}",
        reason(2)
    );
    assert!(
        reason(3).contains("worse on skill_selection"),
        "{}",
        reason(3)
    );
    assert_eq!(entries[4]["parent"], 0, "the regression was not built upon");
    assert_eq!(entries[4]["figures"]["skill_selection"], 1.0);
    for e in &entries[1..] {
        assert_eq!(e["proposal"]["source"], "fixed");
        assert!(e["proposal"]["prompt"]
            .as_str()
            .unwrap()
            .contains("Failure cluster"));
        assert!(e["proposal"]["response"]
            .as_str()
            .unwrap()
            .contains("```json"));
    }
    // Nothing was written outside the run's own directories.
    for dir in [out.as_path(), tmp.path(), tmp.path().parent().unwrap()] {
        assert!(!dir.join("outside.txt").exists());
    }
    assert!(!out.join("versions/v1").exists() && !out.join("versions/v2").exists());
}
