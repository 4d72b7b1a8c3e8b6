//! `punctuation:no_comma`.

/// No ASCII comma anywhere (`not re.search(r"\,", value)`).
pub fn no_comma(response: &str) -> bool {
    !response.contains(',')
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_the_ascii_comma_counts() {
        assert!(super::no_comma("one、two，three"));
        assert!(!super::no_comma("one, two"));
    }
}
