//! The verifiable instructions general prompts carry: IFEval ids and kwargs (so the judge's IFEval
//! scorer checks them unchanged), how a prompt states each one in English and Chinese, and which may be
//! combined. 14 of IFEval's 25: the ones whose check does not depend on English word or sentence
//! segmentation are offered in both languages; word counts and lowercase are English only.
//! `change_case:english_capital` is left out: the judge's langdetect (a faithful port of the official
//! one) reads all-capital English as German often enough that a perfect answer fails it.

use serde_json::{json, Value};

/// The overall layout of an answer; at most one per prompt.
#[derive(Debug, Clone, PartialEq)]
pub enum Layout {
    /// `length_constraints:number_paragraphs`: paragraphs separated by `***`.
    Paragraphs(usize),
    /// `detectable_format:number_bullet_lists`: exactly n markdown bullets.
    Bullets(usize),
    /// `detectable_format:multiple_sections`: n sections, each opened by `splitter i`.
    Sections { splitter: &'static str, n: usize },
    /// `detectable_format:json_format`: the whole answer is JSON.
    Json,
}

/// One instruction with its parameters.
#[derive(Debug, Clone, PartialEq)]
pub enum Constraint {
    Layout(Layout),
    Keywords(Vec<&'static str>),
    Forbidden(Vec<&'static str>),
    /// `length_constraints:number_words`, `at_least` or `less than` n (English).
    Words {
        at_least: bool,
        n: usize,
    },
    Highlights(usize),
    Title,
    Postscript(&'static str),
    EndPhrase(&'static str),
    Quotation,
    NoComma,
    Lowercase,
}

impl Constraint {
    /// IFEval's instruction id.
    pub fn id(&self) -> &'static str {
        match self {
            Constraint::Layout(Layout::Paragraphs(_)) => "length_constraints:number_paragraphs",
            Constraint::Layout(Layout::Bullets(_)) => "detectable_format:number_bullet_lists",
            Constraint::Layout(Layout::Sections { .. }) => "detectable_format:multiple_sections",
            Constraint::Layout(Layout::Json) => "detectable_format:json_format",
            Constraint::Keywords(_) => "keywords:existence",
            Constraint::Forbidden(_) => "keywords:forbidden_words",
            Constraint::Words { .. } => "length_constraints:number_words",
            Constraint::Highlights(_) => "detectable_format:number_highlighted_sections",
            Constraint::Title => "detectable_format:title",
            Constraint::Postscript(_) => "detectable_content:postscript",
            Constraint::EndPhrase(_) => "startend:end_checker",
            Constraint::Quotation => "startend:quotation",
            Constraint::NoComma => "punctuation:no_comma",
            Constraint::Lowercase => "change_case:english_lowercase",
        }
    }

    /// IFEval's kwargs object for the id.
    pub fn kwargs(&self) -> Value {
        match self {
            Constraint::Layout(Layout::Paragraphs(n)) => json!({"num_paragraphs": n}),
            Constraint::Layout(Layout::Bullets(n)) => json!({"num_bullets": n}),
            Constraint::Layout(Layout::Sections { splitter, n }) => {
                json!({"section_spliter": splitter, "num_sections": n})
            }
            Constraint::Keywords(k) => json!({"keywords": k}),
            Constraint::Forbidden(w) => json!({"forbidden_words": w}),
            Constraint::Words { at_least, n } => json!({
                "relation": if *at_least { "at least" } else { "less than" }, "num_words": n}),
            Constraint::Highlights(n) => json!({"num_highlights": n}),
            Constraint::Postscript(m) => json!({"postscript_marker": m}),
            Constraint::EndPhrase(p) => json!({"end_phrase": p}),
            _ => json!({}),
        }
    }

    /// The instruction as the prompt states it.
    pub fn phrase(&self, zh: bool) -> String {
        let quoted = |ws: &[&str], zh: bool| {
            if zh {
                ws.iter()
                    .map(|w| format!("“{w}”"))
                    .collect::<Vec<_>>()
                    .join("和")
            } else {
                ws.join(" and ")
            }
        };
        match (self, zh) {
            (Constraint::Layout(Layout::Paragraphs(n)), false) => format!("There should be {n} paragraphs. Paragraphs are separated with the markdown divider: ***"),
            (Constraint::Layout(Layout::Paragraphs(n)), true) => format!("回答分成{n}段，段与段之间用 markdown 分隔线 *** 隔开。"),
            (Constraint::Layout(Layout::Bullets(n)), false) => format!("Your answer must contain exactly {n} bullet points. Use the markdown bullet points such as: * This is point 1."),
            (Constraint::Layout(Layout::Bullets(n)), true) => format!("回答必须恰好包含{n}个 markdown 列表项，例如：* 这是第一点。"),
            (Constraint::Layout(Layout::Sections { splitter, n }), false) => format!("Your response must have {n} sections. Mark the beginning of each section with {splitter} X, such as: {splitter} 1"),
            (Constraint::Layout(Layout::Sections { splitter, n }), true) => format!("回答须有{n}个部分，每部分以 {splitter} X 开头，例如：{splitter} 1"),
            (Constraint::Layout(Layout::Json), false) => "Entire output should be wrapped in JSON format. You can use markdown ticks such as ```.".into(),
            (Constraint::Layout(Layout::Json), true) => "整个输出用 JSON 格式包起来，可以使用 ``` 标记。".into(),
            (Constraint::Keywords(k), false) => format!("Include the keywords {} in the response.", quoted(k, false)),
            (Constraint::Keywords(k), true) => format!("回答中要包含关键词{}。", quoted(k, true)),
            (Constraint::Forbidden(w), false) => format!("Do not include the words {} in the response.", w.join(" or ")),
            (Constraint::Forbidden(w), true) => format!("回答中不要出现{}这些词。", quoted(w, true)),
            (Constraint::Words { at_least: true, n }, _) => format!("Answer with at least {n} words."),
            (Constraint::Words { at_least: false, n }, _) => format!("Answer with less than {n} words."),
            (Constraint::Highlights(n), false) => format!("Highlight at least {n} sections in your answer with markdown, i.e. *highlighted section*."),
            (Constraint::Highlights(n), true) => format!("用 markdown 至少突出显示{n}处，例如 *重点内容*。"),
            (Constraint::Title, false) => "Your answer must contain a title, wrapped in double angular brackets, such as <<poem of joy>>.".into(),
            (Constraint::Title, true) => "回答须包含一个用双尖括号括起来的标题，例如 <<快乐之诗>>。".into(),
            (Constraint::Postscript(m), false) => format!("At the end of your response, please explicitly add a postscript starting with {m}"),
            (Constraint::Postscript(m), true) => format!("在回答末尾加一段以 {m} 开头的附言。"),
            (Constraint::EndPhrase(p), false) => format!("Finish your response with this exact phrase {p}. No other words should follow this phrase."),
            (Constraint::EndPhrase(p), true) => format!("回答以这句话结尾：{p} 之后不要再有其他内容。"),
            (Constraint::Quotation, false) => "Wrap your entire response with double quotation marks.".into(),
            (Constraint::Quotation, true) => "整个回答用英文双引号 \" 括起来。".into(),
            (Constraint::NoComma, false) => "In your entire response, refrain from the use of any commas.".into(),
            (Constraint::NoComma, true) => "回答中不要使用英文逗号 , 。".into(),
            (Constraint::Lowercase, _) => "Your entire response should be in English, and in all lowercase letters. No capital letters are allowed.".into(),
        }
    }

    /// Whether two instructions can be satisfied together by one answer (the teacher's layout rules):
    /// one layout at most; JSON takes the whole answer; quotes would hide a first bullet; a case change
    /// would break a case-sensitive section splitter.
    pub fn compatible(&self, other: &Constraint) -> bool {
        use Constraint::*;
        let pair = |a: &Constraint, b: &Constraint| match (a, b) {
            (Layout(_), Layout(_)) => false,
            (
                Layout(self::Layout::Json),
                Title | Postscript(_) | EndPhrase(_) | Quotation | Highlights(_),
            ) => false,
            (Layout(self::Layout::Bullets(_)), Quotation) => false,
            (Layout(self::Layout::Sections { .. }), Lowercase) => false,
            _ => std::mem::discriminant(a) != std::mem::discriminant(b),
        };
        pair(self, other) && pair(other, self)
    }

    /// English-only instructions (their checks segment English words or need English letters).
    pub fn english_only(&self) -> bool {
        matches!(self, Constraint::Words { .. } | Constraint::Lowercase)
    }
}
