//! Load, validate and render a harness directory: what `hat harness validate|render|tools` do, through
//! the library.
//!
//!     cargo run --example harness_tour [HARNESS_DIR]     (default: harness-samples/taolive)

mod common;

use std::path::PathBuf;

use anyhow::Result;
use hat::harness::{check_dir, Harness, LiveContext};

fn main() -> Result<()> {
    let dir = std::env::args()
        .nth(1)
        .map_or_else(common::sample_harness_dir, PathBuf::from);

    // `check_dir` never fails: it loads and validates and returns every problem with file and field,
    // which is what a harness author wants to see all at once.
    let problems = check_dir(&dir);
    println!("{}: {} problem(s)", dir.display(), problems.len());
    for p in &problems {
        println!("  {p}");
    }
    let harness = Harness::load(&dir)?;
    println!(
        "{} v{} (tool calls as {:?}), content hash {}",
        harness.name(),
        harness.version(),
        harness.manifest().model.tool_call_format,
        harness.hash()
    );

    // The system prompt for one live-room state: the room, the product on screen and the active rules
    // are filled into the templates of prompts/pipeline.toml, block by block.
    let context = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/harness/taolive-context.json"),
    )?;
    let ctx = LiveContext::from_json_text("taolive-context.json", &context)?;
    let prompt = harness.render_system_prompt(&ctx)?;
    println!(
        "\nsystem prompt: {} chars, {} lines; the first 8:",
        prompt.chars().count(),
        prompt.lines().count()
    );
    for line in prompt.lines().take(8) {
        println!("  | {line}");
    }

    // Tools as the model sees them (OpenAI function specs) and the skills it may load.
    println!("\n{} tools:", harness.tools().len());
    for tool in harness.tools() {
        let summary = tool.description.lines().next().unwrap_or("");
        println!("  {:<28} {summary}", tool.name);
    }
    println!("\n{} skills:", harness.skills().len());
    for skill in harness.skills() {
        println!("  {:<28} {}", skill.front.name, skill.front.description);
    }
    Ok(())
}
