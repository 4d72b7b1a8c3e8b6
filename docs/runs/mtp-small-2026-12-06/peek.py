# The first N replay requests against a running serve, greedy: intent, viewer line, reply, calls.
#   python3 peek.py PORT N   (from the repository root)
import json, sys, urllib.request
port, n = sys.argv[1], int(sys.argv[2])
model = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models"))["data"][0]["id"]
rows = [json.loads(l) for l in open('testdata/replay/default.jsonl')][:n]
for r in rows:
    body = dict(r["request"], model=model, max_tokens=64, temperature=0)
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    d = json.load(urllib.request.urlopen(req))
    m = d["choices"][0]["message"]
    print(r["task"]["intent"], "|", r["messages"][-1]["content"][:40], "|", repr((m.get("content") or "")[:120]), [(c["function"]["name"], c["function"]["arguments"]) for c in (m.get("tool_calls") or [])], d["usage"]["completion_tokens"])
