"""Types never form from function words alone (issue 25, class 6).

Questions of different domains that share only function words ("what is the ... of")
were one task type, so each was shown another's verified answer. Generated here: the
capital of a country, a gcd, a binary representation, a percentage and a day of the
week, in any order and wording case; none may share a type with another domain, every
type name and note key holds a content word, and no note of one domain is recalled as
fitting a question of another. A model's pick of a type the question's own words
contradict is overruled by the lexical evidence.
"""

from __future__ import annotations

import calendar
import datetime
import math
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nb_support import run_events

from conductor.scoring.notebook import open_notebook
from conductor_kernel.interfaces import Completion, Message, Usage
from lessons.forms.tasktypes import score_types
from lessons.forms.terms import is_content_word, question_terms, words
from lessons.read.recall import RecallOptions, recall
from lessons.write.learn import LearnOptions, learn_from_run

CAPITALS = {"Canada": "Ottawa", "France": "Paris", "Japan": "Tokyo", "Kenya": "Nairobi",
            "Peru": "Lima", "Norway": "Oslo", "Egypt": "Cairo", "Chile": "Santiago"}  # fmt: skip
WORDINGS = (str, str.lower, str.upper)


def _capital(draw: st.DrawFn) -> tuple[str, str]:
    country = draw(st.sampled_from(sorted(CAPITALS)))
    return f"What is the capital of {country}?", CAPITALS[country]


def _gcd(draw: st.DrawFn) -> tuple[str, str]:
    a, b = draw(st.integers(2, 500)), draw(st.integers(2, 500))
    return f"What is the gcd of {a} and {b}?", str(math.gcd(a, b))


def _binary(draw: st.DrawFn) -> tuple[str, str]:
    n = draw(st.integers(2, 5000))
    return f"What is the binary representation of {n}?", format(n, "b")


def _percent(draw: st.DrawFn) -> tuple[str, str]:
    p, n = draw(st.integers(1, 99)), draw(st.integers(2, 900))
    return f"What is {p}% of {n}?", f"{p * n / 100:g}"


def _weekday(draw: st.DrawFn) -> tuple[str, str]:
    day = draw(st.dates(datetime.date(1900, 1, 1), datetime.date(2100, 12, 31)))
    month = calendar.month_name[day.month]
    question = f"What is the day of the week of {month} {day.day}, {day.year}?"
    return question, calendar.day_name[day.weekday()]


DOMAINS = {"capital": _capital, "gcd": _gcd, "binary": _binary, "percent": _percent,
           "weekday": _weekday}  # fmt: skip


@st.composite
def asked(draw: st.DrawFn, domain: str) -> tuple[str, str]:
    question, answer = DOMAINS[domain](draw)
    return draw(st.sampled_from(WORDINGS))(question), answer


@st.composite
def learned_runs(draw: st.DrawFn) -> list[tuple[str, str, str]]:
    """(domain, question, answer) for two to three runs per domain, interleaved."""
    runs = [
        (domain, *draw(asked(domain))) for domain in DOMAINS for _ in range(draw(st.integers(2, 3)))
    ]
    return draw(st.permutations(runs))


def _content(text: str) -> bool:
    return any(is_content_word(w) for w in words(text))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs=learned_runs(), probes=st.tuples(*(asked(d) for d in DOMAINS)))
def test_domains_sharing_only_function_words_never_share_a_type(
    runs: list[tuple[str, str, str]], probes: tuple[tuple[str, str], ...]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        book = open_notebook(Path(folder) / "nb.db")
        domain_of: dict[str, str] = {}
        types: dict[str, set[str]] = {}
        for i, (domain, question, answer) in enumerate(runs):
            written = learn_from_run(book, run_events(f"r{i}", question, answer, target=answer))
            assert written is not None and written.task_type
            types.setdefault(domain, set()).add(written.task_type)
            domain_of[question.lower()] = domain
        for domain, ids in types.items():
            for other, other_ids in types.items():
                if other != domain:
                    assert not ids & other_ids, f"{domain} and {other} share a type"
        for name, key in book.read(
            "select t.name, n.key from notes n join task_types t on t.id = n.type_id"
        ):
            # A type named by its questions' words names a content word; else its shape.
            for label in (name, key):
                assert label.startswith("new kind:") or _content(label), label
        for domain, (question, _answer) in zip(DOMAINS, probes, strict=True):
            result = recall(book, question, options=RecallOptions(k=8, budget_tokens=4000))
            for shown in result.shown:
                source = domain_of.get(str(shown.note["source_question"]).lower())
                if source != domain:
                    assert shown.note.get("differs"), (
                        f"a {source} note shown as fitting a {domain} question: {question}"
                    )
        book.close()


class _PickingModel:
    """A real-seeming model (it reflects) that always picks the first candidate type."""

    name = "picker"
    offline = False

    def complete(self, messages: list[Message], **_: object) -> Completion:
        text = messages[-1].content
        reply = "KIND: 1\nNAME: ordering\nDESCRIPTION: putting things in order"
        if "KIND" not in text:
            reply = "none"
        return Completion(text=reply, usage=Usage(input_tokens=10, output_tokens=5, calls=1))


TIMETABLE = (
    "The 7:15 train reaches Leeds at 9:40 and the 8:05 at 10:20. Which train "
    "should I take to arrive before 10?"
)


def test_the_models_pick_never_overrides_the_questions_own_words(tmp_path: Path) -> None:
    book = open_notebook(tmp_path / "nb.db")
    for i, words_ in enumerate((["pear", "fig", "kiwi"], ["lime", "date", "yam"])):
        question = "Sort the following words alphabetically: List: " + " ".join(words_)
        answer = " ".join(sorted(words_))
        learn_from_run(book, run_events(f"s{i}", question, answer, target=answer))
    sorting = book.read_one("select type_id from distilled_runs where run_id = 's0'")["type_id"]
    with book.reading() as conn:
        offered = score_types(conn, question_terms(TIMETABLE))
    options = LearnOptions(reflect=False)
    written = learn_from_run(
        book,
        run_events("t1", TIMETABLE, "the 8:05", experts=("Expert Planner",)),
        model=_PickingModel(),  # type: ignore[arg-type]
        options=options,
    )
    assert written is not None
    # Offered or not, the sorting type is not where the timetable goes.
    assert written.task_type != sorting, [m.name for m in offered]
    # A question of the kind still joins when the model picks it.
    written = learn_from_run(
        book,
        run_events("s9", "Sort the following words alphabetically: List: oak elm ash",
                   "ash elm oak", target="ash elm oak", experts=("Expert Lexicographer",)),
        model=_PickingModel(),  # type: ignore[arg-type]
        options=options,
    )  # fmt: skip
    assert written is not None and written.task_type == sorting
    book.close()
