#!/usr/bin/env python3
"""Reference values for the judge's statistics, computed with scipy and scikit-learn.

Writes testdata/judge/stats.json (inputs and expected outputs) plus a small calibration set
(testdata/judge/calib_labels.csv, testdata/judge/calib_judged.jsonl) whose expected report is in
stats.json under "calibration". tests/judge.rs asserts the Rust implementation agrees.

Run from the repository root:  python3 scripts/judge_stats_fixtures.py
"""
import csv
import json

import numpy as np
from scipy import stats
from sklearn.metrics import cohen_kappa_score, confusion_matrix

rng = np.random.default_rng(20261130)
out = {"kappa": [], "correlation": [], "sign_test": []}

# Cohen's kappa: binary, 5-class, and a biased rater.
for n, k, flip in [(40, 2, 0.2), (60, 5, 0.35), (25, 2, 0.5)]:
    a = rng.integers(0, k, n)
    b = np.where(rng.random(n) < flip, rng.integers(0, k, n), a)
    out["kappa"].append({"a": a.tolist(), "b": b.tolist(), "kappa": cohen_kappa_score(a, b)})

# Pearson and Spearman, with ties (integer scales) and without.
for n, tied in [(30, True), (50, False), (12, True)]:
    x = rng.integers(1, 6, n).astype(float) if tied else rng.normal(size=n)
    y = x * 0.6 + rng.normal(size=n)
    if tied:
        y = np.round(y)
    out["correlation"].append({
        "x": x.tolist(), "y": y.tolist(),
        "pearson": stats.pearsonr(x, y).statistic,
        "spearman": stats.spearmanr(x, y).statistic,
    })

# The exact two-sided binomial (sign) test at p = 0.5.
for k, n in [(35, 36), (1, 36), (10, 30), (0, 5), (7, 20), (60, 100), (3, 3), (1000, 1900), (15, 30)]:
    out["sign_test"].append({"k": k, "n": n, "p": stats.binomtest(k, n, 0.5, alternative="two-sided").pvalue})

# An end-to-end calibration set: 40 judged records, human binary labels, two intents.
ids = [f"cal-{i:03d}" for i in range(40)]
intents = ["product_qa" if i % 3 else "after_sales" for i in range(40)]
truth = rng.integers(0, 2, 40)
score = np.clip(truth * 0.3 + rng.random(40) * 0.6, 0, 1).round(3)
score[5] = 0.5  # exactly at the threshold counts as positive
with open("testdata/judge/calib_labels.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["id", "label", "intent"])
    for i in range(40):
        w.writerow([ids[i], int(truth[i]), intents[i]])
with open("testdata/judge/calib_judged.jsonl", "w") as f:
    for i in range(40):
        rec = {"id": ids[i], "task": {"intent": intents[i]}, "messages": [],
               "scores": {"accuracy": float(score[i]), "judge": "fixture"}}
        f.write(json.dumps(rec, ensure_ascii=False) + "\n")
pred = (score >= 0.5).astype(int)


def block(mask):
    t, p, s = truth[mask], pred[mask], score[mask]
    return {"n": int(mask.sum()), "agreement": float((t == p).mean()),
            "kappa": cohen_kappa_score(t, p), "spearman": stats.spearmanr(s, t).statistic,
            "pearson": stats.pearsonr(s, t).statistic}


mask_all = np.ones(40, bool)
out["calibration"] = {
    "threshold": 0.5,
    "overall": block(mask_all),
    "confusion": confusion_matrix(truth, pred, labels=[0, 1]).tolist(),
    "by_intent": {k: block(np.array([x == k for x in intents])) for k in ["after_sales", "product_qa"]},
}

with open("testdata/judge/stats.json", "w") as f:
    json.dump(out, f, default=float)
    f.write("\n")
print("wrote testdata/judge/stats.json, calib_labels.csv, calib_judged.jsonl")
