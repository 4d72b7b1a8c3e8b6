//! `hat harness init DIR`: a starting harness that validates as written and already runs through the
//! pipeline (tasks, oracle, HSA, judge), so a user edits something that works instead of writing a
//! directory from nothing. The files are `templates/harness-init/`, compiled in.

use std::path::Path;

use anyhow::{bail, Context, Result};

use super::skills::is_valid_skill_name;

/// (path inside the harness, content); `{{name}}` in the manifest becomes the harness name.
const FILES: [(&str, &str); 6] = [
    (
        "harness.toml",
        include_str!("../../templates/harness-init/harness.toml"),
    ),
    (
        "prompts/pipeline.toml",
        include_str!("../../templates/harness-init/prompts/pipeline.toml"),
    ),
    (
        "prompts/role.j2",
        include_str!("../../templates/harness-init/prompts/role.j2"),
    ),
    (
        "prompts/skills.j2",
        include_str!("../../templates/harness-init/prompts/skills.j2"),
    ),
    (
        "tools/lookup_order.json",
        include_str!("../../templates/harness-init/tools/lookup_order.json"),
    ),
    (
        "skills/order-help/SKILL.md",
        include_str!("../../templates/harness-init/skills/order-help/SKILL.md"),
    ),
];

/// The harness name for a directory: its last component in skill-name form (lower case, `-` for
/// anything else), or `my-harness` when nothing usable is left.
pub fn name_for(dir: &Path) -> String {
    let raw = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let mut name: String = raw
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    while name.contains("--") {
        name = name.replace("--", "-");
    }
    let name = name.trim_matches('-').chars().take(64).collect::<String>();
    if is_valid_skill_name(&name) {
        name
    } else {
        "my-harness".to_string()
    }
}

/// Writes the skeleton into `dir`, which must be absent or empty; returns the harness name.
pub fn init(dir: &Path) -> Result<String> {
    if dir.exists() {
        let mut entries =
            std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
        if entries.next().is_some() {
            bail!(
                "{} is not empty; `hat harness init` writes into a new or empty directory only, so it never overwrites a harness",
                dir.display()
            );
        }
    }
    let name = name_for(dir);
    for (path, text) in FILES {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let text = text.replace("{{name}}", &name);
        std::fs::write(&target, text).with_context(|| format!("writing {}", target.display()))?;
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_skill_name_rule() {
        assert_eq!(name_for(Path::new("/x/My Shop_v2")), "my-shop-v2");
        assert_eq!(name_for(Path::new("/x/___")), "my-harness");
    }
}
