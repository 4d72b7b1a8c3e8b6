//! Play one simulated episode: a viewer's task from the seeded catalog, the oracle teacher as the
//! policy, the agent runtime enforcing the harness's hooks and limits, tools answered by the sandbox
//! (with injected faults). Prints the transcript and the runtime's bookkeeping.
//!
//!     cargo run --example one_episode [MIX] [FAULTS] [SEED]
//!     cargo run --example one_episode after_sales=1 timeout=0.5 3      (intent, faults, seed)

mod common;

use anyhow::Result;
use hat::harness::Harness;
use hat::record::Role;

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let mix = args.next().unwrap_or_else(|| "product_qa=1".into());
    // A timeout on a third of tool calls; with seed 7 the first inventory check times out and the
    // teacher calls it again.
    let faults = args.next().unwrap_or_else(|| "timeout=0.33".into());
    let seed: u64 = args.next().map_or(Ok(7), |s| s.parse())?;

    let harness = Harness::load(common::sample_harness_dir())?;
    let episode = common::teacher_episode(&harness, &mix, &faults, seed)?;

    println!(
        "episode {} under {} ({} tools offered)",
        episode.id,
        harness.name(),
        episode.tools.len()
    );
    for m in &episode.messages {
        let text = m.text_content();
        match m.role {
            // The rendered system prompt is long; its size is what matters here.
            Role::System => println!(
                "[system]    {} chars of rendered prompt",
                text.chars().count()
            ),
            Role::Tool => println!("[tool]      {}", clip(&text, 160)),
            role => {
                let who = format!("[{}]", format!("{role:?}").to_lowercase());
                if !text.is_empty() {
                    println!("{who:<12}{}", clip(&text, 240));
                }
                for call in &m.tool_calls {
                    println!(
                        "{who:<12}calls {}({})",
                        call.function.name, call.function.arguments
                    );
                }
            }
        }
    }
    // What the runtime recorded about the episode: success against the ground truth, stop reason,
    // rounds, tool calls, retries, injected faults.
    println!("meta: {}", serde_json::to_string(&episode.meta)?);
    Ok(())
}

/// At most `n` characters of `text` on one line.
fn clip(text: &str, n: usize) -> String {
    let flat = text.replace('\n', " ⏎ ");
    match flat.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &flat[..i]),
        None => flat,
    }
}
