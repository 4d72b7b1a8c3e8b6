//! How Python prints values: `repr(float)`, `repr(str)` and `str(x)` for the values a chat
//! template sees.
//!
//! Jinja2 runs on Python objects, so `{{ x }}`, `x | string` and `x | tojson` show Python's
//! spelling (`True`, `None`, `1e-07`, `{'a': 1}`), not Rust's. Templates render arguments and
//! schema values this way, so getting these bytes right is part of matching transformers.

use minijinja::value::{Value, ValueKind};

/// Python `repr(f)` (which `str(f)` and `json.dumps` share for finite floats): the shortest
/// digits that round-trip, fixed notation when the decimal exponent is in `-4 < e <= 16`,
/// scientific otherwise with a signed, at least two-digit exponent (`1e-07`, `1.5e+16`).
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".to_string();
    }
    if f.is_infinite() {
        return if f < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    let sign = if f.is_sign_negative() { "-" } else { "" };
    if f == 0.0 {
        return format!("{sign}0.0");
    }
    // Rust's `{:e}` gives the same shortest round-trip digits as Python's repr, e.g. "1.2345e-7".
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if let Some(even) = tie_to_even(f.abs(), &digits, exp) {
        digits = even;
    }
    // Position of the decimal point relative to the first digit, as CPython's dtoa reports it.
    let decpt = exp + 1;
    let body = if decpt <= -4 || decpt > 16 {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{first}{frac}e{esign}{:02}", exp.abs())
    } else if decpt <= 0 {
        format!("0.{}{digits}", "0".repeat((-decpt) as usize))
    } else if (decpt as usize) < digits.len() {
        let (int, frac) = digits.split_at(decpt as usize);
        format!("{int}.{frac}")
    } else {
        format!("{digits}{}.0", "0".repeat(decpt as usize - digits.len()))
    };
    format!("{sign}{body}")
}

/// When the value lies exactly halfway between two shortest candidates, Rust rounds the last
/// digit up while CPython's dtoa rounds half to even (216703222315114.625 is
/// `216703222315114.62` in Python). Returns the even candidate in that case. Only 16+ digit
/// candidates can tie: shorter ones are too far apart to both round-trip.
fn tie_to_even(f: f64, digits: &str, exp: i32) -> Option<String> {
    let n = digits.len();
    if n < 16 {
        return None;
    }
    // 800 fractional digits cover any double's exact decimal expansion.
    let exact = format!("{f:.800e}");
    let (mantissa, exact_exp) = exact.split_once('e')?;
    if exact_exp.parse::<i32>().ok()? != exp {
        return None;
    }
    let exact_digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let exact_digits = exact_digits.trim_end_matches('0');
    if exact_digits.len() != n + 1 || !exact_digits.ends_with('5') {
        return None;
    }
    let low = &exact_digits[..n];
    if (low.as_bytes()[n - 1] - b'0') % 2 == 0 {
        return Some(low.to_string());
    }
    // The even candidate is one unit above `low`; carrying into a new leading digit would make
    // a shorter candidate, which the shortest algorithm would already have chosen.
    let mut up = low.as_bytes().to_vec();
    let mut i = n;
    while i > 0 {
        i -= 1;
        if up[i] == b'9' {
            up[i] = b'0';
        } else {
            up[i] += 1;
            return String::from_utf8(up).ok();
        }
    }
    None
}

/// Python `str(x)`: strings as they are, everything else as [`repr`].
pub fn py_str(v: &Value) -> String {
    match v.as_str() {
        Some(s) if v.kind() == ValueKind::String => s.to_string(),
        _ => repr(v),
    }
}

/// Python `repr(x)` for template values: `True`/`False`/`None`, quoted strings, `[...]`,
/// `{'k': v}`. Undefined prints as empty, as Jinja2's `Undefined` does.
pub fn repr(v: &Value) -> String {
    let mut out = String::new();
    write_repr(&mut out, v);
    out
}

fn write_repr(out: &mut String, v: &Value) {
    match v.kind() {
        ValueKind::Undefined => {}
        ValueKind::None => out.push_str("None"),
        ValueKind::Bool => out.push_str(if v.is_true() { "True" } else { "False" }),
        ValueKind::Number => {
            if v.is_integer() {
                out.push_str(&v.to_string());
            } else {
                out.push_str(&float_repr(f64::try_from(v.clone()).unwrap_or(f64::NAN)));
            }
        }
        ValueKind::String => write_str_repr(out, v.as_str().unwrap_or_default()),
        ValueKind::Seq | ValueKind::Iterable => {
            out.push('[');
            if let Ok(iter) = v.try_iter() {
                for (i, item) in iter.enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_repr(out, &item);
                }
            }
            out.push(']');
        }
        ValueKind::Map => {
            out.push('{');
            if let Ok(iter) = v.try_iter() {
                for (i, key) in iter.enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_repr(out, &key);
                    out.push_str(": ");
                    write_repr(out, &v.get_item(&key).unwrap_or_default());
                }
            }
            out.push('}');
        }
        _ => out.push_str(&v.to_string()),
    }
}

/// Python `repr(str)`: single quotes unless the text has `'` and no `"`; escapes backslash,
/// the quote, `\n` `\r` `\t`, and non-printable characters as `\xNN`/`\uNNNN`/`\UNNNNNNNN`.
fn write_str_repr(out: &mut String, s: &str) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !is_printable(c) => {
                let n = c as u32;
                if n < 0x100 {
                    out.push_str(&format!("\\x{n:02x}"));
                } else if n < 0x10000 {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

/// Approximates Python's `str.isprintable()`: false for control, format, separator (other than
/// ASCII space), surrogate and private-use characters. Unassigned code points, which Python also
/// escapes, are not tracked (no Unicode tables in std); they never occur in real chat data.
fn is_printable(c: char) -> bool {
    let n = c as u32;
    !(n < 0x20
        || (0x7f..=0xa0).contains(&n)
        || n == 0xad
        || (0x600..=0x605).contains(&n)
        || n == 0x61c
        || n == 0x6dd
        || n == 0x70f
        || n == 0x1680
        || n == 0x180e
        || (0x2000..=0x200f).contains(&n)
        || (0x2028..=0x202f).contains(&n)
        || (0x205f..=0x2064).contains(&n)
        || (0x2066..=0x206f).contains(&n)
        || n == 0x3000
        || (0xe000..=0xf8ff).contains(&n)
        || n == 0xfeff
        || (0xfff9..=0xfffb).contains(&n)
        || (0xf0000..=0x10ffff).contains(&n)
        || (0xe0001..=0xe007f).contains(&n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_follow_python_repr() {
        let cases = [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (1e-7, "1e-07"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e16, "1e+16"),
            (1234567890123456.0, "1234567890123456.0"),
            (1.5e300, "1.5e+300"),
            (123456789.125, "123456789.125"),
            (0.1 + 0.2, "0.30000000000000004"),
            (-0.0, "-0.0"),
            (100.0, "100.0"),
            (5e-324, "5e-324"),
            (1.5e-323, "1.5e-323"),
            (1e23, "1e+23"),
            (9007199254740993.0, "9007199254740992.0"),
            // Exact halfway cases: Python rounds the last digit half to even.
            (216703222315114.625, "216703222315114.62"),
            (1369693243494399.25, "1369693243494399.2"),
            (16209100704035.8125, "16209100704035.812"),
            (273531090333752.375, "273531090333752.38"),
            (986583890857899.75, "986583890857899.8"),
            (1511264466447763.75, "1511264466447763.8"),
            (854738410855862.75, "854738410855862.8"),
        ];
        for (f, want) in cases {
            assert_eq!(float_repr(f), want, "{f:e}");
        }
    }

    #[test]
    fn containers_use_python_spelling() {
        let v = Value::from_serialize(serde_json::json!({
            "a": [1, 2.0, true, null, "it's"],
            "b": {"x": "say \"hi\"\n", "y": "both ' and \""}
        }));
        assert_eq!(
            repr(&v),
            r#"{'a': [1, 2.0, True, None, "it's"], 'b': {'x': 'say "hi"\n', 'y': 'both \' and "'}}"#
        );
        assert_eq!(py_str(&Value::from("plain")), "plain");
        assert_eq!(py_str(&Value::from(false)), "False");
        assert_eq!(
            repr(&Value::from("tab\there\u{7f}é😀")),
            "'tab\\there\\x7fé😀'"
        );
    }
}
