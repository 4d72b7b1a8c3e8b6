//! `detectable_format:*` — bullets, constrained answers, highlights, sections, JSON, titles.

use super::pyjson::is_python_json;
use super::text::py_strip;
use regex::Regex;
use std::sync::OnceLock;

fn re(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("static regex"))
}

/// `detectable_format:number_bullet_lists`: lines `^\s*\*[^\*].*$` plus lines `^\s*-.*$`
/// (multi-line, non-overlapping; `\s*` may run across blank lines) must number exactly `n`.
pub fn bullet_lists(n: i64, response: &str) -> bool {
    static STAR: OnceLock<Regex> = OnceLock::new();
    static DASH: OnceLock<Regex> = OnceLock::new();
    let stars = re(&STAR, r"(?m)^[\s\x1c-\x1f]*\*[^*].*$")
        .find_iter(response)
        .count();
    let dashes = re(&DASH, r"(?m)^[\s\x1c-\x1f]*-.*$")
        .find_iter(response)
        .count();
    (stars + dashes) as i64 == n
}

/// `detectable_format:constrained_response`: one of the three fixed answers appears.
pub fn constrained_response(response: &str) -> bool {
    let v = py_strip(response);
    [
        "My answer is yes.",
        "My answer is no.",
        "My answer is maybe.",
    ]
    .iter()
    .any(|o| v.contains(o))
}

/// `detectable_format:number_highlighted_sections`: `*text*` spans plus `**text**` spans with
/// non-blank text, at least `n` of them.
pub fn highlighted_sections(n: i64, response: &str) -> bool {
    static SINGLE: OnceLock<Regex> = OnceLock::new();
    static DOUBLE: OnceLock<Regex> = OnceLock::new();
    let single = re(&SINGLE, r"\*[^\n*]*\*")
        .find_iter(response)
        .filter(|m| !py_strip(m.as_str().trim_matches('*')).is_empty())
        .count();
    let double = re(&DOUBLE, r"\*\*[^\n*]*\*\*")
        .find_iter(response)
        .filter(|m| {
            let s = m.as_str();
            !py_strip(&s[2..s.len() - 2]).is_empty()
        })
        .count();
    (single + double) as i64 >= n
}

/// The splitter pattern of `detectable_format:multiple_sections`: `\s?SPLITTER\s?\d+\s?`, the
/// splitter being a (case-sensitive) regular expression as in the official code.
pub fn section_pattern(splitter: &str) -> Result<Regex, regex::Error> {
    Regex::new(&format!(
        r"[\s\x1c-\x1f]?{splitter}[\s\x1c-\x1f]?\d+[\s\x1c-\x1f]?"
    ))
}

/// `detectable_format:multiple_sections`: `len(re.split(...)) - 1 >= n`, i.e. the number of
/// splitter matches.
pub fn sections(pattern: &Regex, n: i64, response: &str) -> bool {
    pattern.find_iter(response).count() as i64 >= n
}

/// `detectable_format:json_format`: after stripping and removing one leading code fence
/// (```` ```json ````, ```` ```Json ````, ```` ```JSON ```` or ```` ``` ````, each tried in turn)
/// and one trailing ```` ``` ````, the text is a JSON document for Python's `json.loads`.
pub fn json_format(response: &str) -> bool {
    let mut v = py_strip(response);
    for prefix in ["```json", "```Json", "```JSON", "```"] {
        v = v.strip_prefix(prefix).unwrap_or(v);
    }
    v = v.strip_suffix("```").unwrap_or(v);
    is_python_json(py_strip(v))
}

/// `detectable_format:title`: some `<<...>>` on one line with non-blank content (greedy, so
/// `<<a>> and <<b>>` is one match).
pub fn title(response: &str) -> bool {
    static TITLE: OnceLock<Regex> = OnceLock::new();
    re(&TITLE, r"<<[^\n]+>>")
        .find_iter(response)
        .any(|m| !py_strip(m.as_str().trim_start_matches('<').trim_end_matches('>')).is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bullets() {
        assert!(bullet_lists(2, "* one\n* two\n**bold** line"));
        assert!(bullet_lists(3, "- a\n  - b\n* c"));
        assert!(!bullet_lists(2, "* one"));
    }

    #[test]
    fn highlights_count_single_and_double() {
        // "**bold**": the single-star pattern finds "**" (empty) twice, the double one finds it.
        assert!(highlighted_sections(1, "**bold**"));
        assert!(!highlighted_sections(2, "**bold**"));
        assert!(highlighted_sections(2, "*a* and *b*"));
        assert!(!highlighted_sections(1, "* *"));
    }

    #[test]
    fn sections_count_splitter_matches() {
        let p = section_pattern("SECTION").unwrap();
        assert!(sections(&p, 2, "SECTION 1\nx\nSECTION 2\ny"));
        assert!(!sections(&p, 2, "Section 1\nx\nSection 2\ny"));
    }

    #[test]
    fn json_fences_and_titles() {
        assert!(json_format("```json\n{\"a\": [1, 2.5e3, null, NaN]}\n```"));
        assert!(json_format(" \"just a string\" "));
        assert!(!json_format("```json\n{'a': 1}\n```"));
        assert!(!json_format("{\"a\": 1} trailing"));
        assert!(title("<<My Title>>\ntext"));
        assert!(!title("<< >>"));
        assert!(!title("<<a\nb>>"));
        assert!(constrained_response("Well. My answer is maybe."));
    }
}
