"""`visible()` escapes every invisible code point, judged against the Unicode data itself.

The oracle here is independent of the implementation (which asks the `regex` package for
Unicode properties): Python's own `unicodedata` for the general categories, and the
derivation of Default_Ignorable_Code_Point the Unicode standard gives in
DerivedCoreProperties.txt (Other_Default_Ignorable_Code_Point + Cf + Variation_Selector,
less White_Space, the interlinear annotation and Egyptian format controls, and the
prepended concatenation marks), with the two short property lists it needs copied from
PropList.txt. Every one of the 1,114,112 code points is checked both ways, and
Hypothesis checks that no text loses anything on the way (each escape reads back as the
character it stands for).
"""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from conductor_kernel.text.display import UNSAFE, is_visible, visible

# PropList.txt, Unicode 15-16 (unchanged since 2021 apart from U+2065's status).
OTHER_DEFAULT_IGNORABLE = [
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x115F, 0x1160),  # Hangul choseong and jungseong fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x2065, 0x2065),
    (0x3164, 0x3164),  # Hangul filler
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xFFF0, 0xFFF8),
    (0xE0000, 0xE0000),
    (0xE0002, 0xE001F),
    (0xE0080, 0xE00FF),
    (0xE01F0, 0xE0FFF),
]
VARIATION_SELECTORS = [(0x180B, 0x180D), (0x180F, 0x180F), (0xFE00, 0xFE0F), (0xE0100, 0xE01EF)]
PREPENDED_CONCATENATION = {0x0600, 0x0601, 0x0602, 0x0603, 0x0604, 0x0605, 0x06DD}
PREPENDED_CONCATENATION |= {0x070F, 0x0890, 0x0891, 0x08E2, 0x110BD, 0x110CD}
NOT_IGNORABLE_FORMAT = set(range(0xFFF9, 0xFFFC)) | set(range(0x13430, 0x13440))
BLANK_GLYPHS = {0x2800}  # braille pattern blank: drawn as nothing, named by no property


def _in(ranges: list[tuple[int, int]], code: int) -> bool:
    return any(low <= code <= high for low, high in ranges)


def default_ignorable(code: int) -> bool:
    char = chr(code)
    if char.isspace() and unicodedata.category(char) != "Cf":
        return False
    if code in NOT_IGNORABLE_FORMAT or code in PREPENDED_CONCATENATION:
        return False
    return (
        _in(OTHER_DEFAULT_IGNORABLE, code)
        or _in(VARIATION_SELECTORS, code)
        or unicodedata.category(char) == "Cf"
    )


def must_escape(code: int) -> bool:
    """The oracle: what a reader cannot see or what could act on a terminal."""
    if code in (0x09, 0x0A):
        return False
    category = unicodedata.category(chr(code))
    noncharacter = (code & 0xFFFE) == 0xFFFE or 0xFDD0 <= code <= 0xFDEF
    return (
        category in ("Cc", "Cf", "Cs", "Zl", "Zp")
        or default_ignorable(code)
        or noncharacter
        or code in BLANK_GLYPHS
    )


def plainly_visible(code: int) -> bool:
    """Assigned letters, marks, numbers, punctuation, symbols and spaces no rule names."""
    category = unicodedata.category(chr(code))
    return category[0] in "LMNPSZ" and category not in ("Zl", "Zp") and not must_escape(code)


ESCAPE = re.compile(r"\\x([0-9a-f]{2})|\\u([0-9a-f]{4})|\\U([0-9a-f]{8})")


def unescape(shown: str) -> str:
    return ESCAPE.sub(lambda m: chr(int(next(g for g in m.groups() if g), 16)), shown)


def test_every_code_point_the_oracle_calls_invisible_is_escaped() -> None:
    missed = [
        f"U+{code:04X}"
        for code in range(0x110000)
        if must_escape(code) and not visible(chr(code)).startswith("\\")
    ]
    assert not missed, f"{len(missed)} shown raw, e.g. {missed[:20]}"


def test_every_plainly_visible_code_point_passes_unchanged() -> None:
    changed = [
        f"U+{code:04X}"
        for code in range(0x110000)
        if plainly_visible(code) and visible(chr(code)) != chr(code)
    ]
    assert not changed, f"{len(changed)} escaped needlessly, e.g. {changed[:20]}"


def test_the_named_kinds_of_the_report_are_all_escaped() -> None:
    kinds = {
        "soft hyphen": "\u00ad",
        "combining grapheme joiner": "\u034f",
        "Hangul fillers": "\u115f\u1160\u3164\uffa0",
        "ZWNJ, ZWJ": "\u200c\u200d",
        "invisible operators": "\u2061\u2062\u2063\u2064",
        "braille blank": "\u2800",
        "variation selectors 1-256": "".join(
            map(chr, [*range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)])
        ),
        "Mongolian selectors": "\u180b\u180c\u180d\u180f",
        "Khmer inherent vowels": "\u17b4\u17b5",
        "tag characters": "".join(map(chr, range(0xE0000, 0xE0080))),
        "word joiner and friends": "\u2060\u2065\u206a\u206f",
        "bidi controls": "\u061c\u200e\u200f\u202a\u202e\u2066\u2069",
    }
    for kind, text in kinds.items():
        shown = visible(text)
        assert is_visible(shown), kind
        assert shown.count("\\") == len(text), (kind, shown)


# Text without backslashes, so that reading the escapes back is unambiguous.
any_text = st.text(alphabet=st.characters(codec=None, exclude_characters="\\"), max_size=60)


@given(any_text)
@settings(max_examples=400, deadline=None)
def test_nothing_is_lost_and_nothing_invisible_is_left(text: str) -> None:
    shown = visible(text)
    assert UNSAFE.search(shown) is None
    assert visible(shown) == shown
    assert unescape(shown) == text.replace("\r\n", "\n")


@given(st.text(alphabet=st.characters(categories=["Lu", "Ll", "Nd"]), min_size=1, max_size=40))
@settings(max_examples=100, deadline=None)
def test_an_instruction_hidden_in_variation_selectors_is_shown(instruction: str) -> None:
    """The report's case as a class: any text spelled in selectors after a visible emoji
    (one selector per byte, as the smuggling tools do) comes out as one escape each."""
    hidden = "".join(
        chr(0xFE00 + byte) if byte < 16 else chr(0xE0100 + byte - 16)
        for byte in instruction.encode()
    )
    shown = visible("\U0001f600" + hidden + " done")
    assert shown.startswith("\U0001f600") and shown.endswith(" done")
    assert shown.count("\\u") + shown.count("\\U") == len(instruction.encode())
    assert is_visible(shown)
