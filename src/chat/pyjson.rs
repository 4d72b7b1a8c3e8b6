//! Python `json.dumps`, byte for byte, over template values.
//!
//! transformers replaces Jinja's `tojson` with `json.dumps(x, ensure_ascii=False, indent=None,
//! separators=None, sort_keys=False)`: `", "`/`": "` separators, non-ASCII kept, no HTML escaping,
//! floats as Python `repr`. Tool schemas and tool-call arguments reach the prompt this way, so a
//! single differing byte changes the tokens a model was trained on.

use super::pyrepr::float_repr;
use minijinja::value::{Value, ValueKind};

/// The keyword arguments of `json.dumps` that templates can pass through `tojson`.
#[derive(Debug, Clone, PartialEq)]
pub struct DumpOptions {
    pub ensure_ascii: bool,
    /// `None` is compact single-line output; `Some(s)` puts each item on its own line, indented
    /// by `s` per level (Python turns an integer indent into that many spaces).
    pub indent: Option<String>,
    /// `(item_separator, key_separator)`; `None` means Python's default, which depends on indent.
    pub separators: Option<(String, String)>,
    pub sort_keys: bool,
}

impl Default for DumpOptions {
    /// What transformers' `tojson` uses when the template passes no arguments.
    fn default() -> Self {
        DumpOptions {
            ensure_ascii: false,
            indent: None,
            separators: None,
            sort_keys: false,
        }
    }
}

/// `json.dumps(value, ...)`. Fails like Python on values JSON cannot hold (undefined, objects
/// that are neither sequences nor mappings, non-scalar mapping keys).
pub fn dumps(value: &Value, opts: &DumpOptions) -> Result<String, String> {
    let (item_sep, key_sep) = match &opts.separators {
        Some((i, k)) => (i.as_str(), k.as_str()),
        // Python: `(', ', ': ')` when indent is None, else `(',', ': ')`.
        None if opts.indent.is_some() => (",", ": "),
        None => (", ", ": "),
    };
    let mut enc = Encoder {
        out: String::new(),
        opts,
        item_sep,
        key_sep,
    };
    enc.value(value, 0)?;
    Ok(enc.out)
}

/// `json.dumps(value, ensure_ascii=False)` of a serde value, as vLLM's hermes parser writes
/// parsed tool-call arguments back out.
pub fn dumps_json(value: &serde_json::Value) -> String {
    // A serde_json value is always representable, so this cannot fail.
    dumps(&Value::from_serialize(value), &DumpOptions::default()).unwrap_or_default()
}

struct Encoder<'a> {
    out: String,
    opts: &'a DumpOptions,
    item_sep: &'a str,
    key_sep: &'a str,
}

impl Encoder<'_> {
    fn value(&mut self, v: &Value, level: usize) -> Result<(), String> {
        match v.kind() {
            ValueKind::None => self.out.push_str("null"),
            ValueKind::Bool => self
                .out
                .push_str(if v.is_true() { "true" } else { "false" }),
            ValueKind::Number => self.number(v),
            ValueKind::String => self.string(v.as_str().unwrap_or_default()),
            ValueKind::Seq | ValueKind::Iterable => {
                let items: Vec<Value> = v.try_iter().map_err(|e| e.to_string())?.collect();
                self.seq(&items, level)?;
            }
            ValueKind::Map => self.map(v, level)?,
            ValueKind::Undefined => {
                return Err("Object of type Undefined is not JSON serializable".into())
            }
            other => return Err(format!("Object of type {other} is not JSON serializable")),
        }
        Ok(())
    }

    fn number(&mut self, v: &Value) {
        if v.is_integer() {
            self.out.push_str(&v.to_string());
            return;
        }
        let f = f64::try_from(v.clone()).unwrap_or(f64::NAN);
        // Python's default `allow_nan=True` spells these as JavaScript does.
        if f.is_nan() {
            self.out.push_str("NaN");
        } else if f.is_infinite() {
            self.out
                .push_str(if f > 0.0 { "Infinity" } else { "-Infinity" });
        } else {
            self.out.push_str(&float_repr(f));
        }
    }

    fn string(&mut self, s: &str) {
        self.out.push('"');
        for c in s.chars() {
            match c {
                '"' => self.out.push_str("\\\""),
                '\\' => self.out.push_str("\\\\"),
                '\n' => self.out.push_str("\\n"),
                '\r' => self.out.push_str("\\r"),
                '\t' => self.out.push_str("\\t"),
                '\u{8}' => self.out.push_str("\\b"),
                '\u{c}' => self.out.push_str("\\f"),
                c if (c as u32) < 0x20 => self.out.push_str(&format!("\\u{:04x}", c as u32)),
                c if self.opts.ensure_ascii && (c as u32) > 0x7e => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        self.out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
                c => self.out.push(c),
            }
        }
        self.out.push('"');
    }

    /// Newline plus indentation before an item at `level`, when indenting.
    fn newline(&mut self, level: usize) {
        if let Some(indent) = &self.opts.indent {
            self.out.push('\n');
            for _ in 0..level {
                self.out.push_str(indent);
            }
        }
    }

    fn seq(&mut self, items: &[Value], level: usize) -> Result<(), String> {
        if items.is_empty() {
            self.out.push_str("[]");
            return Ok(());
        }
        self.out.push('[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.out.push_str(self.item_sep);
            }
            self.newline(level + 1);
            self.value(item, level + 1)?;
        }
        self.newline(level);
        self.out.push(']');
        Ok(())
    }

    fn map(&mut self, v: &Value, level: usize) -> Result<(), String> {
        let mut entries: Vec<(Value, Value)> = v
            .try_iter()
            .map_err(|e| e.to_string())?
            .map(|k| {
                let item = v.get_item(&k).unwrap_or_default();
                (k, item)
            })
            .collect();
        if entries.is_empty() {
            self.out.push_str("{}");
            return Ok(());
        }
        if self.opts.sort_keys {
            // Python sorts the original keys; for the string keys JSON data has, code-point order
            // equals Rust's byte order on UTF-8.
            entries.sort_by(|a, b| a.0.cmp(&b.0));
        }
        self.out.push('{');
        for (i, (k, item)) in entries.iter().enumerate() {
            if i > 0 {
                self.out.push_str(self.item_sep);
            }
            self.newline(level + 1);
            let key = key_string(k)?;
            self.string(&key);
            self.out.push_str(self.key_sep);
            self.value(item, level + 1)?;
        }
        self.newline(level);
        self.out.push('}');
        Ok(())
    }
}

/// Python coerces scalar keys to strings (`True` → "true", `1.5` → "1.5") and rejects the rest.
fn key_string(k: &Value) -> Result<String, String> {
    match k.kind() {
        ValueKind::String => Ok(k.as_str().unwrap_or_default().to_string()),
        ValueKind::Bool => Ok(if k.is_true() { "true" } else { "false" }.into()),
        ValueKind::None => Ok("null".into()),
        ValueKind::Number if k.is_integer() => Ok(k.to_string()),
        ValueKind::Number => Ok(float_repr(f64::try_from(k.clone()).unwrap_or(f64::NAN))),
        other => Err(format!(
            "keys must be str, int, float, bool or None, not {other}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn d(v: serde_json::Value, opts: &DumpOptions) -> String {
        dumps(&Value::from_serialize(&v), opts).unwrap()
    }

    #[test]
    fn default_matches_transformers_tojson() {
        let v = json!({"name": "查询", "args": {"q": "<b>&'\"\\", "n": 1, "f": 1.0, "e": 1e-7,
                       "big": 1e16, "t": true, "z": null, "l": [], "m": {}}, "emoji": "😀\u{1}\u{7f}"});
        assert_eq!(
            d(v, &DumpOptions::default()),
            r#"{"name": "查询", "args": {"q": "<b>&'\"\\", "n": 1, "f": 1.0, "e": 1e-07, "big": 1e+16, "t": true, "z": null, "l": [], "m": {}}, "emoji": "😀\u0001"#
                .to_string()
                + "\u{7f}\"}"
        );
    }

    #[test]
    fn ascii_indent_separators_and_sorting() {
        let v = json!({"b": [1, {"c": "é😀"}], "a": {}});
        let opts = DumpOptions {
            ensure_ascii: true,
            indent: Some("  ".into()),
            separators: None,
            sort_keys: true,
        };
        assert_eq!(
            d(v.clone(), &opts),
            "{\n  \"a\": {},\n  \"b\": [\n    1,\n    {\n      \"c\": \"\\u00e9\\ud83d\\ude00\"\n    }\n  ]\n}"
        );
        let compact = DumpOptions {
            separators: Some((",".into(), ":".into())),
            ..DumpOptions::default()
        };
        assert_eq!(d(v, &compact), r#"{"b":[1,{"c":"é😀"}],"a":{}}"#);
    }

    #[test]
    fn undefined_is_an_error() {
        assert!(dumps(&Value::UNDEFINED, &DumpOptions::default()).is_err());
    }
}
