//! Python's `json` module where IFEval depends on it.
//!
//! * `json.loads` acceptance (`detectable_format:json_format`). Python's decoder is not
//!   RFC 8259: it accepts `NaN`, `Infinity` and `-Infinity`, lone surrogate escapes and numbers
//!   of any size, and rejects raw control characters in strings. `serde_json` differs on each,
//!   so this is a small validator with Python's grammar.
//! * `json.dumps` output (default `ensure_ascii=True`, `", "` and `": "` separators), so the
//!   per-prompt result files are byte-identical to the official tool's.

use serde_json::Value;
use std::fmt::Write;

/// `json.dumps(value)` with Python's defaults. Object keys keep their order.
pub fn dumps(value: &Value) -> String {
    let mut out = String::new();
    dump_into(value, &mut out);
    out
}

fn dump_into(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => dump_str(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                dump_into(v, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                dump_str(k, out);
                out.push_str(": ");
                dump_into(v, out);
            }
            out.push('}');
        }
    }
}

/// A string literal with every character outside `' '..='~'` as `\uXXXX` (surrogate pairs above U+FFFF).
fn dump_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
        }
    }
    out.push('"');
}

/// True when `json.loads(s)` would succeed.
pub fn is_python_json(s: &str) -> bool {
    let b = s.as_bytes();
    let mut p = Parser { b, i: 0 };
    p.ws();
    if p.value(0).is_none() {
        return false;
    }
    p.ws();
    p.i == b.len()
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

/// Python raises RecursionError on deep nesting; that is not a successful load either.
const MAX_DEPTH: usize = 900;

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn eat(&mut self, lit: &[u8]) -> Option<()> {
        if self.b[self.i..].starts_with(lit) {
            self.i += lit.len();
            Some(())
        } else {
            None
        }
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match *self.b.get(self.i)? {
            b'{' => self.object(depth),
            b'[' => self.array(depth),
            b'"' => self.string(),
            b'n' => self.eat(b"null"),
            b't' => self.eat(b"true"),
            b'f' => self.eat(b"false"),
            b'N' => self.eat(b"NaN"),
            b'I' => self.eat(b"Infinity"),
            b'-' if self.b[self.i..].starts_with(b"-Infinity") => self.eat(b"-Infinity"),
            _ => self.number(),
        }
    }

    fn object(&mut self, depth: usize) -> Option<()> {
        self.i += 1;
        self.ws();
        if self.eat(b"}").is_some() {
            return Some(());
        }
        loop {
            self.ws();
            if self.b.get(self.i) != Some(&b'"') {
                return None;
            }
            self.string()?;
            self.ws();
            self.eat(b":")?;
            self.ws();
            self.value(depth + 1)?;
            self.ws();
            if self.eat(b",").is_some() {
                continue;
            }
            return self.eat(b"}");
        }
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        self.i += 1;
        self.ws();
        if self.eat(b"]").is_some() {
            return Some(());
        }
        loop {
            self.ws();
            self.value(depth + 1)?;
            self.ws();
            if self.eat(b",").is_some() {
                continue;
            }
            return self.eat(b"]");
        }
    }

    fn string(&mut self) -> Option<()> {
        self.i += 1;
        loop {
            let c = *self.b.get(self.i)?;
            self.i += 1;
            match c {
                b'"' => return Some(()),
                0..=0x1f => return None,
                b'\\' => {
                    let e = *self.b.get(self.i)?;
                    self.i += 1;
                    match e {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                        b'u' => {
                            let hex = self.b.get(self.i..self.i + 4)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return None;
                            }
                            self.i += 4;
                        }
                        _ => return None,
                    }
                }
                _ => {}
            }
        }
    }

    /// `-?(?:0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?` with ASCII digits (the C scanner's grammar).
    fn number(&mut self) -> Option<()> {
        let digits = |p: &mut Self| {
            let start = p.i;
            while p.i < p.b.len() && p.b[p.i].is_ascii_digit() {
                p.i += 1;
            }
            p.i - start
        };
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match self.b.get(self.i) {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                digits(self);
            }
            _ => return None,
        }
        // A fraction or exponent without digits is not part of the number; what follows is
        // then trailing data, which fails the whole document.
        if self.b.get(self.i) == Some(&b'.')
            && self.b.get(self.i + 1).is_some_and(u8::is_ascii_digit)
        {
            self.i += 1;
            digits(self);
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) {
            let save = self.i;
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if digits(self) == 0 {
                self.i = save;
            }
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::{dumps, is_python_json};

    #[test]
    fn dumps_like_python() {
        let v = serde_json::json!({"b": [true, null, 3], "a": "é\n\"q\" 😀\u{1}\u{7f}"});
        // Python: json.dumps({"b": [True, None, 3], "a": "é\n\"q\" 😀\x01\x7f"})
        assert_eq!(
            dumps(&v),
            r#"{"b": [true, null, 3], "a": "\u00e9\n\"q\" \ud83d\ude00\u0001\u007f"}"#
        );
    }

    #[test]
    fn accepts_what_python_accepts() {
        for ok in [
            "{}",
            "[]",
            "0",
            "-0.5e-3",
            "1E400",
            "\"\\ud800\"",
            "NaN",
            "[-Infinity, Infinity]",
            "{\"a\": {\"b\": [true, false, null]}}",
            " 1 ",
        ] {
            assert!(is_python_json(ok), "{ok}");
        }
    }

    #[test]
    fn rejects_what_python_rejects() {
        for bad in [
            "",
            "{'a': 1}",
            "[1,]",
            "01",
            "1.",
            "\"a\nb\"",
            "{\"a\" 1}",
            "nan",
            "[1] x",
            "\"\\x\"",
            "-",
        ] {
            assert!(!is_python_json(bad), "{bad}");
        }
    }
}
