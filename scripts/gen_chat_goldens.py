#!/usr/bin/env python3
"""Regenerate testdata/chat/cases/*.json: chat-template renders from transformers itself.

Each case file holds {"template": <file in testdata/chat/templates>, "input": {messages, tools,
add_generation_prompt, ...kwargs}, "expected": <apply_chat_template(..., tokenize=False)>} or,
when transformers refuses the input, "error": <its message> instead of "expected".
It also writes testdata/chat/random_cases.jsonl: seeded random conversations (tricky text,
floats, nested arguments, think tags, tool turns) in the same record shape, one per line.
`tests/chat.rs` checks the Rust renderer against every record, byte for byte.

Usage: python3 scripts/gen_chat_goldens.py   (needs transformers, tokenizers, jinja2)
"""
import json
import pathlib
import random
import sys

import transformers
from tokenizers import Tokenizer, models
from transformers import PreTrainedTokenizerFast

ROOT = pathlib.Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "testdata" / "chat" / "templates"
CASES = ROOT / "testdata" / "chat" / "cases"
RANDOM = ROOT / "testdata" / "chat" / "random_cases.jsonl"


def tokenizer(template: str) -> PreTrainedTokenizerFast:
    # A one-word vocabulary is enough: with tokenize=False only the template matters, and a
    # tokenizer without special tokens passes no extra variables to it.
    tok = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    )
    tok.chat_template = (TEMPLATES / template).read_text()
    return tok


# --- building blocks -----------------------------------------------------------------------

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the weather for a city. Units: \"c\" or 'f' <default c> & more\\n",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "城市名称 (city) 🌆"},
                "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
                "days": {"type": "integer", "minimum": 1, "maximum": 14, "default": 3},
            },
            "required": ["city"],
        },
    },
}
SEARCH = {
    "type": "function",
    "function": {
        "name": "search_products",
        "description": "Search the live-room catalog.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "max_price": {"type": ["number", "null"], "default": None, "exclusiveMinimum": 0.0},
                "discount": {"type": "number", "default": 0.15, "multipleOf": 1e-07},
                "in_stock": {"type": "boolean", "default": True},
                "filters": {
                    "type": "object",
                    "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
                    "additionalProperties": False,
                },
                "limit": {"type": "integer", "default": 10, "maximum": 1e16},
            },
            "required": ["query"],
        },
    },
}
ORDER = {
    "type": "function",
    "function": {
        "name": "get_order",
        "description": "Look up an order.",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
    },
}
TOOLS = [WEATHER, SEARCH, ORDER]

SYS = {"role": "system", "content": "You are a live-stream shopping host. Be brief."}


def user(text):
    return {"role": "user", "content": text}


def assistant(content, **extra):
    return {"role": "assistant", "content": content, **extra}


def call(name, arguments, call_id="call_1"):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def tool(content, call_id="call_1", name=None):
    msg = {"role": "tool", "tool_call_id": call_id, "content": content}
    if name:
        msg["name"] = name
    return msg


RICH_ARGS = {
    "query": "羽绒服 \"连帽\" <M> & 'L' \\ 😀",
    "max_price": 299.0,
    "discount": 1e-07,
    "in_stock": True,
    "filters": {"tags": ["新品", "sale"], "nested": {"a": None, "b": [1, 2.5, -0.0, 1e16, 12345678901234567890]}},
    "limit": 3,
}
WEATHER_CALL = call("get_weather", {"city": "Paris", "unit": "c", "days": 2})
TOOL_TURN = [
    SYS,
    user("What's the weather in Paris?"),
    assistant("", tool_calls=[WEATHER_CALL]),
    tool('{"temp": 21.5, "sky": "sunny"}'),
    assistant("It is 21.5°C and sunny in Paris."),
]

FEATURE_DATA = {
    "i": 42, "f": 2.5, "tiny": 1e-07, "huge": 1e22, "neg": -0.0, "t": True, "n": None,
    "text": "Héllo 世界 😀 <&>'\"\\", "spaced": "  a b\t c  ", "list": [3, 1, 2],
    "empty_list": [], "empty_map": {}, "zero": 0,
    "nested": {"b": [1, {"x": None}], "a": "é"},
    "people": [
        {"name": "ann", "age": 30, "admin": False},
        {"name": "bob", "age": 19, "admin": True},
        {"name": "cy", "age": 25, "admin": False},
    ],
}


def case(template, messages, tools=None, add_generation_prompt=False, **kwargs):
    return {"template": template, "input": {"messages": messages, "tools": tools,
                                            "add_generation_prompt": add_generation_prompt, **kwargs}}


def qwen3(*a, **k):
    return case("qwen3.jinja", *a, **k)


def xml(*a, **k):
    return case("xml_tools.jinja", *a, **k)


CASE_LIST = {
    # --- Qwen3: plain chat ---
    "qwen3_user_only_gen": qwen3([user("Hi!")], add_generation_prompt=True),
    "qwen3_system_user_gen": qwen3([SYS, user("Is the red dress in stock?")], add_generation_prompt=True),
    "qwen3_no_gen_prompt": qwen3([SYS, user("Hi"), assistant("Hello! How can I help?")]),
    "qwen3_thinking_off": qwen3([SYS, user("Hi")], add_generation_prompt=True, enable_thinking=False),
    "qwen3_thinking_on_explicit": qwen3([user("Hi")], add_generation_prompt=True, enable_thinking=True),
    "qwen3_multi_turn_no_system": qwen3([user("A?"), assistant("a."), user("B?"), assistant("b."), user("C?")],
                                        add_generation_prompt=True),
    "qwen3_system_in_middle": qwen3([user("Hi"), {"role": "system", "content": "New rule: no emoji."}, user("Again")],
                                    add_generation_prompt=True),
    "qwen3_unicode_and_escapes": qwen3([
        {"role": "system", "content": "规则: 回答要简短 ✅ <b>bold</b> & 'quotes' \"double\" \\back\\slash {{ not_jinja }}"},
        user("这件衣服多少钱？🛍️ Tab\there\nnew line"),
        assistant("¥199 — 限时折扣 🎉 </tool_call> C:\\path\\"),
    ]),
    "qwen3_extra_fields_and_kwargs": qwen3([{"role": "user", "content": "Hi", "name": "viewer_1", "meta": {"x": 1}}],
                                           add_generation_prompt=True, custom_flag=True, date_string="2026-11-30"),
    # --- Qwen3: reasoning ---
    "qwen3_reasoning_content_last_turn": qwen3([user("2+2?"), assistant("4", reasoning_content="Add two and two.")]),
    "qwen3_reasoning_dropped_earlier_turn": qwen3([
        user("2+2?"), assistant("4", reasoning_content="Add two and two."), user("3+3?"),
        assistant("6", reasoning_content="Add three and three.")]),
    "qwen3_inline_think": qwen3([user("Hi"), assistant("<think>\nThe user greets.\n</think>\n\nHello!")]),
    "qwen3_inline_think_earlier_turn": qwen3([
        user("Hi"), assistant("<think>\ngreeting\n</think>\n\nHello!"), user("Bye")], add_generation_prompt=True),
    "qwen3_inline_think_odd_newlines": qwen3([user("Q"), assistant("\n\n<think>\n\n\nthoughts\n\n</think>\n\n\n\nanswer\n")]),
    "qwen3_empty_reasoning_content": qwen3([user("Q"), assistant("A", reasoning_content="")]),
    "qwen3_reasoning_null_uses_inline": qwen3([user("Q"), assistant("<think>x</think>A", reasoning_content=None)]),
    "qwen3_thinking_field_alias": qwen3([user("Q"), assistant("A", thinking="via thinking")]),
    "qwen3_reasoning_field_alias": qwen3([user("Q"), assistant("A", reasoning="via reasoning")]),
    # --- Qwen3: tools ---
    "qwen3_tools_no_system": qwen3([user("Weather in Paris?")], tools=[WEATHER], add_generation_prompt=True),
    "qwen3_tools_with_system": qwen3([SYS, user("Find jackets")], tools=TOOLS, add_generation_prompt=True),
    "qwen3_tools_empty_list": qwen3([SYS, user("Hi")], tools=[], add_generation_prompt=True),
    "qwen3_tool_call_dict_args": qwen3(TOOL_TURN, tools=[WEATHER]),
    "qwen3_tool_call_string_args": qwen3([
        user("Weather?"),
        assistant("", tool_calls=[call("get_weather", "{\"city\": \"Zürich\", \"note\": \"a\\\\b \\\"q\\\" <&>\"}")]),
        tool("rain")], tools=[WEATHER], add_generation_prompt=True),
    "qwen3_tool_call_with_content_and_reasoning": qwen3([
        SYS, user("Find a jacket under 300"),
        assistant("Let me search the catalog.", reasoning_content="Need search_products.",
                  tool_calls=[call("search_products", RICH_ARGS)]),
        tool('[{"id": "p1", "price": 259.0}]'),
        assistant("Found one for ¥259.", reasoning_content="p1 fits.")], tools=TOOLS),
    "qwen3_parallel_calls_consecutive_tools": qwen3([
        user("Weather in Paris and Tokyo, and my order A1?"),
        assistant("", tool_calls=[
            call("get_weather", {"city": "Paris"}, "c1"),
            call("get_weather", {"city": "東京"}, "c2"),
            call("get_order", "{\"order_id\": \"A1\"}", "c3")]),
        tool("sunny", "c1"), tool("雨", "c2"), tool('{"status": "shipped", "eta_days": 2}', "c3")],
        tools=TOOLS, add_generation_prompt=True),
    "qwen3_multi_step_tools_reasoning_kept": qwen3([
        user("Order A1 status, then weather at destination"),
        assistant("", reasoning_content="First the order.", tool_calls=[call("get_order", {"order_id": "A1"})]),
        tool('{"city": "Lyon"}'),
        assistant("", reasoning_content="Now weather.", tool_calls=[call("get_weather", {"city": "Lyon"}, "c2")]),
        tool("cloudy", "c2"),
        assistant("Shipped to Lyon, where it is cloudy.", reasoning_content="Done.")], tools=TOOLS),
    "qwen3_user_tool_response_lookalike": qwen3([
        user("Real question"), assistant("", reasoning_content="r1", tool_calls=[WEATHER_CALL]),
        user("<tool_response>\nmanual result\n</tool_response>"),
        assistant("Answer", reasoning_content="r2")], tools=[WEATHER]),
    "qwen3_tool_call_without_function_wrapper": qwen3([
        user("Q"), assistant("", tool_calls=[{"name": "get_order", "arguments": {"order_id": "B2", "flag": False}}]),
        tool("ok")], tools=[ORDER], add_generation_prompt=True, enable_thinking=False),
    "qwen3_tool_result_last_no_gen": qwen3([user("Q"), assistant("", tool_calls=[WEATHER_CALL]), tool("sunny")],
                                           tools=[WEATHER]),
    "qwen3_args_scalars_and_nesting": qwen3([
        user("Q"),
        assistant("", tool_calls=[call("search_products", {
            "ints": [0, -1, 9007199254740993], "floats": [1.0, 0.5, 3.14159, 1e-05, 0.0001, 1.5e300, 2e-308],
            "bools": [True, False], "none": None, "empty": {"l": [], "d": {}, "s": ""},
            "deep": {"a": {"b": {"c": [{"d": "e"}]}}}, "ctrl": "\u0001\u001f\u007f\u2028\ufeff"})])],
        tools=[SEARCH]),
    # --- Qwen3: inputs transformers rejects ---
    "qwen3_error_content_missing": qwen3([user("Q"), {"role": "assistant", "content": None}]),
    # --- continue_final_message (prefill) ---
    "qwen3_continue_content": qwen3([user("Name a colour"), assistant("The colour is ")],
                                    continue_final_message=True),
    "qwen3_error_continue_list_content": qwen3([user("Q"), {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "Well,  "}]}],
                                            continue_final_message=True),
    "qwen3_continue_reasoning": qwen3([user("Q"), assistant("", reasoning_content="Let me think")],
                                      continue_final_message="reasoning_content"),
    "qwen3_error_continue_with_gen_prompt": qwen3([user("Q"), assistant("A")], continue_final_message=True,
                                                  add_generation_prompt=True),
    "xml_continue_trimmed": xml([user("Q"), assistant("Sure thing   ")], continue_final_message=True),
    # --- XML (Qwen3.5-style) template ---
    "xml_tools_gen_thinking": xml([SYS, user("找一件夹克")], tools=TOOLS, add_generation_prompt=True),
    "xml_tools_gen_no_thinking": xml([user("Hi")], tools=[WEATHER], add_generation_prompt=True, enable_thinking=False),
    "xml_tool_calls_typed_args": xml([
        SYS, user("Find a jacket"),
        assistant("Searching now.", reasoning_content="\nuse search\n",
                  tool_calls=[call("search_products", RICH_ARGS), call("get_order", "{\"order_id\": \"A1\"}", "c2")]),
        tool('[{"id": "p1"}]'), tool("shipped", "c2"),
        assistant("<think>\nsummarise\n</think>\n\nFound p1; your order shipped.")], tools=TOOLS),
    "xml_history_reasoning_dropped": xml([
        user("A"), assistant("<think>old</think>a"), user("B"), assistant("b", reasoning_content="new")]),
    "xml_no_tools_system_trimmed": xml([{"role": "system", "content": "  spaced system \n"}, user(" hi ")],
                                       add_generation_prompt=True),
    "xml_error_bad_role": xml([user("Hi"), {"role": "critic", "content": "??"}]),
    "xml_error_no_messages": xml([]),
    # --- Python/Jinja feature coverage ---
    "features_mixed_data": case("features.jinja", [user("x")], d=FEATURE_DATA),
}


# --- seeded random conversations ---------------------------------------------------------

PIECES = ["hello", "价格", "😀", " ", "  ", "\n", "\n\n", "\t", "<", ">", "&", "'", "\"", "\\", "{{ x }}",
          "<think>", "</think>", "<tool_response>", "</tool_response>", "\u2028", "\x01", "\x1c", "\u00a0",
          "1.0", "None", "é", "<|im_end|>"]
FLOATS = [0.0, -0.0, 1.0, 0.1, 1e-7, 1e-5, 1e-4, 1e16, 1e15, 1.5e300, 5e-324, 123456789.125, 2.5, -3.75]


def rand_text(rng, n=6):
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, n)))


def rand_value(rng, depth=0):
    kind = rng.randint(0, 8 if depth < 3 else 5)
    if kind == 0:
        return rng.randint(-10**6, 10**6)
    if kind == 1:
        return rng.choice(FLOATS)
    if kind == 2:
        return rng.uniform(-1, 1) * 10 ** rng.randint(-12, 22)
    if kind == 3:
        return rng.choice([True, False, None])
    if kind in (4, 5):
        return rand_text(rng, 4)
    if kind in (6, 7):
        return {rand_text(rng, 2) or "k": rand_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}
    return [rand_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]


def rand_call(rng, i):
    name = rng.choice(["get_weather", "search_products", "get_order"])
    args = {rng.choice(["city", "query", "limit", "filters", "x"]) + str(j): rand_value(rng) for j in range(rng.randint(0, 4))}
    if rng.random() < 0.3:
        args = json.dumps(args, ensure_ascii=rng.random() < 0.5)
    c = call(name, args, f"c{i}")
    return c if rng.random() < 0.8 else c["function"]


def rand_conversation(rng):
    msgs = []
    if rng.random() < 0.5:
        msgs.append({"role": "system", "content": rand_text(rng)})
    for _ in range(rng.randint(1, 3)):
        msgs.append(user(rand_text(rng) if rng.random() < 0.9 else "<tool_response>" + rand_text(rng) + "</tool_response>"))
        for _ in range(rng.randint(0, 2)):
            content = rand_text(rng)
            if rng.random() < 0.3:
                content = "<think>" + rand_text(rng) + "</think>" + content
            extra = {}
            r = rng.random()
            if r < 0.3:
                extra["reasoning_content"] = rand_text(rng)
            elif r < 0.4:
                extra["reasoning_content"] = None
            if rng.random() < 0.5:
                extra["tool_calls"] = [rand_call(rng, i) for i in range(rng.randint(1, 3))]
                msgs.append(assistant(content, **extra))
                for i in range(rng.randint(1, 3)):
                    msgs.append(tool(rand_text(rng), f"c{i}"))
            else:
                msgs.append(assistant(content, **extra))
    tools = rng.choice([None, [], [WEATHER], TOOLS, [{"type": "function", "function": {"name": "t", "parameters": rand_value(rng)}}]])
    kwargs = {}
    if rng.random() < 0.5:
        kwargs["enable_thinking"] = rng.choice([True, False, None, "false"])
    return msgs, tools, rng.random() < 0.5, kwargs


def random_cases(count=240, seed=20261130):
    rng = random.Random(seed)
    for i in range(count):
        msgs, tools, agp, kwargs = rand_conversation(rng)
        template = "qwen3.jinja" if i % 2 == 0 else "xml_tools.jinja"
        yield case(template, msgs, tools=tools, add_generation_prompt=agp, **kwargs)


def render_record(spec):
    inp = spec["input"]
    kwargs = {k: v for k, v in inp.items() if k not in ("messages", "tools", "add_generation_prompt")}
    record = {"template": spec["template"], "input": inp, "transformers": transformers.__version__}
    try:
        record["expected"] = tokenizer(spec["template"]).apply_chat_template(
            inp["messages"], tools=inp["tools"], add_generation_prompt=inp["add_generation_prompt"],
            tokenize=False, **kwargs)
    except Exception as e:  # the Rust renderer must refuse the same inputs
        record["error"] = f"{type(e).__name__}: {e}"
    return record


def main() -> int:
    CASES.mkdir(parents=True, exist_ok=True)
    for old in CASES.glob("*.json"):
        old.unlink()
    for name, spec in CASE_LIST.items():
        record = render_record(spec)
        (CASES / f"{name}.json").write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n")
    print(f"wrote {len(CASE_LIST)} cases to {CASES}", file=sys.stderr)
    # Random conversations: one JSON record per line.
    with open(RANDOM, "w") as f:
        for spec in random_cases():
            f.write(json.dumps(render_record(spec), ensure_ascii=False) + "\n")
    print(f"wrote random cases to {RANDOM}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
