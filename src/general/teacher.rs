//! The programmatic teacher: writes, for a topic and a set of instructions, an answer that follows
//! every instruction, so the general stage trains on answers the judge's IFEval check accepts (a test
//! holds every train row to the strict check).
//!
//! The answer is assembled in layers, each of which leaves the earlier ones' checks intact: content
//! sentences (keywords added, highlights as `**…**`, which never reads as a bullet marker) → the
//! layout (paragraphs, bullets, sections, JSON) → title, postscript, end phrase → letter case → quotes.
//! Word-count bounds are met by adding sentences until the judge's own word count agrees.

use super::instructions::{Constraint, Layout};
use super::topics::Topic;
use crate::judge::ifeval::text::count_words;

/// The answer to `constraints` about `topic`, in Chinese when `zh`. `order` permutes the topic's
/// sentences so answers to one topic differ.
pub fn respond(topic: &Topic, zh: bool, constraints: &[Constraint], order: &[usize]) -> String {
    let layout = constraints.iter().find_map(|c| match c {
        Constraint::Layout(l) => Some(l.clone()),
        _ => None,
    });
    let units = match &layout {
        Some(Layout::Paragraphs(n) | Layout::Bullets(n) | Layout::Sections { n, .. }) => *n,
        _ => 1,
    };
    let highlights = constraints
        .iter()
        .find_map(|c| match c {
            Constraint::Highlights(n) => Some(*n),
            _ => None,
        })
        .unwrap_or(0);
    let at_least = constraints.iter().find_map(|c| match c {
        Constraint::Words { at_least: true, n } => Some(*n),
        _ => None,
    });
    let mut count = units.max(highlights).max(2);
    loop {
        let answer = assemble(
            topic,
            zh,
            constraints,
            layout.as_ref(),
            units,
            count,
            highlights,
            order,
        );
        match at_least {
            Some(n) if count_words(&answer) < n && count < 64 => count += 1,
            _ => return answer,
        }
    }
}

/// One attempt with `count` content sentences.
#[allow(clippy::too_many_arguments)]
fn assemble(
    topic: &Topic,
    zh: bool,
    constraints: &[Constraint],
    layout: Option<&Layout>,
    units: usize,
    count: usize,
    highlights: usize,
    order: &[usize],
) -> String {
    let pool = if zh {
        topic.zh_sentences
    } else {
        topic.en_sentences
    };
    let mut sentences: Vec<String> = (0..count)
        .map(|i| pool[order[i % order.len()] % pool.len()].to_string())
        .collect();
    for c in constraints {
        if let Constraint::Keywords(k) = c {
            sentences.insert(
                1.min(sentences.len()),
                if zh {
                    format!("这也让人想到{}。", k.join("和"))
                } else {
                    format!("It also brings to mind {}.", k.join(" and "))
                },
            );
        }
    }
    // `**…**`: a single `*` right after a bullet's `* ` would pair with the marker, not the sentence.
    // The closing mark goes before the sentence's final stop, so two highlighted Chinese sentences
    // never touch as `****`, which the paragraph check would read as a `***` divider.
    for s in sentences.iter_mut().take(highlights) {
        let stop = s.chars().last().filter(|c| ".。".contains(*c));
        let body = stop.map_or(s.as_str(), |c| &s[..s.len() - c.len_utf8()]);
        *s = format!("**{body}**{}", stop.map(String::from).unwrap_or_default());
    }
    // Sentences dealt to the units in turn, so each unit gets at least one.
    let mut groups: Vec<Vec<String>> = vec![Vec::new(); units];
    for (i, s) in sentences.into_iter().enumerate() {
        groups[i % units].push(s);
    }
    let join = |g: &Vec<String>| g.join(if zh { "" } else { " " });
    let mut body = match layout {
        None => join(&groups[0]),
        Some(Layout::Paragraphs(_)) => groups
            .iter()
            .map(join)
            .collect::<Vec<_>>()
            .join("\n\n***\n\n"),
        Some(Layout::Bullets(_)) => groups
            .iter()
            .map(|g| format!("* {}", join(g)))
            .collect::<Vec<_>>()
            .join("\n"),
        Some(Layout::Sections { splitter, .. }) => groups
            .iter()
            .enumerate()
            .map(|(i, g)| format!("{splitter} {}\n{}", i + 1, join(g)))
            .collect::<Vec<_>>()
            .join("\n\n"),
        // One key: a second would need a comma, which `punctuation:no_comma` forbids.
        Some(Layout::Json) => format!(
            "```json\n{{\"answer\": {}}}\n```",
            serde_json::to_string(&join(&groups[0])).expect("a string serialises")
        ),
    };
    for c in constraints {
        match c {
            Constraint::Title => {
                body = if zh {
                    format!("<<说说{}>>\n\n{body}", topic.zh)
                } else {
                    format!("<<A Few Words on {}>>\n\n{body}", title_case(topic.en))
                }
            }
            Constraint::Postscript(m) => {
                body = format!(
                    "{body}\n\n{m} {}",
                    if zh {
                        "谢谢阅读。"
                    } else {
                        "Thank you for reading."
                    }
                )
            }
            _ => {}
        }
    }
    if let Some(p) = constraints.iter().find_map(|c| match c {
        Constraint::EndPhrase(p) => Some(p),
        _ => None,
    }) {
        body = format!("{body}\n\n{p}");
    }
    if constraints.contains(&Constraint::Lowercase) {
        body = body.to_lowercase();
    }
    if constraints.contains(&Constraint::Quotation) {
        body = format!("\"{body}\"");
    }
    body
}

fn title_case(s: &str) -> String {
    s.split(' ')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map_or(String::new(), |f| f.to_uppercase().chain(c).collect())
        })
        .collect::<Vec<_>>()
        .join(" ")
}
