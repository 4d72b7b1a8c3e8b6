//! `nltk.word_tokenize`: Punkt sentences, then NLTK's improved Treebank word rules.
//!
//! `change_case:capital_word_frequency` counts the tokens of `nltk.word_tokenize(response)`
//! that are `isupper()`, so the splitting rules decide the count: "DON'T" is two capital tokens
//! ("DO", "N'T"), "WORD—WORD" is two (nltk >= 3.10 splits en/em dashes), "HELLO-WORLD" is one.
//! This ports `NLTKWordTokenizer.tokenize` (nltk 3.10, `nltk/tokenize/destructive.py`) rule by
//! rule, in its order; the few rules that use look-around are written out by hand because the
//! `regex` crate has none.

use super::punkt::sent_tokenize;
use super::text::py_split_whitespace;
use regex::Regex;
use std::sync::OnceLock;

/// A substitution rule: pattern and `regex`-crate replacement.
struct Rule(Regex, &'static str);

fn rule(pattern: &str, replacement: &'static str) -> Rule {
    Rule(
        Regex::new(pattern).expect("static treebank regex"),
        replacement,
    )
}

struct Rules {
    starting_quotes: Vec<Rule>,
    punctuation_mid: Vec<Rule>,
    punctuation_late: Vec<Rule>,
    parens_and_dashes: Vec<Rule>,
    ending_quotes: Vec<Rule>,
    contractions: Vec<Rule>,
}

fn rules() -> &'static Rules {
    static RULES: OnceLock<Rules> = OnceLock::new();
    RULES.get_or_init(|| Rules {
        starting_quotes: vec![
            rule(r"([«“‘„]|[`]+)", " $1 "),
            rule(r#"^""#, "``"),
            rule(r"(``)", " $1 "),
            rule(r#"([ (\[{<])("|'{2})"#, "$1 `` "),
        ],
        punctuation_mid: vec![rule(r"([:,])([^\d])", " $1 $2")],
        punctuation_late: vec![
            rule(r"\.{2,}", " $0 "),
            rule(r"[;@#$%&]", " $0 "),
            rule(r"[\u{2012}-\u{2015}]", " $0 "),
        ],
        parens_and_dashes: vec![
            rule(r"[?!]", " $0 "),
            rule(r"([^'])' ", "$1 ' "),
            rule(r"[*]", " $0 "),
            rule(r"[\]\[(){}<>]", " $0 "),
            rule(r"--", " -- "),
        ],
        ending_quotes: vec![
            rule(r"([»”’])", " $1 "),
            rule(r"''", " '' "),
            rule(r#"""#, " '' "),
            rule(r"\s+", " "),
            rule(r"([^' ])('[sS]|'[mM]|'[dD]|') ", "$1 $2 "),
            rule(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ", "$1 $2 "),
        ],
        contractions: vec![
            rule(r"(?i)\b(can)(not)\b", " $1 $2 "),
            rule(r"(?i)\b(d)('ye)\b", " $1 $2 "),
            rule(r"(?i)\b(gim)(me)\b", " $1 $2 "),
            rule(r"(?i)\b(gon)(na)\b", " $1 $2 "),
            rule(r"(?i)\b(got)(ta)\b", " $1 $2 "),
            rule(r"(?i)\b(lem)(me)\b", " $1 $2 "),
            rule(r"(?i)\b(more)('n)\b", " $1 $2 "),
            // `(?=\s)` in nltk: the whitespace is captured and put back.
            rule(r"(?i)\b(wan)(na)(\s)", " $1 $2 $3"),
            rule(r"(?i) ('t)(is)\b", " $1 $2 "),
            rule(r"(?i) ('t)(was)\b", " $1 $2 "),
        ],
    })
}

fn apply(text: String, rules: &[Rule]) -> String {
    rules.iter().fold(text, |t, Rule(re, rep)| {
        re.replace_all(&t, *rep).into_owned()
    })
}

/// Rust's `\w` equals the `regex` module's (UTS #18), which nltk >= 3.10 compiles with.
fn is_word(c: char) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(r"^\w$").expect("static regex"));
    let mut buf = [0u8; 4];
    re.is_match(c.encode_utf8(&mut buf))
}

/// `(?i)(?<!\w)(\')(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)` → `"\1 "`: an opening single quote
/// directly before a word is split off, unless it starts a contraction suffix.
fn split_opening_single_quotes(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    for i in 0..c.len() {
        out.push(c[i]);
        if c[i] != '\''
            || (i > 0 && is_word(c[i - 1]))
            || !c.get(i + 1).is_some_and(|&n| is_word(n))
        {
            continue;
        }
        let contraction = ["re", "ve", "ll", "m", "t", "s", "d", "n"]
            .iter()
            .any(|suffix| {
                let n = suffix.len();
                let follows = c.len() >= i + 1 + n
                    && c[i + 1..i + 1 + n]
                        .iter()
                        .zip(suffix.chars())
                        .all(|(a, b)| a.to_lowercase().eq(std::iter::once(b)));
                follows && !c.get(i + 1 + n).is_some_and(|&x| is_word(x))
            });
        if !contraction {
            out.push(' ');
        }
    }
    out
}

/// The two "final period" rules, `([^\.])(\.)(CLOSERS*)\s*$` → `"\1 \2" + sep + "\3 "`: the
/// last period of the text, if only closing punctuation and whitespace follow it and it is not
/// part of a run of periods, is split off. The first rule's closer class includes the space and
/// curly quotes and is possessive; neither detail changes which period qualifies.
fn split_final_period(text: &str, closers: &[char], sep: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    for p in 0..c.len().saturating_sub(1) {
        if c[p] == '.' || c[p + 1] != '.' {
            continue;
        }
        let run_end = p
            + 2
            + c[p + 2..]
                .iter()
                .take_while(|x| closers.contains(x))
                .count();
        if c[run_end..].iter().all(|x| x.is_whitespace()) {
            let mut out: String = c[..=p].iter().collect();
            out.push_str(" .");
            out.push_str(sep);
            out.extend(&c[p + 2..run_end]);
            out.push(' ');
            return out;
        }
    }
    text.to_string()
}

/// `([:,])$` → `" \1 "`, where Python's `$` also matches before a final newline.
fn split_final_colon_comma(text: &str) -> String {
    let (body, newline) = match text.strip_suffix('\n') {
        Some(b) if b.ends_with([':', ',']) => (b, "\n"),
        _ => (text, ""),
    };
    match body.chars().last() {
        Some(last @ (':' | ',')) => format!("{} {} {}", &body[..body.len() - 1], last, newline),
        _ => text.to_string(),
    }
}

/// `NLTKWordTokenizer().tokenize(sentence)`.
fn tokenize_sentence(sentence: &str) -> Vec<String> {
    let r = rules();
    let mut t = apply(sentence.to_string(), &r.starting_quotes);
    t = split_opening_single_quotes(&t);
    t = split_final_period(
        &t,
        &[']', ')', '}', '>', '"', '\'', '»', '”', '’', ' '],
        " ",
    );
    t = apply(t, &r.punctuation_mid);
    t = split_final_colon_comma(&t);
    t = apply(t, &r.punctuation_late);
    t = split_final_period(&t, &[']', ')', '}', '>', '"', '\''], "");
    t = apply(t, &r.parens_and_dashes);
    t = format!(" {t} ");
    t = apply(t, &r.ending_quotes);
    t = apply(t, &r.contractions);
    py_split_whitespace(&t).map(str::to_string).collect()
}

/// `nltk.word_tokenize(text)` (English, sentence-split first).
pub fn word_tokenize(text: &str) -> Vec<String> {
    sent_tokenize(text)
        .iter()
        .flat_map(|s| tokenize_sentence(s))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizes_like_nltk() {
        // Outputs of nltk 3.10.4 `word_tokenize`.
        assert_eq!(
            word_tokenize("HELLO world, I AM \"here\" -- do not e.g. COME-BACK. OK?"),
            [
                "HELLO",
                "world",
                ",",
                "I",
                "AM",
                "``",
                "here",
                "''",
                "--",
                "do",
                "not",
                "e.g",
                ".",
                "COME-BACK",
                ".",
                "OK",
                "?"
            ]
        );
        assert_eq!(
            word_tokenize("I DON'T know 'bout them. They're 'great' (really): can't—won't!"),
            [
                "I", "DO", "N'T", "know", "'", "bout", "them", ".", "They", "'re", "'", "great",
                "'", "(", "really", ")", ":", "ca", "n't", "—", "wo", "n't", "!"
            ]
        );
        assert_eq!(
            word_tokenize(
                "Good muffins cost $3.88\nin New York.  Please buy me\ntwo of them.\nThanks."
            ),
            [
                "Good", "muffins", "cost", "$", "3.88", "in", "New", "York", ".", "Please", "buy",
                "me", "two", "of", "them", ".", "Thanks", "."
            ]
        );
        assert!(word_tokenize("").is_empty());
    }
}
