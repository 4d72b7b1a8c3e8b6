//! The live-room context a harness renders its system prompt from, built from a simulated room: the
//! product on stage with its specs, the queue with product ids (as an operator console shows them), and
//! the viewer.

use serde_json::{json, Map, Value};

use super::catalog::Catalog;
use super::tasks::Room;

/// Template variables for `Harness::render_prompt` (see `harness::context`).
pub fn live_context(catalog: &Catalog, room: &Room, viewer: &Value) -> Value {
    let lang = room.lang;
    let product = room.current_product.as_deref().and_then(|id| catalog.product(id)).map(|p| {
        let specs: Map<String, Value> = p.specs.iter().map(|s| (s.key.get(lang).to_string(), json!(s.value.get(lang)))).collect();
        json!({"product_id": p.id, "title": p.title.get(lang), "brand": p.brand, "category": p.category, "specs": specs})
    });
    let queue: Vec<Value> = room
        .queue
        .iter()
        .enumerate()
        .filter_map(|(i, id)| {
            let p = catalog.product(id)?;
            // The id goes in its own field: the harness's template words it with the tool argument
            // key (`product_id=…`), so a harness that renames the key shows the new one.
            let title = match lang {
                super::catalog::Lang::Zh => format!("{}号链接 {}", i + 1, p.title.zh),
                super::catalog::Lang::En => format!("link {} {}", i + 1, p.title.en),
            };
            Some(json!({"product_id": id, "title": title}))
        })
        .collect();
    json!({
        "room": {"title": room.room_id, "status": "live", "viewers": room.viewers_online, "queue": queue, "lang": lang},
        "product": product,
        "active_rules": [],
        "viewer": viewer,
    })
}
