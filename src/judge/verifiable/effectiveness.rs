//! Effectiveness: the reply does what the viewer needed, within the *active* harness's limits.
//!
//! Content checks (each in [0, 1], averaged): the expected facts are stated (share stated); a clarifying
//! question is asked when the request was ambiguous; the purchase link is handed over when the task
//! moves toward purchase (it expects `create_purchase_link`). Then the limits: a compliance term from
//! `expected.forbidden` zeroes the score (the reply could not go on air), and a reply longer than the
//! active `max_reply_chars` keeps half its credit (the overlay cuts it, the viewer still got something).

use super::episode::Episode;
use super::{Dimension, FailureKind};
use crate::sim::success::states;

/// The share of credit an over-long reply keeps.
pub const OVER_LENGTH_FACTOR: f64 = 0.5;

pub fn score(ep: &Episode) -> Dimension {
    let silent = ep.expected.is_some_and(|e| e.silent);
    let Some(reply) = &ep.reply else {
        return if silent {
            Dimension::new(1.0, "stayed silent as required")
        } else {
            Dimension::new(0.0, "no final reply").with_shortfall(FailureKind::NoReply, "")
        };
    };
    if silent {
        return Dimension::new(0.0, "replied where the harness requires silence")
            .with_shortfall(FailureKind::RepliedWhenSilent, "");
    }

    let mut parts: Vec<f64> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let mut shortfalls: Vec<(FailureKind, String)> = Vec::new();
    let chars = reply.chars().count() as u64;
    if let Some(e) = ep.expected {
        if !e.facts.is_empty() {
            let missing: Vec<&str> = e
                .facts
                .iter()
                .filter(|f| !states(reply, f))
                .map(String::as_str)
                .collect();
            let stated = e.facts.len() - missing.len();
            parts.push(stated as f64 / e.facts.len() as f64);
            if missing.is_empty() {
                notes.push(format!("states all {} expected facts", e.facts.len()));
            } else {
                shortfalls.extend(
                    missing
                        .iter()
                        .map(|f| (FailureKind::MissingFact, f.to_string())),
                );
                // A reply that used (nearly) all of its room and still left facts out was cut by the limit.
                if let Some((max, _)) = ep.max_reply_chars {
                    if chars * 10 >= max * 9 {
                        shortfalls.push((FailureKind::ReplyAtLimit, "max_reply_chars".into()));
                    }
                }
                notes.push(format!(
                    "misses facts {} ({stated}/{})",
                    missing.join(", "),
                    e.facts.len()
                ));
            }
        }
        if e.clarify {
            let asks = reply.contains('?') || reply.contains('？');
            parts.push(if asks { 1.0 } else { 0.0 });
            if !asks {
                shortfalls.push((FailureKind::NoClarifyingQuestion, String::new()));
            }
            notes.push(
                if asks {
                    "asks a clarifying question"
                } else {
                    "does not ask the clarifying question"
                }
                .into(),
            );
        }
        if e.tool_calls
            .iter()
            .any(|c| c.tool == "create_purchase_link")
        {
            let links: Vec<&str> = ep
                .calls
                .iter()
                .filter(|c| c.canonical.as_deref() == Some("create_purchase_link") && !c.failed())
                .filter_map(|c| c.result.as_deref())
                .flat_map(urls)
                .collect();
            let hands_over = links.iter().any(|l| reply.contains(l));
            parts.push(if hands_over { 1.0 } else { 0.0 });
            if !hands_over {
                shortfalls.push((FailureKind::NoPurchaseLink, "create_purchase_link".into()));
            }
            notes.push(
                if hands_over {
                    "hands over the purchase link"
                } else {
                    "does not hand over a purchase link"
                }
                .into(),
            );
        }
    }
    let mut value = if parts.is_empty() {
        notes.push("no content requirements".into());
        1.0
    } else {
        parts.iter().sum::<f64>() / parts.len() as f64
    };

    if let Some(e) = ep.expected {
        let lower = reply.to_lowercase();
        let said: Vec<&str> = e
            .forbidden
            .iter()
            .filter(|t| !t.is_empty() && lower.contains(&t.to_lowercase()))
            .map(String::as_str)
            .collect();
        if !said.is_empty() {
            value = 0.0;
            shortfalls.extend(
                said.iter()
                    .map(|t| (FailureKind::ForbiddenTerm, t.to_string())),
            );
            notes.push(format!("says forbidden {}", said.join(", ")));
        }
    }
    match ep.max_reply_chars {
        Some((max, source)) if chars > max => {
            value *= OVER_LENGTH_FACTOR;
            shortfalls.push((FailureKind::OverLongReply, "max_reply_chars".into()));
            notes.push(format!(
                "{chars} chars over the limit {max} ({})",
                source.as_str()
            ));
        }
        Some((max, _)) => notes.push(format!("{chars}/{max} chars")),
        None => notes.push(format!("{chars} chars, no length limit found")),
    }
    let mut d = Dimension::new(value, notes.join("; "));
    d.shortfalls = shortfalls;
    d
}

/// `http(s)://…` runs in a tool result, up to a quote, space or bracket.
fn urls(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("http") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| {
                c == '"' || c == '\'' || c.is_whitespace() || c == '<' || c == '>' || c == ')'
            })
            .unwrap_or(tail.len());
        let url = &tail[..end];
        if url.starts_with("http://") || url.starts_with("https://") {
            out.push(url);
        }
        rest = &tail[end.max(4)..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_cut_at_json_quotes() {
        let t = r#"{"link":"https://live.example.com/buy/p001?sku=s1&qty=1","x":"httpd"}"#;
        assert_eq!(
            urls(t),
            vec!["https://live.example.com/buy/p001?sku=s1&qty=1"]
        );
    }
}
