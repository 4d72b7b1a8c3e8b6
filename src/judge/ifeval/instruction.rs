//! The 25 instruction ids: parsing `(id, kwargs)` into a checker and running it.
//!
//! Parsing mirrors the official `build_description(**kwargs)`: null kwargs are dropped (the
//! Hugging Face copy of the data carries every key, unused ones as null), an unknown key is an
//! error (Python raises `TypeError`), and where the official code would fall back to a *random*
//! value (missing or negative counts, a letter longer than one character, `nth_paragraph` out of
//! range) this port refuses the input instead, because a random instruction cannot be scored
//! reproducibly.

use super::text::py_strip;
use super::{
    change_case, combination, detectable_content, detectable_format, keywords, language, length,
    punctuation, startend,
};
use anyhow::{bail, Context, Result};
use regex::Regex;
use serde_json::{Map, Value};

/// The comparison of the counting instructions (`_COMPARISON_RELATION`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Relation {
    LessThan,
    AtLeast,
}

impl Relation {
    fn parse(s: &str) -> Result<Relation> {
        match s {
            "less than" => Ok(Relation::LessThan),
            "at least" => Ok(Relation::AtLeast),
            other => bail!("relation must be \"less than\" or \"at least\", got {other:?}"),
        }
    }

    /// `count < threshold` or `count >= threshold`.
    pub fn holds(self, count: usize, threshold: i64) -> bool {
        let count = count as i64;
        match self {
            Relation::LessThan => count < threshold,
            Relation::AtLeast => count >= threshold,
        }
    }
}

/// One instruction with its arguments, ready to check responses.
#[derive(Debug)]
pub enum Instruction {
    KeywordsExistence(Vec<Regex>),
    KeywordsFrequency {
        keyword: Regex,
        relation: Relation,
        frequency: i64,
    },
    ForbiddenWords(Vec<Regex>),
    LetterFrequency {
        letter: String,
        relation: Relation,
        frequency: i64,
    },
    ResponseLanguage(String),
    NumberSentences {
        relation: Relation,
        num: i64,
    },
    NumberParagraphs(i64),
    NumberWords {
        relation: Relation,
        num: i64,
    },
    NthParagraphFirstWord {
        num_paragraphs: i64,
        nth: i64,
        first_word: String,
    },
    NumberPlaceholders(i64),
    Postscript(Regex),
    NumberBulletLists(i64),
    ConstrainedResponse,
    NumberHighlightedSections(i64),
    MultipleSections {
        splitter: Regex,
        num: i64,
    },
    JsonFormat,
    Title,
    TwoResponses,
    RepeatPrompt(String),
    EndChecker(String),
    Quotation,
    CapitalWordFrequency {
        relation: Relation,
        frequency: i64,
    },
    EnglishCapital,
    EnglishLowercase,
    NoComma,
}

/// Every supported id, in the order of the official registry.
pub const INSTRUCTION_IDS: [&str; 25] = [
    "keywords:existence",
    "keywords:frequency",
    "keywords:forbidden_words",
    "keywords:letter_frequency",
    "language:response_language",
    "length_constraints:number_sentences",
    "length_constraints:number_paragraphs",
    "length_constraints:number_words",
    "length_constraints:nth_paragraph_first_word",
    "detectable_content:number_placeholders",
    "detectable_content:postscript",
    "detectable_format:number_bullet_lists",
    "detectable_format:constrained_response",
    "detectable_format:number_highlighted_sections",
    "detectable_format:multiple_sections",
    "detectable_format:json_format",
    "detectable_format:title",
    "combination:two_responses",
    "combination:repeat_prompt",
    "startend:end_checker",
    "startend:quotation",
    "change_case:capital_word_frequency",
    "change_case:english_capital",
    "change_case:english_lowercase",
    "punctuation:no_comma",
];

/// The kwargs of one instruction, with null values dropped and every key accounted for.
struct Kwargs<'a> {
    map: Map<String, Value>,
    allowed: &'a [&'a str],
}

impl<'a> Kwargs<'a> {
    fn new(kwargs: &Value, allowed: &'a [&'a str]) -> Result<Kwargs<'a>> {
        let obj = match kwargs {
            Value::Object(o) => o,
            Value::Null => {
                return Ok(Kwargs {
                    map: Map::new(),
                    allowed,
                })
            }
            other => bail!("kwargs must be a JSON object, got {other}"),
        };
        let map: Map<String, Value> = obj
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for key in map.keys() {
            if !allowed.contains(&key.as_str()) {
                bail!(
                    "unexpected kwarg {key:?} (this instruction takes {})",
                    describe(allowed)
                );
            }
        }
        Ok(Kwargs { map, allowed })
    }

    fn get(&self, key: &str) -> Result<&Value> {
        debug_assert!(self.allowed.contains(&key));
        self.map
            .get(key)
            .with_context(|| format!("missing kwarg {key:?}"))
    }

    fn string(&self, key: &str) -> Result<&str> {
        self.get(key)?
            .as_str()
            .with_context(|| format!("kwarg {key:?} must be a string"))
    }

    /// An integer (an integral float such as `3.0` is accepted).
    fn integer(&self, key: &str) -> Result<i64> {
        let v = self.get(key)?;
        let n = v.as_i64().or_else(|| {
            v.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
                .map(|f| f as i64)
        });
        n.with_context(|| format!("kwarg {key:?} must be an integer, got {v}"))
    }

    /// A count: an integer that is not negative.
    fn count(&self, key: &str) -> Result<i64> {
        let n = self.integer(key)?;
        if n < 0 {
            bail!("kwarg {key:?} must not be negative, got {n}");
        }
        Ok(n)
    }

    fn relation(&self, key: &str) -> Result<Relation> {
        Relation::parse(self.string(key)?).with_context(|| format!("kwarg {key:?}"))
    }

    fn strings(&self, key: &str) -> Result<Vec<&str>> {
        let arr = self
            .get(key)?
            .as_array()
            .with_context(|| format!("kwarg {key:?} must be a list of strings"))?;
        if arr.is_empty() {
            bail!("kwarg {key:?} must not be empty");
        }
        arr.iter()
            .map(|v| {
                v.as_str()
                    .with_context(|| format!("kwarg {key:?} must be a list of strings"))
            })
            .collect()
    }
}

fn describe(keys: &[&str]) -> String {
    if keys.is_empty() {
        "no kwargs".to_string()
    } else {
        keys.join(", ")
    }
}

/// A case-insensitive search pattern, as `re.search(p, value, flags=re.IGNORECASE)`.
fn search_pattern(key: &str, p: &str) -> Result<Regex> {
    Regex::new(&format!("(?i:{p})"))
        .with_context(|| format!("kwarg {key:?}: {p:?} is not a supported regular expression"))
}

impl Instruction {
    /// Builds the checker for `id` from its kwargs object.
    pub fn parse(id: &str, kwargs: &Value) -> Result<Instruction> {
        use Instruction::*;
        let k = |allowed: &'static [&'static str]| Kwargs::new(kwargs, allowed);
        Ok(match id {
            "keywords:existence" => {
                let k = k(&["keywords"])?;
                KeywordsExistence(
                    k.strings("keywords")?
                        .into_iter()
                        .map(|w| search_pattern("keywords", w))
                        .collect::<Result<_>>()?,
                )
            }
            "keywords:frequency" => {
                let k = k(&["keyword", "frequency", "relation"])?;
                let keyword = k.string("keyword")?.trim();
                if keyword.is_empty() {
                    bail!("kwarg \"keyword\" must not be empty");
                }
                KeywordsFrequency {
                    keyword: search_pattern("keyword", keyword)?,
                    relation: k.relation("relation")?,
                    frequency: k.count("frequency")?,
                }
            }
            "keywords:forbidden_words" => {
                let k = k(&["forbidden_words"])?;
                let words = k.strings("forbidden_words")?;
                ForbiddenWords(
                    words
                        .into_iter()
                        .map(|w| Regex::new(&format!("^(?i:{w})")).with_context(|| format!("kwarg \"forbidden_words\": {w:?} is not a supported regular expression")))
                        .collect::<Result<_>>()?,
                )
            }
            "keywords:letter_frequency" => {
                let k = k(&["letter", "let_frequency", "let_relation"])?;
                let letter = k.string("letter")?;
                if letter.chars().count() != 1 {
                    bail!("kwarg \"letter\" must be one character, got {letter:?}");
                }
                LetterFrequency {
                    letter: py_strip(letter).to_lowercase(),
                    relation: k.relation("let_relation")?,
                    frequency: k.count("let_frequency")?,
                }
            }
            "language:response_language" => {
                let k = k(&["language"])?;
                let lang = k.string("language")?;
                if !language::LANGUAGE_CODES.contains(&lang) {
                    bail!(
                        "kwarg \"language\": {lang:?} is not one of IFEval's codes ({})",
                        language::LANGUAGE_CODES.join(", ")
                    );
                }
                ResponseLanguage(lang.to_string())
            }
            "length_constraints:number_sentences" => {
                let k = k(&["num_sentences", "relation"])?;
                NumberSentences {
                    relation: k.relation("relation")?,
                    num: k.count("num_sentences")?,
                }
            }
            "length_constraints:number_paragraphs" => {
                NumberParagraphs(k(&["num_paragraphs"])?.count("num_paragraphs")?)
            }
            "length_constraints:number_words" => {
                let k = k(&["num_words", "relation"])?;
                NumberWords {
                    relation: k.relation("relation")?,
                    num: k.count("num_words")?,
                }
            }
            "length_constraints:nth_paragraph_first_word" => {
                let k = k(&["num_paragraphs", "nth_paragraph", "first_word"])?;
                let num_paragraphs = k.count("num_paragraphs")?;
                let nth = k.count("nth_paragraph")?;
                if nth == 0 || nth > num_paragraphs {
                    bail!("kwarg \"nth_paragraph\" must be between 1 and num_paragraphs ({num_paragraphs}), got {nth}");
                }
                NthParagraphFirstWord {
                    num_paragraphs,
                    nth,
                    first_word: k.string("first_word")?.to_lowercase(),
                }
            }
            "detectable_content:number_placeholders" => {
                NumberPlaceholders(k(&["num_placeholders"])?.count("num_placeholders")?)
            }
            "detectable_content:postscript" => {
                let k = k(&["postscript_marker"])?;
                let marker = k.string("postscript_marker")?.trim();
                Postscript(detectable_content::postscript_pattern(marker).with_context(|| format!("kwarg \"postscript_marker\": {marker:?} is not a supported regular expression"))?)
            }
            "detectable_format:number_bullet_lists" => {
                NumberBulletLists(k(&["num_bullets"])?.count("num_bullets")?)
            }
            "detectable_format:constrained_response" => {
                k(&[])?;
                ConstrainedResponse
            }
            "detectable_format:number_highlighted_sections" => {
                NumberHighlightedSections(k(&["num_highlights"])?.count("num_highlights")?)
            }
            "detectable_format:multiple_sections" => {
                let k = k(&["section_spliter", "num_sections"])?;
                let splitter = k.string("section_spliter")?.trim();
                MultipleSections {
                    splitter: detectable_format::section_pattern(splitter).with_context(|| format!("kwarg \"section_spliter\": {splitter:?} is not a supported regular expression"))?,
                    num: k.count("num_sections")?,
                }
            }
            "detectable_format:json_format" => {
                k(&[])?;
                JsonFormat
            }
            "detectable_format:title" => {
                k(&[])?;
                Title
            }
            "combination:two_responses" => {
                k(&[])?;
                TwoResponses
            }
            "combination:repeat_prompt" => {
                let k = k(&["prompt_to_repeat"])?;
                let p = k.string("prompt_to_repeat")?;
                if p.is_empty() {
                    bail!("kwarg \"prompt_to_repeat\" must not be empty");
                }
                RepeatPrompt(p.to_string())
            }
            "startend:end_checker" => {
                EndChecker(k(&["end_phrase"])?.string("end_phrase")?.trim().to_string())
            }
            "startend:quotation" => {
                k(&[])?;
                Quotation
            }
            "change_case:capital_word_frequency" => {
                let k = k(&["capital_frequency", "capital_relation"])?;
                // The official code only replaces a missing threshold here, so a negative one is kept.
                CapitalWordFrequency {
                    relation: k.relation("capital_relation")?,
                    frequency: k.integer("capital_frequency")?,
                }
            }
            "change_case:english_capital" => {
                k(&[])?;
                EnglishCapital
            }
            "change_case:english_lowercase" => {
                k(&[])?;
                EnglishLowercase
            }
            "punctuation:no_comma" => {
                k(&[])?;
                NoComma
            }
            other => bail!(
                "unknown instruction id {other:?} (IFEval has: {})",
                INSTRUCTION_IDS.join(", ")
            ),
        })
    }

    /// `check_following(response)`: does the response follow the instruction?
    pub fn check(&self, response: &str) -> bool {
        use Instruction::*;
        match self {
            KeywordsExistence(k) => keywords::all_present(k, response),
            KeywordsFrequency {
                keyword,
                relation,
                frequency,
            } => keywords::frequency(keyword, *relation, *frequency, response),
            ForbiddenWords(w) => keywords::none_forbidden(w, response),
            LetterFrequency {
                letter,
                relation,
                frequency,
            } => keywords::letter_frequency(letter, *relation, *frequency, response),
            ResponseLanguage(lang) => language::response_language(lang, response),
            NumberSentences { relation, num } => length::sentences(*relation, *num, response),
            NumberParagraphs(n) => length::paragraphs(*n, response),
            NumberWords { relation, num } => length::words(*relation, *num, response),
            NthParagraphFirstWord {
                num_paragraphs,
                nth,
                first_word,
            } => length::nth_paragraph_first_word(*num_paragraphs, *nth, first_word, response),
            NumberPlaceholders(n) => detectable_content::placeholders(*n, response),
            Postscript(p) => detectable_content::has_postscript(p, response),
            NumberBulletLists(n) => detectable_format::bullet_lists(*n, response),
            ConstrainedResponse => detectable_format::constrained_response(response),
            NumberHighlightedSections(n) => detectable_format::highlighted_sections(*n, response),
            MultipleSections { splitter, num } => {
                detectable_format::sections(splitter, *num, response)
            }
            JsonFormat => detectable_format::json_format(response),
            Title => detectable_format::title(response),
            TwoResponses => combination::two_responses(response),
            RepeatPrompt(p) => combination::repeats_prompt(p, response),
            EndChecker(p) => startend::ends_with(p, response),
            Quotation => startend::quoted(response),
            CapitalWordFrequency {
                relation,
                frequency,
            } => change_case::capital_words(*relation, *frequency, response),
            EnglishCapital => change_case::english_capital(response),
            EnglishLowercase => change_case::english_lowercase(response),
            NoComma => punctuation::no_comma(response),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_id_parses_with_its_kwargs() {
        let kwargs = [
            json!({"keywords": ["a"]}),
            json!({"keyword": "a", "frequency": 2, "relation": "at least"}),
            json!({"forbidden_words": ["a"]}),
            json!({"letter": "a", "let_frequency": 2, "let_relation": "less than"}),
            json!({"language": "de"}),
            json!({"num_sentences": 2, "relation": "at least"}),
            json!({"num_paragraphs": 2}),
            json!({"num_words": 2.0, "relation": "less than"}),
            json!({"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "Hi"}),
            json!({"num_placeholders": 2}),
            json!({"postscript_marker": "P.S."}),
            json!({"num_bullets": 2}),
            json!({}),
            json!({"num_highlights": 2}),
            json!({"section_spliter": "Section", "num_sections": 2}),
            json!({}),
            json!({}),
            json!({}),
            json!({"prompt_to_repeat": "Say hi."}),
            json!({"end_phrase": "Bye."}),
            json!({}),
            json!({"capital_frequency": 2, "capital_relation": "at least"}),
            json!({}),
            json!({"keywords": null, "language": null}),
            json!(null),
        ];
        for (id, kw) in INSTRUCTION_IDS.iter().zip(&kwargs) {
            Instruction::parse(id, kw).unwrap_or_else(|e| panic!("{id}: {e:#}"));
        }
    }

    #[test]
    fn bad_kwargs_are_named() {
        let err = |id: &str, kw: Value| format!("{:#}", Instruction::parse(id, &kw).unwrap_err());
        assert!(err("keywords:frobnicate", json!({})).contains("unknown instruction id"));
        assert!(
            err("length_constraints:number_words", json!({"num_words": 5}))
                .contains("missing kwarg \"relation\"")
        );
        assert!(err(
            "length_constraints:number_words",
            json!({"num_words": 5, "relation": "at most"})
        )
        .contains("relation"));
        assert!(err(
            "length_constraints:number_words",
            json!({"num_words": -1, "relation": "at least"})
        )
        .contains("negative"));
        assert!(err("punctuation:no_comma", json!({"num_words": 5}))
            .contains("unexpected kwarg \"num_words\""));
        assert!(err("language:response_language", json!({"language": "xx"})).contains("not one of"));
        assert!(err(
            "keywords:letter_frequency",
            json!({"letter": "ab", "let_frequency": 1, "let_relation": "at least"})
        )
        .contains("one character"));
        assert!(err(
            "length_constraints:nth_paragraph_first_word",
            json!({"num_paragraphs": 2, "nth_paragraph": 3, "first_word": "a"})
        )
        .contains("between 1"));
    }

    #[test]
    fn relations() {
        assert!(Relation::LessThan.holds(2, 3) && !Relation::LessThan.holds(3, 3));
        assert!(Relation::AtLeast.holds(3, 3) && !Relation::AtLeast.holds(2, 3));
    }
}
