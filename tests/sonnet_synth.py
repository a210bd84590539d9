"""Synthetic sonnets for checking the sonnet rules without published runs.

`poems(n, seed)` builds poems from the CMU dictionary: 14 lines of about ten syllables
whose end words follow ABAB CDCD EFEF GG, then roughs each one up at random the ways
model output varies: a broken or slant rhyme, a short or long line, a title, blank
lines, labels like `(A)`, trailing punctuation, hyphenated and dashed end words, curly
quotes, words missing from the dictionary, a line of hyphens. Deterministic per seed.
"""

from __future__ import annotations

import random
import re

import pronouncing

SCHEME = "ABABCDCDEFEFGG"
_WORD = re.compile(r"^[a-z]{2,9}$")


def _vocabulary() -> tuple[list[str], dict[str, list[str]]]:
    pronouncing.init_cmu()
    words = sorted({w for w in pronouncing.lookup if _WORD.match(w)})
    groups: dict[str, list[str]] = {}
    for part, members in pronouncing.rhyme_lookup.items():
        usable = sorted({m for m in members if _WORD.match(m)})
        if len(usable) >= 3:
            groups[part] = usable
    return words, groups


def _syllables(word: str) -> int:
    phones = pronouncing.phones_for_word(word)
    return pronouncing.syllable_count(phones[0]) if phones else 1


def _line(rng: random.Random, words: list[str], end: str, target: int) -> str:
    out = [end]
    count = _syllables(end)
    while count < target:
        word = rng.choice(words)
        if count + _syllables(word) > target:
            continue
        out.insert(0, word)
        count += _syllables(word)
    return " ".join(out)


def _roughen(rng: random.Random, lines: list[str], words: list[str]) -> list[str]:
    lines = list(lines)
    for _ in range(rng.randint(0, 4)):
        i = rng.randrange(len(lines))
        kind = rng.randrange(12)
        if kind == 0:  # a broken rhyme
            lines[i] = " ".join([*lines[i].split()[:-1], rng.choice(words)])
        elif kind == 1:
            lines[i] += rng.choice([",", ".", ";", "!", "?", ":", "—", "...", '"', "'"])
        elif kind == 2:
            lines[i] += f" ({SCHEME[i % len(SCHEME)]})"
        elif kind == 3:
            lines[i] = lines[i].replace(" ", "-", 1)[::-1].replace(" ", "-", 1)[::-1]
        elif kind == 4:
            lines[i] = lines[i].replace(" ", " zorblaxian ", 1)
        elif kind == 5:
            lines[i] += " " + rng.choice(words)
        elif kind == 6:
            lines[i] = " ".join(lines[i].split()[1:])
        elif kind == 7:
            lines[i] = lines[i].capitalize() + "’s"
        elif kind == 8:
            lines.insert(0, rng.choice(["**A Sonnet**", "Title: Dawn", "# Night", "Ode"]))
        elif kind == 9:
            lines.insert(rng.randrange(len(lines)), rng.choice(["", "  ", "...", "----"]))
        elif kind == 10:
            lines[i] = lines[i] + " " + "— " + rng.choice(words)
        else:
            del lines[i]
    return lines


def poems(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    words, groups = _vocabulary()
    parts = sorted(groups)
    out = []
    for _ in range(n):
        ends: dict[str, list[str]] = {}
        for letter in dict.fromkeys(SCHEME):
            ends[letter] = rng.sample(groups[rng.choice(parts)], SCHEME.count(letter))
        used = {letter: 0 for letter in ends}
        lines = []
        for letter in SCHEME:
            end = ends[letter][used[letter]]
            used[letter] += 1
            lines.append(_line(rng, words, end, rng.choice([9, 10, 10, 10, 11, 12])))
        out.append("\n".join(_roughen(rng, lines, words)))
    return out
