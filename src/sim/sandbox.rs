//! The tool sandbox: executes the commerce tools (by canonical id) against the catalog and the task's
//! live room, deterministically, with faults injected from a seeded plan. Results are JSON text in the
//! room's language; argument errors come back as tool errors the model can correct, never as panics.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::catalog::{AfterSales, Catalog, Lang, Product};
use super::faults::{FaultKind, FaultPlan};
use super::tasks::{is_remote, status_text, Room};
use crate::rng::Rng;

/// What the caller sees from one tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub content: String,
    pub is_error: bool,
    pub fault: Option<FaultKind>,
    /// Simulated service latency.
    pub latency_ms: u64,
}

/// One injected fault, as recorded in `meta.faults`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultRecord {
    pub tool: String,
    pub kind: FaultKind,
    pub round: usize,
}

/// Whether the sandbox answers canonical tool `tool`: every canonical tool but `load_skill` (skills live
/// in the harness, so the runtime answers that one).
pub fn implements(tool: &str) -> bool {
    tool != "load_skill" && crate::record::CANONICAL_TOOLS.contains(&tool)
}

pub struct Sandbox<'a> {
    catalog: &'a Catalog,
    room: Room,
    plan: &'a FaultPlan,
    rng: Rng,
    pub faults: Vec<FaultRecord>,
}

type Args = Map<String, Value>;

impl<'a> Sandbox<'a> {
    /// A sandbox for one episode; `seed` fixes the faults and latencies it draws.
    pub fn new(catalog: &'a Catalog, room: Room, plan: &'a FaultPlan, seed: u64) -> Sandbox<'a> {
        Sandbox {
            catalog,
            room,
            plan,
            rng: Rng::derive(seed, "sandbox"),
            faults: Vec::new(),
        }
    }

    pub fn room(&self) -> &Room {
        &self.room
    }

    /// Run `tool` (canonical id) with `args`; `round` is recorded with any fault.
    pub fn call(&mut self, tool: &str, args: &Args, round: usize) -> ToolOutput {
        let latency_ms = 20 + self.rng.below(180) as u64;
        let (content, is_error) = match self.execute(tool, args) {
            Ok(v) => (v.to_string(), false),
            Err(msg) => (
                json!({"error": {"code": "invalid_request", "message": msg}}).to_string(),
                true,
            ),
        };
        if !implements(tool) {
            return ToolOutput {
                content,
                is_error,
                fault: None,
                latency_ms,
            };
        }
        match self.plan.draw(&mut self.rng, tool) {
            None => ToolOutput {
                content,
                is_error,
                fault: None,
                latency_ms,
            },
            Some(kind) => {
                self.faults.push(FaultRecord {
                    tool: tool.to_string(),
                    kind,
                    round,
                });
                let content = self.plan.render(&mut self.rng, kind, tool, &content);
                let latency_ms = if kind == FaultKind::Timeout {
                    self.plan.deadline_ms
                } else {
                    latency_ms
                };
                ToolOutput {
                    content,
                    is_error: kind != FaultKind::Empty && kind != FaultKind::Malformed,
                    fault: Some(kind),
                    latency_ms,
                }
            }
        }
    }

    fn lang(&self) -> Lang {
        self.room.lang
    }

    fn execute(&mut self, tool: &str, args: &Args) -> Result<Value, String> {
        let lang = self.lang();
        match tool {
            "search_products" => {
                let keyword = req_str(args, "keyword")?.to_lowercase();
                let category = opt_str(args, "category")?.map(str::to_lowercase);
                let max_price = opt_num(args, "max_price")?;
                let hits: Vec<Value> = self
                    .catalog
                    .products
                    .iter()
                    // "Search this room's catalog" (the tool's description): its line-up and the
                    // product on screen (a hand-written room may show one outside its queue).
                    .filter(|p| {
                        self.room.queue.contains(&p.id)
                            || self.room.current_product.as_ref() == Some(&p.id)
                    })
                    .filter(|p| {
                        [&p.title.zh, &p.title.en, &p.kind.zh, &p.kind.en, &p.brand, &p.category]
                            .iter()
                            .any(|t| t.to_lowercase().contains(&keyword))
                    })
                    .filter(|p| category.as_deref().is_none_or(|c| p.category == c))
                    .filter(|p| max_price.is_none_or(|m| f64::from(p.price) <= m))
                    .take(5)
                    .map(|p| json!({"product_id": p.id, "title": p.title.get(lang), "price": p.price}))
                    .collect();
                Ok(json!({ "results": hits }))
            }
            "get_product_detail" => {
                let p = self.product(args)?;
                let specs: Map<String, Value> = p
                    .specs
                    .iter()
                    .map(|s| (s.key.get(lang).to_string(), json!(s.value.get(lang))))
                    .collect();
                let skus: Vec<Value> = p
                    .skus
                    .iter()
                    .map(|s| json!({"sku_id": s.id, "color": s.color.get(lang), "size": s.size}))
                    .collect();
                let mut v = json!({
                    "product_id": p.id, "title": p.title.get(lang), "brand": p.brand, "category": p.category,
                    "price": p.price, "specs": specs, "skus": skus, "description": p.description.get(lang),
                });
                if let Some(s) = &p.sizing {
                    v["size_advice"] = json!(s.advice.get(lang));
                }
                Ok(v)
            }
            "check_inventory" => {
                let p = self.product(args)?;
                let sku = opt_str(args, "sku_id")?;
                if let Some(id) = sku {
                    if !p.skus.iter().any(|s| s.id == id) {
                        return Err(format!("product {} has no SKU {id:?}", p.id));
                    }
                }
                let rows: Vec<Value> = p
                    .skus
                    .iter()
                    .filter(|s| sku.is_none_or(|id| s.id == id))
                    .map(|s| json!({"sku_id": s.id, "color": s.color.get(lang), "size": s.size, "stock": s.stock}))
                    .collect();
                Ok(json!({"product_id": p.id, "skus": rows}))
            }
            "get_promotions" => {
                let p = self.product(args)?;
                let pr = &p.promotion;
                let discount = pr.discount_pct.map(|d| match lang {
                    Lang::Zh => format!("{}折", discount_zh(d)),
                    Lang::En => format!("{}% off", 100 - d),
                });
                Ok(json!({
                    "product_id": p.id, "list_price": p.price,
                    "coupon": pr.coupon.as_ref().map(|c| json!({"threshold": c.threshold, "amount": c.amount})),
                    "discount": discount,
                    "bundle": pr.bundle.as_ref().map(|b| b.get(lang)),
                    "window": format!("{}-{}", pr.starts, pr.ends),
                    "final_price": pr.final_price,
                }))
            }
            "get_shipping_info" => {
                let p = self.product(args)?;
                let region = opt_str(args, "region")?;
                let s = &p.shipping;
                let eta = s.eta_days + if region.is_some_and(is_remote) { 2 } else { 0 };
                Ok(json!({
                    "product_id": p.id, "region": region, "carrier": s.carrier.get(lang), "eta_days": eta,
                    "fee": s.fee, "ships_from": s.ships_from.get(lang),
                }))
            }
            "get_after_sales_policy" => {
                // Terms are per category; a harness may ask by product or by category.
                let (subject, terms) =
                    match (opt_str(args, "product_id")?, opt_str(args, "category")?) {
                        (None, Some(c)) => {
                            let p = self
                                .catalog
                                .products
                                .iter()
                                .find(|p| p.category == c)
                                .ok_or_else(|| format!("no category {c:?}"))?;
                            (json!({"category": c}), p.after_sales.clone())
                        }
                        _ => {
                            let p = self.product(args)?;
                            (
                                json!({"product_id": p.id, "category": p.category}),
                                p.after_sales.clone(),
                            )
                        }
                    };
                let topics: Vec<&str> = match opt_str(args, "topic")? {
                    Some(t) => vec![t],
                    None => vec!["return", "exchange", "warranty", "refund"],
                };
                let mut rows = Vec::new();
                for topic in topics {
                    rows.push(policy_row(&terms, topic, lang)?);
                }
                let mut v = subject;
                v["policies"] = Value::Array(rows);
                Ok(v)
            }
            "create_purchase_link" => {
                let p = self.product(args)?;
                let sku = match opt_str(args, "sku_id")? {
                    Some(id) => p
                        .skus
                        .iter()
                        .find(|s| s.id == id)
                        .ok_or_else(|| format!("product {} has no SKU {id:?}", p.id))?,
                    None => &p.skus[0],
                };
                let q = opt_num(args, "quantity")?.unwrap_or(1.0);
                if q < 1.0 || q.fract() != 0.0 || q > 99.0 {
                    return Err(format!(
                        "quantity must be a whole number from 1 to 99, got {q}"
                    ));
                }
                if sku.stock == 0 {
                    return Err(format!("SKU {} is sold out", sku.id));
                }
                let q = q as u32;
                Ok(json!({
                    "product_id": p.id, "sku_id": sku.id, "quantity": q,
                    "link": format!("https://live.example.com/buy/{}?sku={}&qty={q}", p.id, sku.id),
                    "unit_price": p.promotion.final_price, "total": p.promotion.final_price * q,
                }))
            }
            "get_room_state" => {
                let queue: Vec<Value> = self
                    .room
                    .queue
                    .iter()
                    .enumerate()
                    .filter_map(|(i, id)| self.catalog.product(id).map(|p| json!({"link": i + 1, "product_id": id, "title": p.title.get(lang)})))
                    .collect();
                Ok(
                    json!({"room_id": self.room.room_id, "current_product": self.room.current_product,
                          "queue": queue, "viewers_online": self.room.viewers_online}),
                )
            }
            "update_presentation_order" => {
                let ids = args
                    .get("product_ids")
                    .and_then(Value::as_array)
                    .ok_or("missing required argument product_ids (an array of product ids)")?;
                let mut order = Vec::new();
                for id in ids {
                    let id = id.as_str().ok_or("product_ids must be strings")?;
                    if !self.room.queue.iter().any(|q| q == id) {
                        return Err(format!("{id:?} is not in this room's queue"));
                    }
                    if !order.contains(&id.to_string()) {
                        order.push(id.to_string());
                    }
                }
                // Products left out keep their relative order after the named ones.
                for q in &self.room.queue {
                    if !order.contains(q) {
                        order.push(q.clone());
                    }
                }
                let queue: Vec<Value> = order
                    .iter()
                    .map(|id| json!({"product_id": id, "title": self.catalog.product(id).map(|p| p.title.get(lang))}))
                    .collect();
                self.room.queue = order;
                Ok(json!({ "queue": queue }))
            }
            "search_faq" => {
                let q = req_str(args, "question")?;
                let mut scored: Vec<(usize, &super::catalog::FaqEntry)> = self
                    .catalog
                    .faq
                    .iter()
                    .map(|f| {
                        (
                            overlap(q, f.question.get(lang)) + keyword_hits(q, &f.keywords),
                            f,
                        )
                    })
                    .filter(|(s, _)| *s > 0)
                    .collect();
                scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.id.cmp(&b.1.id)));
                let hits: Vec<Value> = scored
                    .iter()
                    .take(3)
                    .map(|(_, f)| json!({"id": f.id, "question": f.question.get(lang), "answer": f.answer.get(lang)}))
                    .collect();
                Ok(json!({ "results": hits }))
            }
            "get_order_status" => {
                let id = req_str(args, "order_id")?;
                let o = self
                    .catalog
                    .order(id)
                    .ok_or_else(|| format!("no order {id:?}"))?;
                let title = self
                    .catalog
                    .product(&o.product_id)
                    .map(|p| p.title.get(lang))
                    .unwrap_or_default();
                Ok(
                    json!({"order_id": o.id, "product": title, "status": status_text(&o.status, lang),
                          "carrier": o.carrier.get(lang), "eta_days": o.eta_days}),
                )
            }
            other => Err(format!("the sandbox has no tool {other:?}")),
        }
    }

    fn product(&self, args: &Args) -> Result<&'a Product, String> {
        let id = req_str(args, "product_id")?;
        self.catalog
            .product(id)
            .ok_or_else(|| format!("no product {id:?}"))
    }
}

/// One after-sales topic in words, with its period.
fn policy_row(a: &AfterSales, topic: &str, lang: Lang) -> Result<Value, String> {
    let (n, unit_zh, unit_en, zh, en) = match topic {
        "return" => (
            a.return_days,
            "天",
            "days",
            "签收后{n}天内支持无理由退货",
            "Returns accepted within {n} days of delivery, no reason needed",
        ),
        "exchange" => (
            a.exchange_days,
            "天",
            "days",
            "签收后{n}天内可换货",
            "Exchanges within {n} days of delivery",
        ),
        "warranty" if a.warranty_months > 0 => (
            a.warranty_months,
            "个月",
            "months",
            "整机保修{n}个月",
            "{n}-month warranty",
        ),
        "warranty" => (
            0,
            "个月",
            "months",
            "该商品不提供保修",
            "This product has no warranty",
        ),
        "refund" => (
            a.refund_days,
            "天",
            "days",
            "审核通过后{n}天内原路退款",
            "Refunds reach your account within {n} days of approval",
        ),
        other => {
            return Err(format!(
                "unknown topic {other:?}; use return, exchange, warranty or refund"
            ))
        }
    };
    let text = match lang {
        Lang::Zh => zh,
        Lang::En => en,
    }
    .replace("{n}", &n.to_string());
    let unit = if lang == Lang::Zh { unit_zh } else { unit_en };
    Ok(json!({"topic": topic, "period": n, "unit": unit, "policy": text}))
}

/// "9折" for 90%, "8.5折" for 85%.
fn discount_zh(pct: u32) -> String {
    if pct % 10 == 0 {
        (pct / 10).to_string()
    } else {
        format!("{}.{}", pct / 10, pct % 10)
    }
}

/// Shared character bigrams (Chinese) plus shared words (English): a crude but deterministic ranking.
fn overlap(a: &str, b: &str) -> usize {
    let grams = |s: &str| -> Vec<String> {
        let cs: Vec<char> = s
            .to_lowercase()
            .chars()
            .filter(|c| !c.is_ascii_punctuation() && !c.is_whitespace())
            .collect();
        cs.windows(2)
            .filter(|w| !w[0].is_ascii() || !w[1].is_ascii())
            .map(|w| w.iter().collect())
            .collect()
    };
    let words = |s: &str| -> Vec<String> {
        s.to_lowercase()
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| w.len() > 2)
            .map(str::to_string)
            .collect()
    };
    let (ga, gb) = (grams(a), grams(b));
    let (wa, wb) = (words(a), words(b));
    ga.iter().filter(|g| gb.contains(g)).count() + wa.iter().filter(|w| wb.contains(w)).count()
}

fn keyword_hits(q: &str, keywords: &[String]) -> usize {
    let q = q.to_lowercase();
    keywords.iter().filter(|k| q.contains(k.as_str())).count()
}

fn req_str<'v>(args: &'v Args, key: &str) -> Result<&'v str, String> {
    match args.get(key) {
        None | Some(Value::Null) => Err(format!("missing required argument {key}")),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(format!(
            "argument {key} must be a string, got {}",
            crate::record::json_kind(other)
        )),
    }
}

fn opt_str<'v>(args: &'v Args, key: &str) -> Result<Option<&'v str>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => req_str(args, key).map(Some),
    }
}

fn opt_num(args: &Args, key: &str) -> Result<Option<f64>, String> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        // Models often quote numbers; accept a numeric string as the services do.
        Some(Value::String(s)) => s
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| format!("argument {key} must be a number, got {s:?}")),
        Some(other) => Err(format!(
            "argument {key} must be a number, got {}",
            crate::record::json_kind(other)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (Catalog, Room) {
        let cat = Catalog::generate(2, 20);
        let room = Room {
            room_id: "r".into(),
            lang: Lang::Zh,
            current_product: Some("p001".into()),
            queue: vec!["p001".into(), "p002".into(), "p003".into()],
            viewers_online: 10,
        };
        (cat, room)
    }

    fn args(v: Value) -> Args {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn tools_answer_from_the_catalog() {
        let (cat, room) = setup();
        let plan = FaultPlan::default();
        let mut sb = Sandbox::new(&cat, room, &plan, 1);
        let out = sb.call(
            "get_product_detail",
            &args(json!({"product_id": "p002"})),
            1,
        );
        assert!(!out.is_error);
        let v: Value = serde_json::from_str(&out.content).unwrap();
        assert_eq!(v["price"], cat.products[1].price);
        let out = sb.call(
            "update_presentation_order",
            &args(json!({"product_ids": ["p003"]})),
            1,
        );
        let queue = serde_json::from_str::<Value>(&out.content).unwrap()["queue"].clone();
        let ids: Vec<&str> = queue
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["product_id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["p003", "p001", "p002"]);
        let q = cat.faq[2].question.zh.clone();
        let out = sb.call("search_faq", &args(json!({ "question": q })), 1);
        assert_eq!(
            serde_json::from_str::<Value>(&out.content).unwrap()["results"][0]["id"],
            "faq03"
        );
    }

    #[test]
    fn product_search_finds_only_the_rooms_products() {
        let (cat, room) = setup();
        let plan = FaultPlan::default();
        let mut sb = Sandbox::new(&cat, room.clone(), &plan, 1);
        let ids = |sb: &mut Sandbox, keyword: &str| -> Vec<String> {
            let out = sb.call("search_products", &args(json!({ "keyword": keyword })), 1);
            let v: Value = serde_json::from_str(&out.content).unwrap();
            v["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["product_id"].as_str().unwrap().to_string())
                .collect()
        };
        // Every title contains the empty keyword: the whole line-up, and nothing else of the catalog.
        assert_eq!(ids(&mut sb, ""), room.queue);
        let p = &cat.products[1];
        assert_eq!(ids(&mut sb, &p.title.zh), ["p002"]);
        let outside = &cat.products[9];
        assert!(ids(&mut sb, &outside.title.zh).is_empty());
    }

    #[test]
    fn bad_arguments_are_tool_errors() {
        let (cat, room) = setup();
        let plan = FaultPlan::default();
        let mut sb = Sandbox::new(&cat, room, &plan, 1);
        for (tool, a) in [
            ("get_product_detail", json!({})),
            ("get_product_detail", json!({"product_id": 7})),
            (
                "check_inventory",
                json!({"product_id": "p001", "sku_id": "nope"}),
            ),
            (
                "create_purchase_link",
                json!({"product_id": "p001", "quantity": 0}),
            ),
            (
                "get_after_sales_policy",
                json!({"product_id": "p001", "topic": "lol"}),
            ),
            ("no_such_tool", json!({})),
        ] {
            let out = sb.call(tool, &args(a), 1);
            assert!(out.is_error, "{tool}: {}", out.content);
            assert!(out.content.contains("invalid_request"));
        }
    }

    #[test]
    fn every_fault_kind_is_injected_and_recorded() {
        let (cat, room) = setup();
        for kind in FaultKind::ALL {
            let plan: FaultPlan = format!("get_promotions:{}=1", kind.as_str())
                .parse()
                .unwrap();
            let mut sb = Sandbox::new(&cat, room.clone(), &plan, 3);
            let out = sb.call("get_promotions", &args(json!({"product_id": "p001"})), 2);
            assert_eq!(out.fault, Some(kind));
            assert_eq!(
                sb.faults,
                vec![FaultRecord {
                    tool: "get_promotions".into(),
                    kind,
                    round: 2
                }]
            );
            let parsed = serde_json::from_str::<Value>(&out.content);
            match kind {
                FaultKind::Timeout => {
                    assert!(out.content.contains("timeout") && out.latency_ms == plan.deadline_ms)
                }
                FaultKind::PermissionDenied => assert!(out.content.contains("permission_denied")),
                FaultKind::Empty => assert_eq!(parsed.unwrap(), json!({})),
                FaultKind::Malformed => assert!(parsed.is_err()),
            }
            // Other tools are unaffected by a per-tool rate.
            assert_eq!(
                sb.call(
                    "get_product_detail",
                    &args(json!({"product_id": "p001"})),
                    2
                )
                .fault,
                None
            );
        }
    }
}
