//! `language:response_language`.

use super::langdetect::detect;

/// The 30 ISO 639-1 codes of `instructions_util.LANGUAGE_CODES`; the official
/// `build_description` fails on any other.
pub const LANGUAGE_CODES: [&str; 30] = [
    "en", "es", "pt", "ar", "hi", "fr", "ru", "de", "ja", "it", "bn", "uk", "th", "ur", "ta", "te",
    "bg", "ko", "pl", "he", "fa", "vi", "ne", "sw", "kn", "mr", "gu", "pa", "ml", "fi",
];

/// `langdetect.detect(response) == language`; undetectable text counts as followed.
pub fn response_language(language: &str, response: &str) -> bool {
    detect(response).is_none_or(|lang| lang == language)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_of_response() {
        assert!(response_language(
            "de",
            "Dies ist ein einfacher deutscher Satz über das Wetter."
        ));
        assert!(!response_language(
            "en",
            "Dies ist ein einfacher deutscher Satz über das Wetter."
        ));
        assert!(response_language("ko", "!!!"));
    }
}
