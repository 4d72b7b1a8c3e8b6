//! "Writes back the same JSON", as a typed record can promise it: everything the input said is in
//! the output with the same value. A field the reader leaves empty (`null`, `[]`, `{}`) may be left
//! out, a field the input left out may be written with its default (`"type": "function"`), and a
//! number may change its spelling (`1` in an `f64` field comes back as `1.0`).

use serde_json::Value;

/// The JSON path of the first thing in `read` that `written` lost or changed; `None` if nothing.
pub fn lost(read: &Value, written: &Value) -> Option<String> {
    lost_at(read, written, "$")
}

fn lost_at(read: &Value, written: &Value, path: &str) -> Option<String> {
    match (read, written) {
        (Value::Object(read), Value::Object(written)) => read.iter().find_map(|(key, value)| {
            let at = format!("{path}.{key}");
            match written.get(key) {
                Some(w) => lost_at(value, w, &at),
                None if is_empty(value) => None,
                None => Some(at),
            }
        }),
        (Value::Array(read), Value::Array(written)) if read.len() == written.len() => read
            .iter()
            .zip(written)
            .enumerate()
            .find_map(|(i, (r, w))| lost_at(r, w, &format!("{path}[{i}]"))),
        (Value::Number(r), Value::Number(w)) if r.as_f64() == w.as_f64() => None,
        _ if read == written || (is_empty(read) && is_empty(written)) => None,
        _ => Some(path.to_string()),
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}
