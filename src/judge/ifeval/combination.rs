//! `combination:*` — two responses and repeat-the-prompt.

use super::text::py_strip;

/// `combination:two_responses`: split on `******`; empty pieces are allowed only at the ends;
/// exactly two non-empty pieces that differ after stripping.
pub fn two_responses(response: &str) -> bool {
    let parts: Vec<&str> = response.split("******").collect();
    let mut valid = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        if py_strip(p).is_empty() {
            if i != 0 && i != parts.len() - 1 {
                return false;
            }
        } else {
            valid.push(*p);
        }
    }
    valid.len() == 2 && py_strip(valid[0]) != py_strip(valid[1])
}

/// `combination:repeat_prompt`: the stripped, lower-cased response starts with the stripped,
/// lower-cased prompt to repeat.
pub fn repeats_prompt(prompt_to_repeat: &str, response: &str) -> bool {
    py_strip(response)
        .to_lowercase()
        .starts_with(&py_strip(prompt_to_repeat).to_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_different_responses() {
        assert!(two_responses("a\n******\nb"));
        assert!(two_responses("******a******b******"));
        assert!(!two_responses("a******a"));
        assert!(!two_responses("a******  ******b"));
        assert!(!two_responses("a******b******c"));
    }

    #[test]
    fn repeat_is_a_case_insensitive_prefix() {
        assert!(repeats_prompt(
            " Write a poem. ",
            "write a POEM. Roses are red"
        ));
        assert!(!repeats_prompt("Write a poem.", "Sure! Write a poem."));
    }
}
