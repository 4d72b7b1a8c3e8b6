//! "Writes back the same JSON", as a typed record can promise it: the same keys and values, except
//! that a field the reader defaults (absent, `null`, `[]`, `{}`) may be dropped or added, and a
//! number may change its spelling (`1` in an `f64` field comes back as `1.0`).

use serde_json::Value;

/// Where `written` differs from `read` beyond those allowances, as a JSON path; `None` if nowhere.
pub fn difference(read: &Value, written: &Value) -> Option<String> {
    diff(read, written, "$")
}

fn diff(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            let keys = a.keys().chain(b.keys().filter(|k| !a.contains_key(*k)));
            for key in keys {
                let at = format!("{path}.{key}");
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => {
                        if let Some(found) = diff(x, y, &at) {
                            return Some(found);
                        }
                    }
                    (Some(v), None) | (None, Some(v)) if is_default(v) => {}
                    _ => return Some(at),
                }
            }
            None
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| diff(x, y, &format!("{path}[{i}]"))),
        (Value::Number(x), Value::Number(y)) if x.as_f64() == y.as_f64() => None,
        _ if a == b || (is_default(a) && is_default(b)) => None,
        _ => Some(path.to_string()),
    }
}

fn is_default(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}
