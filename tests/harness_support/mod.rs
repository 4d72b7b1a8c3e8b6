//! Harness edits shared by the harness and augmentation tests.

use hat::harness::{Harness, HarnessFile, Placement};

/// `h` with the named prompt blocks placed in the context message (`placement = "context"`), in memory.
pub fn placed_in_context(h: &Harness, blocks: &[&str]) -> Harness {
    h.edited(|files| {
        let mut pipeline = h.pipeline().clone();
        for b in &mut pipeline.blocks {
            if blocks.contains(&b.name.as_str()) {
                b.placement = Placement::Context;
            }
        }
        files.insert(
            "prompts/pipeline.toml".into(),
            HarnessFile::text(pipeline.to_toml_text()),
        );
    })
    .unwrap()
}
