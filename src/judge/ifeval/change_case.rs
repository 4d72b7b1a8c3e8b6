//! `change_case:*` — capital-word frequency, all capitals in English, all lowercase in English.

use super::instruction::Relation;
use super::langdetect::detect;
use super::text::{py_islower, py_isupper};
use super::treebank::word_tokenize;

/// `change_case:capital_word_frequency`: `nltk.word_tokenize` tokens that are `isupper()`.
pub fn capital_words(relation: Relation, threshold: i64, response: &str) -> bool {
    let n = word_tokenize(response)
        .iter()
        .filter(|w| py_isupper(w))
        .count();
    relation.holds(n, threshold)
}

/// `change_case:english_capital`: `isupper()` and langdetect says English. When langdetect
/// finds nothing to go on it raises, and the official code counts that as followed.
pub fn english_capital(response: &str) -> bool {
    is_english_or_undetectable(response, py_isupper(response))
}

/// `change_case:english_lowercase`: `islower()` and langdetect says English (same exception
/// rule as [`english_capital`]).
pub fn english_lowercase(response: &str) -> bool {
    is_english_or_undetectable(response, py_islower(response))
}

/// `value.isX() and detect(value) == "en"`, inside the official `try`: detection only runs when
/// the case test passed, and an exception there makes the whole check pass.
fn is_english_or_undetectable(response: &str, case_ok: bool) -> bool {
    case_ok && detect(response).is_none_or(|lang| lang == "en")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capital_word_counting_uses_treebank_tokens() {
        // DON'T → DO + N'T: two capital tokens; "I" counts too.
        assert!(capital_words(Relation::AtLeast, 3, "I DON'T know"));
        assert!(capital_words(
            Relation::LessThan,
            2,
            "HELLO-WORLD is one token"
        ));
    }

    #[test]
    fn english_case_checks() {
        assert!(english_lowercase(
            "this is a simple english sentence about the weather today."
        ));
        assert!(!english_lowercase("This is not all lowercase."));
        assert!(english_capital("THIS IS ALL CAPITALS, TRUST ME."));
        // Seeded langdetect says "tl" for this one; circled letters give it no n-gram at all,
        // so it raises and the official code counts the instruction as followed.
        assert!(!english_capital("ABC 123"));
        assert!(english_capital("Ⓐ Ⓑ 123"));
        assert!(
            !english_capital("123"),
            "no cased character: isupper() is false"
        );
    }
}
