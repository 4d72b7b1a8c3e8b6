//! `detectable_content:*` — placeholders and postscripts.

use regex::Regex;
use std::sync::OnceLock;

/// `detectable_content:number_placeholders`: at least `n` non-overlapping `\[.*?\]`.
pub fn placeholders(n: i64, response: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(r"\[.*?\]").expect("static regex"));
    re.find_iter(response).count() as i64 >= n
}

/// The pattern searched (multi-line, on the lower-cased response) for a postscript marker.
/// "P.S." and "P.P.S" have hand-written patterns in the official code; any other marker is
/// used as a regular expression.
pub fn postscript_pattern(marker: &str) -> Result<Regex, regex::Error> {
    let body = match marker {
        "P.P.S" => r"\s*p\.\s?p\.\s?s.*$".to_string(),
        "P.S." => r"\s*p\.\s?s\..*$".to_string(),
        other => format!(r"\s*{}.*$", other.to_lowercase()),
    };
    Regex::new(&format!("(?m){body}"))
}

/// `detectable_content:postscript`.
pub fn has_postscript(pattern: &Regex, response: &str) -> bool {
    pattern.is_match(&response.to_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_bracketed_and_non_greedy() {
        assert!(placeholders(2, "[name] at [address]"));
        assert!(!placeholders(2, "[name at address"));
    }

    #[test]
    fn postscripts() {
        let ps = postscript_pattern("P.S.").unwrap();
        assert!(has_postscript(&ps, "Bye.\n\nP.S. call me"));
        assert!(has_postscript(&ps, "bye p. s. x"));
        assert!(!has_postscript(&ps, "PS call me"));
        let pps = postscript_pattern("P.P.S").unwrap();
        assert!(has_postscript(&pps, "p.p.s hi"));
        let other = postscript_pattern("Note:").unwrap();
        assert!(has_postscript(&other, "NOTE: hi"));
    }
}
