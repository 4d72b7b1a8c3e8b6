//! Data-driven ordering of named items (tools, skills): names listed in an `order` array come
//! first, in that order; everything else follows in its natural (file-name) order. This is how the
//! augmentation stage reorders catalogs without renaming files.

use super::problem::Problem;

pub fn apply_order<T>(items: Vec<T>, order: &[String], name: impl Fn(&T) -> &str) -> Vec<T> {
    let mut rest: Vec<Option<T>> = items.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(rest.len());
    for wanted in order {
        if let Some(slot) = rest
            .iter_mut()
            .find(|s| s.as_ref().is_some_and(|t| name(t) == wanted))
        {
            out.extend(slot.take());
        }
    }
    out.extend(rest.into_iter().flatten());
    out
}

/// Every name in `order` must exist and appear once.
pub fn validate_order(
    file: &str,
    field: &str,
    order: &[String],
    known: &[&str],
    problems: &mut Vec<Problem>,
) {
    let mut seen = std::collections::BTreeSet::new();
    for (i, name) in order.iter().enumerate() {
        if !known.contains(&name.as_str()) {
            problems.push(Problem::field(
                file,
                format!("{field}[{i}]"),
                format!("{name:?} does not exist"),
            ));
        } else if !seen.insert(name) {
            problems.push(Problem::field(
                file,
                format!("{field}[{i}]"),
                format!("{name:?} is listed twice"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_names_first_then_natural_order() {
        let items = vec!["a", "b", "c", "d"];
        let order = vec!["c".to_string(), "a".to_string(), "zz".to_string()];
        assert_eq!(apply_order(items, &order, |s| s), ["c", "a", "b", "d"]);
    }
}
