"""Multiple choice (geometric_shapes): the option the answer picks, e.g. `(B)`.

Our rule finds the one option the answer picks, then compares it with the target:

* option letters cited in parentheses, `(G)`, anywhere in the answer, or as `G)` at
  the start of a line; letters that are not options of this question are ignored;
* failing that, a bare letter answer, alone or followed by its option's text
  (`I`, `I (sector)`);
* failing that, an answer that is exactly one option's text (`kite`, `a kite`).

An answer that cites two different options ("(J) triangle\\n(D) kite") picks none.
The paper required the answer to START with the target (`(g) pentagon`), so
"The SVG path element represents a pentagon (G)." and "I (sector)" failed there.
"""

from __future__ import annotations

import re

from conductor.scoring.base import ScoringEnv, Verdict, paper_answer
from conductor.tasks.files import TaskItem

NEEDS_TARGET = True
_OPTION_LINE = re.compile(r"(?m)^\s*\(([A-Za-z])\)\s*(.+?)\s*$")
_CITED = re.compile(r"\(([A-Za-z])\)|(?m:^\s*([A-Za-z])\)(?=\s))")
_BARE = re.compile(r"^\(?([A-Za-z])\)?[.:]?(?:\s+(.*))?$", re.S)
_ARTICLES = re.compile(r"^(?:a|an|the)\s+", re.I)


def options_of(question: str) -> dict[str, str]:
    """Letter -> option text, from the `(A) circle` lines of the question."""
    return {m.group(1).upper(): m.group(2).lower() for m in _OPTION_LINE.finditer(question)}


def _plain(text: str) -> str:
    return re.sub(r"[^\w\s]", " ", text).strip().lower()


def picked_option(answer: str, options: dict[str, str]) -> tuple[set[str], str]:
    """The letters the answer picks, and how they were found."""
    cited = {(a or b).upper() for a, b in _CITED.findall(answer)}
    if options:
        cited &= set(options)
    if cited:
        return cited, "cited"
    text = answer.strip().rstrip(".")
    bare = _BARE.match(text)
    if bare:
        letter, rest = bare.group(1).upper(), _plain(bare.group(2) or "")
        if (not options or letter in options) and (not rest or rest == options.get(letter)):
            return {letter}, "bare letter"
    plain = " ".join(_ARTICLES.sub("", _plain(answer)).split())
    by_text = {letter for letter, option in options.items() if option == plain}
    return by_text, "option text"


def _target_letter(target: str) -> str | None:
    m = re.fullmatch(r"\s*\(?([A-Za-z])\)?\s*", target)
    return m.group(1).upper() if m else None


def ours(answer: str, item: TaskItem, env: ScoringEnv) -> Verdict:
    want = _target_letter(item.target or "")
    if want is None:
        return Verdict(False, f"the target {item.target!r} is not an option letter")
    picked, how = picked_option(answer, options_of(item.input))
    if not picked:
        return Verdict(False, f"picks no option: {answer[:60]!r}")
    if len(picked) > 1:
        return Verdict(False, f"picks several options: {', '.join(sorted(picked))}")
    (got,) = picked
    if got != want:
        return Verdict(False, f"picks ({got}), target ({want})")
    return Verdict(True, f"picks ({got}) by {how}")


def paper_rule(answer: str, target: str) -> bool:
    """The published check on an already extracted (lowercased) answer."""
    return answer.startswith(target.lower())


def paper(output: str, item: TaskItem, env: ScoringEnv) -> bool:
    return paper_rule(paper_answer(output), item.target or "")
