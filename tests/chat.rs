//! Chat templates and tool-call parsing against transformers' own output.
//!
//! Golden cases in `testdata/chat/cases/` come from `scripts/gen_chat_goldens.py`, which renders
//! each input with transformers' `apply_chat_template(..., tokenize=False)`.

use hat::chat::{ChatTemplate, RenderInput};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/chat")
}

fn first_difference(a: &str, b: &str) -> String {
    let at = a
        .char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or(a.len().min(b.len()), |((i, _), _)| i);
    let ctx = |s: &str| {
        let window: String = s
            .char_indices()
            .filter(|(i, _)| *i + 60 >= at && *i <= at + 60)
            .map(|(_, c)| c)
            .collect();
        format!("{window:?}")
    };
    format!(
        "at byte {at}:\n  rust:         {}\n  transformers: {}",
        ctx(a),
        ctx(b)
    )
}

/// Renders one golden record and describes any disagreement with transformers.
fn check_record(
    case_name: &str,
    case: &Value,
    templates: &mut BTreeMap<String, ChatTemplate>,
) -> Option<String> {
    let name = case["template"].as_str().unwrap().to_string();
    let template = templates.entry(name.clone()).or_insert_with(|| {
        ChatTemplate::from_file(&testdata().join("templates").join(&name)).unwrap()
    });
    let got = RenderInput::from_json(&case["input"]).and_then(|input| template.render(&input));
    match (got, case.get("expected").and_then(Value::as_str)) {
        (Ok(got), Some(want)) if got == want => None,
        (Ok(got), Some(want)) => Some(format!("{case_name}: {}", first_difference(&got, want))),
        (Err(e), Some(_)) => Some(format!("{case_name}: render failed: {e:#}")),
        (Ok(got), None) => Some(format!(
            "{case_name}: transformers refused ({}) but rust rendered {got:?}",
            case["error"]
        )),
        (Err(_), None) => None,
    }
}

#[test]
fn golden_renders_match_transformers_byte_for_byte() {
    let mut templates = BTreeMap::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(testdata().join("cases"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 25, "only {} golden cases", paths.len());
    let failures: Vec<String> = paths
        .iter()
        .filter_map(|path| {
            let case: Value =
                serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
            check_record(
                &path.file_stem().unwrap().to_string_lossy(),
                &case,
                &mut templates,
            )
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn random_conversations_match_transformers_byte_for_byte() {
    let mut templates = BTreeMap::new();
    let text = std::fs::read_to_string(testdata().join("random_cases.jsonl")).unwrap();
    let mut count = 0;
    let failures: Vec<String> = text
        .lines()
        .enumerate()
        .filter_map(|(i, line)| {
            count += 1;
            let case: Value = serde_json::from_str(line).unwrap();
            check_record(
                &format!("random_cases.jsonl:{}", i + 1),
                &case,
                &mut templates,
            )
        })
        .collect();
    assert!(count >= 100, "only {count} random cases");
    assert!(
        failures.is_empty(),
        "{} of {count} differ:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Tool-call parsing
// ---------------------------------------------------------------------------------------------

use hat::chat::{parse_assistant_output, ToolCallErrorKind, ToolCallFormat};
use serde_json::json;

fn tools() -> Vec<Value> {
    serde_json::from_value(json!([
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}},
        {"type": "function", "function": {"name": "search_products", "parameters": {"type": "object",
            "properties": {"query": {"type": "string"}, "max_price": {"type": ["number", "null"]},
                "in_stock": {"type": "boolean"}, "filters": {"type": "object"}, "tags": {"type": "array"},
                "note": {}}}}},
        {"name": "get_order", "inputSchema": {"type": "object", "properties": {"order_id": {"type": "string"}}}}
    ]))
    .unwrap()
}

const HERMES_OK: &str = "<think>\nThe viewer wants weather and a product.\n</think>\n\nLet me check both.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"巴黎\", \"days\": 2}}\n</tool_call>\n<tool_call>\n{\"name\": \"search_products\", \"arguments\": {\"query\": \"jacket \\\"<M>\\\" & 'L'\", \"max_price\": 299.0, \"in_stock\": true, \"filters\": {\"tags\": [\"新品\"]}}}\n</tool_call>";

const XML_OK: &str = "plan the search\n</think>\n\nSearching now.\n\n<tool_call>\n<function=search_products>\n<parameter=query>\n羽绒服 <M> & 'L'\nsecond line\n</parameter>\n<parameter=max_price>\n299.0\n</parameter>\n<parameter=in_stock>\nTrue\n</parameter>\n<parameter=filters>\n{\"tags\": [\"新品\"], \"n\": null}\n</parameter>\n<parameter=tags>\n[\"a\", 1]\n</parameter>\n<parameter=note>\n42\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>";

#[test]
fn hermes_output_parses_and_renders_back_identically() {
    let tools = tools();
    let out = parse_assistant_output(HERMES_OK, ToolCallFormat::Hermes, Some(&tools)).unwrap();
    assert_eq!(
        out.reasoning.as_deref(),
        Some("The viewer wants weather and a product.")
    );
    assert_eq!(out.content, "Let me check both.");
    assert_eq!(out.tool_calls.len(), 2);
    assert_eq!(out.tool_calls[0].name, "get_weather");
    assert_eq!(out.tool_calls[0].arguments["city"], json!("巴黎"));
    assert_eq!(out.tool_calls[1].arguments["max_price"], json!(299.0));
    // The parsed turn, rendered by the Qwen3 template, reproduces the generated text exactly.
    let template = ChatTemplate::from_file(&testdata().join("templates/qwen3.jinja")).unwrap();
    let input = RenderInput::from_json(&json!({
        "messages": [{"role": "user", "content": "hi"}, out.to_message("")],
        "tools": tools,
    }))
    .unwrap();
    let rendered = template.render(&input).unwrap();
    let want = format!("<|im_start|>assistant\n{HERMES_OK}<|im_end|>\n");
    assert!(rendered.ends_with(&want), "{rendered}");
    let msg = out.to_message("x");
    assert_eq!(msg["tool_calls"][1]["id"], json!("call_x1"));
    assert_eq!(
        msg["tool_calls"][0]["function"]["arguments"],
        json!("{\"city\": \"巴黎\", \"days\": 2}")
    );
}

#[test]
fn hermes_without_tools_or_reasoning() {
    let out = parse_assistant_output("Just chatting 😀", ToolCallFormat::Hermes, None).unwrap();
    assert_eq!(out.content, "Just chatting 😀");
    assert!(out.tool_calls.is_empty() && out.reasoning.is_none());
    // String-encoded arguments and a call without arguments are accepted.
    let text = "<tool_call>\n{\"name\": \"a\", \"arguments\": \"{\\\"x\\\": [1, 2]}\"}\n</tool_call>\n\n<tool_call>{\"name\": \"b\"}</tool_call>\n";
    let out = parse_assistant_output(text, ToolCallFormat::Hermes, None).unwrap();
    assert_eq!(out.content, "");
    assert_eq!(out.tool_calls[0].arguments["x"], json!([1, 2]));
    assert!(out.tool_calls[1].arguments.is_empty());
}

#[test]
fn xml_output_is_typed_by_schema_and_renders_back() {
    let tools = tools();
    let out = parse_assistant_output(XML_OK, ToolCallFormat::Qwen3Xml, Some(&tools)).unwrap();
    assert_eq!(out.reasoning.as_deref(), Some("plan the search"));
    assert_eq!(out.content, "Searching now.");
    let args = &out.tool_calls[0].arguments;
    assert_eq!(args["query"], json!("羽绒服 <M> & 'L'\nsecond line"));
    assert_eq!(args["max_price"], json!(299.0));
    assert_eq!(args["in_stock"], json!(true));
    assert_eq!(args["filters"], json!({"tags": ["新品"], "n": null}));
    assert_eq!(args["tags"], json!(["a", 1]));
    // No type in the schema: text unless it is a JSON object/array.
    assert_eq!(args["note"], json!("42"));
    // A string parameter keeps leading zeros.
    assert_eq!(out.tool_calls[1].arguments["days"], json!(2));
    // Without tools nothing is typed except JSON objects/arrays.
    let untyped = parse_assistant_output(XML_OK, ToolCallFormat::Qwen3Xml, None).unwrap();
    assert_eq!(untyped.tool_calls[0].arguments["max_price"], json!("299.0"));
    // Rendering the parsed turn with a Qwen3.5-style template gives back the generated text
    // (the template opens `<think>\n` itself, as the generation prompt does).
    let template = ChatTemplate::from_file(&testdata().join("templates/xml_tools.jinja")).unwrap();
    let mut message = out.to_message("");
    for call in message["tool_calls"].as_array_mut().unwrap() {
        let args: Value =
            serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
        call["function"]["arguments"] = args;
    }
    let input = RenderInput::from_json(&json!({
        "messages": [{"role": "user", "content": "hi"}, message],
    }))
    .unwrap();
    let rendered = template.render(&input).unwrap();
    let want = format!("<|im_start|>assistant\n<think>\n{XML_OK}<|im_end|>\n");
    assert!(rendered.ends_with(&want), "{rendered}");
}

#[test]
fn malformed_outputs_are_typed_errors() {
    use ToolCallErrorKind::*;
    let tools = tools();
    let hermes = ToolCallFormat::Hermes;
    let xml = ToolCallFormat::Qwen3Xml;
    let cases: &[(&str, ToolCallFormat, ToolCallErrorKind)] = &[
        ("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}", hermes, UnclosedToolCall),
        ("<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": }}</tool_call>", hermes, InvalidJson),
        ("<tool_call>[1, 2]</tool_call>", hermes, InvalidJson),
        ("<tool_call>{\"arguments\": {}}</tool_call>", hermes, MissingName),
        ("<tool_call>{\"name\": \"  \"}</tool_call>", hermes, MissingName),
        ("<tool_call>{\"name\": \"get_weather\", \"arguments\": [1]}</tool_call>", hermes, ArgumentsNotObject),
        ("<tool_call>{\"name\": \"get_weather\", \"arguments\": \"{bad\"}</tool_call>", hermes, InvalidJson),
        ("<tool_call>{\"name\": \"launch_rocket\", \"arguments\": {}}</tool_call>", hermes, UnknownTool),
        ("<tool_call>{\"name\": \"get_weather\"}</tool_call> and then I said more", hermes, UnexpectedText),
        ("<tool_call><tool_call>{\"name\": \"get_weather\"}</tool_call>", hermes, UnclosedToolCall),
        ("stray </tool_call>", hermes, UnexpectedText),
        ("<think>thinking forever", hermes, UnclosedThink),
        ("<tool_call>\n{\"name\": \"get_weather\"}\n</tool_call>", xml, UnknownFunctionForm),
        ("<tool_call>\n<function get_weather>\n</function>\n</tool_call>", xml, UnknownFunctionForm),
        ("<tool_call>\n<function=>\n</function>\n</tool_call>", xml, MissingName),
        ("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</tool_call>", xml, UnclosedFunction),
        ("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</function>\n</tool_call>", xml, UnclosedParameter),
        ("<tool_call>\n<function=get_weather>\n<parameter=days>\ntwo\n</parameter>\n</function>\n</tool_call>", xml, InvalidParameter),
        ("<tool_call>\n<function=get_weather>\n<parameter=city>\na\n</parameter>\n<parameter=city>\nb\n</parameter>\n</function>\n</tool_call>", xml, InvalidParameter),
        ("<tool_call>\n<function=get_weather>\ncity=Paris\n</function>\n</tool_call>", xml, UnexpectedText),
        ("<tool_call>\n<function=get_weather>\n</function>\nextra\n</tool_call>", xml, UnexpectedText),
        ("<tool_call>\n<function=fly>\n</function>\n</tool_call>", xml, UnknownTool),
        ("<tool_call>\n<function=get_weather>\n</function>\n", xml, UnclosedToolCall),
    ];
    for (text, format, kind) in cases {
        let err = parse_assistant_output(text, *format, Some(&tools))
            .expect_err(&format!("{text:?} should fail"));
        assert_eq!(err.kind, *kind, "{text:?}: {err}");
        assert!(err.offset <= text.len(), "{text:?}: offset {}", err.offset);
        assert!(err.to_string().starts_with("malformed tool call at byte"));
    }
    // Offsets point into the original text, reasoning included.
    let text = "<think>x</think>ok <tool_call>{\"name\": 5}</tool_call>";
    let err = parse_assistant_output(text, hermes, None).unwrap_err();
    assert_eq!(&text[err.offset..err.offset + 1], "{");
}

/// The agent runtime's parse: a call to a tool outside `tools` parses (the runtime answers it), and
/// the other calls of the message are still typed by their schemas.
#[test]
fn any_name_parse_accepts_a_missing_tool_and_still_types_the_known_ones() {
    use hat::chat::parse_assistant_output_any_name;
    let text = "<tool_call>\n<function=fly>\n<parameter=to>\nmoon\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>";
    let xml = ToolCallFormat::Qwen3Xml;
    let err = parse_assistant_output(text, xml, Some(&tools())).unwrap_err();
    assert_eq!(err.kind, ToolCallErrorKind::UnknownTool);
    let out = parse_assistant_output_any_name(text, xml, Some(&tools())).unwrap();
    let names: Vec<&str> = out.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["fly", "get_weather"]);
    assert_eq!(out.tool_calls[1].arguments["days"], json!(2));
    let untyped = parse_assistant_output(text, xml, None).unwrap();
    assert_eq!(untyped.tool_calls[1].arguments["days"], json!("2"));
}

/// xorshift64*: a tiny deterministic generator so the mutation loop needs no dependencies.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Char boundaries of `s`, including its end.
fn boundaries(s: &str) -> Vec<usize> {
    s.char_indices().map(|(i, _)| i).chain([s.len()]).collect()
}

#[test]
fn mutated_outputs_never_panic() {
    const PIECES: &[&str] = &[
        "<",
        ">",
        "/",
        "=",
        "\n",
        "\"",
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        "\\",
        "null",
        "true",
        "1e400",
        "<tool_call>",
        "</tool_call>",
        "<think>",
        "</think>",
        "<function=",
        "</function>",
        "<parameter=",
        "</parameter>",
        "<function=get_weather>",
        "<parameter=days>",
        "界",
        "😀",
        "\u{0}",
        "é",
        "\u{2028}",
    ];
    let tools = tools();
    let seeds = [HERMES_OK, XML_OK, "<tool_call>\n{\"name\": \"get_order\", \"arguments\": {\"order_id\": \"A1\"}}\n</tool_call>"];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut ok, mut err) = (0usize, 0usize);
    for i in 0..6000 {
        let mut text = seeds[i % seeds.len()].to_string();
        for _ in 0..1 + rng.below(4) {
            let b = boundaries(&text);
            let at = b[rng.below(b.len())];
            match rng.below(4) {
                0 => text.truncate(at),
                1 => text.insert_str(at, PIECES[rng.below(PIECES.len())]),
                2 => {
                    let end = b[rng.below(b.len())].max(at);
                    text.replace_range(at..end, "");
                }
                _ => {
                    let other = b[rng.below(b.len())];
                    let (lo, hi) = (at.min(other), at.max(other));
                    let (head, tail) = (text[..lo].to_string(), text[hi..].to_string());
                    text = format!("{}{}{}", tail, &text[lo..hi], head);
                }
            }
        }
        for format in [ToolCallFormat::Hermes, ToolCallFormat::Qwen3Xml] {
            for t in [None, Some(tools.as_slice())] {
                match parse_assistant_output(&text, format, t) {
                    Ok(out) => {
                        ok += 1;
                        assert!(out.tool_calls.iter().all(|c| !c.name.trim().is_empty()));
                    }
                    Err(e) => {
                        err += 1;
                        assert!(e.offset <= text.len(), "{text:?}: {e}");
                        assert!(text.is_char_boundary(e.offset), "{text:?}: {e}");
                    }
                }
            }
        }
    }
    // Both outcomes occur, so the loop really exercises the error paths and the success paths.
    assert!(ok > 1000 && err > 1000, "ok {ok}, err {err}");
}
