//! Evidence quotes: reasoning that copies, from the prompt, the entry a call's argument was looked up in.
//!
//! A product question names the product by link number, title, kind or "this one"; the call needs its
//! id, which only the room state in the system prompt gives (`4号链接 果仁坊每日坚果礼盒（product_id=p189）`).
//! Writing the id straight away is a two-step lookup for a small model — find which words of the
//! viewer name a product, then find that product's entry and copy the id after it — and a model of
//! a million parameters learns it slowly (docs/learning-default.md). Quoting the entry first splits
//! it into two copies, each of the kind an attention layer does in one step: the quote starts with
//! the viewer's own words, the prompt entry that starts the same way continues the quote, and the call
//! copies the id from the quote a few tokens back.
//!
//! The quote alone moves the viewer's words away from the decision that follows it: a model trained on
//! quotes alone found the product twice as often but chose the skill and tool worse (it answered "3号链接
//! 还有货吗" with the product-detail tool; docs/learning-default.md, fourteenth session), and restating
//! the viewer's lines after the quote gave the choice back but lost most of the product ids. So the
//! reasoning opens with the plan — the message's calls by name, with the arguments the prompt does not
//! state (the skill to load) — chosen right after the viewer's message, then quotes the evidence, and
//! the calls copy the names from the plan and the ids from the quote. Trained on such rows after a copy
//! stage that crossed its plateau on unquoted one-id rows, a model keeps its tool choice and finds the
//! product twice as often (docs/learning-default.md, forty-first session); with the copy stage's own
//! rows quoted it never copied at all (thirty-ninth).
//!
//! A call's *name* is looked up the same way when the prompt states it in backticks: the skills
//! section says which tool loads a skill (`需要细则时调用 `load_skill` 工具`), and a harness that renames
//! the loader renames it there. A model that writes `load_skill` from memory fails under every harness
//! that calls it something else (docs/learning-default.md, forty-third session); one that first quotes
//! the clause naming it — constant words, then the name, continued from the prompt where the same words
//! stand — could write the plan's first name a line after the quote. With `quote_names` (opt-in,
//! `hat records cat --quote-names`) the reasoning opens with those clauses, then the plan, then the
//! evidence. Not in the default recipe: trained on such rows, with the loader renamed per record
//! (`src/fresh_names.rs`), a model wrote names *shaped* like the prompt's (`Playbook…` under
//! `RetrievePlaybook`) but never the name itself (docs/learning-default.md, forty-fourth session).
//!
//! [`quote_evidence`] adds the plan and the quotes (and the name clauses) as the `reasoning_content` of
//! every assistant message whose call carries an argument the prompt states in the call's own form,
//! `key=value` (the harness's templates word ids with the argument key, so a renamed key is found too),
//! or, with `quote_names`, that calls a tool the prompt names in backticks. The quote is the
//! shortest span of one prompt entry (a line, or an item of a `、`-separated list) that begins with
//! the longest run of the viewer's words and ends with `key=value` and a closing bracket. When the
//! viewer's words name nothing in the entry ("这个多少钱"), the quote is the first entry holding the
//! value, with the heading line above it when it starts a line (the product on screen). Messages that
//! already carry reasoning are left as they are.

use serde_json::Value;

use crate::record::{Message, Role, Trajectory};

/// `record` with evidence quotes added before its lookups, and with `quote_names` the clauses naming its
/// called tools (see the module documentation).
pub fn quote_evidence(mut record: Trajectory, quote_names: bool) -> Trajectory {
    let Some(prompt) = record.system_prompt() else {
        return record;
    };
    // The viewer's lines are those before the turn; later user messages are hook feedback.
    let turn_start = record
        .meta
        .get("turn_start")
        .and_then(serde_json::Value::as_u64)
        .map(|t| t as usize);
    for i in 0..record.messages.len() {
        let message = &record.messages[i];
        let thought = message
            .reasoning_content
            .as_deref()
            .is_some_and(|r| !r.trim().is_empty());
        if message.role != Role::Assistant || message.tool_calls.is_empty() || thought {
            continue;
        }
        let before = turn_start.unwrap_or(i).min(i);
        let viewer = record.messages[..before]
            .iter()
            .filter(|m| m.role == Role::User)
            .map(Message::text_content)
            .collect::<Vec<_>>()
            .join("\n");
        let stated = stated_arguments(message, &prompt);
        let mut names: Vec<&str> = Vec::new();
        if quote_names {
            for call in &message.tool_calls {
                match name_clause(&prompt, &call.function.name) {
                    Some(q) if !names.contains(&q) => names.push(q),
                    _ => {}
                }
            }
        }
        let mut quotes: Vec<String> = Vec::new();
        for kv in &stated {
            if let Some(q) = quote(&prompt, &viewer, kv) {
                if !quotes.contains(&q) {
                    quotes.push(q);
                }
            }
        }
        if !names.is_empty() || !quotes.is_empty() {
            let plan = plan(message, &stated);
            let lines: Vec<&str> = names
                .into_iter()
                .chain([plan.as_str()])
                .chain(quotes.iter().map(String::as_str))
                .collect();
            record.messages[i].reasoning_content = Some(lines.join("\n"));
        }
    }
    record
}

/// The `key=value` forms of the message's string arguments (in lists too) that the prompt states.
fn stated_arguments(message: &Message, prompt: &str) -> Vec<String> {
    let mut out = Vec::new();
    for call in &message.tool_calls {
        let Ok(args) = call.function.parsed_arguments() else {
            continue;
        };
        for (key, value) in &args {
            let values = match value {
                Value::Array(items) => items.iter().collect(),
                v => vec![v],
            };
            for v in values.into_iter().filter_map(Value::as_str) {
                let stated = format!("{key}={v}");
                if !v.is_empty() && prompt.contains(&stated) && !out.contains(&stated) {
                    out.push(stated);
                }
            }
        }
    }
    out
}

/// The clause of the prompt that first names tool `name` in backticks, up to its closing backtick
/// (`需要细则时调用 `load_skill``), or `None` when the prompt never does. A clause starts after the last
/// punctuation mark or line break before the name.
fn name_clause<'a>(prompt: &'a str, name: &str) -> Option<&'a str> {
    let ticked = format!("`{name}`");
    let at = prompt.find(&ticked)?;
    let start = prompt[..at]
        .rfind(['；', ';', '，', ',', '。', '.', '：', ':', '\n'])
        .map_or(0, |p| {
            p + prompt[p..].chars().next().map_or(1, char::len_utf8)
        });
    Some(prompt[start..at + ticked.len()].trim())
}

/// The quote for `stated` (`key=value`), or `None` when the prompt holds it in no entry.
fn quote(prompt: &str, viewer: &str, stated: &str) -> Option<String> {
    // (matched chars, quote chars, quote)
    let mut best: Option<(usize, usize, String)> = None;
    let mut first: Option<String> = None;
    let mut heading: Option<&str> = None;
    for line in prompt.lines() {
        for entry in line.split('、') {
            let Some(at) = entry.find(stated) else {
                continue;
            };
            let end = closing(entry, at + stated.len());
            if first.is_none() {
                first = Some(match heading {
                    Some(h) if line.starts_with(entry) && !h.trim().is_empty() => {
                        format!("{h}\n{}", &entry[..end])
                    }
                    _ => entry[..end].to_string(),
                });
            }
            let mut previous = ' ';
            for (start, c) in entry[..at].char_indices() {
                // A quote starts a word: not at a space, nor inside a Latin word ("the" + "e cotton").
                let inside_word = c.is_ascii_alphanumeric() && previous.is_ascii_alphanumeric();
                previous = c;
                if c.is_whitespace() || inside_word {
                    continue;
                }
                let matched = viewer_run(&entry[start..at], viewer);
                let chars = matched.chars().count();
                if !names_something(matched) {
                    continue;
                }
                let quote = &entry[start..end];
                let len = quote.chars().count();
                if best
                    .as_ref()
                    .is_none_or(|(m, l, _)| chars > *m || (chars == *m && len < *l))
                {
                    best = Some((chars, len, quote.to_string()));
                }
            }
        }
        heading = Some(line);
    }
    best.map(|(_, _, q)| q).or(first)
}

/// The message's calls as a plan: each call's name with the string arguments not among `stated` (the
/// `key=value` forms the prompt states) and that hold no digit (the skill to load, a topic, a region),
/// `load_skill product-qa, get_product_detail`.
fn plan(message: &Message, stated: &[String]) -> String {
    let calls = message.tool_calls.iter().map(|call| {
        let mut step = call.function.name.clone();
        if let Ok(args) = call.function.parsed_arguments() {
            for (key, value) in &args {
                let Some(v) = value.as_str() else { continue };
                let in_prompt = stated.contains(&format!("{key}={v}"));
                if !v.is_empty() && !in_prompt && !v.chars().any(|c| c.is_ascii_digit()) {
                    step.push(' ');
                    step.push_str(v);
                }
            }
        }
        step
    });
    calls.collect::<Vec<_>>().join(", ")
}

/// `pos`, moved past one closing bracket right after it.
fn closing(entry: &str, pos: usize) -> usize {
    match entry[pos..].chars().next() {
        Some(c @ (')' | '）' | ']' | '】')) => pos + c.len_utf8(),
        _ => pos,
    }
}

/// The longest prefix of `text` that occurs in `viewer`.
fn viewer_run<'a>(text: &'a str, viewer: &str) -> &'a str {
    let mut best = "";
    for (i, c) in text.char_indices() {
        let prefix = &text[..i + c.len_utf8()];
        if !viewer.contains(prefix) {
            break;
        }
        best = prefix;
    }
    best
}

/// Whether a run of the viewer's words is long enough to name a product rather than share a syllable:
/// two characters with a CJK one among them, four otherwise (`link 4`, ` pan`).
fn names_something(run: &str) -> bool {
    let chars = run.chars().count();
    let cjk = run.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
    chars >= if cjk { 2 } else { 4 } && run.chars().any(char::is_alphanumeric)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PROMPT: &str = "# 当前讲解商品 Current product\n云栖乳胶枕（云栖），商品ID product_id=p384，类目 home。\n\n# 直播间状态 Room state\n- 待讲解 Up next: 1号链接 云栖乳胶枕（product_id=p384）、2号链接 棉语纯棉圆领T恤（product_id=p179）、3号链接 果仁坊每日坚果礼盒（product_id=p189）";

    fn record(prompt: &str, viewer: &str, name: &str, args: Value) -> Trajectory {
        serde_json::from_value(json!({
            "id": "r1",
            "messages": [
                {"role": "system", "content": prompt},
                {"role": "user", "content": viewer},
                {"role": "assistant", "tool_calls": [
                    {"id": "c0", "type": "function", "function": {"name": "load_skill", "arguments": "{\"name\":\"product-qa\"}"}},
                    {"id": "c1", "type": "function", "function": {"name": name, "arguments": args.to_string()}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "{\"price\": 169}"},
                {"role": "assistant", "content": "标价¥169"},
            ],
        }))
        .unwrap()
    }

    fn reasoning(viewer: &str) -> Option<String> {
        let r = record(
            PROMPT,
            viewer,
            "get_product_detail",
            json!({"product_id": "p189"}),
        );
        quote_evidence(r, false).messages[2]
            .reasoning_content
            .clone()
    }

    #[test]
    fn the_quote_starts_with_the_viewers_words_and_ends_with_the_id() {
        assert_eq!(
            reasoning("momo：3号链接多少钱").as_deref(),
            Some("load_skill product-qa, get_product_detail\n3号链接 果仁坊每日坚果礼盒（product_id=p189）")
        );
        assert_eq!(
            reasoning("momo：宝子们，果仁坊每日坚果礼盒贵不贵").as_deref(),
            Some(
                "load_skill product-qa, get_product_detail\n果仁坊每日坚果礼盒（product_id=p189）"
            )
        );
        // Named by kind, a tail of the title.
        assert_eq!(
            reasoning("momo：坚果礼盒多少钱").as_deref(),
            Some("load_skill product-qa, get_product_detail\n坚果礼盒（product_id=p189）")
        );
        // In English a quote starts a word: "the nuts gift box" must not start at "e nuts".
        let en = "# Room state\n- Up next: link 1 Pure nuts gift box (product_id=p189)、link 2 Acme pan (product_id=p007)";
        let r = record(
            en,
            "Amy: price of the nuts gift box?",
            "get_product_detail",
            json!({"product_id": "p189"}),
        );
        assert_eq!(
            quote_evidence(r, false).messages[2]
                .reasoning_content
                .as_deref(),
            Some("load_skill product-qa, get_product_detail\nnuts gift box (product_id=p189)")
        );
    }

    #[test]
    fn the_product_on_screen_is_quoted_with_its_heading() {
        let r = record(
            PROMPT,
            "老李：这个多少钱",
            "get_product_detail",
            json!({"product_id": "p384"}),
        );
        assert_eq!(
            quote_evidence(r, false).messages[2].reasoning_content.as_deref(),
            Some("load_skill product-qa, get_product_detail\n# 当前讲解商品 Current product\n云栖乳胶枕（云栖），商品ID product_id=p384")
        );
        // Named by title, the shortest entry that starts with it wins: the queue's.
        let r = record(
            PROMPT,
            "老李：云栖乳胶枕多少钱",
            "get_product_detail",
            json!({"product_id": "p384"}),
        );
        assert_eq!(
            quote_evidence(r, false).messages[2]
                .reasoning_content
                .as_deref(),
            Some("load_skill product-qa, get_product_detail\n云栖乳胶枕（product_id=p384）")
        );
    }

    #[test]
    fn only_arguments_the_prompt_states_in_the_calls_form_are_quoted() {
        // A renamed argument key is found in the prompt as the harness words it.
        let renamed = PROMPT.replace("product_id=", "item_ref=");
        let r = record(
            &renamed,
            "3号链接有货吗",
            "stock_lookup",
            json!({"item_ref": "p189"}),
        );
        assert_eq!(
            quote_evidence(r, false).messages[2]
                .reasoning_content
                .as_deref(),
            Some(
                "load_skill product-qa, stock_lookup\n3号链接 果仁坊每日坚果礼盒（item_ref=p189）"
            )
        );
        // The viewer's own order id, and an id the prompt does not give: nothing to quote.
        for args in [json!({"order_id": "A123"}), json!({"product_id": "p999"})] {
            let r = record(PROMPT, "订单A123到哪了", "get_order_status", args);
            let quoted = quote_evidence(r.clone(), false);
            assert_eq!(quoted.messages, r.messages);
        }
    }

    #[test]
    fn the_plan_names_the_calls_with_the_arguments_no_entry_states() {
        let r = record(
            PROMPT,
            "3号链接发货到广州要多久",
            "get_shipping_info",
            json!({"product_id": "p189", "region": "广州", "sku_id": "p189-2"}),
        );
        let reasoning = quote_evidence(r, false).messages[2]
            .reasoning_content
            .clone();
        let plan = reasoning.as_deref().and_then(|r| r.lines().next());
        assert_eq!(plan, Some("load_skill product-qa, get_shipping_info 广州"));
    }

    #[test]
    fn a_tool_the_prompt_names_is_quoted_before_the_plan() {
        let skills = "# 技能目录 Skills\n先判断观众意图，选一个最合适的技能；需要细则时调用 `obtain_skill_body` 工具（参数 name）读取技能正文。\nCall `obtain_skill_body` with its name.";
        let prompt = format!("{PROMPT}\n\n{skills}");
        let mut r = record(
            &prompt,
            "momo：3号链接多少钱",
            "get_product_detail",
            json!({"product_id": "p189"}),
        );
        r.messages[2].tool_calls[0].function.name = "obtain_skill_body".into();
        assert_eq!(
            quote_evidence(r.clone(), true).messages[2].reasoning_content.as_deref(),
            Some("需要细则时调用 `obtain_skill_body`\nobtain_skill_body product-qa, get_product_detail\n3号链接 果仁坊每日坚果礼盒（product_id=p189）")
        );
        // A call with nothing to look up (chat) is quoted and planned too.
        r.messages[2].tool_calls.truncate(1);
        r.messages[2].tool_calls[0].function.arguments = "{\"name\":\"casual-chat\"}".into();
        assert_eq!(
            quote_evidence(r.clone(), true).messages[2]
                .reasoning_content
                .as_deref(),
            Some("需要细则时调用 `obtain_skill_body`\nobtain_skill_body casual-chat")
        );
        // Without quote_names the clause is left out (and a chat call gets no reasoning).
        assert_eq!(
            quote_evidence(r.clone(), false).messages[2].reasoning_content,
            None
        );
        // A name the prompt never puts in backticks is not quoted.
        r.messages[2].tool_calls[0].function.name = "load_skill".into();
        assert_eq!(quote_evidence(r, true).messages[2].reasoning_content, None);
    }

    #[test]
    fn reasoning_a_teacher_wrote_is_kept_and_the_reply_gets_none() {
        let mut r = record(
            PROMPT,
            "3号链接多少钱",
            "get_product_detail",
            json!({"product_id": "p189"}),
        );
        r.messages[2].reasoning_content = Some("看3号链接".into());
        let quoted = quote_evidence(r.clone(), false);
        assert_eq!(quoted.messages, r.messages);
        r.messages[2].reasoning_content = None;
        let quoted = quote_evidence(r, false);
        assert!(quoted.messages[2].reasoning_content.is_some());
        assert_eq!(quoted.messages[4].reasoning_content, None);
    }

    #[test]
    fn the_quote_follows_the_line_that_named_the_product_and_feedback_is_not_read() {
        // A clarifying exchange: the question, another viewer, the answer naming the product; then
        // hook feedback inside the turn, and the retried call.
        let r: Trajectory = serde_json::from_value(json!({
            "id": "r2",
            "meta": {"turn_start": 5},
            "messages": [
                {"role": "system", "content": PROMPT},
                {"role": "user", "content": "小王：多少钱！！"},
                {"role": "assistant", "content": "请问宝宝问的是几号链接呀？"},
                {"role": "user", "content": "阿杰：好看"},
                {"role": "user", "content": "小王：就是坚果礼盒"},
                {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                    "function": {"name": "get_product_detail", "arguments": "{\"product_id\":\"p189\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "{\"price\": 169}"},
                {"role": "assistant", "content": "标价¥169"},
                {"role": "user", "content": "（系统提示）回复太短"},
                {"role": "assistant", "tool_calls": [{"id": "c2", "type": "function",
                    "function": {"name": "get_product_detail", "arguments": "{\"product_id\":\"p189\"}"}}]},
            ],
        }))
        .unwrap();
        let quoted = quote_evidence(r, false);
        let want = "get_product_detail\n坚果礼盒（product_id=p189）";
        assert_eq!(quoted.messages[5].reasoning_content.as_deref(), Some(want));
        assert_eq!(quoted.messages[9].reasoning_content.as_deref(), Some(want));
        assert_eq!(quoted.messages[2].reasoning_content, None);
    }
}
