//! Score a trajectory with the verifiable judge (what `judge score` writes into `scores`): the
//! oracle teacher's episode, and the same episode with its final reply replaced by a vague one, to
//! show which dimensions notice.
//!
//!     cargo run --example judge_one [SEED]

mod common;

use anyhow::{Context, Result};
use hat::harness::Harness;
use hat::judge::verifiable::{judge, Dimension, TokenCounter, Verdict};
use hat::record::{Content, Role};

fn main() -> Result<()> {
    let seed: u64 = std::env::args().nth(1).map_or(Ok(1), |s| s.parse())?;
    let harness = Harness::load(common::sample_harness_dir())?;
    let teacher = common::teacher_episode(&harness, "product_qa=1", "", seed)?;
    let task = teacher.task.as_ref().context("a task record")?;
    // The viewer's message: the last user message before the teacher's first turn.
    let before_reply = teacher
        .messages
        .iter()
        .take_while(|m| m.role != Role::Assistant);
    let asked = before_reply.filter(|m| m.role == Role::User).last();
    println!(
        "{} ({}): {}",
        teacher.id,
        task.intent.as_str(),
        asked.map(|m| m.text_content()).unwrap_or_default()
    );

    // The judge reads only the record: ground truth in `task.expected`, the harness's name map, the
    // messages. No model runs, so the same record always gets the same scores.
    let counter = TokenCounter::Approximate;
    print_verdict("oracle teacher", &judge(&teacher, &counter));

    let mut vague = teacher.clone();
    let reply = vague
        .messages
        .iter_mut()
        .rev()
        .find(|m| m.role == Role::Assistant)
        .context("an assistant reply")?;
    reply.content = Some(Content::Text("宝宝们稍等，马上为大家介绍～".into()));
    print_verdict("same episode, vague final reply", &judge(&vague, &counter));
    Ok(())
}

fn print_verdict(label: &str, v: &Verdict) {
    println!("\n{label}:");
    let line = |name: &str, d: &Dimension| println!("  {name:<17} {:.2}  {}", d.value, d.reason);
    // Accuracy and skill selection may be unscored, with the reason.
    let maybe = |name: &str, d: &Result<Dimension, String>| match d {
        Ok(d) => line(name, d),
        Err(why) => println!("  {name:<17} --    {why}"),
    };
    maybe("accuracy", &v.accuracy);
    line("effectiveness", &v.effectiveness);
    line("tool_rationality", &v.tool_rationality);
    maybe("skill_selection", &v.skill_selection);
    println!(
        "  {:<17} {:.2}  {} reasoning tokens",
        "cot_length", v.cot_length, v.cot_tokens
    );
}
