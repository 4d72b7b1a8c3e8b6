//! `keywords:*` — existence, frequency, forbidden words, letter frequency.
//!
//! Keywords are regular expressions in the official code (`re.search(keyword, ...)`), so they
//! are compiled as patterns here too; all matching is case-insensitive.

use super::instruction::Relation;
use super::text::is_py_word_char;
use regex::Regex;

/// `keywords:existence`: every keyword pattern occurs somewhere.
pub fn all_present(keywords: &[Regex], response: &str) -> bool {
    keywords.iter().all(|k| k.is_match(response))
}

/// `keywords:frequency`: the number of non-overlapping matches (`re.findall`) vs. the threshold.
pub fn frequency(keyword: &Regex, relation: Relation, threshold: i64, response: &str) -> bool {
    relation.holds(keyword.find_iter(response).count(), threshold)
}

/// `keywords:forbidden_words`: no word matches `\bWORD\b`. The word boundary is Python `re`'s
/// (between `str.isalnum()`-or-underscore characters and the rest), checked around every
/// anchored match of the word so that a rejected candidate cannot hide an overlapping one.
pub fn none_forbidden(words: &[Regex], response: &str) -> bool {
    !words.iter().any(|w| occurs_as_word(w, response))
}

/// Is there a position where `anchored` (a `^(?i:WORD)` pattern) matches with a Python `\b`
/// on both sides?
fn occurs_as_word(anchored: &Regex, text: &str) -> bool {
    let boundary = |pos: usize| {
        let before = text[..pos].chars().next_back().is_some_and(is_py_word_char);
        let after = text[pos..].chars().next().is_some_and(is_py_word_char);
        before != after
    };
    text.char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(text.len()))
        .filter(|&i| boundary(i))
        .any(|i| {
            anchored
                .find(&text[i..])
                .is_some_and(|m| boundary(i + m.end()))
        })
}

/// `keywords:letter_frequency`: occurrences of `letter` in the lower-cased response.
pub fn letter_frequency(letter: &str, relation: Relation, threshold: i64, response: &str) -> bool {
    let count = if letter.chars().count() == 1 {
        let l = letter.chars().next().unwrap_or_default();
        response.to_lowercase().chars().filter(|&c| c == l).count()
    } else {
        // `Counter(value)[letter]` counts single characters: an empty letter never occurs.
        0
    };
    relation.holds(count, threshold)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ci(p: &str) -> Regex {
        Regex::new(&format!("(?i){p}")).unwrap()
    }

    fn word(p: &str) -> Regex {
        Regex::new(&format!("^(?i:{p})")).unwrap()
    }

    #[test]
    fn keyword_checks() {
        assert!(all_present(&[ci("rock"), ci("ROLL")], "Rock and roll"));
        assert!(!all_present(&[ci("jazz")], "Rock and roll"));
        assert!(frequency(&ci("aa"), Relation::AtLeast, 2, "aaaa"));
        assert!(
            !frequency(&ci("aa"), Relation::AtLeast, 3, "aaaa"),
            "findall does not overlap"
        );
        assert!(frequency(&ci("dog"), Relation::LessThan, 1, "cat"));
    }

    #[test]
    fn forbidden_words_use_python_word_boundaries() {
        assert!(!none_forbidden(&[word("cat")], "A Cat."));
        assert!(none_forbidden(&[word("cat")], "concatenate cats"));
        // A combining accent is not a word character for Python's `re`: "cafe" + U+0301 ends a word.
        assert!(!none_forbidden(&[word("cafe")], "cafe\u{301} au lait"));
        assert!(!none_forbidden(&[word("aa")], "aaa aa"));
    }

    #[test]
    fn letters_are_counted_case_insensitively() {
        assert!(letter_frequency("a", Relation::AtLeast, 3, "A banana"));
        assert!(letter_frequency("#", Relation::LessThan, 1, "no hashes"));
        assert!(!letter_frequency("", Relation::AtLeast, 1, "anything"));
    }
}
