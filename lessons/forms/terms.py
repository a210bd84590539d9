"""Turning text into the terms the notebook matches on, in any language.

Words are case- and accent-folded; scripts written without spaces between words (Chinese,
Japanese, Thai, ...) give overlapping character pairs instead, so a Chinese question can
match another Chinese question. Besides words, every question gets a few *shape* terms
(`~len7`, `~nums4`, `~scriptlatin`, `~symparen`, ...) describing its form: they let
questions that are mostly numbers or symbols (a Game of 24 puzzle, an arithmetic
expression) be told apart where words cannot.

Terms are stored in SQLite full-text indexes, whose tokenizer would split non-ASCII words
differently from us; `index_token` makes each term one ASCII token so the index sees
exactly our terms.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import unicodedata
from collections import Counter
from functools import lru_cache

# Terms bound into one SQL statement at most (SQLite allows 32,766 variables since 3.32):
# the longest published question has about 1,500.
SQL_TERMS_MAX = 10_000

SHAPE_PREFIX = "~"  # no word term can start with it
_NO_SPACE_SCRIPTS = frozenset(
    {"cjk", "kana", "thai", "lao", "khmer", "myanmar", "hangul", "tibetan"}
)
_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")
_ASCII_WORD_RE = re.compile(r"[0-9a-z_]+")
# Symbol classes that say something about a question's form.
_SYMBOL_CLASSES = (
    ("paren", "()"),
    ("arith", "+*/="),
    ("angle", "<>"),
    ("hash", "#"),
    ("colon", ":"),
    ("quote", "\"'"),
    ("brack", "[]"),
    ("brace", "{}"),
    ("nl", "\n"),
    ("dollar", "$"),
)


@lru_cache(maxsize=8192)
def script_of(char: str) -> str:
    """The script a character belongs to, from its Unicode name ("latin", "cjk", ...)."""
    try:
        first = unicodedata.name(char).split()[0].lower()
    except ValueError:
        return "other"
    return "kana" if first in ("hiragana", "katakana") else first


def _is_word_char(char: str) -> bool:
    return char == "_" or unicodedata.category(char)[0] in "LNM"


def _fold_latin(word: str) -> str:
    """Strip accents from Latin-script words (días -> dias); leave other scripts alone."""
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFKD", word)
    if all(ord(c) < 0x250 or (unicodedata.combining(c) and ord(c) < 0x370) for c in decomposed):
        return "".join(c for c in decomposed if not unicodedata.combining(c))
    return word


def _split_word(word: str) -> list[str]:
    """A word as terms: itself, or character pairs for runs of no-space scripts."""
    segments: list[tuple[str, bool]] = []
    for char in word:
        no_space = ord(char) > 0x24F and script_of(char) in _NO_SPACE_SCRIPTS
        if segments and (segments[-1][1] == no_space or unicodedata.combining(char)):
            segments[-1] = (segments[-1][0] + char, segments[-1][1])
        else:
            segments.append((char, no_space))
    out: list[str] = []
    for text, no_space in segments:
        if no_space and len(text) > 1:
            out.extend(text[i : i + 2] for i in range(len(text) - 1))
        else:
            out.append(text)
    return out


def words(text: str) -> list[str]:
    """The text's word terms in order (with repeats)."""
    if text.isascii():  # the same terms, without a Unicode lookup per character
        return _ASCII_WORD_RE.findall(text.lower())
    return unicode_words(text)


def unicode_words(text: str) -> list[str]:
    """`words` for text in any script."""
    text = unicodedata.normalize("NFKC", text).lower()
    out: list[str] = []
    current: list[str] = []
    for char in text + " ":
        if _is_word_char(char):
            current.append(char)
        elif current:
            out.extend(_split_word(_fold_latin("".join(current))))
            current = []
    return out


def _bucket(value: int, edges: tuple[int, ...]) -> int:
    for i, edge in enumerate(edges):
        if value <= edge:
            return i
    return len(edges)


def shape_terms(text: str, word_terms: list[str] | None = None) -> list[str]:
    """Terms describing the text's form: length, counts, script, symbol classes."""
    digits = sum(map(str.isdigit, text))
    numbers = len(_NUMBER_RE.findall(text))
    word_terms = words(text) if word_terms is None else word_terms
    word_count = sum(1 for w in word_terms if not w.isdigit())
    if text.isascii():  # every ASCII letter is Latin
        letters = sum(map(str.isalpha, text))
        script = "latin" if letters else "none"
    else:
        scripts = Counter(script_of(c) for c in text if c.isalpha())
        letters = scripts.total()
        script = scripts.most_common(1)[0][0] if scripts else "none"
    out = [
        f"~len{int(math.log2(len(text) + 1))}",
        f"~nums{_bucket(numbers, (0, 1, 2, 3, 4, 8, 16))}",
        f"~words{_bucket(word_count, (0, 3, 10, 30, 100))}",
        f"~script{script}",
    ]
    if digits > letters:
        out.append("~digitheavy")
    out.extend(f"~sym{name}" for name, chars in _SYMBOL_CLASSES if any(c in text for c in chars))
    return out


def is_shape(term: str) -> bool:
    return term.startswith(SHAPE_PREFIX)


# Closed-class words (articles, pronouns, prepositions, conjunctions, auxiliaries,
# question words) of the languages the published runs write with spaces, folded as
# `words` folds them (no accents). They hold a sentence together and say nothing about
# what it asks: "what is the ... of" is in a capital, a gcd and a percentage alike, so
# no task type may rest on them alone.
FUNCTION_WORDS = frozenset(
    " ".join(  # one string per language, so the lists read as text
        (
            # English
            "a an the this that these those it its i me my you your he him his she her we us our "
            "they them their what which who whom whose when where why how is are was were be been "
            "being am do does did done have has had having of to in on at by for from with about "
            "as into onto over under than then there here and or but if so not no nor also too "
            "very can could will would shall should may might must any some each every all both "
            "one per up down out off just only same such own other another more most much many "
            "few s t",
            # Spanish, French, German, Russian: the commonest of each
            "el la los las un una unos unas de del al y o que en es son por para con se su sus "
            "lo le les cual cuanto como es le la les un une des du de et ou "
            "est sont que qui quoi quel quelle en dans sur pour par avec au aux ce cette ces il "
            "elle der die das ein eine einen dem den des und oder ist sind was wie wer welche "
            "im in zu mit von fur auf и в во не на что как это с со по к а из у за от",
        )
    ).split()
)


def is_function_word(term: str) -> bool:
    """A closed-class word: it joins a sentence, it says nothing about the task."""
    return term in FUNCTION_WORDS


def is_content_word(term: str) -> bool:
    """A word that can say what a question asks: no shape, no bare number, no function
    word (and at least two characters, or one of a script written without spaces)."""
    return (
        not is_shape(term)
        and not term.isdigit()
        and term not in FUNCTION_WORDS
        and (len(term) > 1 or not term.isascii())
    )


def question_terms(text: str) -> set[str]:
    """Every term of a question: its words and its shape (a fresh set the caller owns)."""
    return set(_question_terms(text))


@functools.lru_cache(maxsize=256)
def _question_terms(text: str) -> frozenset[str]:
    # Recall reads a question's terms twice (types, then kin), learning once more.
    found = words(text)
    return frozenset(found) | frozenset(shape_terms(text, found))


def content_terms(text: str) -> set[str]:
    """Word terms of note text or code (no shape: that describes questions)."""
    return set(words(text))


def index_token(term: str) -> str:
    """One ASCII token per term, so SQLite's tokenizer cannot split or fold it."""
    if term.isascii() and (term.replace("_", "").isalnum() or term == "_"):
        return term
    return "u" + hashlib.blake2b(term.encode(), digest_size=7).hexdigest()


def index_text(terms: set[str] | list[str]) -> str:
    return " ".join(sorted({index_token(t) for t in terms}))


def fts_query(terms: list[str], *, all_of: list[str] | None = None) -> str:
    """An FTS5 query: any of `terms`, and (when given) every one of `all_of`."""
    anyq = " OR ".join(f'"{index_token(t)}"' for t in terms)
    if not all_of:
        return anyq
    allq = " AND ".join(f'"{index_token(t)}"' for t in all_of)
    return f"{allq} AND ({anyq})" if anyq else allq
