#!/usr/bin/env python3
"""Adds what a fuzzing run found to the committed corpus, at most KEEP files per target.

    scripts/fuzz_corpus.py TARGET [KEEP]     (after `make fuzz`; KEEP defaults to 50)

libFuzzer's own merge keeps every input that adds a feature (hit counts included), hundreds per
target, so this runs the merge only to learn each input's coverage (`-merge_control_file`), then
greedily adds the found input covering the most edges not yet covered by the committed files, until
KEEP files or nothing new. New files are named `found-<sha1 prefix>`; committed ones are never removed.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

target = sys.argv[1]
keep = int(sys.argv[2]) if len(sys.argv) > 2 else 50
committed = f"testdata/fuzz/{target}"
found = f"out/fuzz/corpus/{target}"

with tempfile.TemporaryDirectory() as tmp:
    control, merged = os.path.join(tmp, "merge.ctl"), os.path.join(tmp, "merged")
    os.makedirs(merged)
    subprocess.run(
        ["nice", "-n", "19", f"target/debug/{target}", "-merge=1", "-timeout=10",
         f"-merge_control_file={control}", merged, committed, found],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
    )
    lines = open(control).read().splitlines()
    n = int(lines[0])
    files = lines[2:2 + n]
    edges = {}
    for line in lines[2 + n:]:
        if line.startswith("COV "):
            _, idx, *cov = line.split()
            edges[int(idx)] = set(cov)

covered = set()
for i, path in enumerate(files):
    if path.startswith(committed + "/"):
        covered |= edges.get(i, set())
room = keep - len(os.listdir(committed))
candidates = {i: e for i, e in edges.items() if files[i].startswith(found + "/")}
added = 0
while added < room and candidates:
    best = max(candidates, key=lambda i: (len(candidates[i] - covered), -os.path.getsize(files[i])))
    if not candidates[best] - covered:
        break
    covered |= candidates.pop(best)
    data = open(files[best], "rb").read()
    shutil.copy(files[best], f"{committed}/found-{hashlib.sha1(data).hexdigest()[:12]}")
    added += 1
print(f"{target}: added {added}, {len(os.listdir(committed))} files, {len(covered)} edges covered")
