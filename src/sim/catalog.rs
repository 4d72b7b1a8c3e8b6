//! A seeded product catalog for the live-room simulator: products with specs, SKUs and stock, prices,
//! promotions, shipping and after-sales terms, plus the store FAQ and a few orders — every text in Chinese
//! and English. Prices are whole yuan so the facts a reply must state are plain integers.

use serde::{Deserialize, Serialize};

use crate::rng::Rng;

/// The language of a live room: tool results and viewer messages use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    Zh,
    En,
}

/// A text in both languages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Text {
    pub zh: String,
    pub en: String,
}

impl Text {
    pub fn new(zh: impl Into<String>, en: impl Into<String>) -> Text {
        Text {
            zh: zh.into(),
            en: en.into(),
        }
    }

    pub fn get(&self, lang: Lang) -> &str {
        match lang {
            Lang::Zh => &self.zh,
            Lang::En => &self.en,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Catalog {
    pub seed: u64,
    pub products: Vec<Product>,
    pub faq: Vec<FaqEntry>,
    pub orders: Vec<Order>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Product {
    pub id: String,
    /// Category id in English (`electronics`, `beauty`, `apparel`, `shoes`, `food`, `home`).
    pub category: String,
    pub brand: String,
    /// What the product is, without the brand ("wireless noise-cancelling earbuds").
    pub kind: Text,
    pub title: Text,
    pub description: Text,
    /// List price in yuan.
    pub price: u32,
    pub specs: Vec<Spec>,
    pub skus: Vec<Sku>,
    pub promotion: Promotion,
    pub shipping: Shipping,
    pub after_sales: AfterSales,
    /// Size advice, for apparel and shoes only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizing: Option<Sizing>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sizing {
    pub advice: Text,
    /// The part of the advice a correct reply must repeat.
    pub key_fact: Text,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spec {
    pub key: Text,
    pub value: Text,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sku {
    pub id: String,
    pub color: Text,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<String>,
    pub stock: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Promotion {
    /// "Spend `threshold`, save `amount`" (满减).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coupon: Option<Coupon>,
    /// Percent of the list price paid during the window (90 = 10% off, 9折).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discount_pct: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<Text>,
    /// Live-room time window, `HH:MM`.
    pub starts: String,
    pub ends: String,
    /// What one unit costs in the window after discount and coupon.
    pub final_price: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Coupon {
    pub threshold: u32,
    pub amount: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Shipping {
    pub carrier: Text,
    pub eta_days: u32,
    /// Fee in yuan; 0 = free shipping.
    pub fee: u32,
    pub ships_from: Text,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AfterSales {
    pub return_days: u32,
    pub exchange_days: u32,
    pub warranty_months: u32,
    pub refund_days: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaqEntry {
    pub id: String,
    pub question: Text,
    pub answer: Text,
    /// The fact a correct reply must repeat (a number or a short term in the answer).
    pub key_fact: Text,
    /// Lower-case search terms in both languages.
    pub keywords: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Order {
    pub id: String,
    pub product_id: String,
    /// `paid | shipped | in_transit | delivered`.
    pub status: String,
    pub carrier: Text,
    pub eta_days: u32,
}

/// Dataset split; products and phrasings are partitioned so the splits never share them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    Train,
    Dev,
    Test,
}

impl Split {
    /// Slot `i` of a partitioned list: 3 of 5 slots train, 1 dev, 1 test.
    pub fn of_index(i: usize) -> Split {
        match i % 5 {
            3 => Split::Dev,
            4 => Split::Test,
            _ => Split::Train,
        }
    }
}

impl Catalog {
    pub fn product(&self, id: &str) -> Option<&Product> {
        self.products.iter().find(|p| p.id == id)
    }

    pub fn order(&self, id: &str) -> Option<&Order> {
        self.orders.iter().find(|o| o.id == id)
    }

    /// The products of one split, in catalog order.
    pub fn split(&self, split: Split) -> Vec<&Product> {
        self.products
            .iter()
            .enumerate()
            .filter(|(i, _)| Split::of_index(*i) == split)
            .map(|(_, p)| p)
            .collect()
    }

    /// The FAQ entries of one split (partitioned like products, so held-out tasks ask unseen entries).
    pub fn faq_of(&self, split: Split) -> Vec<&FaqEntry> {
        self.faq
            .iter()
            .enumerate()
            .filter(|(i, _)| Split::of_index(*i) == split)
            .map(|(_, f)| f)
            .collect()
    }

    /// Generate `n` products (at least 5 so every split has one), the FAQ and two orders per product.
    pub fn generate(seed: u64, n: usize) -> Catalog {
        let n = n.max(5);
        let mut rng = Rng::derive(seed, "catalog");
        let mut products = Vec::with_capacity(n);
        for i in 0..n {
            let kind = &KINDS[i % KINDS.len()];
            products.push(product(&mut rng, seed, i, kind));
        }
        let mut orders = Vec::new();
        for (i, p) in products.iter().enumerate() {
            for j in 0..2 {
                let status = *rng.pick(&["paid", "shipped", "in_transit", "delivered"]);
                orders.push(Order {
                    id: format!("{}{:04}", 80_000 + i * 7 + j * 3, rng.below(10_000)),
                    product_id: p.id.clone(),
                    status: status.to_string(),
                    carrier: p.shipping.carrier.clone(),
                    eta_days: if status == "delivered" {
                        0
                    } else {
                        rng.range(1, 4)
                    },
                });
            }
        }
        Catalog {
            seed,
            products,
            faq: faq(),
            orders,
        }
    }
}

/// One kind of product: what it is called, its category, and how to draw its attributes.
struct Kind {
    category: &'static str,
    name: (&'static str, &'static str),
    brands: &'static [&'static str],
    price: (u32, u32),
    colors: &'static [(&'static str, &'static str)],
    sizes: &'static [&'static str],
    specs: &'static [(
        (&'static str, &'static str),
        &'static [(&'static str, &'static str)],
    )],
}

const KINDS: &[Kind] = &[
    Kind {
        category: "electronics",
        name: ("无线降噪耳机", "wireless noise-cancelling earbuds"),
        brands: &["声悦", "Sonix", "AirTone"],
        price: (199, 899),
        colors: &[("黑色", "black"), ("白色", "white"), ("雾蓝", "mist blue")],
        sizes: &[],
        specs: &[
            (
                ("续航", "battery life"),
                &[
                    ("30小时", "30 hours"),
                    ("36小时", "36 hours"),
                    ("24小时", "24 hours"),
                ],
            ),
            (
                ("蓝牙", "Bluetooth"),
                &[("蓝牙5.3", "Bluetooth 5.3"), ("蓝牙5.2", "Bluetooth 5.2")],
            ),
            (
                ("防水", "water resistance"),
                &[("IPX4", "IPX4"), ("IPX5", "IPX5")],
            ),
        ],
    },
    Kind {
        category: "beauty",
        name: ("保湿精华液", "hydrating serum"),
        brands: &["水漾", "Lumière", "花研"],
        price: (89, 459),
        colors: &[("标准装", "standard"), ("旅行装", "travel size")],
        sizes: &[],
        specs: &[
            (
                ("容量", "volume"),
                &[("30毫升", "30 ml"), ("50毫升", "50 ml")],
            ),
            (
                ("适合肤质", "skin type"),
                &[
                    ("干性肌肤", "dry skin"),
                    ("所有肤质", "all skin types"),
                    ("混合肌", "combination skin"),
                ],
            ),
        ],
    },
    Kind {
        category: "apparel",
        name: ("纯棉圆领T恤", "cotton crew-neck T-shirt"),
        brands: &["棉语", "Urbanite", "素简"],
        price: (59, 199),
        colors: &[("白色", "white"), ("黑色", "black"), ("燕麦色", "oat")],
        sizes: &["S", "M", "L", "XL"],
        specs: &[
            (
                ("面料", "fabric"),
                &[("纯棉", "pure cotton"), ("精梳棉", "combed cotton")],
            ),
            (("版型", "fit"), &[("宽松", "relaxed"), ("修身", "slim")]),
        ],
    },
    Kind {
        category: "shoes",
        name: ("轻便跑步鞋", "lightweight running shoes"),
        brands: &["疾风", "Stride", "跃动"],
        price: (259, 699),
        colors: &[
            ("黑白", "black/white"),
            ("灰色", "grey"),
            ("荧光绿", "neon green"),
        ],
        sizes: &["38", "39", "40", "41", "42", "43"],
        specs: &[
            (
                ("鞋底", "sole"),
                &[("EVA缓震", "EVA cushioning"), ("橡胶防滑", "rubber grip")],
            ),
            (
                ("重量", "weight"),
                &[("约230克", "about 230 g"), ("约260克", "about 260 g")],
            ),
        ],
    },
    Kind {
        category: "food",
        name: ("每日坚果礼盒", "daily mixed nuts gift box"),
        brands: &["果仁坊", "NutJoy", "山野"],
        price: (69, 229),
        colors: &[("原味", "original"), ("低盐", "low salt")],
        sizes: &[],
        specs: &[
            (
                ("净含量", "net weight"),
                &[("750克", "750 g"), ("1千克", "1 kg")],
            ),
            (
                ("保质期", "shelf life"),
                &[("180天", "180 days"), ("240天", "240 days")],
            ),
        ],
    },
    Kind {
        category: "home",
        name: ("不粘炒锅", "non-stick wok"),
        brands: &["厨匠", "ChefLine", "家和"],
        price: (129, 499),
        colors: &[("曜石黑", "obsidian black"), ("奶白", "cream")],
        sizes: &["28cm", "32cm"],
        specs: &[
            (
                ("材质", "material"),
                &[
                    ("铝合金", "aluminium alloy"),
                    ("不锈钢复底", "clad stainless steel"),
                ],
            ),
            (
                ("适用炉灶", "hob"),
                &[
                    ("燃气灶和电磁炉", "gas and induction"),
                    ("燃气灶", "gas only"),
                ],
            ),
        ],
    },
    Kind {
        category: "electronics",
        name: ("便携充电宝", "portable power bank"),
        brands: &["电立方", "VoltGo", "Ampera"],
        price: (99, 329),
        colors: &[("黑色", "black"), ("粉色", "pink")],
        sizes: &[],
        specs: &[
            (
                ("容量", "capacity"),
                &[("10000毫安", "10000 mAh"), ("20000毫安", "20000 mAh")],
            ),
            (
                ("快充", "fast charging"),
                &[
                    ("支持快充", "supports fast charging"),
                    ("双向快充", "two-way fast charging"),
                ],
            ),
        ],
    },
    Kind {
        category: "home",
        name: ("乳胶枕", "latex pillow"),
        brands: &["眠然", "DreamLeaf", "云栖"],
        price: (149, 399),
        colors: &[("白色", "white"), ("浅灰", "light grey")],
        sizes: &[],
        specs: &[
            (
                ("高度", "height"),
                &[("10厘米", "10 cm"), ("12厘米", "12 cm")],
            ),
            (
                ("材质", "material"),
                &[("天然乳胶", "natural latex"), ("乳胶混纺", "latex blend")],
            ),
        ],
    },
];

const CARRIERS: &[(&str, &str)] = &[
    ("顺丰", "SF Express"),
    ("中通", "ZTO"),
    ("京东物流", "JD Logistics"),
];
const ORIGINS: &[(&str, &str)] = &[
    ("杭州", "Hangzhou"),
    ("广州", "Guangzhou"),
    ("上海", "Shanghai"),
    ("成都", "Chengdu"),
];

fn product(rng: &mut Rng, seed: u64, i: usize, kind: &Kind) -> Product {
    let id = format!("p{:03}", i + 1);
    let brand = rng.pick(kind.brands).to_string();
    // Round list prices to end in 9, as live rooms price them.
    let price = rng.range(kind.price.0, kind.price.1) / 10 * 10 + 9;
    let specs = kind
        .specs
        .iter()
        .map(|(key, values)| {
            let v = rng.pick(values);
            Spec {
                key: Text::new(key.0, key.1),
                value: Text::new(v.0, v.1),
            }
        })
        .collect();
    let mut skus = Vec::new();
    let sizes: Vec<Option<&str>> = if kind.sizes.is_empty() {
        vec![None]
    } else {
        kind.sizes.iter().map(|s| Some(*s)).collect()
    };
    for color in kind.colors {
        for size in &sizes {
            // One SKU in eight is sold out, so stock questions have both answers.
            let stock = if rng.chance(0.125) {
                0
            } else {
                rng.range(3, 300)
            };
            skus.push(Sku {
                id: format!("{id}-{}", skus.len() + 1),
                color: Text::new(color.0, color.1),
                size: size.map(str::to_string),
                stock,
            });
        }
    }
    let coupon = rng.chance(0.6).then(|| {
        let amount = *rng.pick(&[10, 20, 30, 50]);
        Coupon {
            threshold: (price / 100 * 100).max(amount * 2),
            amount,
        }
    });
    let discount_pct = rng.chance(0.5).then(|| *rng.pick(&[80, 85, 90, 95]));
    let mut final_price = discount_pct.map_or(price, |d| price * d / 100);
    if let Some(c) = &coupon {
        if final_price >= c.threshold {
            final_price -= c.amount;
        }
    }
    let bundle = rng
        .chance(0.3)
        .then(|| Text::new("买二送一", "buy two, get one free"));
    let start = rng.range(18, 21);
    let promotion = Promotion {
        coupon,
        discount_pct,
        bundle,
        starts: format!("{start:02}:00"),
        ends: format!("{:02}:00", start + 2),
        final_price,
    };
    let carrier = rng.pick(CARRIERS);
    let origin = rng.pick(ORIGINS);
    let shipping = Shipping {
        carrier: Text::new(carrier.0, carrier.1),
        eta_days: rng.range(1, 5),
        fee: if price >= 99 {
            0
        } else {
            *rng.pick(&[6, 8, 10])
        },
        ships_from: Text::new(origin.0, origin.1),
    };
    // After-sales terms are set per category (as stores do), so a category-level policy tool and a
    // per-product one give the same answer.
    let after_sales = category_terms(seed, kind.category);
    let sizing = match kind.category {
        "apparel" => Some(Sizing {
            advice: Text::new(
                "身高170厘米、体重65公斤左右建议选M，喜欢宽松可以大一码",
                "At about 170 cm and 65 kg take M; size up for a looser fit",
            ),
            key_fact: Text::new("M", "M"),
        }),
        "shoes" => Some(Sizing {
            advice: Text::new(
                "鞋码标准，脚背高或脚宽建议大半码",
                "True to size; go half a size up for wide or high-instep feet",
            ),
            key_fact: Text::new("大半码", "half a size up"),
        }),
        _ => None,
    };
    let title = Text::new(
        format!("{brand}{}", kind.name.0),
        format!("{brand} {}", kind.name.1),
    );
    let description = Text::new(
        format!("{}，{}品质好物，直播间专享。", title.zh, kind.name.0),
        format!("{}, a live-room exclusive.", title.en),
    );
    Product {
        id,
        category: kind.category.to_string(),
        brand,
        kind: Text::new(kind.name.0, kind.name.1),
        title,
        description,
        price,
        specs,
        skus,
        promotion,
        shipping,
        after_sales,
        sizing,
    }
}

fn category_terms(seed: u64, category: &str) -> AfterSales {
    let mut rng = Rng::derive(seed, category);
    AfterSales {
        return_days: *rng.pick(&[7, 15]),
        exchange_days: *rng.pick(&[15, 30]),
        warranty_months: if category == "electronics" {
            *rng.pick(&[12, 24])
        } else {
            0
        },
        refund_days: rng.range(1, 3),
    }
}

fn faq() -> Vec<FaqEntry> {
    let rows: &[(&str, &str, &str, &str, &str, &str, &[&str])] = &[
        (
            "可以开发票吗",
            "Can I get an invoice?",
            "支持开电子发票，下单后在订单详情申请",
            "We issue e-invoices: request one from the order details page",
            "电子发票",
            "e-invoice",
            &["发票", "invoice"],
        ),
        (
            "多久发货",
            "When do you ship?",
            "付款后48小时内发货",
            "We ship within 48 hours of payment",
            "48",
            "48",
            &["发货", "ship", "shipping"],
        ),
        (
            "偏远地区包邮吗",
            "Is shipping free to remote areas?",
            "新疆、西藏等偏远地区不包邮，运费在结算时显示",
            "Shipping to remote regions such as Xinjiang and Tibet is not free; the fee shows at checkout",
            "不包邮",
            "not free",
            &["偏远", "remote", "新疆", "xinjiang"],
        ),
        (
            "优惠券怎么用",
            "How do I use a coupon?",
            "下单时在结算页勾选直播间优惠券即可自动抵扣",
            "Tick the live-room coupon on the checkout page and it is deducted automatically",
            "结算页",
            "checkout page",
            &["优惠券", "coupon", "券"],
        ),
        (
            "是正品吗",
            "Is it genuine?",
            "全部商品品牌官方授权，支持专柜验货",
            "Every product is officially licensed by the brand and can be verified at a counter",
            "官方授权",
            "officially licensed",
            &["正品", "genuine", "authentic", "真的"],
        ),
        (
            "可以货到付款吗",
            "Can I pay on delivery?",
            "暂不支持货到付款，可以用花呗分期",
            "Cash on delivery is not supported; instalments via Huabei are",
            "花呗",
            "Huabei",
            &["货到付款", "cod", "delivery pay", "pay on delivery"],
        ),
        (
            "买贵了能退差价吗",
            "Do you refund the difference if the price drops?",
            "下单后7天内降价可申请价保退差",
            "If the price drops within 7 days of your order you can claim the difference",
            "7",
            "7",
            &["差价", "价保", "price drop", "difference"],
        ),
        (
            "直播每天几点开始",
            "What time does the live start each day?",
            "每天晚上8点准时开播",
            "We go live at 8 pm every day",
            "8",
            "8",
            &["几点", "开播", "what time", "start"],
        ),
        (
            "可以包装成礼物吗",
            "Can you gift-wrap it?",
            "下单备注礼盒包装，免费提供",
            "Add a gift-wrap note to your order; wrapping is free",
            "礼盒",
            "gift-wrap",
            &["礼物", "包装", "gift", "wrap"],
        ),
        (
            "会员有什么福利",
            "What do members get?",
            "会员每月领取2张无门槛券",
            "Members get 2 no-minimum coupons every month",
            "2",
            "2",
            &["会员", "member", "membership"],
        ),
    ];
    rows.iter()
        .enumerate()
        .map(|(i, r)| FaqEntry {
            id: format!("faq{:02}", i + 1),
            question: Text::new(r.0, r.1),
            answer: Text::new(r.2, r.3),
            key_fact: Text::new(r.4, r.5),
            keywords: r.6.iter().map(|k| k.to_string()).collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_is_deterministic_and_consistent() {
        let a = Catalog::generate(11, 20);
        assert_eq!(a, Catalog::generate(11, 20));
        assert_ne!(a, Catalog::generate(12, 20));
        for p in &a.products {
            assert!(p.promotion.final_price <= p.price, "{}", p.id);
            assert!(!p.skus.is_empty());
            assert!(p.title.get(Lang::Zh).contains(&p.brand));
        }
        for s in [Split::Train, Split::Dev, Split::Test] {
            assert!(!a.split(s).is_empty());
        }
        assert!(a.order(&a.orders[3].id).is_some());
        // The FAQ's key facts are stated in the answers they come from.
        for f in &a.faq {
            assert!(
                f.answer.zh.contains(&f.key_fact.zh) && f.answer.en.contains(&f.key_fact.en),
                "{}",
                f.id
            );
        }
    }
}
