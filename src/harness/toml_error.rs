//! Turns a `toml` parse or schema error into a [`Problem`] with a line and, where it can be read
//! off the source, the dotted key (`limits.max_rounds`) the error is about.

use super::problem::{line_of_offset, Problem};

pub fn toml_problem(file: &str, text: &str, err: &toml::de::Error) -> Problem {
    // One problem is one line of `hat harness validate` output.
    let message = err.message().trim().replace('\n', "; ");
    let Some(span) = err.span() else {
        return Problem::file(file, message);
    };
    let line = line_of_offset(text, span.start);
    let problem = match key_at_line(text, line) {
        Some(key) => Problem::field(file, key, message),
        None => Problem::file(file, message),
    };
    problem.at_line(Some(line))
}

/// The dotted key assigned on 1-based `line`, prefixed by the nearest table header above it.
/// Returns `None` for lines that are not `key = value` (headers, continuation lines).
fn key_at_line(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let current = lines.get(line.checked_sub(1)?)?.trim();
    if current.starts_with('[') {
        return Some(
            current
                .trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_string(),
        );
    }
    let (key, _) = current.split_once('=')?;
    let key = key.trim().trim_matches('"');
    if key.is_empty() || key.starts_with('#') {
        return None;
    }
    let table = lines[..line - 1]
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| l.starts_with('['));
    Some(match table {
        Some(header) => format!(
            "{}.{key}",
            header.trim_matches(|c| c == '[' || c == ']').trim()
        ),
        None => key.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_key_under_its_table() {
        let text = "[harness]\nname = \"a\"\n\n[limits]\nmax_rounds = \"many\"\n";
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct L {
            max_rounds: u32,
        }
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct T {
            harness: toml::Table,
            limits: L,
        }
        let err = toml::from_str::<T>(text).unwrap_err();
        let p = toml_problem("harness.toml", text, &err);
        assert_eq!(p.line, Some(5));
        assert_eq!(p.field.as_deref(), Some("limits.max_rounds"));
    }
}
