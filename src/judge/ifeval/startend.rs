//! `startend:*` — end phrase and quotation.

use super::text::py_strip;

/// `startend:end_checker`: the stripped response, with surrounding double quotes removed,
/// ends with the phrase (both lower-cased).
pub fn ends_with(phrase: &str, response: &str) -> bool {
    let value = py_strip(response).trim_matches('"').to_lowercase();
    value.ends_with(&py_strip(phrase).to_lowercase())
}

/// `startend:quotation`: the stripped response is longer than one character and both starts
/// and ends with a double quote.
pub fn quoted(response: &str) -> bool {
    let v = py_strip(response);
    v.chars().count() > 1 && v.starts_with('"') && v.ends_with('"')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_phrase_ignores_case_quotes_and_whitespace() {
        assert!(ends_with(
            "Any other questions?",
            "Hi.\nany other QUESTIONS?\"\n"
        ));
        assert!(!ends_with(
            "Any other questions?",
            "Any other questions? Bye."
        ));
    }

    #[test]
    fn quotation_needs_two_quote_characters() {
        assert!(quoted("  \"hello\"  "));
        assert!(!quoted("\""));
        assert!(!quoted("\"hello"));
    }
}
