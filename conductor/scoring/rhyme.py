"""Our rhyme rule for the sonnet scorer: rhyme, slant rhyme, or none, as a reader hears it.

Pronunciations come from the CMU dictionary (`pronouncing`). For every pronunciation
of each word we take the rhyming part (the last stressed vowel to the end), with stress
marks dropped and a vowel followed by an unstressed ER written as vowel + R (`fire`
is F AY ER or F AY R; both end AY R). Then, trying every pair of pronunciations:

* **rhyme**: the rhyming parts are the same (different words: homophones count).
* **slant**, when the stressed vowels agree or are near (IH/IY, EH/IH, UH/UW/AO, ER
  and the other vowels, before R; AA/AO, UH/UW anywhere) and the sounds after them
  agree up to voicing (S/Z, T/D, F/V, ...), nasal place (M/N/NG), or one added final
  S/Z/T/D (`calls`/`fall`); or when a stressed open or closed syllable equals the
  unstressed last syllable of the other word (`see`/`destiny`, a light rhyme); or for
  a traditional eye rhyme: the same spelled ending and the same final consonant
  (`love`/`prove`, `heaven`/`even`).
* otherwise **none**. A word never rhymes with itself.

A word missing from the dictionary falls back to spelling: the letters from its last
vowel group on (a silent final `e` kept) must match, which counts as a rhyme.
tests/data/rhyme_pairs.tsv holds the hand-labelled pairs this is measured against
(docs/scoring.md gives the agreement).
"""

from __future__ import annotations

import re
from functools import cache
from itertools import product
from typing import Any, Literal

from conductor.scoring import deps

RhymeKind = Literal["rhyme", "slant"]
_VOWELS = "aeiouy"
_WORD_EDGES = ",.!?;:\"'[]()/“”‘’*_-—–`"
_PHONE_VOWELS = frozenset(
    ["AA", "AE", "AH", "AO", "AW", "AY", "EH", "ER", "EY", "IH", "IY", "OW", "OY", "UH", "UW"]
)
_VOICING = {"S": "Z", "T": "D", "F": "V", "K": "G", "P": "B", "TH": "DH", "CH": "JH", "SH": "ZH"}
_NASALS = {"M": "N", "NG": "N"}
_NEAR_ALWAYS = [{"AA", "AO"}, {"UH", "UW"}]
_NEAR_BEFORE_R = [{"IH", "IY", "EH", "ER"}, {"UH", "UW", "AO", "OW", "ER"}, {"AA", "ER"}]
_ADDED_FINAL = frozenset({"S", "Z", "T", "D"})


def pronouncing_module() -> Any:
    """The `pronouncing` package, loaded; refuses with the install command if absent."""
    return _pronouncing()


@cache
def _pronouncing() -> Any:
    module = deps.load("sonnet", "pronouncing")
    module.init_cmu()
    return module


def clean_word(text: str) -> str:
    return text.lower().strip(_WORD_EDGES + " ")


def last_word(line: str) -> str:
    """The word a line ends on (of a hyphenated word, its last part)."""
    parts = [clean_word(p) for p in re.split(r"[\s\-—–]+", line)]
    parts = [p for p in parts if p]
    return parts[-1] if parts else ""


def pronunciations(word: str) -> list[str]:
    if not word:
        return []
    module = _pronouncing()
    phones = module.phones_for_word(word)
    if not phones and word.endswith(("'s", "’s")):
        phones = module.phones_for_word(word[:-2])
    return list(phones)


def _phones(pronunciation: str) -> list[tuple[str, int]]:
    """(phone, stress) pairs, stress -1 for consonants; vowel + unstressed ER -> vowel + R."""
    out: list[tuple[str, int]] = []
    for token in pronunciation.split():
        base, digits = token.rstrip("012"), token[len(token.rstrip("012")) :]
        stress = int(digits) if digits else -1
        if base == "ER" and stress == 0 and out and out[-1][0] in _PHONE_VOWELS:
            out.append(("R", -1))
        else:
            out.append((base, stress))
    return out


@cache
def rhyming_parts(word: str) -> tuple[tuple[tuple[str, int], ...], ...]:
    """Each pronunciation from its last stressed vowel (any vowel if none is stressed)."""
    parts = []
    for pronunciation in pronunciations(word):
        phones = _phones(pronunciation)
        vowels = [i for i, (p, _) in enumerate(phones) if p in _PHONE_VOWELS]
        stressed = [i for i in vowels if phones[i][1] > 0] or vowels[:1]
        if stressed:
            parts.append(tuple(phones[stressed[-1] :]))
    return tuple(parts)


@cache
def whole_pronunciations(word: str) -> frozenset[str]:
    return frozenset(" ".join(p for p, _ in _phones(x)) for x in pronunciations(word))


def _near_vowels(a: str, b: str, before_r: bool) -> bool:
    if a == b:
        return True
    groups = _NEAR_ALWAYS + (_NEAR_BEFORE_R if before_r else [])
    return any(a in g and b in g for g in groups)


def _soft(phone: str) -> str:
    return _NASALS.get(phone, _VOICING.get(phone, phone))


def _close_codas(a: list[str], b: list[str]) -> bool:
    """Sounds after the stressed vowel agree up to voicing, nasal place, one added s/t."""
    if [_soft(p) for p in a] == [_soft(p) for p in b]:
        return True
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    return (
        len(longer) == len(shorter) + 1
        and longer[-1] in _ADDED_FINAL
        and [_soft(p) for p in longer[:-1]] == [_soft(p) for p in shorter]
    )


def _slant_parts(x: tuple[tuple[str, int], ...], y: tuple[tuple[str, int], ...]) -> bool:
    (vx, _), (vy, _) = x[0], y[0]
    rest_x, rest_y = [p for p, _ in x[1:]], [p for p, _ in y[1:]]
    before_r = bool(rest_x and rest_y and rest_x[0] == "R" and rest_y[0] == "R")
    return _near_vowels(vx, vy, before_r) and _close_codas(rest_x, rest_y)


def _final_syllable(pronunciation: str) -> tuple[tuple[str, ...], int]:
    phones = _phones(pronunciation)
    vowels = [i for i, (p, _) in enumerate(phones) if p in _PHONE_VOWELS]
    if not vowels:
        return (), -1
    at = vowels[-1]
    return tuple(p for p, _ in phones[at:]), phones[at][1]


def _light_rhyme(a: str, b: str) -> bool:
    """A stressed final syllable against the other word's unstressed final syllable."""
    for pa, pb in product(pronunciations(a), pronunciations(b)):
        (sa, stress_a), (sb, stress_b) = _final_syllable(pa), _final_syllable(pb)
        if sa and sa == sb and (stress_a > 0) != (stress_b > 0):
            return True
    return False


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


def _eye_rhyme(a: str, b: str) -> bool:
    """Same spelled ending and the same final consonant sound (love/prove)."""
    if spelling_key(a) != spelling_key(b):
        return False
    ends_a = {x[-1][0] for x in rhyming_parts(a) if x[-1][0] not in _PHONE_VOWELS}
    ends_b = {x[-1][0] for x in rhyming_parts(b) if x[-1][0] not in _PHONE_VOWELS}
    return bool(ends_a & ends_b)


def rhyme_kind(a: str, b: str) -> RhymeKind | None:
    """How two cleaned words rhyme: "rhyme", "slant", or None. Never a word with itself."""
    if not a or not b or a == b:
        return None
    parts_a, parts_b = rhyming_parts(a), rhyming_parts(b)
    if not parts_a or not parts_b:
        return "rhyme" if spelling_key(a) == spelling_key(b) else None
    strip = [[tuple(p for p, _ in x) for x in parts] for parts in (parts_a, parts_b)]
    if set(strip[0]) & set(strip[1]) or whole_pronunciations(a) & whole_pronunciations(b):
        return "rhyme"
    if any(_slant_parts(x, y) for x, y in product(parts_a, parts_b)):
        return "slant"
    if _light_rhyme(a, b) or _eye_rhyme(a, b):
        return "slant"
    return None


def rhyme(a: str, b: str) -> bool:
    """Whether a reader would accept two (cleaned) words as rhyming: rhyme or slant."""
    return rhyme_kind(a, b) is not None
