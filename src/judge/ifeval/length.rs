//! `length_constraints:*` — sentences, paragraphs, words, first word of the n-th paragraph.

use super::instruction::Relation;
use super::punkt::count_sentences;
use super::text::{count_words, is_py_space, py_split_whitespace, py_strip};
use regex::Regex;
use std::sync::OnceLock;

/// `length_constraints:number_sentences`: Punkt English sentence count vs. the threshold.
pub fn sentences(relation: Relation, threshold: i64, response: &str) -> bool {
    relation.holds(count_sentences(response), threshold)
}

/// `length_constraints:number_words`: `\w+` token count vs. the threshold.
pub fn words(relation: Relation, threshold: i64, response: &str) -> bool {
    relation.holds(count_words(response), threshold)
}

/// `length_constraints:number_paragraphs`: paragraphs are separated by `\s?\*\*\*\s?`; an empty
/// piece is forgiven at either end and fails anywhere else; the count must be exact.
pub fn paragraphs(expected: i64, response: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    // Python's `\s` in a `str` pattern also matches U+001C..U+001F.
    let re =
        RE.get_or_init(|| Regex::new(r"[\s\x1c-\x1f]?\*\*\*[\s\x1c-\x1f]?").expect("static regex"));
    let pieces: Vec<&str> = re.split(response).collect();
    let mut count = pieces.len() as i64;
    for (i, p) in pieces.iter().enumerate() {
        if py_strip(p).is_empty() {
            if i == 0 || i == pieces.len() - 1 {
                count -= 1;
            } else {
                return false;
            }
        }
    }
    count == expected
}

/// `length_constraints:nth_paragraph_first_word`: paragraphs are separated by "\n\n"; the
/// number of non-blank ones must equal `num_paragraphs`, and paragraph `nth` (counted in the
/// raw split, blanks included, as the official code indexes it) must start with `first_word`
/// once leading quotes are dropped and the word is cut at the first punctuation mark.
pub fn nth_paragraph_first_word(
    num_paragraphs: i64,
    nth: i64,
    first_word: &str,
    response: &str,
) -> bool {
    let pieces: Vec<&str> = response.split("\n\n").collect();
    let count = pieces.iter().filter(|p| !py_strip(p).is_empty()).count() as i64;
    if nth > count || nth < 1 {
        return false;
    }
    let paragraph = py_strip(pieces[(nth - 1) as usize]);
    let Some(word) = py_split_whitespace(paragraph).next() else {
        return false;
    };
    let word = word
        .trim_matches(is_py_space)
        .trim_start_matches('\'')
        .trim_start_matches('"');
    let mut found = String::new();
    for c in word.chars() {
        if matches!(c, '.' | ',' | '?' | '!' | '\'' | '"') {
            break;
        }
        found.extend(c.to_lowercase());
    }
    count == num_paragraphs && found == first_word
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paragraph_dividers() {
        assert!(paragraphs(3, "a\n***\nb\n***\nc"));
        assert!(paragraphs(2, "***\na *** b\n***"));
        assert!(!paragraphs(3, "a *** *** b"));
        assert!(!paragraphs(1, "a *** b"));
    }

    #[test]
    fn nth_paragraph() {
        let text = "\"Hello,\" she said.\n\nWorld is big.\n\n\n\nThird.";
        assert!(nth_paragraph_first_word(3, 1, "hello", text));
        assert!(nth_paragraph_first_word(3, 2, "world", text));
        // The third raw piece is the blank one between the extra newlines.
        assert!(!nth_paragraph_first_word(3, 3, "third", text));
        assert!(!nth_paragraph_first_word(2, 1, "hello", text));
    }

    #[test]
    fn counts() {
        assert!(words(Relation::LessThan, 4, "one two, three"));
        assert!(sentences(Relation::AtLeast, 2, "One. Two."));
    }
}
