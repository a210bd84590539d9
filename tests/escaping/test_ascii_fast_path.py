"""`visible` matches ASCII text with the standard library's `re` and anything else with
the Unicode-property set from `regex`: over generated text both give the same escapes
(a fast path that let a control character through would be a hole)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from conductor_kernel.text import display

ascii_text = st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=80)


def by_properties(text: str) -> str:
    """What the whole Unicode set makes of `text`, fast path bypassed."""
    return str(display.UNSAFE.sub(display._escape, text.replace("\r\n", "\n")))


@settings(max_examples=500, deadline=None)
@given(text=ascii_text)
def test_ascii_text_is_escaped_exactly_as_the_unicode_set_escapes_it(text: str) -> None:
    assert display.visible(text) == by_properties(text)
    assert display.is_visible(text) == (by_properties(text) == text.replace("\r\n", "\n"))


@settings(max_examples=300, deadline=None)
@given(text=ascii_text, other=st.text(min_size=1, max_size=5).filter(lambda t: not t.isascii()))
def test_text_beyond_ascii_goes_through_the_unicode_set(text: str, other: str) -> None:
    mixed = text + other
    assert display.visible(mixed) == by_properties(mixed)


def test_every_ascii_control_but_tab_and_newline_is_escaped() -> None:
    for code in range(0x80):
        char = chr(code)
        expected = char if char in "\t\n" or 0x20 <= code < 0x7F else f"\\x{code:02x}"
        assert display.visible(char) == expected, code
