"""What a free-running probe's opening said, read against its record — shared by pair.py, by_function.py
and drift.py: the tool name said, and whether it is the asked one, another listed, or listed nowhere."""
import json, re

# run.sh's probe sets and the row files beside them
ROW_FILES = {"heldout": "eval.jsonl", "train-syllables": "dev.jsonl"}

def records(path):
    return {r["id"]: r for r in map(json.loads, open(path))}

def name_said(decision):
    m = re.search(r'"name": "([^"]*)"', decision["said"])
    return m and m.group(1)

def asked_name(record):
    return record["messages"][-1]["tool_calls"][0]["function"]["name"]

def listed_names(record):
    return [t["function"]["name"] for t in record["tools"]]

def sort_name(record, name):
    """"asked", "another listed" or "listed nowhere"."""
    return "asked" if name == asked_name(record) else "another listed" if name in listed_names(record) else "listed nowhere"
