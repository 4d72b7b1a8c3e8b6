//! Live-chat noise on viewer messages: slang, filler and typos, as real comments have them.
//! Noise never touches the words that identify what is asked (product references, SKUs, order ids), so
//! the task's ground truth stays right.

use super::catalog::Lang;
use crate::rng::Rng;

/// Common substitutions: standard form → chat form.
const ZH_SWAPS: &[(&str, &str)] = &[
    ("有没有", "有木有"),
    ("什么", "啥"),
    ("多少钱", "多少q"),
    ("怎么", "咋"),
    ("吗", "嘛"),
    ("不", "布"),
];
const EN_SWAPS: &[(&str, &str)] = &[
    ("you", "u"),
    ("your", "ur"),
    ("please", "pls"),
    ("what's", "whats"),
    ("I'm", "im"),
    ("to ", "2 "),
];
const ZH_PREFIX: &[&str] = &["家人们，", "主播主播，", "宝子们，", "姐姐，", "请问"];
const ZH_SUFFIX: &[&str] = &["呀", "～", "！！", "？？", "啊啊", " yyds"];
const EN_PREFIX: &[&str] = &["yo ", "hey ", "omg ", "ok so ", "hi, "];
const EN_SUFFIX: &[&str] = &["??", "!!", " lol", " thx", " :)", "..."];

/// Apply noise of strength `p` (probability of each kind of change). `protected` substrings are kept intact.
pub fn apply(rng: &mut Rng, text: &str, lang: Lang, p: f64, protected: &[&str]) -> String {
    let mut out = text.to_string();
    let (swaps, prefix, suffix) = match lang {
        Lang::Zh => (ZH_SWAPS, ZH_PREFIX, ZH_SUFFIX),
        Lang::En => (EN_SWAPS, EN_PREFIX, EN_SUFFIX),
    };
    if rng.chance(p) {
        let (from, to) = rng.pick(swaps);
        if !protected.iter().any(|w| w.contains(from)) {
            out = out.replacen(from, to, 1);
        }
    }
    if lang == Lang::En && rng.chance(p) {
        out = typo(rng, &out, protected);
    }
    if lang == Lang::En && rng.chance(p) {
        out = out.to_lowercase();
        // Lower-casing must not change a protected reference such as an order id or size.
        for w in protected {
            let lw = w.to_lowercase();
            if lw != *w {
                out = out.replace(&lw, w);
            }
        }
    }
    if rng.chance(p / 2.0) {
        out = format!("{}{out}", rng.pick(prefix));
    }
    if rng.chance(p) {
        out.push_str(*rng.pick(suffix));
    }
    out
}

/// Drop or double one letter of a word that no protected term overlaps.
fn typo(rng: &mut Rng, text: &str, protected: &[&str]) -> String {
    let words: Vec<&str> = text.split(' ').collect();
    let candidates: Vec<usize> = (0..words.len())
        .filter(|&i| {
            let w = words[i];
            w.len() >= 4
                && w.chars().all(|c| c.is_ascii_alphabetic())
                && !protected.iter().any(|p| p.contains(w))
        })
        .collect();
    if candidates.is_empty() {
        return text.to_string();
    }
    let i = *rng.pick(&candidates);
    let w = words[i];
    let at = 1 + rng.below(w.len() - 2);
    let changed = if rng.chance(0.5) {
        format!("{}{}", &w[..at], &w[at + 1..])
    } else {
        format!("{}{}", &w[..=at], &w[at..])
    };
    let mut out: Vec<String> = words.iter().map(|s| s.to_string()).collect();
    out[i] = changed;
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_is_seeded_and_keeps_protected_terms() {
        let text = "what's the price of Sonix wireless earbuds please";
        let a = apply(
            &mut Rng::new(5),
            text,
            Lang::En,
            1.0,
            &["Sonix wireless earbuds"],
        );
        assert_eq!(
            a,
            apply(
                &mut Rng::new(5),
                text,
                Lang::En,
                1.0,
                &["Sonix wireless earbuds"]
            )
        );
        assert!(a.contains("Sonix wireless earbuds"), "{a}");
        assert_ne!(a, text);
        let zh = apply(&mut Rng::new(9), "这个有没有货", Lang::Zh, 1.0, &[]);
        assert!(zh.contains("货"), "{zh}");
    }
}
