//! The viewer simulator: turns the catalog into tasks — a live-room state, the viewer message(s), and the
//! expected outcome in canonical ids — as `Trajectory` records with `task` filled and no system prompt
//! (the runtime renders that from whichever harness runs the task).
//!
//! Each task is a pure function of (catalog, split, seed, index), so tasks can be generated in parallel,
//! sharded, or regenerated one at a time.

use std::collections::BTreeSet;
use std::str::FromStr;

use anyhow::{bail, Context, Result};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::catalog::{Catalog, Lang, Product, Split};
use super::noise;
use super::phrasing::{fill, pick, Phrase};
use crate::record::{Expected, ExpectedCall, Intent, Message, Role, Task, Trajectory};
use crate::rng::Rng;

/// What the viewer asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aspect {
    Price,
    Spec,
    Stock,
    Size,
    Shipping,
    Buy,
    Promotion,
    Policy,
    OrderStatus,
    Faq,
    Reorder,
    Chat,
    Silent,
    /// The request is ambiguous: the right move is to ask which product.
    Clarify,
}

/// The viewer's hidden request (stored in `expected.ask`): what a scripted teacher acts on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ask {
    pub aspect: Aspect,
    pub lang: Lang,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sku_id: Option<String>,
    /// Spec name in the room's language, for `spec` questions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Product category, for after-sales questions (a viewer knows what they bought).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// `return | exchange | warranty | refund`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantity: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_id: Option<String>,
    /// The FAQ question as the viewer's words paraphrase it, for `faq`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// The new presentation order (`reorder`), or the candidates to choose between (`clarify`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub product_ids: Vec<String>,
}

impl Ask {
    fn new(aspect: Aspect, lang: Lang) -> Ask {
        Ask {
            aspect,
            lang,
            product_id: None,
            sku_id: None,
            spec_key: None,
            region: None,
            category: None,
            topic: None,
            quantity: None,
            order_id: None,
            question: None,
            product_ids: Vec::new(),
        }
    }

    /// The ask of a task, if it has one.
    pub fn of(task: &Task) -> Option<Ask> {
        let v = task.expected.as_ref()?.ask.as_ref()?;
        serde_json::from_value(v.clone()).ok()
    }
}

/// The live-room state a task happens in (stored in `task.room`; `get_room_state` returns it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Room {
    pub room_id: String,
    pub lang: Lang,
    /// The product on stage; `None` between products.
    pub current_product: Option<String>,
    /// Products in presentation order (link 1, link 2, …).
    pub queue: Vec<String>,
    pub viewers_online: u32,
}

/// Intent shares of generated traffic.
#[derive(Debug, Clone, PartialEq)]
pub struct Mix(pub Vec<(Intent, f64)>);

impl Default for Mix {
    /// The live-room traffic mix (DESIGN §1).
    fn default() -> Mix {
        Mix(vec![
            (Intent::ProductQa, 46.0),
            (Intent::Chat, 19.0),
            (Intent::Clarify, 16.0),
            (Intent::AfterSales, 7.0),
            (Intent::Promotion, 4.0),
            (Intent::PresentationOrder, 2.0),
            (Intent::Faq, 2.0),
            (Intent::SilentRefusal, 0.8),
        ])
    }
}

impl FromStr for Mix {
    type Err = anyhow::Error;

    /// `product_qa=46,chat=19,...`; intents not named get weight 0.
    fn from_str(s: &str) -> Result<Mix> {
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, w) = part
                .split_once('=')
                .with_context(|| format!("mix entry '{part}' is not intent=weight"))?;
            let intent = Intent::ALL
                .into_iter()
                .find(|i| i.as_str() == name.trim())
                .with_context(|| format!("unknown intent '{}' in mix", name.trim()))?;
            let w: f64 = w
                .trim()
                .parse()
                .with_context(|| format!("weight of '{name}' is not a number"))?;
            if !(w >= 0.0 && w.is_finite()) {
                bail!("weight of '{name}' must be a non-negative number");
            }
            out.push((intent, w));
        }
        if out.iter().map(|(_, w)| w).sum::<f64>() <= 0.0 {
            bail!("mix '{s}' has no positive weight");
        }
        Ok(Mix(out))
    }
}

impl Mix {
    fn draw(&self, rng: &mut Rng) -> Intent {
        let total: f64 = self.0.iter().map(|(_, w)| w).sum();
        let mut x = rng.unit() * total;
        for (intent, w) in &self.0 {
            if x < *w {
                return *intent;
            }
            x -= w;
        }
        self.0
            .iter()
            .rev()
            .find(|(_, w)| *w > 0.0)
            .map_or(Intent::Chat, |(i, _)| *i)
    }
}

/// Knobs of the viewer simulator.
#[derive(Debug, Clone)]
pub struct TaskConfig {
    /// Whose products, rooms, orders and FAQ entries the tasks ask about.
    pub split: Split,
    /// Whose phrasing templates the viewers use. Usually `split`; held-out tasks phrased with the
    /// training templates (`split` dev, `phrasings` train) test what a model learned about new
    /// products and harnesses without asking it to understand wordings it never saw.
    pub phrasings: Split,
    pub seed: u64,
    pub mix: Mix,
    /// Share of English rooms.
    pub en_share: f64,
    /// Strength of slang/typo noise on viewer messages.
    pub noise: f64,
    /// Probability that other viewers' comments are interleaved with the asking viewer's.
    pub crowd: f64,
    /// Consecutive tasks that share one live-room state (language, queue, product on stage, viewer
    /// count), as the viewers of one stream do; 1 draws a room per task. Records of one room render the
    /// same system prompt, which shared-prefix training computes once.
    pub viewers_per_room: usize,
    /// Canonical tool and skill ids the harness has no counterpart for (`served::Served`): a task whose
    /// ground truth needs one is drawn again, keeping its intent and room.
    pub unserved: BTreeSet<String>,
}

impl TaskConfig {
    pub fn new(split: Split, seed: u64) -> TaskConfig {
        TaskConfig {
            split,
            phrasings: split,
            seed,
            mix: Mix::default(),
            en_share: 0.3,
            noise: 0.3,
            crowd: 0.3,
            viewers_per_room: 1,
            unserved: BTreeSet::new(),
        }
    }
}

/// `n` tasks, generated in parallel; task `i` depends only on the catalog, the config and `i`.
pub fn generate(catalog: &Catalog, cfg: &TaskConfig, n: usize) -> Result<Vec<Trajectory>> {
    if catalog.split(cfg.split).len() < 2 {
        bail!(
            "the catalog has fewer than 2 products in split {:?}; generate a larger catalog",
            cfg.split
        );
    }
    (0..n)
        .into_par_iter()
        .map(|i| task(catalog, cfg, i))
        .collect()
}

/// Draws of a task's ask before its intent is declared unservable. An intent whose asks all need an
/// unserved id fails every draw; one with a few such asks passes within a handful.
const MAX_DRAWS: usize = 64;

/// The first id of `unserved` the ground truth needs.
fn unserved_need<'a>(e: &'a Expected, unserved: &BTreeSet<String>) -> Option<&'a str> {
    e.tool_calls
        .iter()
        .map(|c| c.tool.as_str())
        .chain(e.skill.as_deref())
        .find(|id| unserved.contains(*id))
}

const ZH_VIEWERS: &[&str] = &[
    "小王", "阿杰", "momo", "橙子", "小鹿", "大熊", "糖糖", "老李",
];
const EN_VIEWERS: &[&str] = &["Amy", "Ben", "Chloe", "Dan", "Eva", "Finn", "Gigi", "Hank"];
const REGIONS: &[(&str, &str)] = &[
    ("北京", "Beijing"),
    ("上海", "Shanghai"),
    ("广州", "Guangzhou"),
    ("成都", "Chengdu"),
    ("新疆", "Xinjiang"),
];
const TOPICS: &[(&str, &str, &str)] = &[
    ("return", "退货", "return"),
    ("exchange", "换货", "exchange"),
    ("warranty", "保修", "warranty"),
    ("refund", "退款", "refund"),
];
/// Compliance bait a viewer may add, and the banned phrase a reply must not echo.
const BAIT: &[(&str, &str, &str, &str)] = &[
    (
        "是不是全网最低价",
        "全网最低",
        "is it the lowest price anywhere",
        "lowest price anywhere",
    ),
    (
        "是不是销量第一",
        "销量第一",
        "is it the number one seller",
        "number one",
    ),
];

/// Regions whose deliveries take two extra days (the sandbox applies the same rule).
pub fn is_remote(region: &str) -> bool {
    ["新疆", "西藏", "xinjiang", "tibet"]
        .iter()
        .any(|r| region.to_lowercase().contains(r))
}

/// Order status in words.
pub fn status_text(status: &str, lang: Lang) -> &'static str {
    match (status, lang) {
        ("paid", Lang::Zh) => "已付款待发货",
        ("paid", Lang::En) => "paid, awaiting shipment",
        ("shipped", Lang::Zh) => "已发货",
        ("shipped", Lang::En) => "shipped",
        ("in_transit", Lang::Zh) => "运输中",
        ("in_transit", Lang::En) => "in transit",
        (_, Lang::Zh) => "已签收",
        (_, Lang::En) => "delivered",
    }
}

/// The canonical skill for an ask.
pub fn skill_for(aspect: Aspect) -> &'static str {
    match aspect {
        Aspect::Price | Aspect::Spec => "product-qa",
        Aspect::Stock => "stock-alert",
        Aspect::Size => "size-advice",
        Aspect::Shipping => "shipping-info",
        Aspect::Buy => "purchase-guide",
        Aspect::Promotion => "promotion-explainer",
        Aspect::Policy | Aspect::OrderStatus => "after-sales-care",
        Aspect::Faq => "faq-reply",
        Aspect::Reorder => "presentation-order",
        Aspect::Chat => "casual-chat",
        Aspect::Silent => "silent-refusal",
        Aspect::Clarify => "clarify-question",
    }
}

fn task(catalog: &Catalog, cfg: &TaskConfig, i: usize) -> Result<Trajectory> {
    let stream = cfg.seed ^ (i as u64).wrapping_mul(0x2545_F491_4F6C_DD1D);
    let mut rng = Rng::derive(stream, "task");
    let pool = catalog.split(cfg.split);
    let draw_lang = |rng: &mut Rng| {
        if rng.chance(cfg.en_share) {
            Lang::En
        } else {
            Lang::Zh
        }
    };
    let (lang, intent, room) = if cfg.viewers_per_room > 1 {
        let session = i / cfg.viewers_per_room;
        let mut shared = Rng::derive(
            cfg.seed ^ (session as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            "room",
        );
        let lang = draw_lang(&mut shared);
        let mut room = room(&mut shared, &pool, lang, session, cfg, false);
        let intent = cfg.mix.draw(&mut rng);
        if intent == Intent::Clarify {
            // The ambiguous questions are asked between two products.
            room.current_product = None;
        }
        (lang, intent, room)
    } else {
        let lang = draw_lang(&mut rng);
        let intent = cfg.mix.draw(&mut rng);
        let room = room(&mut rng, &pool, lang, i, cfg, intent == Intent::Clarify);
        (lang, intent, room)
    };
    let viewer = rng
        .pick(if lang == Lang::Zh {
            ZH_VIEWERS
        } else {
            EN_VIEWERS
        })
        .to_string();
    // The first draw continues the task's stream, so a harness that serves everything gets the tasks
    // it always got; a redraw keeps the intent, room and viewer and asks again from a stream of its own.
    let mut draw = 0;
    let (b, expected) = loop {
        let mut b = Builder {
            catalog,
            cfg,
            rng: if draw == 0 {
                rng.clone()
            } else {
                Rng::derive(stream, &format!("task-redraw/{draw}"))
            },
            lang,
            room: room.clone(),
            viewer: viewer.clone(),
            lines: Vec::new(),
            forbidden: Vec::new(),
        };
        let ask = b.ask(intent);
        let expected = b.expected(intent, &ask);
        match unserved_need(&expected, &cfg.unserved) {
            None => break (b, expected),
            Some(id) if draw + 1 == MAX_DRAWS => bail!(
                "task {i}: every one of {MAX_DRAWS} draws of intent {intent} needs {id}, which the harness lacks: \
                 drop {intent} from its [serves] intents (or --mix), or give it a counterpart of {id}"
            ),
            Some(_) => draw += 1,
        }
    };
    let id = if cfg.phrasings == cfg.split {
        format!("sim-{}-{}-{i:06}", split_name(cfg.split), cfg.seed)
    } else {
        let (s, p) = (split_name(cfg.split), split_name(cfg.phrasings));
        format!("sim-{s}-{p}phr-{}-{i:06}", cfg.seed)
    };
    let mut meta = Map::new();
    meta.insert("source".into(), json!("sim"));
    meta.insert("split".into(), json!(split_name(cfg.split)));
    meta.insert("phrasings".into(), json!(split_name(cfg.phrasings)));
    meta.insert("seed".into(), json!(cfg.seed));
    Ok(Trajectory {
        id,
        task: Some(Task {
            intent,
            room: serde_json::to_value(&b.room).unwrap_or(Value::Null),
            viewer: json!({ "name": b.viewer, "lang": lang }),
            expected: Some(expected),
            extra: Map::new(),
        }),
        harness: None,
        tools: Vec::new(),
        messages: b.lines,
        scores: Default::default(),
        meta,
        extra: Map::new(),
    })
}

pub fn split_name(split: Split) -> &'static str {
    match split {
        Split::Train => "train",
        Split::Dev => "dev",
        Split::Test => "test",
    }
}

/// A queue of 3–5 products of distinct kinds, so a kind name ("the earbuds") names one product.
fn room(
    rng: &mut Rng,
    pool: &[&Product],
    lang: Lang,
    i: usize,
    cfg: &TaskConfig,
    between: bool,
) -> Room {
    let mut order: Vec<&Product> = pool.to_vec();
    rng.shuffle(&mut order);
    let want = rng.range(3, 5) as usize;
    let mut queue: Vec<&Product> = Vec::new();
    for p in order {
        if queue.len() < want && !queue.iter().any(|q| q.kind == p.kind) {
            queue.push(p);
        }
    }
    let queue: Vec<String> = queue.iter().map(|p| p.id.clone()).collect();
    Room {
        room_id: format!("room-{}-{}", split_name(cfg.split), i % 97),
        lang,
        current_product: if between {
            None
        } else {
            Some(queue[0].clone())
        },
        queue,
        viewers_online: rng.range(200, 20_000),
    }
}

struct Builder<'a> {
    catalog: &'a Catalog,
    cfg: &'a TaskConfig,
    rng: Rng,
    lang: Lang,
    room: Room,
    viewer: String,
    lines: Vec<Message>,
    forbidden: Vec<String>,
}

impl Builder<'_> {
    fn product(&self, id: &str) -> &Product {
        // Ids come from the room queue, which is built from the catalog.
        self.catalog
            .product(id)
            .expect("room products come from the catalog")
    }

    /// Pick a product of the room and how the viewer refers to it.
    fn target(&mut self) -> (String, String) {
        let id = self.rng.pick(&self.room.queue).clone();
        let reference = self.reference(&id);
        (id, reference)
    }

    fn reference(&mut self, id: &str) -> String {
        let p = self.product(id);
        let (kind, title) = (
            p.kind.get(self.lang).to_string(),
            p.title.get(self.lang).to_string(),
        );
        let link = self.room.queue.iter().position(|q| q == id).unwrap_or(0) + 1;
        let on_stage = self.room.current_product.as_deref() == Some(id);
        let roll = self.rng.below(4);
        match (self.lang, on_stage && roll == 0) {
            (Lang::Zh, true) => "这个".to_string(),
            (Lang::En, true) => "this one".to_string(),
            (Lang::Zh, false) => match roll {
                1 => format!("{link}号链接"),
                2 => title,
                _ => kind,
            },
            (Lang::En, false) => match roll {
                1 => format!("link {link}"),
                2 => title,
                _ => format!("the {kind}"),
            },
        }
    }

    fn say(&mut self, kind: Phrase, vars: &[(&str, &str)], protected: &[&str]) {
        let template = pick(&mut self.rng, kind, self.lang, self.cfg.phrasings);
        let text = fill(template, vars);
        let text = noise::apply(&mut self.rng, &text, self.lang, self.cfg.noise, protected);
        self.crowd();
        let who = self.viewer.clone();
        self.line(&who, &text);
    }

    /// Other viewers' comments, interleaved before the asking viewer's.
    fn crowd(&mut self) {
        if !self.rng.chance(self.cfg.crowd) {
            return;
        }
        for _ in 0..self.rng.range(1, 2) {
            let names = if self.lang == Lang::Zh {
                ZH_VIEWERS
            } else {
                EN_VIEWERS
            };
            let other = loop {
                let n = *self.rng.pick(names);
                if n != self.viewer {
                    break n;
                }
            };
            let text = pick(&mut self.rng, Phrase::Crowd, self.lang, self.cfg.phrasings);
            self.line(other, text);
        }
    }

    fn line(&mut self, who: &str, text: &str) {
        let sep = if self.lang == Lang::Zh { "：" } else { ": " };
        self.lines
            .push(Message::text(Role::User, format!("{who}{sep}{text}")));
    }

    fn bait(&mut self, text: &mut String) {
        if self.rng.chance(0.1) {
            let b = self.rng.pick(BAIT);
            let (q, banned) = if self.lang == Lang::Zh {
                (b.0, b.1)
            } else {
                (b.2, b.3)
            };
            text.push_str(if self.lang == Lang::Zh { "，" } else { ", " });
            text.push_str(q);
            self.forbidden.push(banned.to_string());
        }
    }

    fn ask(&mut self, intent: Intent) -> Ask {
        let lang = self.lang;
        match intent {
            Intent::ProductQa => {
                let x = self.rng.unit();
                let aspect = match x {
                    x if x < 0.25 => Aspect::Price,
                    x if x < 0.45 => Aspect::Spec,
                    x if x < 0.65 => Aspect::Stock,
                    x if x < 0.75 => Aspect::Size,
                    x if x < 0.9 => Aspect::Shipping,
                    _ => Aspect::Buy,
                };
                self.product_ask(aspect)
            }
            Intent::Promotion => self.product_ask(Aspect::Promotion),
            Intent::AfterSales if self.rng.chance(0.5) => self.product_ask(Aspect::Policy),
            Intent::AfterSales => {
                let pid = self.rng.pick(&self.room.queue).clone();
                let order = self
                    .catalog
                    .orders
                    .iter()
                    .find(|o| o.product_id == pid)
                    .map(|o| o.id.clone());
                let mut ask = Ask::new(Aspect::OrderStatus, lang);
                let order = order.unwrap_or_else(|| self.catalog.orders[0].id.clone());
                self.say(Phrase::OrderStatus, &[("order", &order)], &[&order]);
                ask.order_id = Some(order);
                ask
            }
            Intent::Faq => {
                let entries = self.catalog.faq_of(self.cfg.split);
                let entry = (*self.rng.pick(&entries)).clone();
                let q = entry.question.get(lang).to_string();
                self.say(Phrase::Faq, &[("q", &q)], &[]);
                let mut ask = Ask::new(Aspect::Faq, lang);
                ask.question = Some(q);
                ask
            }
            Intent::PresentationOrder => {
                // Ask for a product that is not on stage, so the order really changes.
                let idx = 1 + self.rng.below(self.room.queue.len() - 1);
                let id = self.room.queue[idx].clone();
                let reference = self.reference(&id);
                self.say(Phrase::Reorder, &[("p", &reference)], &[&reference]);
                let mut ask = Ask::new(Aspect::Reorder, lang);
                let mut order = vec![id.clone()];
                order.extend(self.room.queue.iter().filter(|q| **q != id).cloned());
                ask.product_id = Some(id);
                ask.product_ids = order;
                ask
            }
            Intent::Chat => {
                self.say(Phrase::Chat, &[], &[]);
                Ask::new(Aspect::Chat, lang)
            }
            Intent::SilentRefusal => {
                self.say(Phrase::Silent, &[], &[]);
                Ask::new(Aspect::Silent, lang)
            }
            Intent::Clarify if self.room.current_product.is_none() && self.rng.chance(0.5) => {
                self.say(Phrase::Ambiguous, &[], &[]);
                let mut ask = Ask::new(Aspect::Clarify, lang);
                ask.product_ids = self.room.queue.clone();
                ask
            }
            Intent::Clarify => {
                // Ambiguous question, the host's clarifying question, then the viewer's answer.
                self.say(Phrase::Ambiguous, &[], &[]);
                let question = match lang {
                    Lang::Zh => "请问您问的是哪一款呢？",
                    Lang::En => "Which product do you mean?",
                };
                // The host's question is scripted context, not the policy's: `weight: 0` (the OpenAI
                // fine-tuning field) keeps it out of the loss.
                let mut scripted = Message::text(Role::Assistant, question);
                scripted.extra.insert("weight".into(), json!(0));
                self.lines.push(scripted);
                let (id, reference) = self.target_by_name();
                self.say(Phrase::ClarifyAnswer, &[("p", &reference)], &[&reference]);
                let mut ask = Ask::new(Aspect::Price, lang);
                ask.product_id = Some(id);
                ask
            }
        }
    }

    /// A product named by kind or title (a clarification answer cannot say "this one").
    fn target_by_name(&mut self) -> (String, String) {
        let id = self.rng.pick(&self.room.queue).clone();
        let by_kind = self.rng.chance(0.5);
        let p = self.product(&id);
        let r = if by_kind {
            p.kind.get(self.lang)
        } else {
            p.title.get(self.lang)
        };
        (id, r.to_string())
    }

    fn product_ask(&mut self, mut aspect: Aspect) -> Ask {
        let lang = self.lang;
        let (id, reference) = self.target();
        let p = self.product(&id).clone();
        if aspect == Aspect::Size && p.sizing.is_none() {
            aspect = Aspect::Spec;
        }
        let mut ask = Ask::new(aspect, lang);
        ask.product_id = Some(id);
        match aspect {
            Aspect::Spec => {
                let spec = self.rng.pick(&p.specs).clone();
                let mut vars_key = spec.key.get(lang).to_string();
                if lang == Lang::En {
                    vars_key = vars_key.to_lowercase();
                }
                self.say(
                    Phrase::Spec,
                    &[("p", &reference), ("key", &vars_key)],
                    &[&reference, &vars_key],
                );
                ask.spec_key = Some(spec.key.get(lang).to_string());
            }
            Aspect::Stock | Aspect::Buy => {
                // A viewer buying picks what is on sale; stock questions may hit a sold-out SKU.
                let in_stock: Vec<_> = p.skus.iter().filter(|s| s.stock > 0).cloned().collect();
                let pool = if aspect == Aspect::Buy && !in_stock.is_empty() {
                    &in_stock
                } else {
                    &p.skus
                };
                let sku = self.rng.pick(pool).clone();
                let mut label = sku.color.get(lang).to_string();
                if let Some(size) = &sku.size {
                    label = if lang == Lang::Zh {
                        format!("{label}{size}")
                    } else {
                        format!("{label} {size}")
                    };
                }
                let n = if aspect == Aspect::Buy {
                    self.rng.range(1, 3)
                } else {
                    1
                };
                let ns = n.to_string();
                let kind = if aspect == Aspect::Stock {
                    Phrase::Stock
                } else {
                    Phrase::Buy
                };
                self.say(
                    kind,
                    &[("p", &reference), ("sku", &label), ("n", &ns)],
                    &[&reference, &label],
                );
                ask.sku_id = Some(sku.id);
                if aspect == Aspect::Buy {
                    ask.quantity = Some(n);
                }
            }
            Aspect::Shipping => {
                let r = self.rng.pick(REGIONS);
                let region = if lang == Lang::Zh { r.0 } else { r.1 };
                self.say(
                    Phrase::Shipping,
                    &[("p", &reference), ("region", region)],
                    &[&reference, region],
                );
                ask.region = Some(region.to_string());
            }
            Aspect::Policy => {
                let usable: Vec<&(&str, &str, &str)> = TOPICS
                    .iter()
                    .filter(|t| t.0 != "warranty" || p.after_sales.warranty_months > 0)
                    .collect();
                let t = **self.rng.pick(&usable);
                let word = if lang == Lang::Zh { t.1 } else { t.2 };
                self.say(
                    Phrase::Policy,
                    &[("p", &reference), ("topic", word)],
                    &[&reference, word],
                );
                ask.topic = Some(t.0.to_string());
                ask.category = Some(p.category.clone());
            }
            _ => {
                let kind = match aspect {
                    Aspect::Price => Phrase::Price,
                    Aspect::Size => Phrase::Size,
                    _ => Phrase::Promotion,
                };
                let template = pick(&mut self.rng, kind, lang, self.cfg.phrasings);
                let mut text = fill(template, &[("p", &reference)]);
                if matches!(aspect, Aspect::Price | Aspect::Promotion) {
                    self.bait(&mut text);
                }
                let text = noise::apply(&mut self.rng, &text, lang, self.cfg.noise, &[&reference]);
                self.crowd();
                let who = self.viewer.clone();
                self.line(&who, &text);
            }
        }
        ask
    }

    fn expected(&self, intent: Intent, ask: &Ask) -> Expected {
        let lang = self.lang;
        let mut e = Expected {
            skill: Some(
                skill_for(if intent == Intent::Clarify {
                    Aspect::Clarify
                } else {
                    ask.aspect
                })
                .to_string(),
            ),
            forbidden: self.forbidden.clone(),
            ask: serde_json::to_value(ask).ok(),
            ..Expected::default()
        };
        let pid = ask.product_id.clone().unwrap_or_default();
        let call = |tool: &str, args: Value| ExpectedCall {
            tool: tool.to_string(),
            args: match args {
                Value::Object(m) => m,
                _ => Map::new(),
            },
            extra: Map::new(),
        };
        let p = ask
            .product_id
            .as_deref()
            .and_then(|id| self.catalog.product(id));
        match (ask.aspect, p) {
            (Aspect::Price, Some(p)) => {
                e.tool_calls
                    .push(call("get_product_detail", json!({ "product_id": pid })));
                e.facts.push(p.price.to_string());
            }
            (Aspect::Spec, Some(p)) => {
                e.tool_calls
                    .push(call("get_product_detail", json!({ "product_id": pid })));
                let key = ask.spec_key.as_deref().unwrap_or_default();
                if let Some(s) = p.specs.iter().find(|s| s.key.get(lang) == key) {
                    e.facts.push(s.value.get(lang).to_string());
                }
            }
            (Aspect::Size, Some(p)) => {
                e.tool_calls
                    .push(call("get_product_detail", json!({ "product_id": pid })));
                if let Some(s) = &p.sizing {
                    e.facts.push(s.key_fact.get(lang).to_string());
                }
            }
            (Aspect::Stock, Some(p)) => {
                let sku = ask.sku_id.clone().unwrap_or_default();
                e.tool_calls.push(call(
                    "check_inventory",
                    json!({ "product_id": pid, "sku_id": sku }),
                ));
                if let Some(s) = p.skus.iter().find(|s| s.id == sku) {
                    e.facts.push(s.stock.to_string());
                }
            }
            (Aspect::Shipping, Some(p)) => {
                let region = ask.region.clone().unwrap_or_default();
                e.tool_calls.push(call(
                    "get_shipping_info",
                    json!({ "product_id": pid, "region": region }),
                ));
                let eta = p.shipping.eta_days + if is_remote(&region) { 2 } else { 0 };
                e.facts.push(eta.to_string());
                e.facts.push(p.shipping.carrier.get(lang).to_string());
            }
            (Aspect::Buy, Some(p)) => {
                let q = ask.quantity.unwrap_or(1);
                e.tool_calls.push(call(
                    "create_purchase_link",
                    json!({ "product_id": pid, "sku_id": ask.sku_id, "quantity": q }),
                ));
                e.facts.push((p.promotion.final_price * q).to_string());
            }
            (Aspect::Promotion, Some(p)) => {
                e.tool_calls
                    .push(call("get_promotions", json!({ "product_id": pid })));
                e.facts.push(p.promotion.final_price.to_string());
            }
            (Aspect::Policy, Some(p)) => {
                let topic = ask.topic.clone().unwrap_or_default();
                e.tool_calls.push(call(
                    "get_after_sales_policy",
                    json!({ "product_id": pid, "topic": topic }),
                ));
                let a = &p.after_sales;
                let n = match topic.as_str() {
                    "return" => a.return_days,
                    "exchange" => a.exchange_days,
                    "warranty" => a.warranty_months,
                    _ => a.refund_days,
                };
                e.facts.push(n.to_string());
            }
            (Aspect::OrderStatus, _) => {
                let id = ask.order_id.clone().unwrap_or_default();
                e.tool_calls
                    .push(call("get_order_status", json!({ "order_id": id })));
                if let Some(o) = self.catalog.order(&id) {
                    e.facts.push(status_text(&o.status, lang).to_string());
                }
            }
            (Aspect::Faq, _) => {
                e.tool_calls.push(call("search_faq", json!({})));
                let q = ask.question.as_deref().unwrap_or_default();
                if let Some(f) = self.catalog.faq.iter().find(|f| f.question.get(lang) == q) {
                    e.facts.push(f.key_fact.get(lang).to_string());
                }
            }
            (Aspect::Reorder, Some(p)) => {
                e.tool_calls.push(call(
                    "update_presentation_order",
                    json!({ "product_ids": ask.product_ids }),
                ));
                e.facts.push(p.brand.clone());
            }
            (Aspect::Silent, _) => e.silent = true,
            (Aspect::Clarify, _) => e.clarify = true,
            _ => {}
        }
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_are_deterministic_and_follow_the_mix() {
        let cat = Catalog::generate(1, 40);
        let cfg = TaskConfig::new(Split::Dev, 9);
        let a = generate(&cat, &cfg, 400).unwrap();
        assert_eq!(a, generate(&cat, &cfg, 400).unwrap());
        let qa = a
            .iter()
            .filter(|t| t.task.as_ref().unwrap().intent == Intent::ProductQa)
            .count();
        assert!((140..230).contains(&qa), "{qa}");
        let dev: Vec<String> = cat.split(Split::Dev).iter().map(|p| p.id.clone()).collect();
        for t in &a {
            let task = t.task.as_ref().unwrap();
            let room: Room = serde_json::from_value(task.room.clone()).unwrap();
            assert!(
                room.queue.iter().all(|p| dev.contains(p)),
                "{}: products outside the split",
                t.id
            );
            let e = task.expected.as_ref().unwrap();
            assert!(e.skill.is_some() && Ask::of(task).is_some());
            assert!(!t.messages.is_empty());
            if !e.silent && !e.clarify && task.intent != Intent::Chat {
                assert!(!e.facts.is_empty() && !e.tool_calls.is_empty(), "{}", t.id);
            }
        }
    }

    /// `--split dev --phrasings train`: unseen products, rooms and FAQ entries, asked in the training
    /// wording (every template the split could use, drawn many times, is a training one).
    #[test]
    fn held_out_tasks_can_be_worded_like_training_ones() {
        let cat = Catalog::generate(1, 40);
        let mut cfg = TaskConfig::new(Split::Dev, 4);
        cfg.phrasings = Split::Train;
        cfg.noise = 0.0;
        cfg.crowd = 0.0;
        cfg.mix = "chat=1,faq=1".parse().unwrap();
        let templates = |split: Split| {
            let mut rng = Rng::new(5);
            let mut out = std::collections::HashSet::new();
            for lang in [Lang::Zh, Lang::En] {
                for _ in 0..500 {
                    out.insert(pick(&mut rng, Phrase::Chat, lang, split));
                }
            }
            out
        };
        let (train, dev) = (templates(Split::Train), templates(Split::Dev));
        let dev_faq: Vec<String> = cat
            .faq_of(Split::Dev)
            .iter()
            .flat_map(|f| [f.question.zh.clone(), f.question.en.clone()])
            .collect();
        let tasks = generate(&cat, &cfg, 200).unwrap();
        let (mut chats, mut faqs) = (0, 0);
        for t in &tasks {
            assert!(t.id.starts_with("sim-dev-trainphr-4-"), "{}", t.id);
            let task = t.task.as_ref().unwrap();
            if task.intent == Intent::Chat {
                let text = t.messages[0].text_content();
                let said = text.split_once('：').or(text.split_once(": ")).unwrap().1;
                assert!(train.contains(said) && !dev.contains(said), "{said}");
                chats += 1;
            } else {
                let q = Ask::of(task).unwrap().question.unwrap();
                assert!(dev_faq.contains(&q), "{q} is not a dev FAQ entry");
                faqs += 1;
            }
        }
        assert!(chats > 50 && faqs > 50, "{chats} chats, {faqs} FAQ");
    }

    #[test]
    fn viewers_of_one_room_share_its_state() {
        let catalog = Catalog::generate(1, 60);
        let mut cfg = TaskConfig::new(Split::Train, 3);
        cfg.viewers_per_room = 4;
        let tasks = generate(&catalog, &cfg, 12).unwrap();
        let room = |t: &Trajectory| {
            let mut r: Room =
                serde_json::from_value(t.task.as_ref().unwrap().room.clone()).unwrap();
            r.current_product = None; // clarify tasks happen between products
            serde_json::to_string(&r).unwrap()
        };
        for session in tasks.chunks(4) {
            assert!(session.iter().all(|t| room(t) == room(&session[0])));
        }
        assert_ne!(room(&tasks[0]), room(&tasks[4]));
        let ids: std::collections::HashSet<_> = tasks.iter().map(|t| &t.id).collect();
        assert_eq!(ids.len(), 12);
        assert_eq!(tasks, generate(&catalog, &cfg, 12).unwrap());
    }

    #[test]
    fn mix_parses_and_rejects_nonsense() {
        let m: Mix = "faq=1, chat=3".parse().unwrap();
        assert_eq!(m.0, vec![(Intent::Faq, 1.0), (Intent::Chat, 3.0)]);
        assert!("faq".parse::<Mix>().is_err());
        assert!("nope=1".parse::<Mix>().is_err());
        assert!("faq=0".parse::<Mix>().is_err());
    }
}
