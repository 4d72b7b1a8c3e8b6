#!/usr/bin/env python3
"""How far surface statistics of the viewer's message go towards picking the right tool on held-out tasks.

A naive Bayes classifier over the character 1-3-grams of each task's last viewer message is trained on
the training tasks' expected (skill, tool) and scored like `teacher-distill eval`'s "right tool": the
share of held-out tasks that expect a tool whose first expected tool it names. Dev tasks are phrased with
templates training never saw (`sim::phrasing`), so this is a reference point for what a model that
learns keyword statistics from the same messages, and nothing else, can reach.

    hat sim tasks --n 4800 --split train --viewers-per-room 16 --seed 1 -o /tmp/train.jsonl
    hat sim tasks --n 400 --split dev --seed 1 -o /tmp/dev.jsonl
    python3 scripts/surface_ceiling.py /tmp/train.jsonl /tmp/dev.jsonl
"""
import collections
import json
import math
import sys


def load(path):
    """(message without the viewer's name, expected (skill, first tool or None)) per task."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            task = json.loads(line)
            expected = task["task"].get("expected") or {}
            calls = expected.get("tool_calls") or []
            message = task["messages"][-1]["content"]
            for sep in ("：", ": "):
                message = message.split(sep, 1)[-1]
            rows.append((message, (expected.get("skill"), calls[0]["tool"] if calls else None)))
    return rows


def grams(text):
    text = text.lower()
    return {text[i : i + n] for n in (1, 2, 3) for i in range(len(text) - n + 1)}


def main(train_path, dev_path):
    train, dev = load(train_path), load(dev_path)
    label_count = collections.Counter(label for _, label in train)
    gram_count = collections.defaultdict(collections.Counter)
    for message, label in train:
        gram_count[label].update(grams(message))

    def predict(message):
        # Bernoulli-style naive Bayes over present grams, add-0.1 smoothing.
        def score(label):
            n = label_count[label]
            return math.log(n) + sum(math.log((gram_count[label][g] + 0.1) / (n + 0.2)) for g in grams(message))

        return max(label_count, key=score)

    per_tool = collections.defaultdict(lambda: [0, 0])
    for message, (skill, tool) in dev:
        if tool is None:
            continue
        per_tool[tool][0] += predict(message)[1] == tool
        per_tool[tool][1] += 1
    right, total = (sum(v[i] for v in per_tool.values()) for i in (0, 1))
    marginal = max(per_tool.values(), key=lambda v: v[1])[1]
    print(f"right tool on {total} dev tool tasks: {right / total:.3f} (always the commonest tool: {marginal / total:.3f})")
    for tool, (ok, n) in sorted(per_tool.items(), key=lambda kv: -kv[1][1]):
        print(f"  {tool:28} {ok:4}/{n:<4} {ok / n:.2f}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
