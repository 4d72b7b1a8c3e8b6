//! The judge end to end: verifiable dimensions on hand-built good and bad trajectories (original
//! harness and variants with renamed tools and tighter limits), statistics against scipy/sklearn
//! values, reports, comparisons, the rubric, the LLM judge against a fake endpoint, and the CLI on
//! malformed input.

mod fake_endpoint;

use std::sync::atomic::Ordering;
use std::time::Duration;

use fake_endpoint::serve;

use hat::judge::calibrate::{calibrate, read_labels};
use hat::judge::compare::compare;
use hat::judge::endpoint::{Endpoint, EndpointConfig};
use hat::judge::llm::{LlmJudge, Tally, Winner};
use hat::judge::metric::Metric;
use hat::judge::report::report;
use hat::judge::rubric::rubric;
use hat::judge::stats::{cohen_kappa, pearson, sign_test, spearman};
use hat::judge::verifiable::{judge, score, TokenCounter};
use hat::record::Trajectory;
use serde_json::{json, Value};

const PROMO: &str = r#"{"product_id":"p001","list_price":199,"coupon":{"threshold":200,"amount":20},"discount":null,"final_price":179}"#;

fn tool(name: &str, param: &str) -> Value {
    json!({"type": "function", "function": {"name": name, "description": "…",
        "parameters": {"type": "object", "properties": {param: {"type": "string"}}, "required": [param]}}})
}

fn call(id: &str, name: &str, args: Value) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})
}

/// A price question answered well under the original harness: load the skill, read the promotion,
/// state the final price within the limit.
fn good() -> Value {
    json!({
        "id": "price-1",
        "task": {"intent": "product_qa", "expected": {
            "skill": "product-qa",
            "tool_calls": [{"tool": "get_promotions", "args": {"product_id": "p001"}}],
            "facts": ["179"], "forbidden": ["最便宜"]}},
        "harness": {"name": "taolive", "version": "1.0.0", "hash": "sha256:00"},
        "tools": [tool("get_promotions", "product_id"), tool("load_skill", "name"), tool("check_inventory", "product_id")],
        "messages": [
            {"role": "system", "content": "你是主播。每条回复不超过 120 个字。当前商品 p001。"},
            {"role": "user", "content": "这个多少钱？"},
            {"role": "assistant", "content": null, "reasoning_content": "查一下优惠",
             "tool_calls": [call("c1", "load_skill", json!({"name": "product-qa"})), call("c2", "get_promotions", json!({"product_id": "p001"}))]},
            {"role": "tool", "tool_call_id": "c1", "content": "先查价格再回答"},
            {"role": "tool", "tool_call_id": "c2", "content": PROMO},
            {"role": "assistant", "content": "到手价¥179，满200减20，喜欢就冲！"}
        ]
    })
}

/// The same episode rewritten for a variant that renames tools and skills.
fn renamed(mut v: Value) -> Value {
    v["harness"]["variant"] =
        json!({"seed": 3, "ops": [{"op": "rename_tool"}, {"op": "rename_skill"}]});
    v["harness"]["names"] = json!({"tools": {"get_promotions": "promo_lookup", "load_skill": "fetch_rules"}, "skills": {"product-qa": "商品答疑"}});
    v["tools"] = json!([
        tool("promo_lookup", "product_id"),
        tool("fetch_rules", "name"),
        tool("check_inventory", "product_id")
    ]);
    v["messages"][2]["tool_calls"] = json!([
        call("c1", "fetch_rules", json!({"name": "商品答疑"})),
        call("c2", "promo_lookup", json!({"product_id": "p001"}))
    ]);
    v
}

fn traj(v: Value) -> Trajectory {
    serde_json::from_value(v).expect("hand-built record parses")
}

fn scored(v: Value) -> Trajectory {
    let mut t = traj(v);
    score(&mut t, &TokenCounter::Approximate);
    t
}

fn reason(t: &Trajectory, dim: &str) -> String {
    t.scores.extra["reasons"][dim].as_str().unwrap().to_string()
}

#[test]
fn a_good_episode_scores_full_marks() {
    let t = scored(good());
    let s = &t.scores;
    assert_eq!(
        (
            s.accuracy,
            s.effectiveness,
            s.tool_rationality,
            s.skill_selection
        ),
        (Some(1.0), Some(1.0), Some(1.0), Some(1.0))
    );
    assert_eq!(s.cot_length, Some(0.0));
    assert_eq!(s.judge.as_deref(), Some("verifiable"));
    assert!(
        reason(&t, "effectiveness").contains("/120 chars"),
        "{}",
        reason(&t, "effectiveness")
    );
    assert_eq!(s.extra["details"]["tools"]["matched"], 1);
}

#[test]
fn renamed_tools_and_skills_are_judged_by_their_new_names() {
    let t = scored(renamed(good()));
    let s = &t.scores;
    assert_eq!(
        (s.tool_rationality, s.skill_selection),
        (Some(1.0), Some(1.0)),
        "{:?}",
        s.extra
    );

    // Calling the old canonical names under the variant: hallucinated tool, missed call, unknown skill.
    let mut v = renamed(good());
    v["messages"][2]["tool_calls"] = json!([
        call("c1", "fetch_rules", json!({"name": "product-qa"})),
        call("c2", "get_promotions", json!({"product_id": "p001"}))
    ]);
    let t = scored(v);
    assert_eq!(t.scores.tool_rationality, Some(0.0));
    assert!(reason(&t, "tool_rationality").contains("called tools not offered: get_promotions"));
    assert_eq!(t.scores.skill_selection, Some(0.0));
    assert!(reason(&t, "skill_selection").contains("names not in this harness: product-qa"));
}

#[test]
fn a_tighter_length_limit_is_enforced_from_the_record() {
    // The same reply obeys the original 120-character limit but not a variant's 12.
    let mut v = good();
    v["meta"] = json!({"limits": {"max_reply_chars": 12}});
    let t = scored(v);
    assert_eq!(t.scores.effectiveness, Some(0.5));
    assert!(reason(&t, "effectiveness").contains("over the limit 12 (meta.limits)"));
    // Limits also come from the harness reference, and the system prompt's wording.
    let mut v = good();
    v["harness"]["limits"] = json!({"max_reply_chars": 12});
    assert_eq!(scored(v).scores.effectiveness, Some(0.5));
    let mut v = good();
    v["messages"][0]["content"] = json!("Keep every reply within 10 characters.");
    assert_eq!(scored(v).scores.effectiveness, Some(0.5));
}

#[test]
fn invented_numbers_and_forbidden_terms_are_caught() {
    let mut v = good();
    v["messages"][5]["content"] = json!("到手价¥159，满200减20！");
    let t = scored(v);
    assert!((t.scores.accuracy.unwrap() - 2.0 / 3.0).abs() < 1e-12);
    assert!(reason(&t, "accuracy").contains("invented numbers 159"));
    assert_eq!(
        t.scores.effectiveness,
        Some(0.0),
        "the expected fact 179 is missing"
    );

    let mut v = good();
    v["messages"][5]["content"] = json!("到手价¥179，全网最便宜！");
    let t = scored(v);
    assert_eq!(t.scores.accuracy, Some(1.0));
    assert_eq!(t.scores.effectiveness, Some(0.0));
    assert!(reason(&t, "effectiveness").contains("forbidden 最便宜"));
}

#[test]
fn a_reply_without_the_asked_numbers_is_unscored_on_accuracy_not_paid() {
    // The viewer asked the price (fact "179"); a clarifying question states nothing to check. Scoring
    // it 1 taught GRPO to answer product questions that way; unscored, effectiveness decides.
    let mut v = good();
    v["messages"][5]["content"] = json!("请问宝宝问的是几号链接呀？我马上帮你查～");
    let t = scored(v);
    assert_eq!(t.scores.accuracy, None);
    assert!(reason(&t, "accuracy").starts_with("unscored"));
    assert_eq!(t.scores.effectiveness, Some(0.0));
    assert!(failures(&t).iter().all(|(d, _, _)| d != "accuracy"));

    // Where the task's facts have no number (a chat turn), a reply without numbers is still accurate.
    let mut v = good();
    v["task"]["expected"]["facts"] = json!([]);
    v["messages"][5]["content"] = json!("欢迎来到直播间，喜欢就冲！");
    assert_eq!(scored(v).scores.accuracy, Some(1.0));
}

/// `scores.failures` as (dimension, kind, subject) triples, sorted.
fn failures(t: &Trajectory) -> Vec<(String, String, String)> {
    let mut v: Vec<(String, String, String)> = t
        .scores
        .extra
        .get("failures")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap().to_string();
            (s("dimension"), s("kind"), s("subject"))
        })
        .collect();
    v.sort();
    v
}

fn failure(dimension: &str, kind: &str, subject: &str) -> (String, String, String) {
    (dimension.into(), kind.into(), subject.into())
}

#[test]
fn every_shortfall_is_written_as_a_countable_failure() {
    assert!(
        scored(good()).scores.extra.get("failures").is_none(),
        "full marks, no failures"
    );

    let mut v = good();
    v["messages"][5]["content"] = json!("到手价¥159，满200减20！");
    assert_eq!(
        failures(&scored(v)),
        [
            failure("accuracy", "ungrounded_number", "159"),
            failure("effectiveness", "missing_fact", "179"),
        ]
    );

    // Old names under a renamed variant: the failures carry canonical ids, whatever the surface name.
    let mut v = renamed(good());
    v["messages"][2]["tool_calls"] = json!([
        call("c1", "fetch_rules", json!({"name": "product-qa"})),
        call("c2", "get_promotions", json!({"product_id": "p001"}))
    ]);
    assert_eq!(
        failures(&scored(v)),
        [
            failure("skill_selection", "wrong_skill", "product-qa"),
            failure("tool_rationality", "hallucinated_tool", "get_promotions"),
            failure("tool_rationality", "missing_call", "get_promotions"),
        ]
    );

    // A reply that fills its limit and still leaves the fact out was cut by the limit.
    let mut v = good();
    v["meta"] = json!({"limits": {"max_reply_chars": 12}});
    v["messages"][5]["content"] = json!("满200减20，喜欢就冲");
    assert_eq!(
        failures(&scored(v)),
        [
            failure("effectiveness", "missing_fact", "179"),
            failure("effectiveness", "reply_at_limit", "max_reply_chars"),
        ]
    );

    // A timeout left unretried.
    let mut v = good();
    v["messages"][4]["content"] = json!(r#"{"error":{"code":"timeout","message":"late"}}"#);
    v["messages"][5]["content"] = json!("喜欢就冲！");
    assert!(failures(&scored(v)).contains(&failure(
        "tool_rationality",
        "fault_not_recovered",
        "get_promotions"
    )));
}

#[test]
fn faults_must_be_retried_and_repeats_cost() {
    let timeout =
        r#"{"error":{"code":"timeout","message":"get_promotions did not answer within 3000 ms"}}"#;
    let mut v = good();
    let msgs = v["messages"].as_array_mut().unwrap();
    msgs[4]["content"] = json!(timeout);
    // Gave up after the timeout and answered from nothing: unhandled fault, invented price.
    let t = scored(v.clone());
    assert_eq!(
        t.scores.tool_rationality,
        Some(0.0),
        "{}",
        reason(&t, "tool_rationality")
    );
    assert!(t.scores.accuracy.unwrap() < 1.0);
    // Retried after the timeout: full credit.
    let msgs = v["messages"].as_array_mut().unwrap();
    msgs.insert(5, json!({"role": "assistant", "content": null, "tool_calls": [call("c3", "get_promotions", json!({"product_id": "p001"}))]}));
    msgs.insert(
        6,
        json!({"role": "tool", "tool_call_id": "c3", "content": PROMO}),
    );
    let t = scored(v.clone());
    assert_eq!(
        t.scores.tool_rationality,
        Some(1.0),
        "{}",
        reason(&t, "tool_rationality")
    );
    assert_eq!(t.scores.extra["details"]["tools"]["recovered"], 1);
    // Asking again after a success is redundant: one bad call of four.
    let msgs = v["messages"].as_array_mut().unwrap();
    msgs.insert(7, json!({"role": "assistant", "content": null, "tool_calls": [call("c4", "get_promotions", json!({"product_id": "P001"}))]}));
    msgs.insert(
        8,
        json!({"role": "tool", "tool_call_id": "c4", "content": PROMO}),
    );
    let t = scored(v);
    assert_eq!(t.scores.tool_rationality, Some(0.75));
    assert!(reason(&t, "tool_rationality").contains("repeated successful calls"));
}

#[test]
fn wrong_arguments_miss_the_needed_call() {
    let mut v = good();
    v["messages"][2]["tool_calls"][1] = call("c2", "get_promotions", json!({"product_id": "p002"}));
    let t = scored(v);
    assert_eq!(t.scores.tool_rationality, Some(0.0));
    assert!(reason(&t, "tool_rationality")
        .contains("missing or wrong-argument calls to get_promotions"));
}

#[test]
fn skill_selection_needs_the_expected_skill() {
    let mut v = good();
    v["messages"][2]["tool_calls"][0] = call("c1", "load_skill", json!({"name": "casual-chat"}));
    assert_eq!(scored(v).scores.skill_selection, Some(0.0));
    // Declared by the runtime instead of loaded.
    let mut v = good();
    v["tools"] = json!([tool("get_promotions", "product_id")]);
    v["messages"][2]["tool_calls"] =
        json!([call("c2", "get_promotions", json!({"product_id": "p001"}))]);
    let t = scored(v.clone());
    assert_eq!(
        t.scores.skill_selection, None,
        "not observable without load_skill or meta.skill"
    );
    assert!(reason(&t, "skill_selection").contains("not observable"));
    v["meta"] = json!({"skill": "product-qa"});
    assert_eq!(scored(v).scores.skill_selection, Some(1.0));
}

#[test]
fn silence_clarification_and_reasoning_length() {
    let mut v = good();
    v["task"]["expected"] = json!({"silent": true});
    assert_eq!(
        scored(v.clone()).scores.effectiveness,
        Some(0.0),
        "spoke where silence was required"
    );
    v["messages"].as_array_mut().unwrap().truncate(2);
    let t = scored(v);
    assert_eq!(
        (t.scores.effectiveness, t.scores.accuracy),
        (Some(1.0), Some(1.0))
    );

    let mut v = good();
    v["task"]["expected"] = json!({"clarify": true});
    v["messages"][5]["content"] = json!("您问的是哪一款呢？");
    let t = scored(v);
    assert_eq!(t.scores.effectiveness, Some(1.0));
    assert_eq!(
        t.scores.tool_rationality,
        Some(0.5),
        "a data call on an ambiguous request: {}",
        reason(&t, "tool_rationality")
    );

    let mut v = good();
    v["messages"][2]["reasoning_content"] = json!("想".repeat(150));
    assert!((scored(v.clone()).scores.cot_length.unwrap() + 0.05).abs() < 1e-12);
    v["messages"][2]["reasoning_content"] = json!("word ".repeat(400));
    assert_eq!(scored(v).scores.cot_length, Some(-0.1));
}

#[test]
fn turn_start_limits_scoring_to_the_last_turn() {
    let mut v = good();
    let msgs = v["messages"].as_array_mut().unwrap();
    msgs.insert(1, json!({"role": "user", "content": "你好"}));
    msgs.insert(
        2,
        json!({"role": "assistant", "content": "欢迎来到直播间！"}),
    );
    v["meta"] = json!({"turn_start": 3});
    assert_eq!(
        judge(&traj(v), &TokenCounter::Approximate)
            .tool_rationality
            .value,
        1.0
    );
}

fn fixtures() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/testdata/judge/stats.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn close(a: Option<f64>, b: &Value) {
    let (a, b) = (a.unwrap(), b.as_f64().unwrap());
    assert!((a - b).abs() < 1e-9, "{a} vs {b}");
}

#[test]
fn statistics_match_scipy_and_sklearn() {
    let f = fixtures();
    for case in f["kappa"].as_array().unwrap() {
        let a: Vec<i64> = case["a"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_i64().unwrap())
            .collect();
        let b: Vec<i64> = case["b"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_i64().unwrap())
            .collect();
        close(cohen_kappa(&a, &b), &case["kappa"]);
    }
    for case in f["correlation"].as_array().unwrap() {
        let (x, y) = (floats(&case["x"]), floats(&case["y"]));
        close(pearson(&x, &y), &case["pearson"]);
        close(spearman(&x, &y), &case["spearman"]);
    }
    for case in f["sign_test"].as_array().unwrap() {
        let p = sign_test(case["k"].as_u64().unwrap(), case["n"].as_u64().unwrap());
        let want = case["p"].as_f64().unwrap();
        assert!(
            (p - want).abs() <= 1e-12 + 1e-9 * want,
            "k={} n={}: {p} vs {want}",
            case["k"],
            case["n"]
        );
    }
}

#[test]
fn calibration_matches_sklearn_on_the_fixture_set() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/judge/");
    let labels = read_labels(std::path::Path::new(&format!("{dir}calib_labels.csv"))).unwrap();
    let records: Vec<Trajectory> =
        hat::jsonl::read_all(&format!("{dir}calib_judged.jsonl")).unwrap();
    let c = calibrate(&labels, &records, Metric::Accuracy, 0.5).unwrap();
    let want = &fixtures()["calibration"];
    for (got, exp) in std::iter::once((&c.overall, &want["overall"]))
        .chain(c.by_intent.iter().map(|(k, a)| (a, &want["by_intent"][k])))
    {
        assert_eq!(got.n, exp["n"].as_u64().unwrap());
        close(got.agreement, &exp["agreement"]);
        close(got.kappa, &exp["kappa"]);
        close(got.spearman, &exp["spearman"]);
        close(got.pearson, &exp["pearson"]);
    }
    assert_eq!(
        serde_json::to_value(&c.confusion).unwrap(),
        want["confusion"]
    );
    assert!(c.markdown().contains("Cohen's κ"));
}

#[test]
fn calibration_labels_errors_name_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("h.csv");
    std::fs::write(&p, "id,label\na,1\nb,yes\n").unwrap();
    let e = read_labels(&p).unwrap_err().to_string();
    assert!(
        e.contains("h.csv:3") && e.contains("'label'") && e.contains("yes"),
        "{e}"
    );
    std::fs::write(&p, "name,score\na,1\n").unwrap();
    assert!(read_labels(&p)
        .unwrap_err()
        .to_string()
        .contains("'id' and 'label'"));
}

fn with_mean(id: usize, v: f64) -> Trajectory {
    traj(
        json!({"id": format!("c{id}"), "task": {"intent": if id % 2 == 0 {"product_qa"} else {"chat"}},
        "scores": {"accuracy": v, "effectiveness": v}}),
    )
}

#[test]
fn compare_accepts_a_clear_improvement_and_rejects_noise() {
    let a: Vec<Trajectory> = (0..100).map(|i| with_mean(i, 0.5)).collect();
    let b: Vec<Trajectory> = (0..100)
        .map(|i| {
            with_mean(
                i,
                if i < 35 {
                    0.9
                } else if i == 35 {
                    0.1
                } else {
                    0.5
                },
            )
        })
        .collect();
    let c = compare(&a, &b, Metric::Mean, 0.05, 1e-9).unwrap();
    assert_eq!((c.tally.wins, c.tally.losses, c.tally.ties), (35, 1, 64));
    assert!(c.p_value < 1e-3);
    assert_eq!(c.verdict, "accept");
    assert_eq!(c.regressions.len(), 1);
    assert!(c.markdown("a", "b").contains("ACCEPT"));

    let b: Vec<Trajectory> = (0..100)
        .map(|i| {
            with_mean(
                i,
                if i < 6 {
                    0.9
                } else if i < 10 {
                    0.1
                } else {
                    0.5
                },
            )
        })
        .collect();
    let c = compare(&a, &b, Metric::Mean, 0.05, 1e-9).unwrap();
    assert_eq!(c.verdict, "reject");
    assert!(c.reason.contains("no significant improvement"));

    let mut dup = a.clone();
    dup.push(with_mean(0, 0.1));
    assert!(compare(&dup, &b, Metric::Mean, 0.05, 0.0)
        .unwrap_err()
        .to_string()
        .contains("twice"));
}

#[test]
fn report_groups_by_intent_and_variant() {
    let records = vec![scored(good()), scored(renamed(good())), {
        let mut v = good();
        v["messages"][5]["content"] = json!("到手价¥159");
        scored(v)
    }];
    let r = report(&records, 0.8);
    assert_eq!(r.overall.records, 3);
    assert_eq!(r.overall.passed, 2);
    assert_eq!(r.by_variant["taolive@1.0.0"].records, 2);
    assert_eq!(
        r.by_variant["taolive@1.0.0+rename_skill+rename_tool"].passed,
        1
    );
    let acc = r.by_intent["product_qa"].dimensions["accuracy"];
    assert_eq!(acc.n, 3);
    assert!(r.markdown("t").contains("| product_qa | 3 |"));
}

#[test]
fn rubric_metrics_over_a_robustness_set() {
    let mut faulted = good();
    faulted["meta"] =
        json!({"faults": [{"tool": "get_promotions", "kind": "timeout", "round": 0}]});
    faulted["messages"][4]["content"] = json!(r#"{"error":{"code":"timeout"}}"#);
    let mut overuse = renamed(good());
    overuse["messages"][2]["tool_calls"]
        .as_array_mut()
        .unwrap()
        .push(call("c9", "get_promotions", json!({"product_id": "p001"})));
    let mut long = good();
    long["meta"] = json!({"limits": {"max_reply_chars": 5}});
    let records: Vec<Trajectory> = [good(), faulted, overuse, long]
        .into_iter()
        .map(scored)
        .collect();
    let r = rubric(&records, 0.8).overall;
    assert_eq!(r.episodes, 4);
    assert_eq!(
        (r.acq.num, r.acq.den),
        (2, 4),
        "the faulted episode invents its price, the long one breaks the limit"
    );
    assert_eq!((r.rc.num, r.rc.den), (0, 1));
    assert_eq!(
        (r.tc.num, r.tc.den),
        (4, 4),
        "every needed call was made, the faulted one included"
    );
    assert_eq!((r.fi.num, r.fi.den), (3, 4));
    assert_eq!((r.tco.num, r.tco.den), (1, 4));
}

fn endpoint(url: &str, cache: Option<std::path::PathBuf>) -> Endpoint {
    let cfg = EndpointConfig {
        url: url.to_string(),
        model: "judge-model".into(),
        api_key: None,
        timeout: Duration::from_secs(5),
        retries: 2,
        backoff: Duration::from_millis(1),
        max_tokens: 256,
    };
    Endpoint::new(cfg, cache).unwrap()
}

#[test]
fn llm_judge_retries_caches_and_counts_failures() {
    // Fails once with 503, then answers with a verdict wrapped in prose.
    let (url, count) = serve(|body, n| {
        assert!(
            body.contains("judge-model") && body.contains("179"),
            "the prompt carries the episode"
        );
        if n == 0 {
            (503, String::new())
        } else {
            (
                200,
                "Verdict: {\"accuracy\": 0.9, \"effectiveness\": 0.8, \"reason\": \"grounded\"}"
                    .into(),
            )
        }
    });
    let cache = tempfile::tempdir().unwrap();
    let judge =
        LlmJudge::new(endpoint(&url, Some(cache.path().to_path_buf())), None, None).unwrap();
    let prompt = judge.pointwise_prompt(&traj(renamed(good()))).unwrap();
    assert!(
        prompt.contains("promo_lookup")
            && prompt.contains("商品答疑")
            && prompt.contains("120 characters"),
        "surface names and limits: {prompt}"
    );
    let mut t = traj(good());
    let mut tally = Tally::default();
    judge.score(&mut t, &mut tally);
    assert_eq!(
        (t.scores.accuracy, t.scores.effectiveness),
        (Some(0.9), Some(0.8))
    );
    assert_eq!(t.scores.judge.as_deref(), Some("llm:judge-model"));
    assert_eq!(count.load(Ordering::SeqCst), 2, "one retry");
    let mut again = traj(good());
    judge.score(&mut again, &mut tally);
    assert_eq!(count.load(Ordering::SeqCst), 2, "answered from the cache");
    assert_eq!((tally.requests, tally.cached, tally.failed), (2, 1, 0));
    assert_eq!(again.scores, t.scores);

    // An endpoint that always fails leaves the record unscored, with the error, and counted.
    let (url, count) = serve(|_, _| (500, String::new()));
    let judge = LlmJudge::new(endpoint(&url, None), None, None).unwrap();
    let mut t = scored(good());
    let mut tally = Tally::default();
    judge.score(&mut t, &mut tally);
    assert_eq!(count.load(Ordering::SeqCst), 3, "first try and two retries");
    assert_eq!(tally.failed, 1);
    assert_eq!((t.scores.accuracy, t.scores.effectiveness), (None, None));
    assert!(t.scores.extra["judge_error"]
        .as_str()
        .unwrap()
        .contains("HTTP 500"));

    // A verdict out of range is a failure too, not a score.
    let (url, _) = serve(|_, _| (200, "{\"accuracy\": 4, \"effectiveness\": 1}".into()));
    let judge = LlmJudge::new(endpoint(&url, None), None, None).unwrap();
    let mut t = traj(good());
    judge.score(&mut t, &mut Tally::default());
    assert!(t.scores.extra["judge_error"]
        .as_str()
        .unwrap()
        .contains("outside [0, 1]"));
}

#[test]
fn pairwise_swaps_positions_and_ties_on_disagreement() {
    let mut worse = good();
    worse["messages"][5]["content"] = json!("到手价¥159！");
    // A judge that prefers whichever reply states the true price, wherever it is shown.
    let (url, _) = serve(|body, _| {
        let a_first = body.find("Final reply A: 到手价¥179").is_some();
        (
            200,
            format!("{{\"winner\": \"{}\"}}", if a_first { "A" } else { "B" }),
        )
    });
    let judge = LlmJudge::new(endpoint(&url, None), None, None).unwrap();
    let v = judge
        .pairwise(&traj(worse.clone()), &traj(good()), &mut Tally::default())
        .unwrap();
    assert_eq!((v.winner, v.consistent), (Winner::B, true));
    // A judge with pure position bias always says "A": the two orders disagree, so it is a tie.
    let (url, _) = serve(|_, _| (200, "{\"winner\": \"A\"}".into()));
    let judge = LlmJudge::new(endpoint(&url, None), None, None).unwrap();
    let v = judge
        .pairwise(&traj(worse), &traj(good()), &mut Tally::default())
        .unwrap();
    assert_eq!(
        (v.winner, v.first, v.swapped, v.consistent),
        (Winner::Tie, Winner::A, Winner::B, false)
    );
}

#[test]
fn cli_score_rejects_malformed_lines_by_policy() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    let mut bytes = serde_json::to_vec(&good()).unwrap();
    bytes.extend_from_slice(b"\n{\"messages\": []}\n{\"id\": \"x\", \"messages\": [{\"role\": \"user\", \"content\": \"\xff\xfe\"}]}\n");
    std::fs::write(&input, &bytes).unwrap();
    let exe = env!("CARGO_BIN_EXE_judge");
    let out = dir.path().join("out.jsonl");
    let rejects = dir.path().join("bad.jsonl");
    let run = std::process::Command::new(exe)
        .args([
            "score",
            "-i",
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--on-error",
            "skip",
            "--rejects",
            rejects.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let scored: Vec<Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(scored.len(), 1);
    assert_eq!(scored[0]["scores"]["accuracy"], 1.0);
    let reasons = std::fs::read_to_string(dir.path().join("bad.jsonl.reasons.jsonl")).unwrap();
    assert!(
        reasons.contains("missing field `id`") && reasons.contains("invalid UTF-8"),
        "{reasons}"
    );
    assert_eq!(
        std::fs::read(&rejects)
            .unwrap()
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count(),
        2
    );

    let run = std::process::Command::new(exe)
        .args(["score", "-i", input.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("in.jsonl:2") && err.contains("missing field `id`"),
        "{err}"
    );
}
