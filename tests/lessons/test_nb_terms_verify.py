"""Terms in any script, and how far an answer is verified."""

from __future__ import annotations

import string

from hypothesis import given
from hypothesis import strategies as st
from nb_support import SCORING, run_events, verify_events

from conductor_kernel.events import ExpertCallFinished, ExpertCallStarted
from lessons.forms.judging import usable_target
from lessons.forms.terms import (
    index_token,
    is_shape,
    question_terms,
    script_of,
    unicode_words,
    words,
)
from lessons.write.verify import output_contains


def test_words_fold_case_and_accents_and_pair_no_space_scripts() -> None:
    assert words("Los DÍAS de Janet") == ["los", "dias", "de", "janet"]
    chinese = words("珍妮特的鸭子")
    assert chinese == ["珍妮", "妮特", "特的", "的鸭", "鸭子"]
    # Telugu keeps its vowel signs inside the word instead of splitting at them.
    assert words("గుడ్లు పెడతాయి") == ["గుడ్లు", "పెడతాయి"]


@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_ascii_text_gets_the_same_words_by_the_quick_path(text: str) -> None:
    assert words(text) == unicode_words(text)
    # The shape's quick path takes every ASCII letter to be Latin.
    shape = {t for t in question_terms(text) if t.startswith("~script")}
    assert shape == ({"~scriptlatin"} if any(c.isalpha() for c in text) else {"~scriptnone"})


def test_every_ascii_letter_is_latin() -> None:
    assert {script_of(c) for c in string.ascii_letters} == {"latin"}


def test_shape_terms_tell_number_puzzles_from_expressions() -> None:
    puzzle = {t for t in question_terms("4 5 6 10") if is_shape(t)}
    expression = {t for t in question_terms("((-1 + 2 + 9 * 5) - (-2 + -4)) =") if is_shape(t)}
    assert "~nums4" in puzzle and "~words0" in puzzle
    assert "~symparen" in expression and "~symparen" not in puzzle
    assert puzzle != expression


def test_index_tokens_are_single_ascii_tokens() -> None:
    for term in ("janet", "珍妮", "~len7", "గుడ్లు", "find_all"):
        token = index_token(term)
        assert token.isascii() and " " not in token
        assert token.replace("_", "").isalnum()
    assert index_token("珍妮") != index_token("妮特")


def test_a_rubric_or_empty_target_is_no_known_answer() -> None:
    sonnet, sorting = SCORING.judge_for("Sonnets-Standard"), SCORING.judge_for("word_sorting")
    assert sonnet is not None and sorting is not None
    assert usable_target("ABAB CDCD EFEF GG, grass value jail", sonnet) is None
    assert usable_target("", sorting) is None and usable_target("  ", sorting) is None
    assert usable_target("apple pear", sorting) == "apple pear"
    assert SCORING.judge_for("no-such-task") is None


def test_the_task_scorer_judges_not_a_lenient_matcher() -> None:
    # "No solution" to a Game of 24 is wrong (the checker needs no target)...
    refused = verify_events(run_events("g1", "4 5 6 10", "There is no solution", task="GameOf24"))
    assert (refused.level, refused.outcome) == ("checker", "wrong")
    solved = verify_events(run_events("g2", "4 5 6 10", "(4 + 5 * 6) - 10", task="GameOf24"))
    assert (solved.level, solved.outcome) == ("checker", "correct")
    # ...and a sonnet's rubric target is not the answer it is compared with.
    rubric = "ABAB CDCD EFEF GG, grass value jail"
    poem = verify_events(run_events("s1", "Write a sonnet", rubric, target=rubric,
                                 task="Sonnets-Standard"))  # fmt: skip
    assert (poem.level, poem.outcome) == ("checker", "wrong")
    # A number the numeric scorer reads out of a sentence.
    mgsm = verify_events(
        run_events("m1", "Janet...", "Janet gana $18.", target="18", task="MGSM_ES")
    )
    assert (mgsm.level, mgsm.outcome) == ("target", "correct")


def test_output_contains_the_answer() -> None:
    assert output_contains("(3+4)+(4+13)\n(3+13)+(4+4)\n", "(3+4)+(4+13) = 24")
    assert output_contains("apple fig pear\n", "apple fig pear")
    assert not output_contains("apple pear\n", "apple fig pear")


def test_without_a_target_only_independent_evidence_verifies() -> None:
    question = "Sort the following words alphabetically: List: pear apple"
    by_target = verify_events(run_events("r1", question, "apple pear", target="apple pear",
                                      task="word_sorting"))  # fmt: skip
    assert (by_target.level, by_target.outcome) == ("target", "correct")
    wrong = verify_events(run_events("r2", question, "pear apple", target="apple pear",
                                  task="word_sorting"))  # fmt: skip
    assert (wrong.level, wrong.outcome) == ("target", "wrong")
    # Asked without a task, this question is recognised as word sorting and judged
    # (tests/conductor/scoring/test_recognise_task.py); one no scorer can judge needs independent evidence.
    question = "Put these two fruit names as a dictionary lists them: pear apple"
    # A program that printed the answer is not evidence: it is where the answer came from.
    printed = verify_events(run_events("r3", question, "apple pear", code="print('apple pear')"))
    assert (printed.level, printed.outcome) == ("none", "unverified")
    # A program that holds the answer as data and tests it is.
    check = "ans = 'apple pear'.split()\nprint(ans == sorted(['pear', 'apple']))"
    tested = verify_events(run_events("r4", question, "apple pear", code=check, stdout="True\n"))
    assert (tested.level, tested.outcome) == ("sandbox-check", "verified")
    failed_check = verify_events(run_events("r5", question, "apple pear", code=check,
                                         stdout="False\n"))  # fmt: skip
    assert failed_check.level == "none"
    # Two experts agreeing count only when neither was shown the answer.
    experts = ("Expert Linguist", "Expert Reviewer")
    replies = ("The order is apple pear.", "I confirm: apple pear")
    fresh = verify_events(run_events("r6", question, "apple pear", experts=experts,
                                  expert_replies=replies, instructions=("Sort.", "Sort.")))  # fmt: skip
    assert (fresh.level, fresh.outcome) == ("independent", "verified")
    shown = verify_events(run_events("r7", question, "apple pear", experts=experts,
        expert_replies=replies, instructions=("Sort.", "Is 'apple pear' right?")))  # fmt: skip
    assert shown.level == "none"
    unanswered = verify_events(run_events("r8", question, None, target="apple pear",
                                       task="word_sorting"))  # fmt: skip
    assert unanswered.outcome == "unanswered"


def test_an_expert_call_that_failed_does_not_count_as_agreement() -> None:
    events = run_events("r1", "q", "42")
    for _ in range(2):
        call = ExpertCallStarted(run_id="r1", name="Expert Math")
        events.insert(
            1, ExpertCallFinished(run_id="r1", parent_id=call.id, text="42", error="boom")
        )
    assert verify_events(events).level == "none"
