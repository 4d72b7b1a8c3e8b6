//! The live-room context a system prompt is rendered for.
//!
//! A JSON object whose top-level keys become template variables. The sample templates read:
//! * `product`: the product on screen (`product_id`, `title`, `brand`, `price`, `specs`, `skus`, …);
//! * `room`: live-room state (`title`, `host`, `status`, `viewers`, `queue` of upcoming products, …);
//! * `active_rules`: operator rules in force right now (strings, or objects with `text`);
//! * `viewer`, `now`: optional.
//!
//! Other keys pass through, so a new template variable needs no code change. Keys the renderer
//! itself provides (`harness`, `limits`, `tools`, `skills`, …) are refused: limits in particular
//! come only from `harness.toml`, so the prompt, the hooks and the runtime can never disagree.

use anyhow::{bail, Context, Result};
use serde_json::{json, Map, Value};

/// Template variables the renderer defines; a context may not shadow them.
pub const RESERVED_KEYS: [&str; 8] = [
    "harness",
    "limits",
    "tools",
    "skills",
    "skills_mode",
    "load_skill_tool",
    "items",
    "block",
];

#[derive(Debug, Clone, PartialEq)]
pub struct LiveContext {
    vars: Map<String, Value>,
}

impl LiveContext {
    pub fn from_value(value: Value) -> Result<LiveContext> {
        let Value::Object(vars) = value else {
            bail!("a live-room context must be a JSON object")
        };
        if let Some(key) = vars.keys().find(|k| RESERVED_KEYS.contains(&k.as_str())) {
            bail!(
                "context key {key:?} is reserved ({}); limits come from harness.toml [limits]",
                RESERVED_KEYS.join(", ")
            );
        }
        Ok(LiveContext { vars })
    }

    /// Parses a context file; `source` names it in errors.
    pub fn from_json_text(source: &str, text: &str) -> Result<LiveContext> {
        let value: Value =
            serde_json::from_str(text).with_context(|| format!("{source}: invalid JSON"))?;
        LiveContext::from_value(value)
            .with_context(|| format!("{source}: invalid live-room context"))
    }

    /// A room that is live with no product on screen and no extra rules: what `hat harness
    /// render` shows without `--context`, and what validation renders every template with.
    pub fn default_context() -> LiveContext {
        let vars = json!({
            "room": {"status": "live", "viewers": 0, "queue": []},
            "product": null,
            "active_rules": []
        });
        LiveContext::from_value(vars).expect("the default context has no reserved keys")
    }

    pub fn vars(&self) -> &Map<String, Value> {
        &self.vars
    }
}

impl Default for LiveContext {
    fn default() -> Self {
        LiveContext::default_context()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_keys_are_refused() {
        let err =
            LiveContext::from_json_text("ctx.json", r#"{"limits":{"max_rounds":3}}"#).unwrap_err();
        assert!(format!("{err:#}").contains("ctx.json"), "{err:#}");
        assert!(format!("{err:#}").contains("\"limits\""), "{err:#}");
    }

    #[test]
    fn non_object_is_refused() {
        assert!(LiveContext::from_json_text("c.json", "[1]").is_err());
    }
}
