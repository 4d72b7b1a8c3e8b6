"""Compatibility check of `serve` with the official `openai` Python client.

Run by run.sh (and `make openai-client-test`, which CI runs) against a live server with tiny random
weights. Covers models.list, a plain completion, a streamed one (content identical to the plain greedy
reply, usage chunk), a tool-call round trip (forced with a named tool_choice, which the server honours
by schema-guided decoding; streamed deltas reassembled as the SDK's users do; the tool result sent back),
and typed errors (400 BadRequestError naming the field, 401 AuthenticationError).

Environment: HAT_BASE_URL (e.g. http://127.0.0.1:8123/v1), HAT_API_KEY.
"""

import json
import os
import sys

import openai

BASE = os.environ["HAT_BASE_URL"]
KEY = os.environ.get("HAT_API_KEY", "none")
client = openai.OpenAI(base_url=BASE, api_key=KEY, max_retries=0, timeout=120)

MESSAGES = [
    {"role": "system", "content": "You are a live-stream shopping host."},
    {"role": "user", "content": "Is the red jacket in stock?"},
]
TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_stock",
        "description": "Stock of a product",
        "parameters": {
            "type": "object",
            "properties": {"product_id": {"type": "string"}, "quantity": {"type": "integer"}},
            "required": ["product_id", "quantity"],
        },
    },
}]
FORCED = {"type": "function", "function": {"name": "get_stock"}}


def check(cond, what):
    if not cond:
        print(f"FAIL: {what}", file=sys.stderr)
        sys.exit(1)
    print(f"ok: {what}")


model = client.models.list().data[0].id
check(bool(model), f"models.list -> {model}")

plain = client.chat.completions.create(model=model, messages=MESSAGES, max_tokens=12, temperature=0)
choice = plain.choices[0]
check(isinstance(choice.message.content, str) and choice.finish_reason in ("stop", "length"), "plain completion")
check(plain.usage.completion_tokens >= 1 and plain.usage.total_tokens == plain.usage.prompt_tokens + plain.usage.completion_tokens, "usage")

chunks = list(client.chat.completions.create(model=model, messages=MESSAGES, max_tokens=12, temperature=0,
                                             stream=True, stream_options={"include_usage": True}))
text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
check(text == choice.message.content, "streamed content equals the plain greedy reply")
check(chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == plain.usage.completion_tokens, "usage chunk")

call_resp = client.chat.completions.create(model=model, messages=MESSAGES, tools=TOOLS, tool_choice=FORCED,
                                           max_tokens=200, temperature=0)
msg = call_resp.choices[0].message
check(call_resp.choices[0].finish_reason == "tool_calls" and msg.tool_calls, "forced tool call")
call = msg.tool_calls[0]
args = json.loads(call.function.arguments)
check(call.function.name == "get_stock" and isinstance(args.get("product_id"), str) and isinstance(args.get("quantity"), int),
      f"tool call arguments follow the schema: {call.function.arguments}")

streamed = {}
finish = None
for c in client.chat.completions.create(model=model, messages=MESSAGES, tools=TOOLS, tool_choice=FORCED,
                                        max_tokens=200, temperature=0, stream=True):
    if not c.choices:
        continue
    finish = c.choices[0].finish_reason or finish
    for d in c.choices[0].delta.tool_calls or []:
        entry = streamed.setdefault(d.index, {"id": None, "name": "", "arguments": ""})
        entry["id"] = d.id or entry["id"]
        if d.function and d.function.name:
            entry["name"] += d.function.name
        if d.function and d.function.arguments:
            entry["arguments"] += d.function.arguments
check(finish == "tool_calls" and streamed[0]["name"] == "get_stock" and streamed[0]["id"], "streamed tool-call deltas")
check(streamed[0]["arguments"] == call.function.arguments, "streamed arguments equal the plain call's")

follow = MESSAGES + [
    msg.model_dump(exclude_none=True),
    {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"stock": 3})},
]
final = client.chat.completions.create(model=model, messages=follow, tools=TOOLS, tool_choice="none", max_tokens=12, temperature=0)
check(isinstance(final.choices[0].message.content, str) and not final.choices[0].message.tool_calls, "tool result round trip")

try:
    client.chat.completions.create(model=model, messages=MESSAGES, temperature="hot")
    check(False, "a bad temperature is rejected")
except openai.BadRequestError as e:
    check(e.status_code == 400 and "temperature" in str(e), "400 BadRequestError names the field")

if KEY != "none":
    bad = openai.OpenAI(base_url=BASE, api_key="wrong", max_retries=0)
    try:
        bad.models.list()
        check(False, "a wrong key is rejected")
    except openai.AuthenticationError:
        check(True, "401 AuthenticationError with a wrong key")

print("openai client: all checks passed")
