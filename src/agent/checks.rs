//! The built-in declarative checks of a harness's hooks (`harness::hooks::BuiltinCheck`): reply length,
//! banned terms, grounded numbers and tool-call arguments. Pure functions, so hooks, the judge and
//! tests share one definition of each rule.

use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use crate::harness::hooks::NumberKind;
use crate::record::json_kind;

/// Characters (Unicode scalar values) in a reply, the unit of `max_reply_chars`.
pub fn reply_chars(reply: &str) -> u64 {
    reply.chars().count() as u64
}

/// Cut `reply` to at most `max` characters, at the last sentence end that fits when there is one.
pub fn truncate_reply(reply: &str, max: u64) -> String {
    let chars: Vec<char> = reply.chars().collect();
    if chars.len() as u64 <= max {
        return reply.to_string();
    }
    let head = &chars[..max as usize];
    let end = head.iter().rposition(|c| "。！？!?.～~；;".contains(*c));
    match end {
        Some(i) if i > 0 => head[..=i].iter().collect(),
        _ => head.iter().collect(),
    }
}

/// A compiled banned-terms list.
#[derive(Debug, Clone)]
pub struct BannedTerms {
    terms: Vec<String>,
    re: Option<Regex>,
}

impl BannedTerms {
    pub fn new(terms: &[String], case_sensitive: bool) -> BannedTerms {
        let alts: Vec<String> = terms
            .iter()
            .filter(|t| !t.is_empty())
            .map(|t| regex::escape(t))
            .collect();
        let re = (!alts.is_empty())
            .then(|| {
                Regex::new(&format!(
                    "{}(?:{})",
                    if case_sensitive { "" } else { "(?i)" },
                    alts.join("|")
                ))
                .ok()
            })
            .flatten();
        BannedTerms {
            terms: terms.to_vec(),
            re,
        }
    }

    /// The banned terms found in `text`, each once, in list order.
    pub fn found(&self, text: &str) -> Vec<String> {
        let Some(re) = &self.re else {
            return Vec::new();
        };
        if !re.is_match(text) {
            return Vec::new();
        }
        let hits: Vec<String> = re
            .find_iter(text)
            .map(|m| m.as_str().to_lowercase())
            .collect();
        self.terms
            .iter()
            .filter(|t| hits.contains(&t.to_lowercase()))
            .cloned()
            .collect()
    }

    /// `text` with every banned term replaced by as many `*` as it has characters.
    pub fn mask(&self, text: &str) -> String {
        match &self.re {
            Some(re) => re
                .replace_all(text, |c: &regex::Captures| "*".repeat(c[0].chars().count()))
                .into_owned(),
            None => text.to_string(),
        }
    }
}

fn kind_patterns() -> &'static [(NumberKind, Regex)] {
    static PATTERNS: OnceLock<Vec<(NumberKind, Regex)>> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        let n = r"(\d+(?:[.,]\d+)*)";
        let compile = |p: String| Regex::new(&p).expect("number patterns are valid");
        vec![
            (
                NumberKind::Price,
                compile(format!(r"(?:[¥￥$]|RMB|CNY)\s*{n}")),
            ),
            (
                NumberKind::Price,
                compile(format!(r"(?i){n}\s*(?:元|块|RMB|CNY|yuan)")),
            ),
            (
                NumberKind::Stock,
                compile(format!(r"(?:库存|剩|还有|仅剩)\s*{n}")),
            ),
            (
                NumberKind::Stock,
                compile(format!(
                    r"(?i){n}\s*(?:件|units?\b|left\b|in stock\b|pcs\b)"
                )),
            ),
            (NumberKind::Discount, compile(format!(r"{n}\s*折"))),
            (NumberKind::Discount, compile(format!(r"(?i){n}\s*%\s*off"))),
            (NumberKind::Discount, compile(format!(r"(?:满|减)\s*{n}"))),
        ]
    })
}

/// Numbers of the given kinds in `text`, normalised ("1,299.00" → "1299").
pub fn numbers_of_kinds(text: &str, kinds: &[NumberKind]) -> Vec<String> {
    let mut out = Vec::new();
    for (kind, re) in kind_patterns() {
        if !kinds.contains(kind) {
            continue;
        }
        for c in re.captures_iter(text) {
            let v = normalize_number(&c[1]);
            if !out.contains(&v) {
                out.push(v);
            }
        }
    }
    out
}

/// Every number written in `text`, normalised.
pub fn all_numbers(text: &str) -> Vec<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(r"\d+(?:[.,]\d+)*").expect("valid"));
    re.find_iter(text)
        .map(|m| normalize_number(m.as_str()))
        .collect()
}

fn normalize_number(s: &str) -> String {
    let s = s.replace(',', "");
    match s.split_once('.') {
        Some((int, frac)) if frac.chars().all(|c| c == '0') => int.to_string(),
        _ => s,
    }
}

/// Numbers of `kinds` in `reply` that appear in none of `sources` (this turn's tool results).
pub fn ungrounded_numbers(reply: &str, kinds: &[NumberKind], sources: &[&str]) -> Vec<String> {
    let known: Vec<String> = sources.iter().flat_map(|s| all_numbers(s)).collect();
    numbers_of_kinds(reply, kinds)
        .into_iter()
        .filter(|n| !known.contains(n))
        .collect()
}

/// Problems of `args` against a tool's JSON Schema (required keys, property types, enums, unknown keys
/// when `additionalProperties` is false). Covers the subset tool schemas use; empty = valid.
pub fn schema_errors(schema: &Value, args: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    check_value(schema, args, "", &mut errors);
    errors
}

fn check_value(schema: &Value, v: &Value, path: &str, errors: &mut Vec<String>) {
    let at = if path.is_empty() {
        "arguments".to_string()
    } else {
        path.to_string()
    };
    if let Some(t) = schema.get("type") {
        let types: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !types.is_empty() && !types.iter().any(|t| type_matches(t, v)) {
            errors.push(format!(
                "{at} must be {}, got {}",
                types.join(" or "),
                json_kind(v)
            ));
            return;
        }
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        if !options.contains(v) {
            let list: Vec<String> = options.iter().map(Value::to_string).collect();
            errors.push(format!("{at} must be one of {}", list.join(", ")));
        }
    }
    match v {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            for req in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !map.contains_key(req) {
                    errors.push(format!("missing required argument {req}"));
                }
            }
            for (k, val) in map {
                let sub = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match props.and_then(|p| p.get(k)) {
                    Some(s) => check_value(s, val, &sub, errors),
                    None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                        errors.push(format!("unknown argument {sub}"))
                    }
                    None => {}
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check_value(item_schema, item, &format!("{at}[{i}]"), errors);
                }
            }
        }
        _ => {}
    }
}

fn type_matches(t: &str, v: &Value) -> bool {
    match t {
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn length_and_truncation() {
        assert_eq!(reply_chars("你好ab"), 4);
        assert_eq!(truncate_reply("第一句。第二句很长很长", 6), "第一句。");
        assert_eq!(truncate_reply("abcdef", 3), "abc");
        assert_eq!(truncate_reply("short", 10), "short");
    }

    #[test]
    fn banned_terms_find_and_mask() {
        let b = BannedTerms::new(&["最".into(), "Number One".into()], false);
        assert_eq!(b.found("这是最好的 number one"), vec!["最", "Number One"]);
        assert_eq!(b.mask("最好 NUMBER ONE"), "*好 **********");
        assert!(b.found("clean").is_empty());
        assert!(BannedTerms::new(&["X".into()], true).found("x").is_empty());
    }

    #[test]
    fn grounding_by_kind() {
        let kinds = [NumberKind::Price, NumberKind::Stock, NumberKind::Discount];
        let reply = "到手价¥179，满200减20，还有23件，2天送达";
        assert_eq!(
            numbers_of_kinds(reply, &kinds),
            vec!["179", "23", "200", "20"]
        );
        let src = r#"{"final_price":179,"coupon":{"threshold":200,"amount":20}}"#;
        assert_eq!(ungrounded_numbers(reply, &kinds, &[src]), vec!["23"]);
        assert_eq!(
            numbers_of_kinds("only 5 left, 10% off, $12.50", &kinds),
            vec!["12.50", "5", "10"]
        );
    }

    #[test]
    fn schema_checks_types_required_enums() {
        let schema = json!({"type": "object", "properties": {
            "product_id": {"type": "string"}, "quantity": {"type": "integer"},
            "topic": {"type": "string", "enum": ["return", "refund"]},
            "ids": {"type": "array", "items": {"type": "string"}}},
            "required": ["product_id"], "additionalProperties": false});
        assert!(schema_errors(&schema, &json!({"product_id": "p1", "quantity": 2})).is_empty());
        let errs = schema_errors(
            &schema,
            &json!({"quantity": 1.5, "topic": "x", "ids": [1], "zzz": 1}),
        );
        assert_eq!(errs.len(), 5, "{errs:?}");
        assert!(schema_errors(&schema, &json!([1]))
            .iter()
            .any(|e| e.contains("must be object")));
    }
}
