"""Pronunciation helpers for the sonnet scorers: rhymes and syllables.

Rhymes come from the CMU pronouncing dictionary through the `pronouncing` package
(extra `scorers`): two words rhyme when some pronunciation of each has the same
sounds from its last stressed vowel on (stress marks ignored). A word the dictionary
lacks (or every word, when `pronouncing` is not installed) falls back to spelling:
the letters from its last vowel group on, a silent final `e` kept with the vowel
before it (`thrive`/`alive` -> `ive`, `day`/`away` -> `ay`).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

_VOWELS = "aeiouy"
_WORD_EDGES = ",.!?;:\"'[]()/“”‘’*_-—–`"


@cache
def pronouncing_module() -> Any | None:
    try:
        import pronouncing
    except ImportError:
        return None
    pronouncing.init_cmu()
    return pronouncing


def clean_word(text: str) -> str:
    return text.lower().strip(_WORD_EDGES + " ")


def last_word(line: str) -> str:
    """The word a line ends on (of a hyphenated word, its last part)."""
    parts = [clean_word(p) for p in re.split(r"[\s\-—–]+", line)]
    parts = [p for p in parts if p]
    return parts[-1] if parts else ""


def pronunciations(word: str) -> list[str]:
    module = pronouncing_module()
    if module is None or not word:
        return []
    phones = module.phones_for_word(word)
    if not phones and word.endswith("'s"):
        phones = module.phones_for_word(word[:-2])
    return list(phones)


def spelling_key(word: str) -> str:
    """The letters that rhyme by spelling: from the last vowel group to the end."""
    word = re.sub(r"[^a-z]", "", word.lower())
    if not word:
        return ""
    stem, tail = word, ""
    if len(word) > 2 and word.endswith("e") and word[-2] not in _VOWELS:
        stem, tail = word[:-1], "e"  # silent e: "thrive" rhymes on "ive"
    match = re.search(rf"[{_VOWELS}]+[^{_VOWELS}]*$", stem)
    return (match.group(0) if match else stem) + tail


@cache
def sound_keys(word: str) -> frozenset[str]:
    """The rhyming sounds of every pronunciation of `word` (empty when unknown)."""
    module = pronouncing_module()
    if module is None:
        return frozenset()
    return frozenset(
        re.sub(r"\d", "", module.rhyming_part(phones)) for phones in pronunciations(word)
    )


def rhyme(a: str, b: str) -> bool:
    """Whether two (cleaned) words rhyme. A word does not rhyme with itself."""
    if not a or not b or a == b:
        return False
    keys_a, keys_b = sound_keys(a), sound_keys(b)
    if keys_a and keys_b:
        return bool(keys_a & keys_b)
    return spelling_key(a) == spelling_key(b)


def spelled_syllables(word: str) -> int:
    """A rough syllable count from spelling: vowel groups, less a silent final e."""
    word = re.sub(r"[^a-z]", "", word.lower())
    groups = len(re.findall(rf"[{_VOWELS}]+", word))
    if word.endswith("e") and not word.endswith(("le", "ee", "ye")) and groups > 1:
        groups -= 1
    return max(groups, 1) if word else 0


def syllable_options(word: str) -> set[int]:
    """Every plausible syllable count of a word: the dictionary's and by spelling."""
    module = pronouncing_module()
    counts = {module.syllable_count(p) for p in pronunciations(word)} if module else set()
    counts.add(spelled_syllables(word))
    counts.discard(0)
    return counts or {0}
