//! Accuracy: the facts the reply states agree with what this episode actually observed. Every number in
//! the reply (price, stock, discount, days, threshold) must be found in this turn's tool results, the
//! viewer's words or the system prompt (the prompt pipeline injects product info and room state there).
//! A number found nowhere is invented. The score is the share of the reply's numbers that are grounded.
//!
//! A reply that states no number where the task's facts have numbers (a price, a stock count asked for)
//! is left unscored: it has said nothing to be right or wrong about, and effectiveness already scores
//! the missing facts. Scoring it 1 paid a policy for dropping the facts: GRPO learned to answer product
//! questions with a clarifying question (docs/grpo.md, "The reproduce chain's RL").

use super::episode::Episode;
use super::{Dimension, FailureKind};

/// `Err(reason)` when the reply states no number although the task's facts have some.
pub fn score(ep: &Episode) -> Result<Dimension, String> {
    let Some(reply) = &ep.reply else {
        return Ok(match ep.expected {
            Some(e) if e.silent => {
                Dimension::new(1.0, "stayed silent as required: nothing to be wrong about")
            }
            _ => Dimension::new(0.0, "no final reply to check")
                .with_shortfall(FailureKind::NoReply, ""),
        });
    };
    let claimed = numbers(reply);
    if claimed.is_empty() {
        let asked = ep
            .expected
            .iter()
            .flat_map(|e| &e.facts)
            .any(|f| !numbers(f).is_empty());
        return if asked {
            Err("unscored: the reply states no number where the task's facts have some (effectiveness scores the omission)".into())
        } else {
            Ok(Dimension::new(1.0, "reply states no numbers"))
        };
    }
    let mut known: Vec<String> = Vec::new();
    for source in ep.results().chain([ep.user.as_str(), ep.system.as_str()]) {
        known.extend(numbers(source));
    }
    let invented: Vec<&String> = claimed.iter().filter(|n| !known.contains(n)).collect();
    let grounded = claimed.len() - invented.len();
    let value = grounded as f64 / claimed.len() as f64;
    Ok(if invented.is_empty() {
        Dimension::new(
            value,
            format!(
                "all {} numbers grounded in tool results, the viewer's words or the prompt",
                claimed.len()
            ),
        )
    } else {
        let list: Vec<&str> = invented.iter().map(|s| s.as_str()).collect();
        let mut d = Dimension::new(
            value,
            format!(
                "invented numbers {} ({grounded}/{} grounded)",
                list.join(", "),
                claimed.len()
            ),
        );
        for n in list {
            d = d.with_shortfall(FailureKind::UngroundedNumber, n);
        }
        d
    })
}

/// Distinct numbers written in `text`, normalised so that "1,299", "1299" and "1299.00" are one number.
/// Digits glued to letters (ids such as `p001`) are numbers too: an invented product id is an invented fact.
pub fn numbers(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let mut cur = String::new();
        while i < bytes.len() {
            let b = bytes[i];
            if b.is_ascii_digit() {
                cur.push(b as char);
            } else if (b == b'.' || b == b',') && bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
                // "1,299" groups thousands; "3.5" has a fraction. A comma then 1–2 digits is a list ("3,5").
                if b == b'.' {
                    cur.push('.');
                } else {
                    let run = bytes[i + 1..]
                        .iter()
                        .take_while(|c| c.is_ascii_digit())
                        .count();
                    if run != 3 {
                        break;
                    }
                }
            } else {
                break;
            }
            i += 1;
        }
        let n = normalise(&cur);
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// Drop a fraction of zeros ("179.00" → "179", "3.50" → "3.5"); digits before the point stay as written,
/// so an id's leading zeros ("001") still tell ids apart.
fn normalise(n: &str) -> String {
    match n.split_once('.') {
        Some((int, frac)) => match frac.trim_end_matches('0') {
            "" => int.to_string(),
            frac => format!("{int}.{frac}"),
        },
        None => n.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_normalise_thousands_and_fractions() {
        assert_eq!(
            numbers("到手价¥1,299.00，还有23件，3.5折"),
            vec!["1299", "23", "3.5"]
        );
        assert_eq!(
            numbers("{\"price\":179.0,\"stock\":[3,5]}"),
            vec!["179", "3", "5"]
        );
        assert_eq!(numbers("p001 and 2"), vec!["001", "2"]);
        assert!(numbers("没有数字").is_empty());
    }
}
