//! Copy rows: the curriculum that teaches a small model to copy a product id from its prompt into a
//! tool call, before it learns the same move on the room state among ~2,500 prompt tokens.
//!
//! Each row is one opening turn in the pipeline's record format: a short system prompt holding product
//! ids drawn at random, the viewer's question, and the teacher's `get_product_detail` call with the id to
//! copy (loss on the call only). Ids are fresh per row, so only copying lowers the loss on them. A model of
//! the `tiny` preset sits on the uniform-digit loss for a few hundred steps before it copies; the targets
//! must be dense for the transition to come at all (docs/learning-default.md, the copy task). Kinds:
//!
//! * `current`  one id, the product on screen (`商品ID product_id=p978`): copy it;
//! * `link`     a queue of 3–5 entries as the room state shows them (`2号链接 Ampera便携充电宝（product_id=…）`,
//!   catalog titles); the viewer names `N号链接`: find the entry, copy;
//! * `title`    the same queue; the viewer names a title.

use std::collections::HashSet;

use anyhow::{bail, Result};
use clap::ValueEnum;
use serde_json::json;

use super::catalog::Catalog;
use crate::fresh_ids::{fresh_id, ID_SPACE};
use crate::record::Trajectory;
use crate::rng::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CopyKind {
    Current,
    Link,
    Title,
}

/// `n` copy rows, the kinds dealt round-robin; the same seed gives the same rows. Titles come from
/// `catalog` (its ids are not used: every id is drawn fresh).
pub fn copy_rows(
    n: usize,
    kinds: &[CopyKind],
    catalog: &Catalog,
    seed: u64,
) -> Result<Vec<Trajectory>> {
    if kinds.is_empty() {
        bail!("no copy kind given");
    }
    let titles: HashSet<&str> = catalog
        .products
        .iter()
        .map(|p| p.title.zh.as_str())
        .collect();
    if titles.len() < 5 {
        bail!(
            "the catalog has {} distinct titles; a queue needs 5",
            titles.len()
        );
    }
    let mut rng = Rng::derive(seed, "copy-task");
    (0..n)
        .map(|i| row(i, kinds[i % kinds.len()], catalog, seed, &mut rng))
        .collect()
}

fn row(
    i: usize,
    kind: CopyKind,
    catalog: &Catalog,
    seed: u64,
    rng: &mut Rng,
) -> Result<Trajectory> {
    let ids: Vec<String> = rng
        .distinct(ID_SPACE, 5)
        .into_iter()
        .map(fresh_id)
        .collect();
    let queue_len = 3 + rng.below(3);
    let pick = rng.below(queue_len);
    let (system, user, target) = match kind {
        CopyKind::Current => (
            format!(
                "# 当前讲解商品 Current product\n商品ID product_id={}",
                ids[0]
            ),
            "这个多少钱".to_string(),
            &ids[0],
        ),
        CopyKind::Link | CopyKind::Title => {
            // The room state's own entries: link number, catalog title, id.
            // Distinct titles, so the one the viewer names is one entry.
            let titles: Vec<&str> = loop {
                let titles: Vec<&str> = rng
                    .distinct(catalog.products.len(), queue_len)
                    .iter()
                    .map(|&p| catalog.products[p].title.zh.as_str())
                    .collect();
                if titles.iter().collect::<HashSet<_>>().len() == queue_len {
                    break titles;
                }
            };
            let queue: Vec<String> = (0..queue_len)
                .map(|j| format!("{}号链接 {}（product_id={}）", j + 1, titles[j], ids[j]))
                .collect();
            let named = match kind {
                CopyKind::Link => format!("{}号链接", pick + 1),
                _ => titles[pick].to_string(),
            };
            (room_state(&queue), format!("{named}多少钱"), &ids[pick])
        }
    };
    let arguments = json!({ "product_id": target }).to_string();
    Ok(serde_json::from_value(json!({
        "id": format!("copy-{seed}-{i:06}"),
        "task": {"intent": "product_qa", "expected": {"tool_calls": [
            {"tool": "get_product_detail", "args": {"product_id": target}}]}},
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
            {"role": "assistant", "tool_calls": [{"id": "call_1_0", "type": "function",
                "function": {"name": "get_product_detail", "arguments": arguments}}]},
        ],
    }))?)
}

fn room_state(queue: &[String]) -> String {
    format!(
        "# 直播间状态 Room state\n- 待讲解 Up next: {}",
        queue.join("、")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_calls_the_id_its_prompt_gives_for_what_the_viewer_names() {
        let catalog = Catalog::generate(7, 40);
        let kinds = [CopyKind::Current, CopyKind::Link, CopyKind::Title];
        let rows = copy_rows(300, &kinds, &catalog, 3).unwrap();
        let mut targets = HashSet::new();
        for (i, r) in rows.iter().enumerate() {
            let (system, user) = (r.messages[0].text_content(), r.messages[1].text_content());
            let args = r.messages[2].tool_calls[0]
                .function
                .parsed_arguments()
                .unwrap();
            let target = args["product_id"].as_str().unwrap().to_string();
            let expected = r.task.as_ref().and_then(|t| t.expected.as_ref()).unwrap();
            assert_eq!(expected.tool_calls[0].args["product_id"], target.as_str());
            let named = user.trim_end_matches("多少钱");
            if kinds[i % 3] == CopyKind::Current {
                assert_eq!(system.matches(&format!("product_id={target}")).count(), 1);
            } else {
                // The one queue entry the viewer names carries the id the call copies.
                let queue = system.split("Up next: ").nth(1).unwrap();
                let entries: Vec<&str> = queue
                    .split('、')
                    .filter(|e| {
                        e.starts_with(&format!("{named} ")) || e.contains(&format!(" {named}（"))
                    })
                    .collect();
                assert_eq!(entries.len(), 1, "row {i}: {system:?} names {named:?} once");
                assert!(
                    entries[0].ends_with(&format!("（product_id={target}）")),
                    "row {i}: {system:?}"
                );
            }
            targets.insert(target);
        }
        assert!(
            targets.len() > 200,
            "ids are drawn fresh per row: {} distinct",
            targets.len()
        );
        assert_eq!(
            rows,
            copy_rows(300, &kinds, &catalog, 3).unwrap(),
            "same seed, same rows"
        );
    }
}
