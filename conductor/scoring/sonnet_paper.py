"""The paper's sonnet check, re-implemented from its description (for comparison).

What it did: keep lines longer than 3 characters (a trailing "(A)" label removed);
require as many as the scheme has letters; group the end words by scheme letter,
leaving out words not in the CMU dictionary; in a group of two or more distinct
words, a word with no perfect or slant rhyme inside its group is an error when it
has 2+ perfect rhymes among the other groups' words, or 1 perfect and 2+ slant, or
3+ slant; one with just 1 perfect rhyme outside is "suspicious", and suspicious
words become errors once errors and suspicions reach 3. Then every line must allow
10 or 11 syllables. It was called without the required words.

Approximation: the paper counted syllables with three tools (CMU, pyphen,
`syllables`); we use the CMU dictionary and a spelling count (`rhyme.syllable_options`),
so a few borderline lines may differ. No published sonnet transcripts are in
../shared, so this rule is not checked against Table 1 here.
"""

from __future__ import annotations

import re
from functools import cache

from conductor.scoring.rhyme import clean_word, pronouncing_module, pronunciations, syllable_options

ALLOWED_SYLLABLES = frozenset({10, 11})
_CONSONANTS = frozenset("BCDFGHJKLMNPQRSTVWXYZ")
_LABEL = re.compile(r"\s*\([A-Za-z]\)\s*$")


def _lines(poem: str) -> list[str]:
    cleaned = [_LABEL.sub("", line).strip() for line in poem.splitlines()]
    return [line for line in cleaned if len(line) > 3]


@cache
def _slant_parts(word: str) -> frozenset[str]:
    """Rhyming part with vowels blurred: R-coloured vowels -> R, other vowels -> ?"""
    module = pronouncing_module()
    parts = set()
    for phones in pronunciations(word):
        part = "".join(
            "R" if "R" in p else (p if p in _CONSONANTS else "?")
            for p in module.rhyming_part(phones).split()
        )
        if part.strip("?"):
            parts.add(part.replace("?", "") + ("?" if part.endswith("?") else ""))
    return frozenset(parts)


@cache
def _perfect_rhymes(word: str) -> frozenset[str]:
    return frozenset(pronouncing_module().rhymes(word))


def _rhyme_counts(word: str, others: set[str]) -> tuple[int, int]:
    perfect = slant = 0
    for other in others - {word}:
        if other in _perfect_rhymes(word):
            perfect += 1
        elif _slant_parts(other) & _slant_parts(word):
            slant += 1
    return perfect, slant


def scheme_errors(poem: str, scheme: str) -> list[str]:
    lines = _lines(poem)
    scheme = scheme.replace(" ", "")
    if len(lines) != len(scheme):
        return [f"{len(lines)} lines for a {len(scheme)}-line scheme"]
    ends = [clean_word(line.replace("-", " ").split()[-1]) for line in lines]
    groups = [
        [w for w, mark in zip(ends, scheme, strict=True) if mark == letter and pronunciations(w)]
        for letter in sorted(set(scheme))
    ]
    errors: list[str] = []
    suspicious: list[str] = []
    for index, group in enumerate(groups):
        inside = set(group)
        if len(inside) < 2:
            continue
        outside = {w for k, other in enumerate(groups) if k != index for w in other}
        for word in group:
            in_perfect, in_slant = _rhyme_counts(word, inside)
            if in_perfect or in_slant:
                continue
            out_perfect, out_slant = _rhyme_counts(word, outside)
            if out_perfect >= 2 or (out_perfect == 1 and out_slant >= 2) or out_slant >= 3:
                errors.append(word)
            elif out_perfect == 1:
                suspicious.append(word)
    if len(set(errors)) + len(set(suspicious)) >= 3:
        errors += suspicious
    return errors


def _line_syllables(line: str) -> set[int]:
    totals = {0}
    for raw in re.split(r"[ -]+", line):
        word = clean_word(raw)
        if not word:
            continue
        options = syllable_options(word)
        spread = range(min(options), max(options) + 1)
        totals = {t + s for t in totals for s in spread}
    return totals


def passes(poem: str, scheme: str) -> bool:
    if pronouncing_module() is None:
        return False  # the published check needed `pronouncing`; without it, no verdict
    if scheme_errors(poem, scheme):
        return False
    return all(_line_syllables(line) & ALLOWED_SYLLABLES for line in _lines(poem))
