//! Python `str` semantics that the official checkers lean on.
//!
//! The reference implementation is Python, so "strip", "split", "isupper" and the regex `\w`
//! mean what CPython says they mean. Rust's std differs in small corners (Rust's `trim` keeps
//! U+001C..U+001F, Rust's `is_alphabetic` counts combining vowel signs as letters), and each of
//! those corners flips a verdict on some real response, so they are spelled out here once.

use regex::Regex;
use std::sync::OnceLock;

/// `str.isspace()` for one character: Unicode White_Space plus the four ASCII information
/// separators, which CPython treats as whitespace (bidi class B/S) and Rust does not.
pub fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `str.strip()` with no argument.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(is_py_space)
}

/// `str.split()` with no argument: runs of whitespace separate, empty pieces vanish.
pub fn py_split_whitespace(s: &str) -> impl Iterator<Item = &str> {
    s.split(is_py_space).filter(|p| !p.is_empty())
}

/// Titlecase letters (general category Lt). CPython's `isupper`/`islower` fail on them; they are
/// neither Uppercase nor Lowercase in Rust, so without this list they would be ignored.
fn is_titlecase(c: char) -> bool {
    matches!(c,
        '\u{01C5}' | '\u{01C8}' | '\u{01CB}' | '\u{01F2}'
        | '\u{1F88}'..='\u{1F8F}' | '\u{1F98}'..='\u{1F9F}' | '\u{1FA8}'..='\u{1FAF}'
        | '\u{1FBC}' | '\u{1FCC}' | '\u{1FFC}')
}

/// `str.isupper()`: at least one cased character and no lowercase or titlecase one.
pub fn py_isupper(s: &str) -> bool {
    let mut cased = false;
    for c in s.chars() {
        if c.is_lowercase() || is_titlecase(c) {
            return false;
        }
        cased |= c.is_uppercase();
    }
    cased
}

/// `str.islower()`: at least one cased character and no uppercase or titlecase one.
pub fn py_islower(s: &str) -> bool {
    let mut cased = false;
    for c in s.chars() {
        if c.is_uppercase() || is_titlecase(c) {
            return false;
        }
        cased |= c.is_lowercase();
    }
    cased
}

fn word_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\w+").expect("static regex"))
}

/// `instructions_util.count_words`: the number of `\w+` tokens of nltk's
/// `RegexpTokenizer(r"\w+")`. nltk >= 3.10 compiles every pattern with the third-party `regex`
/// module, whose `\w` is the Unicode (UTS #18) word class, marks included — the same class as
/// Rust's `\w`, and unlike the stdlib `re` used by the checkers themselves (see
/// [`is_py_word_char`]).
pub fn count_words(text: &str) -> usize {
    word_regex().find_iter(text).count()
}

/// True when `c` is a `\w` character of Python's stdlib `re` (`str.isalnum()` or `_`), which is
/// what `\b` means in the checkers' own patterns (`keywords:forbidden_words`). Unlike Rust's
/// `\w`, combining marks are not word characters.
pub fn is_py_word_char(c: char) -> bool {
    c == '_' || c.is_alphabetic() && !is_mark(c) || c.is_numeric()
}

/// Combining marks are Alphabetic in Unicode's derived property (Rust) but not `isalpha` in
/// Python; this is the distinction `is_py_word_char` needs.
fn is_mark(c: char) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(r"^\p{M}$").expect("static regex"));
    let mut buf = [0u8; 4];
    re.is_match(c.encode_utf8(&mut buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip_matches_python_whitespace() {
        assert_eq!(py_strip("\u{1c} a b\u{a0}\n"), "a b");
        assert_eq!(
            py_strip("\u{200b}x"),
            "\u{200b}x",
            "zero-width space is not whitespace in Python"
        );
    }

    #[test]
    fn case_predicates_follow_python() {
        assert!(py_isupper("HELLO, WORLD 123"));
        assert!(!py_isupper("123 !"), "no cased character");
        assert!(!py_isupper("HELLO ǅ"), "titlecase letter fails isupper");
        assert!(py_islower("hello — ß"));
        assert!(!py_islower("hello World"));
    }

    #[test]
    fn word_classes_follow_the_regex_module_and_stdlib_re() {
        assert_eq!(count_words("Hello, world! it's 2024_x"), 5);
        // The `regex` module keeps marks inside words and drops superscripts: as Rust does.
        assert_eq!(count_words("हिन्दी x²y"), 3);
        // Stdlib `re`: marks are not word characters, superscript digits are.
        assert!(is_py_word_char('é') && is_py_word_char('_') && is_py_word_char('²'));
        assert!(!is_py_word_char('\u{94d}') && !is_py_word_char('-'));
    }
}
