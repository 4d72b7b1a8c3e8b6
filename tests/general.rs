//! General prompts: the teacher's train answers pass the judge's strict IFEval check, the eval split
//! is held out (topics and instruction combinations), and IFEval-lite counts what the judge says.

use std::collections::BTreeSet;

use hat::general::prompts::{generate, held_out, Split};
use hat::general::score::ifeval_lite;
use hat::general::topics::{EN_FORBIDDEN, EVAL, TRAIN, ZH_FORBIDDEN};
use hat::judge::ifeval::{follow, InputExample, Mode};

fn input(row: &hat::general::prompts::GeneralPrompt) -> InputExample {
    serde_json::from_value(serde_json::to_value(row).unwrap()).unwrap()
}

#[test]
fn every_train_answer_passes_the_strict_check() {
    for seed in [0, 1] {
        for row in generate(Split::Train, 600, seed) {
            let ins = input(&row).instructions().unwrap();
            let answer = row.messages[1]["content"].as_str().unwrap();
            let verdicts = follow(&ins, answer, Mode::Strict);
            assert!(
                verdicts.iter().all(|&v| v),
                "key {} {:?} -> {verdicts:?}\nprompt: {}\nanswer:\n{answer}",
                row.key,
                row.instruction_id_list,
                row.prompt
            );
        }
    }
}

#[test]
fn eval_topics_and_combinations_are_held_out() {
    let combo = |r: &hat::general::prompts::GeneralPrompt| {
        let mut ids = r.instruction_id_list.clone();
        ids.sort();
        ids.join("|")
    };
    let train = generate(Split::Train, 2000, 3);
    let eval = generate(Split::Eval, 300, 3);
    let train_combos: BTreeSet<String> = train.iter().map(combo).collect();
    let train_topics: BTreeSet<&str> = train.iter().map(|r| r.topic).collect();
    for r in &eval {
        assert!(!train_topics.contains(r.topic), "{}", r.topic);
        assert!(!train_combos.contains(&combo(r)), "{}", combo(r));
        let ids: Vec<&str> = r.instruction_id_list.iter().map(String::as_str).collect();
        assert!(held_out(&ids));
        assert_eq!(r.messages.len(), 1, "eval rows carry no answer");
    }
    // Both languages and every instruction kind are trained.
    assert!(train.iter().any(|r| r.lang == "zh") && train.iter().any(|r| r.lang == "en"));
    let kinds: BTreeSet<&str> = train
        .iter()
        .flat_map(|r| r.instruction_id_list.iter().map(String::as_str))
        .collect();
    assert_eq!(kinds.len(), 14, "{kinds:?}");
    assert!(eval.iter().map(combo).collect::<BTreeSet<_>>().len() >= 10);
}

#[test]
fn generation_is_seeded() {
    let a = serde_json::to_string(&generate(Split::Eval, 20, 9)).unwrap();
    assert_eq!(
        a,
        serde_json::to_string(&generate(Split::Eval, 20, 9)).unwrap()
    );
    assert_ne!(
        a,
        serde_json::to_string(&generate(Split::Eval, 20, 10)).unwrap()
    );
}

#[test]
fn forbidden_words_occur_in_no_topic_sentence() {
    for t in TRAIN.iter().chain(EVAL) {
        for s in t.en_sentences {
            let lower = s.to_lowercase();
            assert!(!lower.contains(','), "{s}");
            for w in EN_FORBIDDEN {
                assert!(
                    !lower.split(|c: char| !c.is_alphanumeric()).any(|x| x == *w),
                    "{s}"
                );
            }
        }
        for s in t.zh_sentences {
            assert!(!s.contains(','), "{s}");
            assert!(!ZH_FORBIDDEN.iter().any(|w| s.contains(w)), "{s}");
        }
    }
}

#[test]
fn ifeval_lite_counts_prompts_and_instructions() {
    let rows = generate(Split::Train, 40, 5);
    let inputs: Vec<InputExample> = rows.iter().map(input).collect();
    let answers: Vec<String> = rows
        .iter()
        .map(|r| r.messages[1]["content"].as_str().unwrap().to_string())
        .collect();
    let good = ifeval_lite(&inputs, &answers).unwrap();
    assert_eq!(good.prompt_strict.value, 1.0);
    assert_eq!(good.prompt_strict.total, 40);
    let instructions: usize = rows.iter().map(|r| r.instruction_id_list.len()).sum();
    assert_eq!(good.instruction_loose.total, instructions);
    assert!(good.prompt_strict.low > 0.9 && good.prompt_strict.high == 1.0);
    let blank = ifeval_lite(&inputs, &vec![String::new(); 40]).unwrap();
    assert_eq!(blank.prompt_loose.correct, 0);
    assert!(ifeval_lite(&inputs, &answers[..3]).is_err());
}

/// Per-prompt answers and the paired comparison: the teacher's answers (all pass) against the same
/// answers with every other one blanked (those fail) — the blanked prompts are B's losses, the sign
/// test is exact, and the rows round-trip through JSON as `hat general eval --answers` writes them.
#[test]
fn paired_comparison_counts_the_discordant_prompts() {
    use hat::general::answers::{compare, Answer, Level, Strictness};
    use hat::general::score::evaluate;
    let rows = generate(Split::Train, 24, 3);
    let inputs: Vec<InputExample> = rows.iter().map(input).collect();
    let good: Vec<String> = rows
        .iter()
        .map(|r| r.messages[1]["content"].as_str().unwrap().to_string())
        .collect();
    let worse: Vec<String> = good
        .iter()
        .enumerate()
        .map(|(i, g)| if i % 2 == 0 { String::new() } else { g.clone() })
        .collect();
    let answers = |responses: &[String]| -> Vec<Answer> {
        evaluate(&inputs, responses)
            .unwrap()
            .iter()
            .map(Answer::from)
            .map(|a| serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap())
            .collect()
    };
    let (a, b) = (answers(&good), answers(&worse));
    assert!(a
        .iter()
        .all(|x| x.prompt_strict && x.strict.iter().all(|&v| v)));
    assert_eq!(a[0].id, rows[0].key.to_string());
    let c = compare(&a, &b, Level::Prompt, Strictness::Strict).unwrap();
    assert_eq!((c.cases, c.wins, c.losses, c.ties), (24, 0, 12, 12));
    assert_eq!((c.rate_a, c.rate_b), (1.0, 0.5));
    assert_eq!(c.difference, -0.5);
    assert!(
        c.difference_low < -0.5 && -0.5 < c.difference_high && c.difference_high < 0.0,
        "a drop of half the prompts, all discordant the same way: [{}, {}]",
        c.difference_low,
        c.difference_high
    );
    assert!(
        (c.p_value - 2.0 * 0.5f64.powi(12)).abs() < 1e-12,
        "{}",
        c.p_value
    );
    let i = compare(&a, &b, Level::Instruction, Strictness::Loose).unwrap();
    let blanked: usize = a.iter().step_by(2).map(|x| x.strict.len()).sum();
    assert_eq!(
        i.losses as usize, blanked,
        "an empty answer fails every instruction"
    );
    assert_eq!(
        compare(&a, &a, Level::Prompt, Strictness::Strict)
            .unwrap()
            .p_value,
        1.0
    );
    let mut twice = a.clone();
    twice.push(a[0].clone());
    assert!(compare(&twice, &b, Level::Prompt, Strictness::Strict).is_err());
    let others = answers(&good)
        .into_iter()
        .map(|mut x| {
            x.id = format!("other-{}", x.id);
            x
        })
        .collect::<Vec<_>>();
    assert!(compare(&a, &others, Level::Prompt, Strictness::Strict).is_err());
}
