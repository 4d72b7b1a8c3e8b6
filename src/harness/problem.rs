//! One thing wrong with a harness directory, located as precisely as the source allows.
//!
//! Validation never stops at the first problem: every check appends to a `Vec<Problem>`, so an
//! operator editing a harness sees everything that is wrong in one run.

use std::fmt;

/// A problem found while loading or validating a harness.
///
/// `file` is the path relative to the harness root, always with `/` separators, so messages are
/// identical on every machine. `field` names the offending key in that file's own terms (a TOML
/// key path, a JSON path such as `hooks.Stop[0].matcher`, or a front-matter field).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: String,
    /// 1-based line, when the parser reports one.
    pub line: Option<usize>,
    pub field: Option<String>,
    pub message: String,
}

impl Problem {
    /// A problem about a named field of a file.
    pub fn field(
        file: impl Into<String>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Problem {
            file: file.into(),
            line: None,
            field: Some(field.into()),
            message: message.into(),
        }
    }

    /// A problem about a whole file (unreadable, unparsable, missing).
    pub fn file(file: impl Into<String>, message: impl Into<String>) -> Self {
        Problem {
            file: file.into(),
            line: None,
            field: None,
            message: message.into(),
        }
    }

    pub fn at_line(mut self, line: Option<usize>) -> Self {
        self.line = line;
        self
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        // One problem, one line: parsers sometimes put line breaks in their messages.
        let message = self.message.replace('\n', "; ");
        match &self.field {
            Some(field) => write!(f, ": field '{field}': {message}"),
            None => write!(f, ": {message}"),
        }
    }
}

/// 1-based line number of a byte offset in `text` (parsers report spans as byte offsets).
pub(crate) fn line_of_offset(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Turns a list of problems into one `anyhow` error, one problem per line.
pub(crate) fn problems_error(what: &str, problems: &[Problem]) -> anyhow::Error {
    let mut msg = format!("{what}: {} problem(s)", problems.len());
    for p in problems {
        msg.push_str("\n  ");
        msg.push_str(&p.to_string());
    }
    anyhow::anyhow!(msg)
}

/// serde reports schema errors as "unknown field `x`, expected …" or "missing field `x`": pull the
/// field name out so the problem can name it like the hand-written checks do.
pub(crate) fn field_from_serde_message(message: &str) -> Option<String> {
    for prefix in ["unknown field `", "missing field `", "duplicate field `"] {
        if let Some(rest) = message.strip_prefix(prefix) {
            return rest.split('`').next().map(str::to_string);
        }
    }
    None
}

/// A problem from a `serde_json` error: its line, and the field when serde names one.
pub(crate) fn json_problem(file: &str, err: &serde_json::Error) -> Problem {
    let full = err.to_string();
    // serde_json appends " at line L column C"; the line goes into the problem's own slot.
    let message = full
        .rfind(" at line ")
        .map_or(full.as_str(), |i| &full[..i])
        .to_string();
    let line = (err.line() > 0).then_some(err.line());
    Problem {
        file: file.to_string(),
        line,
        field: field_from_serde_message(&message),
        message,
    }
}
