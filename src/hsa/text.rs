//! Text operations shared by the ops and the trajectory rewriter: whole-identifier renaming and
//! bank-driven paraphrase that leaves identifiers, code spans and template expressions alone.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use regex::Regex;

use super::banks::PHRASES;
use super::config::Pool;
use crate::rng::Rng;

/// Characters of a tool or skill identifier (`^[a-zA-Z0-9_-]+$`).
pub fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Replaces every maximal identifier run equal to a key of `map` with its value, in one pass (so a
/// swap `a→b, b→a` works). Runs are bounded by non-identifier characters, so `load_skill` inside
/// `load_skill_v2` or `skills/product-qa/` is treated right: the first is left alone, the second renamed.
pub fn rename_idents<'a>(text: &'a str, map: &HashMap<String, String>) -> Cow<'a, str> {
    if map.is_empty() {
        return Cow::Borrowed(text);
    }
    // Most runs are not keys: skip hashing runs whose length no key has.
    let (shortest, longest) = map.keys().fold((usize::MAX, 0), |(lo, hi), k| {
        (lo.min(k.len()), hi.max(k.len()))
    });
    let mut out: Option<String> = None;
    let mut last = 0;
    let mut start = None;
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        match (is_ident_char(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                if let Some(new) = (shortest..=longest)
                    .contains(&(i - s))
                    .then(|| map.get(&text[s..i]))
                    .flatten()
                {
                    let o = out.get_or_insert_with(|| String::with_capacity(text.len() + 16));
                    o.push_str(&text[last..s]);
                    o.push_str(new);
                    last = i;
                }
                start = None;
            }
            _ => {}
        }
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut o) => {
            o.push_str(&text[last..]);
            Cow::Owned(o)
        }
    }
}

/// Like [`rename_idents`], but leaves Jinja expressions, statements and comments alone: a template's
/// literal text mentions the harness's identifiers, while `{{ product.product_id }}` reads a field of
/// the live context, which no harness edit renames.
pub fn rename_idents_outside_jinja<'a>(
    text: &'a str,
    map: &HashMap<String, String>,
) -> Cow<'a, str> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE
        .get_or_init(|| Regex::new(r"(?s)\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}").expect("static regex"));
    if map.is_empty() || !text.contains('{') {
        return rename_idents(text, map);
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for m in re.find_iter(text) {
        out.push_str(&rename_idents(&text[last..m.start()], map));
        out.push_str(m.as_str());
        last = m.end();
    }
    out.push_str(&rename_idents(&text[last..], map));
    if out == text {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(out)
    }
}

/// Every identifier run in `text` (for collision checks).
pub fn idents(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !is_ident_char(c))
        .filter(|s| !s.is_empty())
}

/// Spans that paraphrase must not touch: `code`, `{{ expr }}`, `{% stmt %}`.
fn protected() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"(?s)`[^`]*`|\{\{.*?\}\}|\{%.*?%\}").expect("static regex"))
}

/// The protected spans of `text`, in order (an endpoint paraphrase must keep them).
pub fn protected_spans(text: &str) -> Vec<&str> {
    protected().find_iter(text).map(|m| m.as_str()).collect()
}

/// All phrase forms, longest first, with the index of their group.
fn phrase_finder() -> &'static (Regex, HashMap<&'static str, usize>) {
    static FINDER: OnceLock<(Regex, HashMap<&'static str, usize>)> = OnceLock::new();
    FINDER.get_or_init(|| {
        let mut forms: Vec<(&'static str, usize)> = Vec::new();
        for (g, p) in PHRASES.iter().enumerate() {
            for f in p.source.iter().chain(p.alts.train).chain(p.alts.eval) {
                forms.push((f, g));
            }
        }
        forms.sort_by_key(|(f, _)| std::cmp::Reverse(f.len()));
        let alternation: Vec<String> = forms.iter().map(|(f, _)| regex::escape(f)).collect();
        let re = Regex::new(&alternation.join("|")).expect("escaped literals");
        (re, forms.into_iter().collect())
    })
}

/// Rewrites `text` with the pool's paraphrase bank: each phrase found outside protected spans is
/// replaced, with probability `rate`, by a different form of its group drawn from `pool`. ASCII
/// phrases must stand as whole words (`call` is not rewritten inside `recall` or `load_skill_call`).
pub fn paraphrase(text: &str, pool: Pool, rate: f64, rng: &mut Rng) -> String {
    let mut out = String::with_capacity(text.len() + 32);
    let mut last = 0;
    for m in protected().find_iter(text) {
        out.push_str(&paraphrase_plain(&text[last..m.start()], pool, rate, rng));
        out.push_str(m.as_str());
        last = m.end();
    }
    out.push_str(&paraphrase_plain(&text[last..], pool, rate, rng));
    out
}

fn paraphrase_plain(text: &str, pool: Pool, rate: f64, rng: &mut Rng) -> String {
    let (re, groups) = phrase_finder();
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for m in re.find_iter(text) {
        let form = m.as_str();
        let ascii_word = form.bytes().all(|b| b.is_ascii());
        if ascii_word {
            let before = text[..m.start()].chars().next_back();
            let after = text[m.end()..].chars().next();
            let glued = |c: Option<char>| c.is_some_and(|c| is_ident_char(c));
            if glued(before) || glued(after) {
                continue;
            }
        }
        let Some(&g) = groups.get(form) else { continue };
        let alts: Vec<&str> = PHRASES[g]
            .alts
            .of(pool)
            .iter()
            .copied()
            .filter(|a| *a != form)
            .collect();
        if alts.is_empty() || !rng.chance(rate) {
            continue;
        }
        out.push_str(&text[last..m.start()]);
        out.push_str(alts[rng.below(alts.len())]);
        last = m.end();
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_renames_skip_jinja_spans() {
        let map = HashMap::from([("product_id".to_string(), "item_id".to_string())]);
        let t = "ID product_id={{ product.product_id }}{# product_id #} `check(product_id)`";
        assert_eq!(
            rename_idents_outside_jinja(t, &map),
            "ID item_id={{ product.product_id }}{# product_id #} `check(item_id)`"
        );
        assert!(matches!(
            rename_idents_outside_jinja("{{ product_id }}", &map),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn renames_whole_identifiers_in_one_pass() {
        let map: HashMap<String, String> = [("a_b", "x"), ("x", "a_b")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(
            rename_idents("调用a_b和`x`; a_bc, skills/a_b/SKILL.md", &map),
            "调用x和`a_b`; a_bc, skills/x/SKILL.md"
        );
        assert!(matches!(
            rename_idents("nothing here", &map),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn paraphrase_keeps_code_and_template_expressions() {
        let mut rng = Rng::new(1);
        let text = "调用 `调用` 查询 {{ 调用 }} call recall";
        let out = paraphrase(text, Pool::Train, 1.0, &mut rng);
        assert!(
            out.contains("`调用`") && out.contains("{{ 调用 }}") && out.contains("recall"),
            "{out}"
        );
        assert!(!out.starts_with("调用"), "{out}");
        assert_ne!(out, text);
    }
}
