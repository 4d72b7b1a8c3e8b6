//! `teacher-distill collect`'s filter: score thresholds, retry trimming, seeded keep probability.

use hat::distill::collect::{filter, keep_final_attempts, Filter, Summary};
use hat::record::{Role, Trajectory};
use serde_json::json;

/// A turn where a Stop hook rejected the first reply and the second passed.
fn retried(id: &str) -> Trajectory {
    serde_json::from_value(json!({
        "id": id,
        "messages": [
            {"role": "system", "content": "rules"},
            {"role": "user", "content": "how much?"},
            {"role": "assistant", "content": "It is cheap!!! Buy now buy now buy now."},
            {"role": "user", "content": "[hook] reply too long, retry"},
            {"role": "assistant", "content": "¥199."}
        ],
        "scores": {"accuracy": 1.0, "effectiveness": 1.0},
        "meta": {"turn_start": 2, "retries": 1}
    }))
    .unwrap()
}

fn cfg(p: f64) -> Filter {
    Filter {
        min_accuracy: 1.0,
        min_effectiveness: 0.5,
        keep_retry_prob: p,
        seed: 11,
    }
}

#[test]
fn retries_keep_only_the_final_attempt() {
    let mut t = retried("a");
    assert_eq!(keep_final_attempts(&mut t), 1);
    let roles: Vec<Role> = t.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::System, Role::User, Role::Assistant]);
    assert_eq!(t.messages[2].text_content(), "¥199.");
}

#[test]
fn keep_probability_is_seeded_and_thresholds_drop_with_reasons() {
    let mut s = Summary::default();
    assert_eq!(
        filter(retried("a"), &cfg(0.0), &mut s)
            .unwrap()
            .messages
            .len(),
        3
    );
    assert_eq!(
        filter(retried("a"), &cfg(1.0), &mut s)
            .unwrap()
            .messages
            .len(),
        5
    );
    // Kept in full, the rejected attempt stays as context but is marked to take no loss.
    let full = filter(retried("a"), &cfg(1.0), &mut s).unwrap();
    let trained: Vec<bool> = full.messages.iter().map(|m| m.is_trained()).collect();
    assert_eq!(trained, [false, false, false, false, true]);
    assert_eq!(full.messages[2].extra["weight"], json!(0));
    assert_eq!(full.meta["retry_attempts_masked"], json!(1));
    let decide = |seed| {
        let mut s = Summary::default();
        (0..400)
            .map(|i| {
                let c = Filter { seed, ..cfg(0.1) };
                filter(retried(&format!("t{i}")), &c, &mut s)
                    .unwrap()
                    .messages
                    .len()
                    == 5
            })
            .collect::<Vec<bool>>()
    };
    let (a, b) = (decide(11), decide(11));
    assert_eq!(a, b, "same seed, same decisions");
    assert_ne!(a, decide(12), "another seed, other decisions");
    let full = a.iter().filter(|&&x| x).count();
    assert!(
        (20..=60).contains(&full),
        "about 10% of 400 kept in full: {full}"
    );

    let mut low = retried("b");
    low.scores.accuracy = Some(0.5);
    let mut s = Summary::default();
    assert!(filter(low, &cfg(0.1), &mut s).is_none());
    let mut weak = retried("c");
    weak.scores.effectiveness = Some(0.2);
    assert!(filter(weak, &cfg(0.1), &mut s).is_none());
    assert_eq!(s.dropped["accuracy_below_threshold"], 1);
    assert_eq!(s.dropped["effectiveness_below_threshold"], 1);
    assert_eq!(s.kept, 0);
}

/// `teacher-distill collect` on `n_tasks` train tasks under the original taolive harness (with
/// probability `original_share`) and `n_variants` train-pool variants, the oracle erring at `noise`,
/// every retry trajectory kept in full: the kept records and the summary.
fn noisy_collect(
    noise: hat::policy::noise::NoiseRates,
    n_tasks: usize,
    n_variants: usize,
    original_share: f64,
) -> (Vec<Trajectory>, Summary) {
    use hat::agent::SimEnv;
    use hat::distill::collect::{collect, settings};
    use hat::harness::Harness;
    use hat::hsa::solvable::needed_skills;
    use hat::hsa::{Config, Pool, Selection, Spec};
    use hat::judge::verifiable::TokenCounter;
    use hat::record::Names;
    use hat::sim::catalog::{Catalog, Split};
    use hat::sim::faults::FaultPlan;
    use hat::sim::tasks::{generate, TaskConfig};

    let catalog = Catalog::generate(1, 60);
    let tasks = generate(&catalog, &TaskConfig::new(Split::Train, 5), n_tasks).unwrap();
    let base = Harness::load(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("harness-samples/taolive"),
    )
    .unwrap();
    let spec = Spec {
        config: Config::default(),
        selection: Selection::default(),
        pool: Pool::Train,
        keep_skills: needed_skills(&tasks, &Names::default()),
        paraphraser: Default::default(),
    };
    let dir = tempfile::tempdir().unwrap();
    let settings = settings(&base, &spec, n_variants, 3, dir.path(), &|| None, noise).unwrap();
    let plan = FaultPlan::default();
    let env = SimEnv {
        catalog: &catalog,
        faults: &plan,
        seed: 3,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let mut summary = Summary::default();
    let kept = collect(
        &tasks,
        &settings,
        &env,
        &pool,
        original_share,
        &Filter {
            keep_retry_prob: 1.0,
            ..cfg(1.0)
        },
        &TokenCounter::Approximate,
        &mut summary,
        &mut |id, e| panic!("{id}: {e:#}"),
    );
    (kept, summary)
}

/// The teacher noise model end to end: the oracle errs on first attempts, every hook of the sample
/// harness fires and sends it back, and in each retry trajectory kept in full exactly the rejected
/// assistant messages carry `"weight": 0` (no loss) while the accepted ones are trained.
#[test]
fn a_noisy_teacher_fires_every_hook_and_its_rejected_attempts_take_no_loss() {
    use hat::policy::noise::{is_call_rejection, NoiseRates};
    use hat::record::Message;

    let noise = NoiseRates {
        long_reply: 0.1,
        forbidden_term: 0.1,
        ungrounded_price: 0.1,
        over_quantity: 0.5,
        malformed_args: 0.15,
        wrong_tool: 0.1,
        ..NoiseRates::NONE
    };
    let (kept, summary) = noisy_collect(noise, 300, 2, 0.5);
    for hook in [
        "reply_length",
        "banned_terms",
        "grounded_numbers",
        "tool_call_json",
        "limit_quantity.sh",
    ] {
        assert!(
            summary.hooks_fired.contains_key(hook),
            "{hook} never fired: {:?}",
            summary.hooks_fired
        );
    }
    assert!(summary.kept_with_hook * 20 >= summary.kept, "{summary:?}");
    let rejection = |m: &Message| match m.role {
        Role::User | Role::System => true,
        Role::Tool => serde_json::from_str::<serde_json::Value>(&m.text_content())
            .ok()
            .and_then(|v| v["error"]["code"].as_str().map(is_call_rejection))
            .unwrap_or(false),
        _ => false,
    };
    let mut checked = 0;
    for t in kept
        .iter()
        .filter(|t| t.meta.get("retry_trajectory") == Some(&json!("full")))
    {
        let start = t.meta["turn_start"].as_u64().unwrap() as usize;
        let m = &t.messages;
        let assistants: Vec<usize> = (start..m.len())
            .filter(|&i| m[i].role == Role::Assistant)
            .collect();
        for (k, &i) in assistants.iter().enumerate() {
            let until = assistants.get(k + 1).copied().unwrap_or(m.len());
            let rejected = m[i + 1..until].iter().any(|x| rejection(x));
            assert_eq!(m[i].is_trained(), !rejected, "{} message {i}", t.id);
        }
        assert!(
            m[*assistants.last().unwrap()].is_trained(),
            "{}: the accepted reply is trained",
            t.id
        );
        assert!(assistants.iter().any(|&i| !m[i].is_trained()), "{}", t.id);
        checked += 1;
    }
    assert!(checked >= 10, "{checked} full retry trajectories");
}

/// `--noise-stale-loader`: under a variant that renamed the skill loader the teacher first calls it by
/// the original harness's name; the runtime refuses it with the tools it has, and a trajectory kept in
/// full trains the call under the variant's name and takes no loss on the stale one.
#[test]
fn a_stale_loader_name_is_refused_and_the_recovery_is_trained() {
    use hat::policy::noise::NoiseRates;

    let noise = NoiseRates {
        stale_loader: 1.0,
        ..NoiseRates::NONE
    };
    let (kept, _) = noisy_collect(noise, 200, 8, 0.0);
    let (mut renamed, mut kept_name) = (0, 0);
    for t in &kept {
        let loader = t
            .harness
            .as_ref()
            .and_then(|h| h.names.tools.get("load_skill").cloned());
        let calls: Vec<(&str, bool)> = t
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .flat_map(|m| {
                m.tool_calls
                    .iter()
                    .map(move |c| (c.function.name.as_str(), m.is_trained()))
            })
            .collect();
        match loader {
            Some(surface) if surface != "load_skill" => {
                let Some(first) = calls.iter().position(|(n, _)| *n == "load_skill") else {
                    continue; // no skill loaded in this episode
                };
                assert!(!calls[first].1, "{}: the stale call takes no loss", t.id);
                // The rejected message may carry the first tool call too; the retry opens anew.
                let retry = calls[first..].iter().find(|(_, trained)| *trained);
                assert_eq!(retry, Some(&(surface.as_str(), true)), "{}", t.id);
                let refusal = t
                    .messages
                    .iter()
                    .find(|m| m.role == Role::Tool && m.text_content().contains("unknown_tool"))
                    .unwrap_or_else(|| panic!("{}: no refusal", t.id));
                assert!(refusal.text_content().contains(&surface), "{}", t.id);
                renamed += 1;
            }
            // The loader kept its name: nothing stale to call.
            _ => {
                assert!(calls.iter().all(|(_, trained)| *trained), "{}", t.id);
                kept_name += 1;
            }
        }
    }
    assert!(
        renamed >= 10 && kept_name >= 10,
        "{renamed} renamed, {kept_name} not"
    );
}
