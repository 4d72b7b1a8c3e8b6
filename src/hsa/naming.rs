//! Realistic alternative names for tools and skills, in several naming styles, from a pool's half of
//! the banks.
//!
//! Tool names: a verb and a noun phrase, in snake_case, camelCase, PascalCase or kebab-case, verb-noun
//! or noun-verb, optionally with abbreviated nouns (`chk_inv`, `ProdDtlRetrieve`). Skill names follow
//! the Agent Skills rule (lowercase kebab-case) and end in a marker word (`size-fit-guide`).
//! Pool disjointness: a tool name holds exactly one verb token and a skill name ends in one marker, and
//! those token sets differ between the pools, so no name can come out of both. The train pool may also
//! coin its verb or marker (`coined_word`), a word no bank holds.

use super::banks::{
    Split, ABBREVIATIONS, PARAM_KEYS, SKILL_MARKERS, SKILL_WORDS, TOOL_NOUNS, VERB_CLASSES,
};
use super::config::Pool;
use crate::harness::skills::is_valid_skill_name;
use crate::harness::tools::is_valid_tool_name;
use crate::rng::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Snake,
    Camel,
    Pascal,
    Kebab,
}

/// Splits an identifier into lowercase words (`get_productDetail-v2` → get, product, detail, v2).
pub fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if c == '_' || c == '-' {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        cur.push(c.to_ascii_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn join(words: &[String], case: Case) -> String {
    let cap = |w: &str| {
        let mut c = w.chars();
        c.next().map_or(String::new(), |f| {
            f.to_ascii_uppercase().to_string() + c.as_str()
        })
    };
    match case {
        Case::Snake => words.join("_"),
        Case::Kebab => words.join("-"),
        Case::Camel => words
            .iter()
            .enumerate()
            .map(|(i, w)| if i == 0 { w.clone() } else { cap(w) })
            .collect(),
        Case::Pascal => words.iter().map(|w| cap(w)).collect(),
    }
}

fn abbreviate(word: &str) -> String {
    ABBREVIATIONS
        .iter()
        .find(|(w, _)| *w == word)
        .map_or(word, |(_, a)| a)
        .to_string()
}

const COIN_CONSONANTS: &[char] = &[
    'b', 'd', 'f', 'g', 'k', 'l', 'm', 'n', 'p', 'r', 's', 't', 'v', 'z',
];
const COIN_VOWELS: &[char] = &['a', 'e', 'i', 'o', 'u'];

/// A coined word of two or three consonant-vowel syllables (`tavomi`), never a word or abbreviation of
/// any bank (so never an eval-pool verb or marker: `locate` has that shape).
fn coined_word(rng: &mut Rng) -> String {
    loop {
        let syllables = 2 + rng.below(2);
        let word: String = (0..syllables)
            .flat_map(|_| [*rng.pick(COIN_CONSONANTS), *rng.pick(COIN_VOWELS)])
            .collect();
        if !is_bank_word(&word) {
            return word;
        }
    }
}

fn is_bank_word(word: &str) -> bool {
    let pools = |s: &Split<&str>| s.train.iter().chain(s.eval).any(|w| *w == word);
    VERB_CLASSES.iter().any(|c| pools(&c.verbs))
        || pools(&SKILL_MARKERS)
        || TOOL_NOUNS
            .iter()
            .chain(SKILL_WORDS)
            .flat_map(|(_, alts)| alts.iter())
            .any(|alt| alt.contains(&word))
        || ABBREVIATIONS.iter().any(|(_, a)| *a == word)
}

/// A name's verb or marker: a word of `bank`, or in the train pool with probability `coined` a coined
/// word (no draw at 0, so a config without coinage draws the names it always drew).
fn bank_or_coined(bank: &[&str], pool: Pool, coined: f64, rng: &mut Rng) -> String {
    if pool == Pool::Train && coined > 0.0 && rng.chance(coined) {
        coined_word(rng)
    } else {
        rng.pick(bank).to_string()
    }
}

/// A candidate name for tool `canonical`, drawn from `pool`, its verb coined with probability `coined`
/// in the train pool. May equal an existing name; the caller checks collisions and draws again.
pub fn tool_name(canonical: &str, pool: Pool, coined: f64, rng: &mut Rng) -> String {
    let canon_words = words(canonical);
    let first = canon_words.first().map(String::as_str).unwrap_or("get");
    let class = VERB_CLASSES
        .iter()
        .find(|c| c.canonical.contains(&first))
        .unwrap_or(&VERB_CLASSES[0]);
    let verb = bank_or_coined(class.verbs.of(pool), pool, coined, rng);
    let nouns: Vec<String> = match TOOL_NOUNS.iter().find(|(c, _)| *c == canonical) {
        Some((_, alts)) => rng.pick(alts).iter().map(|w| w.to_string()).collect(),
        None if canon_words.len() > 1 => canon_words[1..].to_vec(),
        None => canon_words.clone(),
    };
    let nouns: Vec<String> = if rng.chance(0.25) {
        nouns.iter().map(|w| abbreviate(w)).collect()
    } else {
        nouns
    };
    let case = *rng.pick(&[Case::Snake, Case::Camel, Case::Pascal, Case::Kebab]);
    let mut all = Vec::with_capacity(nouns.len() + 1);
    if rng.chance(0.7) {
        all.push(verb);
        all.extend(nouns);
    } else {
        all.extend(nouns);
        all.push(verb);
    }
    let name = join(&all, case);
    debug_assert!(is_valid_tool_name(&name), "{name}");
    name
}

/// A candidate name for skill `canonical`, drawn from `pool`, its marker coined with probability
/// `coined` in the train pool (always a valid Agent Skills name).
pub fn skill_name(canonical: &str, pool: Pool, coined: f64, rng: &mut Rng) -> String {
    let mut parts: Vec<String> = match SKILL_WORDS.iter().find(|(c, _)| *c == canonical) {
        Some((_, alts)) => rng.pick(alts).iter().map(|w| w.to_string()).collect(),
        None => words(canonical),
    };
    parts.retain(|w| !w.is_empty());
    parts.push(bank_or_coined(SKILL_MARKERS.of(pool), pool, coined, rng));
    let name = parts.join("-");
    debug_assert!(is_valid_skill_name(&name), "{name}");
    name
}

/// Whether argument key `key` may be renamed: an identifier of two or more words (`product_id`,
/// `maxPrice`). One-word keys (`quantity`, `region`, `name`) are also ordinary words of descriptions
/// and rules, so renaming them "everywhere they are mentioned" would rewrite prose; the skill loader's
/// `name` stays fixed for the same reason.
pub fn is_renamable_param(key: &str) -> bool {
    words(key).len() >= 2 && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A new key for argument `key`, drawn from `pool`: a bank alternative, or the key re-cased
/// (camelCase in the train pool, PascalCase in the eval pool) when the bank has none.
pub fn param_key(key: &str, pool: Pool, rng: &mut Rng) -> String {
    match PARAM_KEYS.iter().find(|(k, _)| *k == key) {
        Some((_, alts)) => rng.pick(alts.of(pool)).to_string(),
        None => join(
            &words(key),
            match pool {
                Pool::Train => Case::Camel,
                Pool::Eval => Case::Pascal,
            },
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_every_style() {
        assert_eq!(words("getProductDetail"), ["get", "product", "detail"]);
        assert_eq!(words("check-inventory_v2"), ["check", "inventory", "v2"]);
        assert_eq!(words("ProdDtl"), ["prod", "dtl"]);
    }

    #[test]
    fn param_keys_come_from_their_pool_and_one_word_keys_stay() {
        assert!(is_renamable_param("product_id") && is_renamable_param("maxPrice"));
        assert!(!is_renamable_param("quantity") && !is_renamable_param("name"));
        let mut rng = Rng::new(1);
        for _ in 0..50 {
            let t = param_key("product_id", Pool::Train, &mut rng);
            let e = param_key("product_id", Pool::Eval, &mut rng);
            assert_ne!(t, e);
            assert!(is_valid_tool_name(&t) && t != "product_id");
        }
        assert_eq!(
            param_key("pickup_time", Pool::Train, &mut rng),
            "pickupTime"
        );
        assert_eq!(param_key("pickup_time", Pool::Eval, &mut rng), "PickupTime");
    }

    #[test]
    fn names_are_valid_in_every_style() {
        let mut rng = Rng::new(3);
        for _ in 0..200 {
            for pool in [Pool::Train, Pool::Eval] {
                for coined in [0.0, 0.5] {
                    for tool in ["check_inventory", "some_new_tool"] {
                        assert!(is_valid_tool_name(&tool_name(tool, pool, coined, &mut rng)));
                    }
                    for skill in ["size-advice", "brand-new"] {
                        assert!(is_valid_skill_name(&skill_name(
                            skill, pool, coined, &mut rng
                        )));
                    }
                }
            }
        }
    }

    #[test]
    fn the_train_pool_coins_words_no_bank_holds_and_the_eval_pool_never_coins() {
        let mut rng = Rng::new(5);
        let eval_verbs: Vec<&str> = VERB_CLASSES
            .iter()
            .flat_map(|c| c.verbs.eval)
            .copied()
            .collect();
        let mut coined_names = std::collections::HashSet::new();
        for _ in 0..400 {
            let t = tool_name("get_product_detail", Pool::Train, 1.0, &mut rng);
            let verb = words(&t).into_iter().find(|w| !is_bank_word(w));
            let verb = verb.unwrap_or_else(|| panic!("{t}: every verb coined at coined = 1"));
            assert!(
                verb.len() >= 4 && !eval_verbs.contains(&verb.as_str()),
                "{t}"
            );
            coined_names.insert(t);
            let s = skill_name("product-qa", Pool::Train, 1.0, &mut rng);
            let marker = s.rsplit('-').next().unwrap();
            assert!(
                !SKILL_MARKERS.train.contains(&marker) && !is_bank_word(marker),
                "{s}"
            );
            for name in [
                tool_name("get_product_detail", Pool::Eval, 1.0, &mut rng),
                skill_name("product-qa", Pool::Eval, 1.0, &mut rng),
            ] {
                assert!(
                    words(&name)
                        .iter()
                        .all(|w| is_bank_word(w) || ABBREVIATIONS.iter().any(|(_, a)| a == w)),
                    "{name}"
                );
            }
        }
        assert!(
            coined_names.len() > 300,
            "coined names rarely repeat: {}",
            coined_names.len()
        );
        assert!(!is_bank_word("tavomi") && is_bank_word("locate") && is_bank_word("handbook"));
    }
}
