//! The offline banks HSA draws from: naming vocabularies, bilingual (zh/en) paraphrase groups, feedback
//! frames, synthetic and noise skills, and guard terms.
//!
//! Every bank is split into a **train** and an **eval** half ([`Pool`]). Halves never share a surface
//! form, so a harness variant drawn from the eval pool uses renames and rewrites that no training
//! variant contained (the held-out Harness-Variant QA setting). Names are kept disjoint by construction:
//! every generated tool name carries exactly one verb token and every skill name ends in one marker
//! token, and the verb and marker sets of the two pools do not intersect (see `naming.rs`).

use super::config::Pool;

/// A bank entry with a train half and an eval half.
#[derive(Debug, Clone, Copy)]
pub struct Split<T: 'static> {
    pub train: &'static [T],
    pub eval: &'static [T],
}

impl<T> Split<T> {
    pub fn of(&self, pool: Pool) -> &'static [T] {
        match pool {
            Pool::Train => self.train,
            Pool::Eval => self.eval,
        }
    }
}

/// A verb class of tool names: the verbs a tool's canonical first word may be replaced with.
pub struct VerbClass {
    /// Canonical words that belong to the class (`get`, `lookup`, …).
    pub canonical: &'static [&'static str],
    pub verbs: Split<&'static str>,
}

/// Verb classes. Train and eval verbs are disjoint across *all* classes, and no verb is also a noun in
/// [`TOOL_NOUNS`], which is what keeps the two pools' tool names disjoint.
pub const VERB_CLASSES: &[VerbClass] = &[
    VerbClass {
        canonical: &["get", "lookup", "load"],
        verbs: Split {
            train: &["get", "fetch", "read", "qry"],
            eval: &["retrieve", "pull", "obtain", "rtrv"],
        },
    },
    VerbClass {
        canonical: &["check", "verify"],
        verbs: Split {
            train: &["check", "query", "chk"],
            eval: &["inspect", "probe", "examine"],
        },
    },
    VerbClass {
        canonical: &["search", "find"],
        verbs: Split {
            train: &["search", "find", "srch"],
            eval: &["locate", "discover", "scan"],
        },
    },
    VerbClass {
        canonical: &["create", "make", "request"],
        verbs: Split {
            train: &["create", "make", "new"],
            eval: &["generate", "build", "issue"],
        },
    },
    VerbClass {
        canonical: &["update", "set", "escalate"],
        verbs: Split {
            train: &["update", "set", "upd"],
            eval: &["modify", "change", "adjust"],
        },
    },
];

/// Noun alternatives per canonical tool (word lists, joined by the naming style). Tools not listed
/// here fall back to the words of their canonical id.
pub const TOOL_NOUNS: &[(&str, &[&[&str]])] = &[
    (
        "search_products",
        &[
            &["products"],
            &["items"],
            &["goods"],
            &["product", "catalog"],
        ],
    ),
    (
        "get_product_detail",
        &[
            &["product", "detail"],
            &["item", "info"],
            &["product", "specs"],
            &["goods", "detail"],
        ],
    ),
    (
        "check_inventory",
        &[
            &["inventory"],
            &["stock"],
            &["stock", "level"],
            &["sku", "stock"],
        ],
    ),
    (
        "get_promotions",
        &[&["promotions"], &["promos"], &["deals"], &["coupons"]],
    ),
    (
        "get_shipping_info",
        &[
            &["shipping", "info"],
            &["delivery", "info"],
            &["shipping", "eta"],
            &["logistics"],
        ],
    ),
    (
        "get_after_sales_policy",
        &[
            &["after", "sales", "policy"],
            &["return", "policy"],
            &["service", "terms"],
            &["warranty", "policy"],
        ],
    ),
    (
        "create_purchase_link",
        &[
            &["purchase", "link"],
            &["buy", "link"],
            &["checkout", "link"],
            &["order", "link"],
        ],
    ),
    (
        "get_room_state",
        &[
            &["room", "state"],
            &["live", "status"],
            &["stream", "state"],
            &["room", "info"],
        ],
    ),
    (
        "update_presentation_order",
        &[
            &["presentation", "order"],
            &["showcase", "order"],
            &["product", "queue"],
            &["lineup"],
        ],
    ),
    (
        "search_faq",
        &[
            &["faq"],
            &["faqs"],
            &["help", "articles"],
            &["common", "questions"],
        ],
    ),
    (
        "get_order_status",
        &[
            &["order", "status"],
            &["order", "state"],
            &["order", "tracking"],
            &["shipment", "status"],
        ],
    ),
    (
        "load_skill",
        &[
            &["skill"],
            &["skill", "body"],
            &["playbook"],
            &["skill", "rules"],
        ],
    ),
    (
        "lookup_order",
        &[
            &["order"],
            &["order", "record"],
            &["purchase"],
            &["order", "details"],
        ],
    ),
    (
        "request_refund",
        &[
            &["refund"],
            &["refund", "request"],
            &["money", "back"],
            &["reimbursement"],
        ],
    ),
    (
        "get_return_policy",
        &[
            &["return", "policy"],
            &["returns", "terms"],
            &["return", "rules"],
            &["refund", "policy"],
        ],
    ),
    (
        "create_return_label",
        &[
            &["return", "label"],
            &["return", "slip"],
            &["shipping", "label"],
            &["rma", "label"],
        ],
    ),
    (
        "escalate_to_human",
        &[
            &["human", "handoff"],
            &["agent", "transfer"],
            &["human", "agent"],
            &["staff", "handover"],
        ],
    ),
];

/// Word alternatives for skill names, by canonical skill; unknown skills use their own words.
pub const SKILL_WORDS: &[(&str, &[&[&str]])] = &[
    (
        "product-qa",
        &[
            &["product", "qa"],
            &["item", "questions"],
            &["goods", "answers"],
            &["product", "answers"],
        ],
    ),
    (
        "casual-chat",
        &[
            &["casual", "chat"],
            &["small", "talk"],
            &["viewer", "banter"],
            &["chitchat"],
        ],
    ),
    (
        "clarify-question",
        &[
            &["clarify"],
            &["ask", "back"],
            &["disambiguate"],
            &["follow", "up", "question"],
        ],
    ),
    (
        "after-sales-care",
        &[
            &["after", "sales"],
            &["post", "purchase"],
            &["service", "care"],
            &["returns", "help"],
        ],
    ),
    (
        "promotion-explainer",
        &[
            &["promotion"],
            &["deals", "explainer"],
            &["coupon", "help"],
            &["discount", "talk"],
        ],
    ),
    (
        "presentation-order",
        &[
            &["presentation", "order"],
            &["showcase", "queue"],
            &["lineup", "change"],
            &["item", "order"],
        ],
    ),
    (
        "faq-reply",
        &[
            &["faq"],
            &["common", "questions"],
            &["faq", "answers"],
            &["help", "center"],
        ],
    ),
    (
        "silent-refusal",
        &[
            &["silent", "skip"],
            &["no", "reply"],
            &["ignore", "spam"],
            &["quiet", "refusal"],
        ],
    ),
    (
        "compliance-guard",
        &[
            &["compliance"],
            &["ad", "law", "rules"],
            &["safe", "speech"],
            &["policy", "guard"],
        ],
    ),
    (
        "size-advice",
        &[
            &["size", "advice"],
            &["sizing"],
            &["fit", "help"],
            &["size", "chart"],
        ],
    ),
    (
        "purchase-guide",
        &[
            &["purchase"],
            &["buy", "help"],
            &["checkout", "help"],
            &["order", "placing"],
        ],
    ),
    (
        "shipping-info",
        &[
            &["shipping"],
            &["delivery"],
            &["logistics", "info"],
            &["dispatch", "info"],
        ],
    ),
    (
        "stock-alert",
        &[
            &["stock"],
            &["inventory", "answers"],
            &["availability"],
            &["stock", "check"],
        ],
    ),
    (
        "refund-request",
        &[
            &["refund"],
            &["money", "back"],
            &["refund", "claim"],
            &["refund", "help"],
        ],
    ),
    (
        "return-exchange",
        &[
            &["return", "exchange"],
            &["swap", "or", "return"],
            &["returns"],
            &["exchange", "help"],
        ],
    ),
    (
        "delivery-delay",
        &[
            &["late", "delivery"],
            &["delay"],
            &["shipping", "delay"],
            &["parcel", "late"],
        ],
    ),
];

/// Last token of every generated skill name; disjoint between pools.
pub const SKILL_MARKERS: Split<&str> = Split {
    train: &["guide", "playbook", "flow", "skill"],
    eval: &["handbook", "routine", "howto", "kit"],
};

/// Alternative argument keys for identifier-shaped canonical keys (`rename_params`), as API editors
/// rename them (`product_id` → `item_id`). Train and eval halves share no key; keys outside this bank
/// are re-cased instead (camelCase for train, PascalCase for eval, see `naming::param_key`).
pub const PARAM_KEYS: &[(&str, Split<&str>)] = &[
    (
        "product_id",
        Split {
            train: &["item_id", "goods_id", "productId", "prod_id"],
            eval: &["spu_id", "listing_id", "itemCode", "product_ref"],
        },
    ),
    (
        "sku_id",
        Split {
            train: &["variant_id", "skuId", "spec_id"],
            eval: &["option_id", "sku_code", "variantRef"],
        },
    ),
    (
        "order_id",
        Split {
            train: &["order_no", "orderId", "ord_id"],
            eval: &["order_number", "order_ref", "tradeId"],
        },
    ),
    (
        "product_ids",
        Split {
            train: &["item_ids", "productIds", "goods_ids"],
            eval: &["spu_ids", "listing_ids", "itemCodes"],
        },
    ),
    (
        "max_price",
        Split {
            train: &["price_cap", "maxPrice", "price_limit"],
            eval: &["budget_max", "priceCeiling", "upper_price"],
        },
    ),
    (
        "pickup_date",
        Split {
            train: &["collect_date", "pickupDate"],
            eval: &["pickup_day", "collectionDate"],
        },
    ),
];

/// Noun abbreviations for the abbreviated naming styles.
pub const ABBREVIATIONS: &[(&str, &str)] = &[
    ("inventory", "inv"),
    ("product", "prod"),
    ("products", "prods"),
    ("promotions", "promos"),
    ("information", "info"),
    ("detail", "dtl"),
    ("details", "dtls"),
    ("shipping", "shp"),
    ("presentation", "pres"),
    ("order", "ord"),
    ("status", "stat"),
    ("policy", "pol"),
    ("delivery", "dlv"),
    ("return", "rtn"),
    ("refund", "rfnd"),
    ("question", "q"),
    ("questions", "qs"),
];

/// A group of interchangeable phrases. Any form of the group found in a text may be replaced by a
/// form of the drawing pool; `source` forms occur in harness texts and are in no pool.
pub struct Phrase {
    pub source: &'static [&'static str],
    pub alts: Split<&'static str>,
}

/// Bilingual paraphrase groups for descriptions, rules and feedback. Meaning-preserving only: no group
/// changes a number, a negation or an identifier.
pub const PHRASES: &[Phrase] = &[
    Phrase {
        source: &["调用"],
        alts: Split {
            train: &["使用", "调取"],
            eval: &["请求", "触发"],
        },
    },
    Phrase {
        source: &["查询"],
        alts: Split {
            train: &["查一下", "检索"],
            eval: &["核查", "查看"],
        },
    },
    Phrase {
        source: &["观众"],
        alts: Split {
            train: &["用户", "粉丝"],
            eval: &["看播用户", "直播间观众"],
        },
    },
    Phrase {
        source: &["回复"],
        alts: Split {
            train: &["回答", "答复"],
            eval: &["应答", "回应"],
        },
    },
    Phrase {
        source: &["商品"],
        alts: Split {
            train: &["产品", "货品"],
            eval: &["宝贝", "单品"],
        },
    },
    Phrase {
        source: &["获取"],
        alts: Split {
            train: &["拿到", "取得"],
            eval: &["读取", "获得"],
        },
    },
    Phrase {
        source: &["不要"],
        alts: Split {
            train: &["别", "切勿"],
            eval: &["不可", "请勿"],
        },
    },
    Phrase {
        source: &["只能"],
        alts: Split {
            train: &["仅能", "只可以"],
            eval: &["仅可", "只允许"],
        },
    },
    Phrase {
        source: &["时使用"],
        alts: Split {
            train: &["时用", "时启用"],
            eval: &["时采用", "时选用"],
        },
    },
    Phrase {
        source: &["可选"],
        alts: Split {
            train: &["选填", "非必填"],
            eval: &["可不填", "非必需"],
        },
    },
    Phrase {
        source: &["请"],
        alts: Split {
            train: &["麻烦", "请你"],
            eval: &["烦请", "务请"],
        },
    },
    Phrase {
        source: &["Call"],
        alts: Split {
            train: &["Use", "Invoke"],
            eval: &["Run", "Trigger"],
        },
    },
    Phrase {
        source: &["call"],
        alts: Split {
            train: &["use", "invoke"],
            eval: &["run", "trigger"],
        },
    },
    Phrase {
        source: &["viewer"],
        alts: Split {
            train: &["audience member", "user"],
            eval: &["watcher", "customer"],
        },
    },
    Phrase {
        source: &["viewers"],
        alts: Split {
            train: &["audience members", "users"],
            eval: &["watchers", "customers"],
        },
    },
    Phrase {
        source: &["Answer"],
        alts: Split {
            train: &["Respond to", "Reply to"],
            eval: &["Address", "Handle"],
        },
    },
    Phrase {
        source: &["reply"],
        alts: Split {
            train: &["response", "answer"],
            eval: &["message back", "spoken answer"],
        },
    },
    Phrase {
        source: &["Reply"],
        alts: Split {
            train: &["Response", "Answer"],
            eval: &["Message back", "Spoken answer"],
        },
    },
    Phrase {
        source: &["Optional"],
        alts: Split {
            train: &["Not required", "May be omitted"],
            eval: &["Can be left out", "Not mandatory"],
        },
    },
    Phrase {
        source: &["omit"],
        alts: Split {
            train: &["leave out", "skip"],
            eval: &["drop", "leave empty"],
        },
    },
    Phrase {
        source: &["e.g."],
        alts: Split {
            train: &["for example", "such as"],
            eval: &["for instance", "like"],
        },
    },
    Phrase {
        source: &["product"],
        alts: Split {
            train: &["item", "listing"],
            eval: &["good", "article"],
        },
    },
    Phrase {
        source: &["Return"],
        alts: Split {
            train: &["Give back", "Provide"],
            eval: &["Hand back", "Yield"],
        },
    },
    Phrase {
        source: &["before"],
        alts: Split {
            train: &["prior to", "ahead of"],
            eval: &["in advance of", "earlier than"],
        },
    },
    Phrase {
        source: &["only"],
        alts: Split {
            train: &["solely", "exclusively"],
            eval: &["just", "purely"],
        },
    },
    Phrase {
        source: &["Use"],
        alts: Split {
            train: &["Apply", "Employ"],
            eval: &["Choose", "Pick"],
        },
    },
    Phrase {
        source: &["shorten it"],
        alts: Split {
            train: &["make it shorter", "cut it down"],
            eval: &["trim it", "condense it"],
        },
    },
    Phrase {
        source: &["Rewrite"],
        alts: Split {
            train: &["Rephrase", "Redo"],
            eval: &["Reword", "Recompose"],
        },
    },
    Phrase {
        source: &["重新"],
        alts: Split {
            train: &["再次", "重"],
            eval: &["另行", "再"],
        },
    },
    Phrase {
        source: &["精简"],
        alts: Split {
            train: &["压缩", "简化"],
            eval: &["删减", "缩短"],
        },
    },
];

/// Frames that replace a feedback template's leading tag (`（系统提示）`) or precede it.
pub const FEEDBACK_PREFIXES: Split<&str> = Split {
    train: &["（系统提示）", "【提示】", "[Harness] ", "（检查未通过）"],
    eval: &["【系统】", "<notice> ", "[check failed] ", "（自动审核）"],
};

/// Known leading tags of feedback templates, swapped for a frame from the pool.
pub const FEEDBACK_TAGS: &[&str] = &[
    "（系统提示）",
    "【提示】",
    "[Harness] ",
    "（检查未通过）",
    "【系统】",
    "<notice> ",
    "[check failed] ",
    "（自动审核）",
];

/// Short notes that may head a rewritten description, per pool.
pub const DESCRIPTION_PREFIXES: Split<&str> = Split {
    train: &["【说明】", "用途：", "Purpose: "],
    eval: &["【功能】", "作用：", "What it does: "],
};

/// A skill that no task needs: synthetic (plausible shop-floor know-how) or noise (unrelated chatter).
pub struct ExtraSkill {
    pub name: &'static str,
    pub description: &'static str,
    pub rules: &'static [&'static str],
}

pub const SYNTHETIC_SKILLS: Split<ExtraSkill> = Split {
    train: &[
        ExtraSkill { name: "gift-wrapping", description: "观众问能否礼盒包装、写贺卡时使用。Use when a viewer asks for gift wrapping or a greeting card.", rules: &["先确认商品是否支持礼盒包装，不支持就如实说明。", "贺卡内容让观众在订单备注里写。Ask the viewer to put the card text in the order note.", "不承诺包装样式和到货时间。"] },
        ExtraSkill { name: "membership-points", description: "观众问会员积分、等级权益时使用。Use for questions about membership points and tiers.", rules: &["积分规则以店铺会员页为准，不口头承诺积分数额。", "引导观众在店铺首页查看会员中心。Point to the member centre on the shop page."] },
        ExtraSkill { name: "live-lottery", description: "直播间抽奖、福袋活动的说明。Explain live-room lucky draws and lucky bags.", rules: &["只说明参与方式，中奖结果以系统公布为准。", "不私下承诺中奖。Never promise a win privately."] },
        ExtraSkill { name: "bundle-suggestion", description: "观众想凑单、搭配购买时给出建议。Suggest bundles when a viewer wants to combine items.", rules: &["只推荐当前直播间在售商品。", "价格以工具结果为准。Prices only from tool results."] },
    ],
    eval: &[
        ExtraSkill { name: "price-protection", description: "观众问价保、买贵退差价时使用。Use when a viewer asks about price protection.", rules: &["价保规则以平台公示为准。", "不口头承诺退差价金额。Do not promise refund amounts."] },
        ExtraSkill { name: "invoice-request", description: "观众要开发票时使用。Use when a viewer asks for an invoice.", rules: &["引导在订单详情页申请发票。", "Company invoices need the tax id in the order note."] },
        ExtraSkill { name: "pre-sale-deposit", description: "预售定金、尾款规则说明。Explain pre-sale deposits and balance payments.", rules: &["定金是否可退以商品页说明为准。", "尾款时间以活动页为准。"] },
    ],
};

pub const NOISE_SKILLS: Split<ExtraSkill> = Split {
    train: &[
        ExtraSkill {
            name: "weather-smalltalk",
            description: "观众聊天气时的闲聊话术。Small talk when viewers mention the weather.",
            rules: &[
                "一句回应天气，再自然带回直播内容。",
                "Keep it to one sentence.",
            ],
        },
        ExtraSkill {
            name: "host-schedule",
            description:
                "观众问主播下次开播时间时使用。Use when viewers ask when the next stream starts.",
            rules: &["开播时间以店铺公告为准。", "提醒观众关注直播间。"],
        },
        ExtraSkill {
            name: "fan-badges",
            description: "粉丝团、粉丝牌相关问题。Questions about fan clubs and fan badges.",
            rules: &["说明加入方式，不承诺专属福利。"],
        },
    ],
    eval: &[
        ExtraSkill {
            name: "stream-replay",
            description: "观众问直播回放在哪里看。Where viewers can watch the stream replay.",
            rules: &[
                "回放入口在直播间主页。",
                "Replays may take a few minutes to appear.",
            ],
        },
        ExtraSkill {
            name: "music-request",
            description: "观众点歌时的回应。Respond when viewers request a song.",
            rules: &["礼貌说明直播间背景音乐由主播决定。"],
        },
    ],
};

/// Phrases a guard hook masks (off-platform trading and absolute claims, all already forbidden by the
/// sample harnesses' rules, so masking them never changes a correct reply).
pub const GUARD_TERMS: Split<&str> = Split {
    train: &["加微信", "私下转账", "全网最低", "best in the world"],
    eval: &["加QQ", "线下交易", "史上最低", "number one in the world"],
};
