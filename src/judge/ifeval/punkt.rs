//! NLTK's Punkt sentence tokenizer with its pretrained English model.
//!
//! `length_constraints:number_sentences` counts `nltk.data.load("tokenizers/punkt/english.pickle")
//! .tokenize(text)`, and `nltk.word_tokenize` splits sentences the same way before its word
//! rules run. This is a port of the *tokenizing* half of `nltk/tokenize/punkt.py` (nltk 3.10):
//! candidate breaks are found with the period-context rule, each candidate's short context is
//! annotated (first pass: abbreviations, ellipses; second pass: collocations, orthographic and
//! sentence-starter heuristics) and closing quotes/brackets are realigned onto the sentence
//! they close. Indices are in characters, as Python's are.
//!
//! The model (`punkt_english.txt`) is NLTK's punkt_tab English data; see
//! `scripts/ifeval_punkt_data.py` for where it comes from.

use super::text::py_strip;
use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

const ORTHO_BEG_UC: u32 = 1 << 1;
const ORTHO_MID_UC: u32 = 1 << 2;
const ORTHO_UNK_UC: u32 = 1 << 3;
const ORTHO_BEG_LC: u32 = 1 << 4;
const ORTHO_MID_LC: u32 = 1 << 5;
const ORTHO_UNK_LC: u32 = 1 << 6;
const ORTHO_UC: u32 = ORTHO_BEG_UC | ORTHO_MID_UC | ORTHO_UNK_UC;
const ORTHO_LC: u32 = ORTHO_BEG_LC | ORTHO_MID_LC | ORTHO_UNK_LC;

/// The learned parameters of a Punkt model.
struct Params {
    abbrev_types: HashSet<String>,
    collocations: HashSet<(String, String)>,
    sent_starters: HashSet<String>,
    ortho_context: HashMap<String, u32>,
}

fn english() -> &'static Params {
    static PARAMS: OnceLock<Params> = OnceLock::new();
    PARAMS.get_or_init(|| parse_params(include_str!("punkt_english.txt")))
}

/// Parses the bundled model. The file is part of the binary, so a malformed line is a build
/// defect caught by the unit tests, not a user error.
fn parse_params(data: &str) -> Params {
    let mut p = Params {
        abbrev_types: HashSet::new(),
        collocations: HashSet::new(),
        sent_starters: HashSet::new(),
        ortho_context: HashMap::new(),
    };
    let mut section = "";
    for line in data.lines() {
        if line.starts_with('[') && line.ends_with(']') {
            section = line;
            continue;
        }
        match section {
            "[abbrev_types]" => {
                p.abbrev_types.insert(line.to_string());
            }
            "[sent_starters]" => {
                p.sent_starters.insert(line.to_string());
            }
            "[collocations]" => {
                let (a, b) = line.split_once('\t').expect("collocation line has a tab");
                p.collocations.insert((a.to_string(), b.to_string()));
            }
            "[ortho_context]" => {
                let (a, b) = line.split_once('\t').expect("ortho line has a tab");
                p.ortho_context
                    .insert(a.to_string(), b.parse().expect("ortho flag is an integer"));
            }
            _ => panic!("punkt_english.txt: line outside a section: {line:?}"),
        }
    }
    p
}

/// Python `lower()` of a token (full Unicode lowercase mapping).
fn lower(s: &str) -> String {
    s.to_lowercase()
}

/// `\s` of the `regex` module (nltk compiles through it): the Unicode White_Space property.
fn is_space(c: char) -> bool {
    c.is_whitespace()
}

/// `_re_non_word_chars`: characters that cannot appear within words.
fn is_non_word(c: char) -> bool {
    matches!(
        c,
        ')' | '"'
            | ';'
            | '}'
            | ']'
            | '*'
            | ':'
            | '@'
            | '\''
            | '('
            | '{'
            | '['
            | '\u{2018}'
            | '\u{2019}'
            | '\u{201c}'
            | '\u{201d}'
            | '\u{ab}'
            | '\u{bb}'
            | '?'
            | '!'
    )
}

/// `_re_word_start` excludes these from starting a word token.
fn cannot_start_word(c: char) -> bool {
    matches!(
        c,
        '(' | '"'
            | '`'
            | '{'
            | '['
            | ':'
            | ';'
            | '&'
            | '#'
            | '*'
            | '@'
            | ')'
            | '}'
            | ']'
            | '-'
            | ','
    )
}

/// `_re_multi_char_punct` = `(?:\-{2,}|\.{2,}|(?:\.\s){2,}\.)` matched at `i`: its length.
fn multi_char_punct(s: &[char], i: usize) -> Option<usize> {
    let run = |c: char| s[i..].iter().take_while(|&&x| x == c).count();
    let dashes = run('-');
    if dashes >= 2 {
        return Some(dashes);
    }
    let dots = run('.');
    if dots >= 2 {
        return Some(dots);
    }
    // (?:\.\s){2,}\. — greedy pairs, then back off until a period follows.
    let mut pairs = 0;
    while i + 2 * pairs + 1 < s.len() && s[i + 2 * pairs] == '.' && is_space(s[i + 2 * pairs + 1]) {
        pairs += 1;
    }
    while pairs >= 2 {
        if s.get(i + 2 * pairs) == Some(&'.') {
            return Some(2 * pairs + 1);
        }
        pairs -= 1;
    }
    None
}

/// Punkt's word tokenizer (`PunktLanguageVars.word_tokenize`, a `findall` of
/// `_word_tokenize_fmt`) over one line.
fn punkt_words(line: &[char]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < line.len() {
        if let Some(n) = multi_char_punct(line, i) {
            out.push(line[i..i + n].iter().collect());
            i += n;
            continue;
        }
        let c = line[i];
        if is_space(c) {
            i += 1;
            continue;
        }
        if !cannot_start_word(c) {
            // \S+? up to the first position where a word end is in sight.
            let mut j = i + 1;
            loop {
                if j >= line.len()
                    || is_space(line[j])
                    || is_non_word(line[j])
                    || multi_char_punct(line, j).is_some()
                {
                    break;
                }
                if line[j] == ',' {
                    let k = j + 1;
                    if k >= line.len()
                        || is_space(line[k])
                        || is_non_word(line[k])
                        || multi_char_punct(line, k).is_some()
                    {
                        break;
                    }
                }
                j += 1;
            }
            out.push(line[i..j].iter().collect());
            i = j;
            continue;
        }
        out.push(c.to_string());
        i += 1;
    }
    out
}

/// A token with Punkt's annotations.
struct Token {
    tok: String,
    typ: String,
    period_final: bool,
    sentbreak: bool,
    abbr: bool,
    ellipsis: bool,
}

/// `_RE_NUMERIC` = `^-?[\.,]?\d[\d,\.-]*\.?$`, matched against the whole lower-cased token.
fn is_numeric_type(s: &str) -> bool {
    let c: Vec<char> = s.chars().collect();
    let mut i = 0;
    if c.get(i) == Some(&'-') {
        i += 1;
    }
    if matches!(c.get(i), Some('.') | Some(',')) {
        i += 1;
    }
    if !c.get(i).is_some_and(|d| is_digit(*d)) {
        return false;
    }
    i += 1;
    // [\d,\.-]* then an optional final period: the class already contains '.', so the rest
    // must simply consist of class characters.
    c[i..]
        .iter()
        .all(|&d| is_digit(d) || d == ',' || d == '.' || d == '-')
}

/// `\d`: a decimal digit (general category Nd), in the `regex` module as in Rust.
fn is_digit(c: char) -> bool {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    let re = RE.get_or_init(|| regex::Regex::new(r"^\d$").expect("static regex"));
    let mut buf = [0u8; 4];
    re.is_match(c.encode_utf8(&mut buf))
}

/// `[^\W\d]` of the `regex` module: a word character that is not a digit.
fn is_alpha_word_char(c: char) -> bool {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    let re = RE.get_or_init(|| regex::Regex::new(r"^\w$").expect("static regex"));
    let mut buf = [0u8; 4];
    re.is_match(c.encode_utf8(&mut buf)) && !is_digit(c)
}

impl Token {
    fn new(tok: String) -> Token {
        let low = lower(&tok);
        let typ = if is_numeric_type(&low) {
            "##number##".to_string()
        } else {
            low
        };
        let period_final = tok.ends_with('.');
        Token {
            tok,
            typ,
            period_final,
            sentbreak: false,
            abbr: false,
            ellipsis: false,
        }
    }

    fn type_no_period(&self) -> &str {
        if self.typ.chars().count() > 1 && self.typ.ends_with('.') {
            &self.typ[..self.typ.len() - 1]
        } else {
            &self.typ
        }
    }

    fn type_no_sentperiod(&self) -> &str {
        if self.sentbreak {
            self.type_no_period()
        } else {
            &self.typ
        }
    }

    fn first_upper(&self) -> bool {
        self.tok.chars().next().is_some_and(char::is_uppercase)
    }

    fn first_lower(&self) -> bool {
        self.tok.chars().next().is_some_and(char::is_lowercase)
    }

    /// `_RE_ELLIPSIS` = `\.\.+$` from the start: two or more periods and nothing else.
    fn is_ellipsis(&self) -> bool {
        self.tok.len() >= 2 && self.tok.chars().all(|c| c == '.')
    }

    /// `_RE_INITIAL` = `[^\W\d]\.$` from the start: one letter and a period.
    fn is_initial(&self) -> bool {
        let c: Vec<char> = self.tok.chars().collect();
        c.len() == 2 && c[1] == '.' && is_alpha_word_char(c[0])
    }
}

/// First pass: sentence-end characters, ellipses and known abbreviations.
fn first_pass(t: &mut Token, p: &Params) {
    let tok = t.tok.as_str();
    if tok == "." || tok == "?" || tok == "!" {
        t.sentbreak = true;
    } else if t.is_ellipsis() {
        t.ellipsis = true;
    } else if t.period_final && !tok.ends_with("..") {
        let stem = lower(&tok[..tok.len() - 1]);
        let last = stem.rsplit('-').next().unwrap_or("");
        if p.abbrev_types.contains(&stem) || p.abbrev_types.contains(last) {
            t.abbr = true;
        } else {
            t.sentbreak = true;
        }
    }
}

/// The orthographic heuristic's three answers.
#[derive(PartialEq)]
enum Ortho {
    Starter,
    NotStarter,
    Unknown,
}

fn ortho_heuristic(t: &Token, p: &Params) -> Ortho {
    if matches!(t.tok.as_str(), ";" | ":" | "," | "." | "!" | "?") {
        return Ortho::NotStarter;
    }
    let oc = p
        .ortho_context
        .get(t.type_no_sentperiod())
        .copied()
        .unwrap_or(0);
    if t.first_upper() && oc & ORTHO_LC != 0 && oc & ORTHO_MID_UC == 0 {
        return Ortho::Starter;
    }
    if t.first_lower() && (oc & ORTHO_UC != 0 || oc & ORTHO_BEG_LC == 0) {
        return Ortho::NotStarter;
    }
    Ortho::Unknown
}

/// Second pass over a pair of neighbouring tokens, updating the first.
fn second_pass(t1: &mut Token, t2: &Token, p: &Params) {
    if !t1.period_final {
        return;
    }
    let typ = t1.type_no_period().to_string();
    let next_typ = t2.type_no_sentperiod();
    let initial = t1.is_initial();
    if p.collocations
        .contains(&(typ.clone(), next_typ.to_string()))
    {
        t1.sentbreak = false;
        t1.abbr = true;
        return;
    }
    if (t1.abbr || t1.ellipsis) && !initial {
        let starter = ortho_heuristic(t2, p);
        if starter == Ortho::Starter {
            t1.sentbreak = true;
            return;
        }
        if t2.first_upper() && p.sent_starters.contains(next_typ) {
            t1.sentbreak = true;
            return;
        }
    }
    if initial || typ == "##number##" {
        let starter = ortho_heuristic(t2, p);
        if starter == Ortho::NotStarter {
            t1.sentbreak = false;
            t1.abbr = true;
            return;
        }
        let next_oc = p.ortho_context.get(next_typ).copied().unwrap_or(0);
        if starter == Ortho::Unknown && initial && t2.first_upper() && next_oc & ORTHO_LC == 0 {
            t1.sentbreak = false;
            t1.abbr = true;
        }
    }
}

/// `text_contains_sentbreak`: does any token after the first sentence break exist?
fn contains_sentbreak(text: &str, p: &Params) -> bool {
    let mut tokens: Vec<Token> = Vec::new();
    for line in text.split('\n') {
        if !py_strip(line).is_empty() {
            let chars: Vec<char> = line.chars().collect();
            tokens.extend(punkt_words(&chars).into_iter().map(Token::new));
        }
    }
    for t in tokens.iter_mut() {
        first_pass(t, p);
    }
    for i in 0..tokens.len() {
        if i + 1 < tokens.len() {
            let (a, b) = tokens.split_at_mut(i + 1);
            second_pass(&mut a[i], &b[0], p);
        }
        if i > 0 && tokens[i - 1].sentbreak {
            return true;
        }
    }
    false
}

/// One match of the period-context rule: a sentence-end character at `start`, the text that
/// follows it (`after_tok`) and, when that is whitespace plus a token, where the token starts.
struct EndContext {
    start: usize,
    after_tok: (usize, usize),
    next_tok: Option<usize>,
}

/// `period_context_re().finditer`: `[.?!](?=(?P<after_tok>NonWord|\s+(?P<next_tok>\S+)))`.
fn period_contexts(s: &[char]) -> Vec<EndContext> {
    let mut out = Vec::new();
    for i in 0..s.len() {
        if !matches!(s[i], '.' | '?' | '!') {
            continue;
        }
        let j = i + 1;
        if j < s.len() && is_non_word(s[j]) {
            out.push(EndContext {
                start: i,
                after_tok: (j, j + 1),
                next_tok: None,
            });
            continue;
        }
        let mut k = j;
        while k < s.len() && is_space(s[k]) {
            k += 1;
        }
        if k > j && k < s.len() {
            let mut e = k;
            while e < s.len() && !is_space(s[e]) {
                e += 1;
            }
            out.push(EndContext {
                start: i,
                after_tok: (j, e),
                next_tok: Some(k),
            });
        }
    }
    out
}

/// `_get_last_whitespace_index`: the last ASCII whitespace (`string.whitespace`), else 0.
fn last_whitespace_index(s: &[char]) -> usize {
    s.iter()
        .rposition(|c| matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c'))
        .unwrap_or(0)
}

/// `_slices_from_text`: sentence spans before realignment.
fn slices_from_text(s: &[char], p: &Params) -> Vec<(usize, usize)> {
    let collect = |a: usize, b: usize| -> String { s[a..b].iter().collect() };
    let mut contexts: Vec<(&EndContext, String)> = Vec::new();
    let matches = period_contexts(s);
    // `_match_potential_end_contexts`: pair each match with the word before it, dropping
    // matches whose word overlaps the next match's (runs like "!!!" keep only the last).
    let mut previous: Option<(&EndContext, (usize, usize))> = None;
    for m in &matches {
        let prev_stop = previous.map_or(0, |(_, sl)| sl.1);
        let prev_start = previous.map_or(0, |(_, sl)| sl.0);
        let ws = last_whitespace_index(&s[prev_stop..m.start]);
        let word_start = if ws != 0 {
            ws + prev_stop + 1
        } else {
            prev_start
        };
        let word = (word_start, m.start);
        if let Some((pm, psl)) = previous {
            if psl.1 <= word.0 {
                contexts.push((
                    pm,
                    collect(psl.0, psl.1)
                        + &collect(pm.start, pm.start + 1)
                        + &collect(pm.after_tok.0, pm.after_tok.1),
                ));
            }
        }
        previous = Some((m, word));
    }
    if let Some((pm, psl)) = previous {
        contexts.push((
            pm,
            collect(psl.0, psl.1)
                + &collect(pm.start, pm.start + 1)
                + &collect(pm.after_tok.0, pm.after_tok.1),
        ));
    }

    let mut slices = Vec::new();
    let mut last_break = 0;
    for (m, context) in contexts {
        if contains_sentbreak(&context, p) {
            slices.push((last_break, m.start + 1));
            last_break = m.next_tok.unwrap_or(m.start + 1);
        }
    }
    let text: String = s.iter().collect();
    let rstripped = text
        .trim_end_matches(super::text::is_py_space)
        .chars()
        .count();
    slices.push((last_break, rstripped));
    slices
}

/// `re_boundary_realignment` matched at the start of `s`:
/// `["')\]}‘’“”«»]+?(?:\s+|(?=--)|$)` (MULTILINE). Returns (match length, length without
/// trailing whitespace).
fn boundary_realignment(s: &[char]) -> Option<(usize, usize)> {
    let closer = |c: char| {
        matches!(
            c,
            '"' | '\''
                | ')'
                | ']'
                | '}'
                | '\u{2018}'
                | '\u{2019}'
                | '\u{201c}'
                | '\u{201d}'
                | '\u{ab}'
                | '\u{bb}'
        )
    };
    let mut k = 1;
    while k <= s.len() && closer(s[k - 1]) {
        if k < s.len() && is_space(s[k]) {
            let mut e = k;
            while e < s.len() && is_space(s[e]) {
                e += 1;
            }
            return Some((e, k));
        }
        if k == s.len() || s[k] == '\n' || (s[k] == '-' && s.get(k + 1) == Some(&'-')) {
            return Some((k, k));
        }
        k += 1;
    }
    None
}

/// `_realign_boundaries`: moves closing quotes and brackets after a break onto the sentence
/// they close.
fn realign(s: &[char], slices: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut shift = 0;
    for i in 0..slices.len() {
        let s1 = (slices[i].0 + shift, slices[i].1);
        let nonempty = |a: (usize, usize)| a.0 < a.1;
        match slices.get(i + 1) {
            None => {
                if nonempty(s1) {
                    out.push(s1);
                }
            }
            Some(&s2) => {
                let start = s2.0.min(s2.1);
                let m = if s2.0 < s2.1 {
                    boundary_realignment(&s[start..s2.1])
                } else {
                    None
                };
                match m {
                    Some((end, kept)) => {
                        out.push((s1.0, s2.0 + kept));
                        shift = end;
                    }
                    None => {
                        shift = 0;
                        if nonempty(s1) {
                            out.push(s1);
                        }
                    }
                }
            }
        }
    }
    out
}

/// The sentences of `text`, as Punkt English splits them.
pub fn sent_tokenize(text: &str) -> Vec<String> {
    let s: Vec<char> = text.chars().collect();
    let spans = realign(&s, slices_from_text(&s, english()));
    spans
        .into_iter()
        .map(|(a, b)| s[a..b].iter().collect())
        .collect()
}

/// `instructions_util.count_sentences`.
pub fn count_sentences(text: &str) -> usize {
    sent_tokenize(text).len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_loads() {
        let p = english();
        assert_eq!(p.abbrev_types.len(), 156);
        assert!(p.abbrev_types.contains("mr") && p.abbrev_types.contains(". . "));
        assert_eq!(p.sent_starters.len(), 39);
        assert_eq!(p.collocations.len(), 37);
        assert_eq!(p.ortho_context.get("a"), Some(&126));
    }

    #[test]
    fn splits_like_nltk() {
        // Outputs of nltk 3.10.4 `sent_tokenize`.
        assert_eq!(
            sent_tokenize("Hello Mr. Smith. How are you? I am fine... ok. The U.S. army is big."),
            [
                "Hello Mr. Smith.",
                "How are you?",
                "I am fine... ok.",
                "The U.S. army is big."
            ]
        );
        assert_eq!(sent_tokenize("(How does it deal with this parenthesis?)  \"It should be part of the previous sentence.\""),
            ["(How does it deal with this parenthesis?)", "\"It should be part of the previous sentence.\""]);
        assert_eq!(
            sent_tokenize("Very bad acting!!! I promise."),
            ["Very bad acting!!!", "I promise."]
        );
        assert_eq!(count_sentences(""), 0);
        assert_eq!(count_sentences("  \n "), 0);
        assert_eq!(count_sentences("one\n\n* two. three"), 2);
    }

    #[test]
    fn word_tokenizer_keeps_periods_and_splits_punctuation() {
        let w = |s: &str| punkt_words(&s.chars().collect::<Vec<_>>());
        assert_eq!(
            w("Hello, (world)... a--b 3.5."),
            ["Hello", ",", "(", "world", ")", "...", "a", "--", "b", "3.5."]
        );
        assert_eq!(w(". . . x"), [". . .", "x"]);
    }
}
