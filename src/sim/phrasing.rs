//! Phrasing banks: how viewers ask for each kind of thing, in Chinese and English.
//!
//! Templates are partitioned between splits by position (`Split::of_index`), so dev and test tasks are
//! phrased in ways training never saw. Every bank therefore holds at least five templates per language.
//! Placeholders: `{p}` product reference, `{key}` spec name, `{sku}` colour/size, `{region}`, `{order}`,
//! `{topic}`, `{q}` FAQ question, `{n}` quantity.

use super::catalog::{Lang, Split};
use crate::rng::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phrase {
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
    Ambiguous,
    ClarifyAnswer,
    Crowd,
}

type Bank = (&'static [&'static str], &'static [&'static str]);

fn bank(kind: Phrase) -> Bank {
    match kind {
        Phrase::Price => (
            &[
                "{p}多少钱",
                "{p}现在什么价",
                "{p}卖多少呀",
                "请问{p}价格是多少",
                "{p}啥价位",
                "{p}多少米",
                "想问下{p}的价格",
                "{p}贵不贵，多少钱",
            ],
            &[
                "how much is {p}",
                "what's the price of {p}",
                "price for {p}?",
                "how much does {p} cost",
                "{p} price pls",
                "what does {p} go for",
                "can u tell me the price of {p}",
                "{p} how much?",
            ],
        ),
        Phrase::Spec => (
            &[
                "{p}的{key}是多少",
                "{p}{key}怎么样",
                "问下{p}的{key}",
                "{p}的{key}是啥",
                "{key}呢？{p}的",
                "想了解{p}的{key}",
                "{p}{key}多少呀",
            ],
            &[
                "what's the {key} of {p}",
                "{p} {key}?",
                "tell me about the {key} of {p}",
                "what {key} does {p} have",
                "how about the {key} on {p}",
                "curious about {p}'s {key}",
                "{key} of {p} pls",
            ],
        ),
        Phrase::Stock => (
            &[
                "{p}{sku}还有货吗",
                "{sku}的{p}还有吗",
                "{p}{sku}有没有库存",
                "{p}{sku}还剩多少",
                "{sku}还能拍吗，{p}",
                "{p}的{sku}卖完了没",
                "蹲一个{p}{sku}，有货吗",
            ],
            &[
                "is {p} in {sku} still in stock",
                "any {sku} left for {p}?",
                "do u have {p} in {sku}",
                "how many {sku} {p} left",
                "{p} {sku} sold out?",
                "still got {sku} of {p}?",
                "stock check: {p} {sku}",
            ],
        ),
        Phrase::Size => (
            &[
                "{p}我170/65穿什么码",
                "{p}尺码怎么选",
                "{p}偏大还是偏小",
                "{p}选多大的码合适",
                "{p}码数标准吗",
                "帮我看看{p}穿哪个码",
            ],
            &[
                "what size of {p} should I get",
                "does {p} run true to size",
                "{p} sizing advice?",
                "which size {p} for me",
                "is {p} big or small",
                "help me pick a size for {p}",
            ],
        ),
        Phrase::Shipping => (
            &[
                "{p}发{region}几天能到",
                "{p}寄到{region}要多久",
                "{p}从哪发货，到{region}多久",
                "{region}能包邮吗，{p}",
                "{p}到{region}用什么快递",
                "{p}发货到{region}快吗",
            ],
            &[
                "how long to ship {p} to {region}",
                "when will {p} arrive in {region}",
                "shipping time for {p} to {region}?",
                "{p} delivery to {region}?",
                "which courier for {p} to {region}",
                "does {p} ship fast to {region}",
            ],
        ),
        Phrase::Buy => (
            &[
                "{p}{sku}要{n}件，怎么下单",
                "给我{p}的链接，{sku}的",
                "{p}{sku}拍{n}个",
                "我要买{p}，{sku}",
                "上个{p}{sku}的链接",
                "{p}{sku}来{n}件",
            ],
            &[
                "I want {n} of {p} in {sku}, link?",
                "send me the link for {p} {sku}",
                "buy {p} {sku} x{n}",
                "how do I order {p} in {sku}",
                "link for {p} {sku} pls",
                "ill take {n} {p} {sku}",
            ],
        ),
        Phrase::Promotion => (
            &[
                "{p}有优惠吗",
                "{p}有券吗",
                "{p}现在下单有什么活动",
                "{p}到手价多少",
                "{p}能便宜点吗",
                "{p}今天有折扣不",
                "{p}满减怎么算",
            ],
            &[
                "any deals on {p}?",
                "is there a coupon for {p}",
                "what's the final price of {p} today",
                "discount on {p}?",
                "{p} promo?",
                "can I get {p} cheaper",
                "how does the offer on {p} work",
            ],
        ),
        Phrase::Policy => (
            &[
                "{p}能{topic}吗",
                "{p}{topic}政策是怎样的",
                "买了{p}不满意能{topic}吗",
                "{p}支持{topic}不",
                "问下{p}的{topic}",
                "{p}{topic}几天",
            ],
            &[
                "can I {topic} {p}?",
                "what's the {topic} policy for {p}",
                "if I don't like {p} can I {topic}",
                "does {p} support {topic}",
                "{topic} on {p}?",
                "how many days to {topic} {p}",
            ],
        ),
        Phrase::OrderStatus => (
            &[
                "我的订单{order}到哪了",
                "订单{order}怎么还没到",
                "查一下{order}物流",
                "{order}发货了吗",
                "帮我看看订单{order}",
                "{order}这单啥时候到",
            ],
            &[
                "where is my order {order}",
                "order {order} still not here",
                "track {order} pls",
                "has {order} shipped?",
                "check my order {order}",
                "when will {order} arrive",
            ],
        ),
        Phrase::Faq => (
            &[
                "请问{q}",
                "{q}？",
                "主播，{q}",
                "想问一下{q}",
                "{q}呀",
                "对了{q}",
            ],
            &[
                "quick q: {q}",
                "{q}",
                "host, {q}",
                "I was wondering, {q}",
                "hey {q}",
                "btw {q}",
            ],
        ),
        Phrase::Reorder => (
            &[
                "先讲{p}吧",
                "主播能先讲讲{p}吗",
                "想先看{p}",
                "能不能先上{p}",
                "求先讲{p}",
                "下一个讲{p}好不好",
            ],
            &[
                "can you show {p} first",
                "do {p} next please",
                "I wanna see {p} first",
                "pls present {p} now",
                "show {p} before the others",
                "next up {p}?",
            ],
        ),
        Phrase::Chat => (
            &[
                "主播今天好好看",
                "来了来了",
                "主播晚上好",
                "今天直播好热闹",
                "主播辛苦啦",
                "第一次来直播间",
                "主播声音好好听",
                "哈哈哈太好笑了",
            ],
            &[
                "hi host!",
                "just joined, hello everyone",
                "you look great today",
                "this stream is fun",
                "thanks for streaming",
                "first time here",
                "love your voice",
                "lol that was funny",
            ],
        ),
        Phrase::Silent => (
            &[
                "加我微信买更便宜",
                "刷屏刷屏刷屏",
                "主播是骗子，垃圾",
                "私聊我有低价货源",
                "关注我送红包，点我头像",
                "代购低价，加V",
            ],
            &[
                "add me on WeChat for cheaper deals",
                "spam spam spam",
                "this host is a scammer, trash",
                "DM me for wholesale prices",
                "follow me for free red packets",
                "cheap resale, message me off-platform",
            ],
        ),
        Phrase::Ambiguous => (
            &[
                "多少钱",
                "还有吗",
                "这个呢",
                "那个多少",
                "有货没",
                "链接呢",
                "咋卖",
            ],
            &[
                "how much",
                "any left?",
                "and that one?",
                "price?",
                "in stock?",
                "link?",
                "how much is it",
            ],
        ),
        Phrase::ClarifyAnswer => (
            &[
                "{p}",
                "就是{p}",
                "我说的是{p}",
                "问的{p}",
                "{p}那个",
                "{p}啊",
            ],
            &[
                "{p}",
                "the {p}",
                "I mean {p}",
                "talking about {p}",
                "{p} one",
                "uh {p}",
            ],
        ),
        Phrase::Crowd => (
            &["666", "来了", "哈哈", "好看", "冲冲冲", "蹲", "+1"],
            &["666", "hi", "lol", "nice", "let's go", "waiting", "+1"],
        ),
    }
}

/// A template of `kind` in `lang` from the slots that belong to `split`.
pub fn pick(rng: &mut Rng, kind: Phrase, lang: Lang, split: Split) -> &'static str {
    let (zh, en) = bank(kind);
    let list = match lang {
        Lang::Zh => zh,
        Lang::En => en,
    };
    // Crowd noise is not task content, so every split may use all of it.
    if kind == Phrase::Crowd {
        return *rng.pick(list);
    }
    let slots: Vec<&'static str> = list
        .iter()
        .enumerate()
        .filter(|(i, _)| Split::of_index(*i) == split)
        .map(|(_, t)| *t)
        .collect();
    *rng.pick(&slots)
}

/// Fill `{name}` placeholders.
pub fn fill(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (k, v) in vars {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Phrase; 16] = [
        Phrase::Price,
        Phrase::Spec,
        Phrase::Stock,
        Phrase::Size,
        Phrase::Shipping,
        Phrase::Buy,
        Phrase::Promotion,
        Phrase::Policy,
        Phrase::OrderStatus,
        Phrase::Faq,
        Phrase::Reorder,
        Phrase::Chat,
        Phrase::Silent,
        Phrase::Ambiguous,
        Phrase::ClarifyAnswer,
        Phrase::Crowd,
    ];

    #[test]
    fn every_split_has_phrasings_and_they_are_disjoint() {
        for kind in ALL {
            let (zh, en) = bank(kind);
            assert!(zh.len() >= 5 && en.len() >= 5, "{kind:?}");
        }
        let mut rng = Rng::new(3);
        let mut seen = std::collections::HashMap::new();
        for split in [Split::Train, Split::Dev, Split::Test] {
            for _ in 0..200 {
                let t = pick(&mut rng, Phrase::Price, Lang::Zh, split);
                assert_eq!(*seen.entry(t).or_insert(split), split, "{t} in two splits");
            }
        }
        assert_eq!(fill("{p}多少钱", &[("p", "这个")]), "这个多少钱");
    }
}
