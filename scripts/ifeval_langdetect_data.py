#!/usr/bin/env python3
"""Write src/judge/ifeval/langdetect_profiles.txt from the installed `langdetect` package.

IFEval's `language:response_language`, `change_case:english_capital` and
`change_case:english_lowercase` call `langdetect.detect`. The Rust port
(src/judge/ifeval/langdetect.rs) replays langdetect's algorithm, so it needs the same 55
language profiles (character 1-3-gram counts, Apache-2.0, from Shuyo's language-detection)
and the normalisation tables langdetect keeps in `utils/messages.properties`.

  pip install langdetect==1.0.9
  python3 scripts/ifeval_langdetect_data.py > src/judge/ifeval/langdetect_profiles.txt

Languages are written in `os.listdir` order of the machine that made the golden files, because
langdetect indexes its probability vector in that order and float sums follow it.

Format (fields separated by a tab, lines never trimmed):
  [profile]<TAB>NAME<TAB>N1<TAB>N2<TAB>N3   then   NGRAM<TAB>COUNT   lines
  [cjk]      one line per Kanji class; the first character represents the class
  [latin1_exclude] / [vi_chars] / [vi_marks]   one line each
  [vi_normalized]  five lines, for the marks U+0300, U+0301, U+0303, U+0309, U+0323
"""

import json
import os
import sys

import langdetect
from langdetect.utils.ngram import NGram

ORDER = ['pl', 'gu', 'zh-tw', 'fi', 'af', 'ne', 'ro', 'da', 'hr', 'de', 'pa', 'en', 'fa', 'ca',
         'so', 'ja', 'ko', 'es', 'cs', 'ru', 'vi', 'uk', 'bn', 'fr', 'kn', 'hu', 'te', 'lv', 'sk',
         'sl', 'el', 'id', 'it', 'bg', 'ta', 'he', 'sq', 'hi', 'th', 'tr', 'ml', 'mk', 'pt', 'tl',
         'mr', 'sv', 'et', 'nl', 'sw', 'cy', 'no', 'ur', 'lt', 'ar', 'zh-cn']


def clean(s):
    assert "\n" not in s and "\t" not in s and "\r" not in s, repr(s)
    return s


def main():
    directory = os.path.join(os.path.dirname(langdetect.__file__), "profiles")
    assert sorted(ORDER) == sorted(os.listdir(directory))
    out = sys.stdout
    for name in ORDER:
        with open(os.path.join(directory, name), encoding="utf-8") as f:
            profile = json.load(f)
        out.write("[profile]\t%s\t%s\n" % (profile["name"], "\t".join(map(str, profile["n_words"]))))
        for gram, count in sorted(profile["freq"].items()):
            out.write(f"{clean(gram)}\t{count}\n")
    out.write("[cjk]\n")
    out.writelines(clean(c) + "\n" for c in NGram.CJK_CLASS)
    out.write("[latin1_exclude]\n" + clean(NGram.LATIN1_EXCLUDED) + "\n")
    out.write("[vi_chars]\n" + clean(NGram.TO_NORMALIZE_VI_CHARS) + "\n")
    out.write("[vi_marks]\n" + clean(NGram.DMARK_CLASS) + "\n")
    out.write("[vi_normalized]\n")
    out.writelines(clean(c) + "\n" for c in NGram.NORMALIZED_VI_CHARS)


if __name__ == "__main__":
    main()
