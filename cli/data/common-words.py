"""Writes common-words.txt: the English words `ctxkit skills validate` calls common.

The words are wordfreq's 20,000 most frequent English words (wordfreq 3.1.1, the `large`
list) that are also in SCOWL's size-35 English dictionary (Debian's `scowl` package,
english-words.10, .20 and .35), in wordfreq's order, most frequent first. The dictionary
keeps out what the web makes frequent but no everyday sentence holds (api, sql, pdf, git).

    pip install wordfreq==3.1.1 && apt-get install scowl
    python3 cli/data/common-words.py > cli/data/common-words.txt
"""

import wordfreq

N = 20_000
DICTIONARY = [f"/usr/share/dict/scowl/english-words.{size}" for size in (10, 20, 35)]

words = set()
for path in DICTIONARY:
    with open(path, encoding="latin-1") as f:
        words.update(f.read().split())

print(f"# The English words among wordfreq 3.1.1's {N:,} most frequent (large list)")
print("# that SCOWL's size-35 English dictionary holds, most frequent first; made by common-words.py.")
print("# Derived from wordfreq's data (https://github.com/rspeer/wordfreq), CC BY-SA 4.0: this file")
print("# (not the code that reads it) is under that license. SCOWL: Copyright 2000-2011 Kevin")
print("# Atkinson, used under its permission notice (any purpose, notice kept).")
for word in wordfreq.top_n_list("en", N, wordlist="large"):
    if word in words:
        print(word)
