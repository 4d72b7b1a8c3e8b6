#!/usr/bin/env python3
"""How far surface features of the viewer messages go on the held-out dev split: a character n-gram
logistic regression that reads every viewer message of a task and predicts its first expected tool
(what `teacher-distill eval`'s "right tool" asks for), trained on growing numbers of train tasks and
scored on dev tool tasks, next to the majority-class baseline.

Why: dev and test tasks use phrasing templates and products that training never sees (src/sim/phrasing.rs,
`Split::of_index`). A model trained from scratch on the simulator's text — the embedded `tiny` — can only
learn surface cues of the training phrasings; this ceiling shows how much of the dev split those cues
decide, independently of model size or training time.

Usage:
    hat sim tasks --n 6000 --split train --seed 3 -o /tmp/tasks.train.jsonl
    hat sim tasks --n 400 --split dev --seed 1 -o /tmp/tasks.dev.jsonl
    python3 scripts/dev_split_ceiling.py /tmp/tasks.train.jsonl /tmp/tasks.dev.jsonl
Needs scikit-learn.
"""
import collections
import json
import sys

from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression


def load(path):
    """(viewer messages joined, first expected tool or '-') per task."""
    texts, tools = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            task = json.loads(line)
            users = [m["content"] for m in task["messages"] if m["role"] == "user"]
            calls = task["task"]["expected"].get("tool_calls") or []
            texts.append(" | ".join(users))
            tools.append(calls[0]["tool"] if calls else "-")
    return texts, tools


def main(train_path, dev_path):
    x, y = load(train_path)
    xd, yd = load(dev_path)
    tool_tasks = [i for i, t in enumerate(yd) if t != "-"]
    majority, count = collections.Counter(yd[i] for i in tool_tasks).most_common(1)[0]
    print(f"dev tool tasks: {len(tool_tasks)}; majority tool {majority}: {count / len(tool_tasks):.3f}")
    n = 600
    while True:
        n = min(n, len(x))
        vec = CountVectorizer(analyzer="char", ngram_range=(1, 3))
        clf = LogisticRegression(max_iter=3000).fit(vec.fit_transform(x[:n]), y[:n])
        pred = clf.predict(vec.transform(xd))
        right = sum(pred[i] == yd[i] for i in tool_tasks) / len(tool_tasks)
        print(f"train tasks {n}: first tool right on dev tool tasks {right:.3f}")
        if n == len(x):
            break
        n *= 2


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
