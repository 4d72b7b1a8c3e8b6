//! The oracle teacher: a scripted expert host. It reads the *current* harness — tool and skill surface
//! names, argument keys, tool schemas, reply-length limit, round and tool-call budgets — and this turn's tool results,
//! and uses the task's hidden ask only to know what the viewer wants. So it behaves correctly under any
//! renamed or rewritten harness, recovers from tool faults by retrying, and shortens its reply when a
//! hook says it is too long. It is handed the canonical → surface names map; the reading oracle
//! (`reading.rs`) makes the same decisions but has to find the names by reading.

use std::collections::{HashMap, HashSet};

use anyhow::{Context, Result};
use serde_json::{json, Map, Value};

use super::{Conversation, Policy};
use crate::harness::hooks::{BuiltinCheck, Hook, HookEvent};
use crate::harness::{Harness, SkillsMode};
use crate::record::{FunctionCall, Intent, Message, Names, Role, ToolCall};
use crate::sim::catalog::Lang;
use crate::sim::tasks::{skill_for, Ask, Aspect};

/// Attempts per tool call before the oracle gives up on it. Faults are transient, so retrying is right;
/// the harness's round and tool-call budgets usually bind first.
const MAX_ATTEMPTS: usize = 5;

pub struct Oracle {
    surface: Surface,
    limits: Limits,
}

/// How the oracle finds the harness's surface names. [`Oracle`] is handed them (the names map and the
/// harness it plays); the reading oracle ([`super::reading`]) reads them from the prompt and tool specs.
#[derive(Debug, Clone, Default)]
pub struct Surface {
    /// Canonical → surface names of tools, skills and argument keys.
    pub names: Names,
    /// Surface name of the skill-loading tool, when skills are loaded through a tool.
    pub load_tool: Option<String>,
    /// Surface names of the skills the harness offers.
    pub skills: HashSet<String>,
}

/// The numbers the oracle keeps to: taken from the harness it plays, by both oracles (the prompt states
/// them; what the reading oracle measures is finding names).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    max_reply_chars: u64,
    max_rounds: u64,
    max_tool_calls: u64,
}

impl Limits {
    pub fn of(harness: &Harness) -> Limits {
        // The strictest length the harness enforces: the limit, or a reply_length hook's own bound.
        let mut max_reply_chars = harness.limits().max_reply_chars;
        for (event, _, hook) in harness.hooks().iter() {
            if let (HookEvent::Stop, Hook::Builtin(b)) = (event, hook) {
                if let BuiltinCheck::ReplyLength(p) = &b.check {
                    max_reply_chars = max_reply_chars.min(p.max_chars.unwrap_or(max_reply_chars));
                }
            }
        }
        Limits {
            max_reply_chars,
            max_rounds: harness.limits().max_rounds,
            max_tool_calls: harness.limits().max_tool_calls,
        }
    }
}

/// One tool call the oracle needs: surface name and arguments.
#[derive(Debug, Clone, PartialEq)]
struct Need {
    canonical: &'static str,
    tool: String,
    args: Map<String, Value>,
}

/// What happened to a needed call so far this turn.
enum Status {
    Done(Value),
    /// Failed in a way a retry may fix (timeout, denied, malformed or empty answer).
    Retry(usize),
    /// Failed for good (the call itself is wrong, or the budget ran out).
    Failed,
}

impl Oracle {
    /// An oracle for `harness`, whose surface names are `names` (canonical → surface).
    pub fn new(harness: &Harness, names: Names) -> Oracle {
        let load = &harness.manifest().skills.load_tool;
        let load_tool = (harness.skills_mode() == SkillsMode::Tool && harness.tool(load).is_some())
            .then(|| load.clone());
        let surface = Surface {
            names,
            load_tool,
            skills: harness
                .skills()
                .iter()
                .map(|s| s.name().to_string())
                .collect(),
        };
        Oracle {
            surface,
            limits: Limits::of(harness),
        }
    }

    fn has_tool(conv: &Conversation<'_>, surface: &str) -> Option<Value> {
        conv.tools
            .iter()
            .find(|t| t.function.name == surface)
            .map(|t| t.function.parameters.clone())
    }

    /// The calls that answer `ask`, shaped to the harness's version of each tool (its surface name and
    /// the arguments its schema takes). Tools the harness lacks are left out.
    fn needs(names: &Names, conv: &Conversation<'_>, ask: &Ask) -> Vec<Need> {
        let mut out = Vec::new();
        let mut want = |canonical: &'static str, args: Value| {
            let tool = names.tool_surface(canonical).to_string();
            let Some(schema) = Self::has_tool(conv, &tool) else {
                return;
            };
            let props = schema.get("properties").and_then(Value::as_object);
            let args = names.args_surface(canonical, args.as_object().unwrap_or(&Map::new()));
            let mut kept = Map::new();
            for (k, v) in &args {
                if !v.is_null() && props.is_none_or(|p| p.contains_key(k)) {
                    kept.insert(k.clone(), v.clone());
                }
            }
            let required = schema
                .get("required")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if required
                .iter()
                .filter_map(Value::as_str)
                .all(|r| kept.contains_key(r))
            {
                out.push(Need {
                    canonical,
                    tool,
                    args: kept,
                });
            }
        };
        let pid = &ask.product_id;
        match ask.aspect {
            Aspect::Price | Aspect::Spec | Aspect::Size => {
                want("get_product_detail", json!({"product_id": pid}))
            }
            Aspect::Stock => want(
                "check_inventory",
                json!({"product_id": pid, "sku_id": ask.sku_id}),
            ),
            Aspect::Shipping => want(
                "get_shipping_info",
                json!({"product_id": pid, "region": ask.region}),
            ),
            Aspect::Buy => want(
                "create_purchase_link",
                json!({"product_id": pid, "sku_id": ask.sku_id, "quantity": ask.quantity}),
            ),
            Aspect::Promotion => want("get_promotions", json!({"product_id": pid})),
            Aspect::Policy => want(
                "get_after_sales_policy",
                json!({"product_id": pid, "topic": ask.topic, "category": ask.category}),
            ),
            Aspect::OrderStatus => want("get_order_status", json!({"order_id": ask.order_id})),
            Aspect::Faq => want("search_faq", json!({"question": ask.question})),
            Aspect::Reorder => want(
                "update_presentation_order",
                json!({"product_ids": ask.product_ids}),
            ),
            Aspect::Chat | Aspect::Silent | Aspect::Clarify => {}
        }
        out
    }
}

impl Policy for Oracle {
    fn name(&self) -> &str {
        "oracle"
    }

    fn respond(&self, conv: &Conversation<'_>) -> Result<Message> {
        Oracle::decide(conv, &self.surface, &self.limits)
    }
}

impl Oracle {
    /// The oracle's next message: its decisions, with names found through `surface`.
    pub fn decide(conv: &Conversation<'_>, surface: &Surface, limits: &Limits) -> Result<Message> {
        let task = conv
            .task
            .context("the oracle teacher needs the simulated task")?;
        let ask = Ask::of(task).context("the task has no expected.ask for the oracle to act on")?;
        let turn = conv.messages.get(conv.turn_start..).unwrap_or(&[]);
        let history = TurnHistory::read(turn);

        let mut calls = Vec::new();
        let skill = skill_for(if task.intent == Intent::Clarify {
            Aspect::Clarify
        } else {
            ask.aspect
        });
        if let Some(load) = &surface.load_tool {
            let name = surface.names.skill_surface(skill).to_string();
            let loaded = history.calls.iter().any(|(t, _, _)| t == load);
            if !loaded && surface.skills.contains(&name) {
                calls.push((load.clone(), json!({ "name": name })));
            }
        }
        let needs = Self::needs(&surface.names, conv, &ask);
        let rounds_left = limits.max_rounds.saturating_sub(history.rounds);
        let calls_left = limits
            .max_tool_calls
            .saturating_sub(history.calls.len() as u64);
        let mut results: HashMap<&'static str, Value> = HashMap::new();
        for need in &needs {
            match history.status(need) {
                Status::Done(v) => {
                    results.insert(need.canonical, v);
                }
                Status::Retry(attempts)
                    if attempts < MAX_ATTEMPTS
                        && rounds_left >= 2
                        && calls_left > calls.len() as u64 =>
                {
                    calls.push((need.tool.clone(), Value::Object(need.args.clone())));
                }
                _ => {}
            }
        }
        // Calls still pending — data calls, with the skill load in the same round, or a load the
        // runtime refused (a stale loader name) — are made before replying.
        if !calls.is_empty() {
            return Ok(tool_message(calls, history.rounds));
        }
        let shrink = history.feedback;
        let text = if ask.aspect == Aspect::Silent {
            String::new()
        } else {
            let candidates = compose(&ask, &results);
            fit(&candidates, limits.max_reply_chars, shrink)
        };
        Ok(Message::text(Role::Assistant, text))
    }
}

/// This turn so far: calls made (surface tool, args, result), rounds, and hook feedback received.
struct TurnHistory {
    calls: Vec<(String, Value, Option<String>)>,
    rounds: u64,
    feedback: usize,
}

impl TurnHistory {
    fn read(turn: &[Message]) -> TurnHistory {
        let mut calls: Vec<(String, Value, Option<String>)> = Vec::new();
        let mut ids: HashMap<&str, usize> = HashMap::new();
        let mut rounds = 0;
        let mut feedback = 0;
        for m in turn {
            match m.role {
                Role::Assistant => {
                    rounds += 1;
                    for c in &m.tool_calls {
                        ids.insert(c.id.as_str(), calls.len());
                        let args = c
                            .function
                            .parsed_arguments()
                            .map(Value::Object)
                            .unwrap_or(Value::Null);
                        calls.push((c.function.name.clone(), args, None));
                    }
                }
                Role::Tool => {
                    if let Some(i) = m.tool_call_id.as_deref().and_then(|id| ids.get(id)) {
                        calls[*i].2 = Some(m.text_content());
                    }
                }
                Role::User | Role::System | Role::Developer => feedback += 1,
            }
        }
        TurnHistory {
            calls,
            rounds,
            feedback,
        }
    }

    fn status(&self, need: &Need) -> Status {
        let mut attempts = 0;
        for (tool, args, result) in &self.calls {
            if *tool != need.tool || args.as_object() != Some(&need.args) {
                continue;
            }
            attempts += 1;
            let Some(text) = result else { continue };
            match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(o)) if o.is_empty() => {}
                Ok(Value::Object(o)) if o.contains_key("error") => {
                    let code = o["error"].get("code").and_then(Value::as_str).unwrap_or("");
                    if !matches!(code, "timeout" | "permission_denied") {
                        return Status::Failed;
                    }
                }
                Ok(v) => return Status::Done(v),
                Err(_) => {}
            }
        }
        Status::Retry(attempts)
    }
}

fn tool_message(calls: Vec<(String, Value)>, round: u64) -> Message {
    let mut m = Message::text(Role::Assistant, "");
    m.content = None;
    m.tool_calls = calls
        .into_iter()
        .enumerate()
        .map(|(i, (name, args))| ToolCall {
            id: format!("call_{}_{i}", round + 1),
            kind: "function".into(),
            function: FunctionCall {
                name,
                arguments: args.to_string(),
                extra: Map::new(),
            },
            extra: Map::new(),
        })
        .collect();
    m
}

/// The first candidate that fits `limit`, after skipping `shrink` of them (each hook feedback asks for a
/// shorter reply); the shortest one when none fits.
fn fit(candidates: &[String], limit: u64, shrink: usize) -> String {
    let start = shrink.min(candidates.len().saturating_sub(1));
    candidates[start..]
        .iter()
        .find(|c| c.chars().count() as u64 <= limit)
        .or(candidates.last())
        .cloned()
        .unwrap_or_default()
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn n(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::Number(x)) => x.to_string(),
        Some(Value::String(x)) => x.clone(),
        _ => String::new(),
    }
}

/// Reply candidates, longest first; a holding reply when the facts could not be fetched.
fn compose(ask: &Ask, r: &HashMap<&'static str, Value>) -> Vec<String> {
    let zh = ask.lang == Lang::Zh;
    let busy = if zh {
        vec![
            "宝宝稍等，系统有点忙，我马上帮你确认～".to_string(),
            "稍等，马上帮你确认～".to_string(),
        ]
    } else {
        vec![
            "One moment, the system is busy; I'll confirm that for you shortly.".to_string(),
            "One moment, checking!".to_string(),
        ]
    };
    let v = |canonical: &str| r.get(canonical);
    let out: Option<Vec<String>> = match ask.aspect {
        Aspect::Chat => Some(if zh {
            vec![
                "欢迎宝宝来到直播间～今天好物多多，有想了解的随时问我哦！".into(),
                "欢迎宝宝～有问题随时问我！".into(),
                "欢迎～".into(),
            ]
        } else {
            vec![
                "Welcome to the stream! Lots of great picks today, ask me anything.".into(),
                "Welcome! Ask me anything.".into(),
                "Welcome!".into(),
            ]
        }),
        Aspect::Clarify => Some(if zh {
            vec![
                "请问宝宝问的是几号链接呀？我马上帮你查～".into(),
                "请问是几号链接呢？".into(),
                "哪一款呀？".into(),
            ]
        } else {
            vec![
                "Which link number do you mean? I'll check it right away.".into(),
                "Which link do you mean?".into(),
                "Which one?".into(),
            ]
        }),
        Aspect::Silent => Some(vec![String::new()]),
        Aspect::Price => v("get_product_detail").map(|d| {
            let (t, p) = (s(d, "title"), n(d, "price"));
            if zh {
                vec![
                    format!("{t}现在标价¥{p}，喜欢的宝宝可以直接拍哦～"),
                    format!("{t}标价¥{p}"),
                    format!("¥{p}"),
                ]
            } else {
                vec![
                    format!("{t} is ¥{p} right now, grab it while you can!"),
                    format!("{t}: ¥{p}"),
                    format!("¥{p}"),
                ]
            }
        }),
        Aspect::Spec => v("get_product_detail").and_then(|d| {
            let key = ask.spec_key.as_deref()?;
            let value = d.get("specs")?.get(key)?.as_str()?;
            let t = s(d, "title");
            Some(if zh {
                vec![
                    format!("{t}的{key}是{value}，放心入～"),
                    format!("{key}：{value}"),
                    value.to_string(),
                ]
            } else {
                vec![
                    format!("The {key} of {t} is {value}."),
                    format!("{key}: {value}"),
                    value.to_string(),
                ]
            })
        }),
        Aspect::Size => v("get_product_detail").and_then(|d| {
            let advice = d.get("size_advice")?.as_str()?;
            Some(if zh {
                vec![format!("{advice}～"), advice.to_string()]
            } else {
                vec![format!("{advice}."), advice.to_string()]
            })
        }),
        Aspect::Stock => v("check_inventory").and_then(|inv| {
            let sku = inv.get("skus")?.as_array()?.first()?;
            let stock = n(sku, "stock");
            let size = s(sku, "size");
            let label = if zh {
                format!("{}{size}", s(sku, "color"))
            } else {
                format!("{} {size}", s(sku, "color")).trim().to_string()
            };
            Some(match (zh, stock == "0") {
                (true, false) => vec![
                    format!("{label}还有{stock}件，喜欢的宝宝抓紧拍～"),
                    format!("{label}还有{stock}件"),
                    format!("还有{stock}件"),
                ],
                (true, true) => vec![
                    format!("{label}暂时卖完了，库存0件，可以看看其他款式～"),
                    format!("{label}库存0件"),
                    "库存0件".into(),
                ],
                (false, false) => vec![
                    format!("{label}: {stock} left in stock, grab yours!"),
                    format!("{label}: {stock} left"),
                    format!("{stock} left"),
                ],
                (false, true) => vec![
                    format!("{label} is sold out right now (0 left), check the other options!"),
                    format!("{label}: 0 left"),
                    "0 left".into(),
                ],
            })
        }),
        Aspect::Shipping => v("get_shipping_info").map(|sh| {
            let (carrier, eta, from) = (s(sh, "carrier"), n(sh, "eta_days"), s(sh, "ships_from"));
            let region = ask.region.as_deref().unwrap_or_else(|| s(sh, "region"));
            let fee = n(sh, "fee");
            if zh {
                let fee = if fee == "0" {
                    "包邮".to_string()
                } else {
                    format!("运费{fee}元")
                };
                vec![
                    format!("{carrier}发货，{from}发出，到{region}大约{eta}天，{fee}～"),
                    format!("{carrier}，大约{eta}天到"),
                    format!("{carrier}{eta}天"),
                ]
            } else {
                let fee = if fee == "0" {
                    "free shipping".to_string()
                } else {
                    format!("shipping {fee} yuan")
                };
                vec![
                    format!(
                        "Ships via {carrier} from {from}, about {eta} days to {region}, {fee}."
                    ),
                    format!("{carrier}, about {eta} days."),
                    format!("{carrier}, {eta} days"),
                ]
            }
        }),
        Aspect::Buy => v("create_purchase_link").map(|l| {
            let (link, q, total) = (s(l, "link"), n(l, "quantity"), n(l, "total"));
            if zh {
                vec![
                    format!("链接来啦：{link} ，{q}件到手共¥{total}，快去拍～"),
                    format!("{link} 共¥{total}"),
                ]
            } else {
                vec![
                    format!("Here's your link: {link} — {q} for ¥{total} in total."),
                    format!("{link} ¥{total}"),
                ]
            }
        }),
        Aspect::Promotion => v("get_promotions").map(|p| {
            let fin = n(p, "final_price");
            let coupon = p.get("coupon").filter(|c| c.is_object()).map(|c| {
                if zh {
                    format!("满{}减{}", n(c, "threshold"), n(c, "amount"))
                } else {
                    format!("¥{} off orders over ¥{}", n(c, "amount"), n(c, "threshold"))
                }
            });
            let discount = p
                .get("discount")
                .and_then(Value::as_str)
                .map(str::to_string);
            let window = s(p, "window");
            let deals: Vec<String> = discount.into_iter().chain(coupon).collect();
            if zh {
                let d = if deals.is_empty() {
                    String::new()
                } else {
                    format!("现在{}，", deals.join("，"))
                };
                vec![
                    format!("{d}到手价¥{fin}，活动时间{window}～"),
                    format!("{d}到手价¥{fin}"),
                    format!("到手价¥{fin}"),
                ]
            } else {
                let d = if deals.is_empty() {
                    String::new()
                } else {
                    format!("{}, ", deals.join(", "))
                };
                vec![
                    format!("{d}final price ¥{fin}, valid {window}."),
                    format!("{d}final price ¥{fin}"),
                    format!("Final price ¥{fin}"),
                ]
            }
        }),
        Aspect::Policy => v("get_after_sales_policy").and_then(|p| {
            let topic = ask.topic.as_deref().unwrap_or("return");
            let rows = p.get("policies")?.as_array()?;
            let row = rows
                .iter()
                .find(|row| s(row, "topic") == topic)
                .or(rows.first())?;
            let text = s(row, "policy");
            Some(if zh {
                vec![format!("{text}，放心购～"), text.to_string()]
            } else {
                vec![format!("{text}. Shop with confidence!"), text.to_string()]
            })
        }),
        Aspect::OrderStatus => v("get_order_status").map(|o| {
            let (id, status, carrier, eta) = (
                s(o, "order_id"),
                s(o, "status"),
                s(o, "carrier"),
                n(o, "eta_days"),
            );
            let soon = eta != "0";
            match (zh, soon) {
                (true, true) => vec![
                    format!("您的订单{id}{status}，{carrier}配送，预计{eta}天送达～"),
                    format!("订单{status}，预计{eta}天到"),
                    status.to_string(),
                ],
                (true, false) => vec![
                    format!("您的订单{id}{status}，由{carrier}配送～"),
                    format!("订单{status}"),
                    status.to_string(),
                ],
                (false, true) => vec![
                    format!("Order {id} is {status} with {carrier}, about {eta} days to go."),
                    format!("Order {status}, about {eta} days."),
                    status.to_string(),
                ],
                (false, false) => vec![
                    format!("Order {id} is {status} ({carrier})."),
                    format!("Order {status}."),
                    status.to_string(),
                ],
            }
        }),
        Aspect::Faq => v("search_faq").and_then(|f| {
            let hits = f.get("results")?.as_array()?;
            let q = ask.question.as_deref().unwrap_or_default();
            let hit = hits
                .iter()
                .find(|h| s(h, "question") == q)
                .or(hits.first())?;
            let a = s(hit, "answer");
            Some(if zh {
                vec![format!("{a}～"), a.to_string()]
            } else {
                vec![format!("{a}."), a.to_string()]
            })
        }),
        Aspect::Reorder => v("update_presentation_order").and_then(|u| {
            let first = u.get("queue")?.as_array()?.first()?;
            let t = s(first, "title");
            Some(if zh {
                vec![
                    format!("好的，马上为大家讲解{t}～"),
                    format!("马上讲{t}"),
                    t.to_string(),
                ]
            } else {
                vec![
                    format!("Sure, {t} is up next!"),
                    format!("Next up: {t}"),
                    t.to_string(),
                ]
            })
        }),
    };
    out.unwrap_or(busy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_prefers_the_longest_that_fits_and_shrinks_on_feedback() {
        let c = vec![
            "一二三四五六".to_string(),
            "一二三".to_string(),
            "一".to_string(),
        ];
        assert_eq!(fit(&c, 10, 0), "一二三四五六");
        assert_eq!(fit(&c, 4, 0), "一二三");
        assert_eq!(fit(&c, 10, 1), "一二三");
        assert_eq!(fit(&c, 0, 0), "一");
        assert_eq!(fit(&c, 10, 9), "一");
    }
}
