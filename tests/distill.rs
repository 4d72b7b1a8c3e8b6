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
