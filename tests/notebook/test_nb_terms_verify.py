"""Terms in any script, and how far an answer is verified."""

from __future__ import annotations

from nb_support import run_events

from conductor.events import ExpertCallFinished, ExpertCallStarted
from notebook.terms import index_token, is_shape, question_terms, words
from notebook.verify import answers_match, output_contains, verify_run


def test_words_fold_case_and_accents_and_pair_no_space_scripts() -> None:
    assert words("Los DÍAS de Janet") == ["los", "dias", "de", "janet"]
    chinese = words("珍妮特的鸭子")
    assert chinese == ["珍妮", "妮特", "特的", "的鸭", "鸭子"]
    # Telugu keeps its vowel signs inside the word instead of splitting at them.
    assert words("గుడ్లు పెడతాయి") == ["గుడ్లు", "పెడతాయి"]


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


def test_answers_match_leniently_but_not_loosely() -> None:
    assert answers_match("Janet gana $18 todos los días.", "18")
    assert answers_match("(4 + 5 * 6) - 10", "24")  # an expression worth the target
    assert answers_match("(3+4)+(4+13) = 24", "24")
    assert answers_match("(D) kite", "(D)")
    assert not answers_match("(B) heptagon", "(D)")
    assert answers_match("Barn, damp; delmarva.", "barn damp delmarva")
    assert answers_match("The winning move is Rg5#", "Rg5#")
    assert not answers_match("4 * 5", "24")
    assert not answers_match("19", "18")


def test_output_contains_the_answer() -> None:
    assert output_contains("(3+4)+(4+13)\n(3+13)+(4+4)\n", "(3+4)+(4+13) = 24")
    assert output_contains("apple fig pear\n", "apple fig pear")
    assert not output_contains("apple pear\n", "apple fig pear")


def test_verification_levels_from_events() -> None:
    question = "Sort the following words alphabetically: List: pear apple"
    by_target = verify_run(run_events("r1", question, "apple pear", target="apple pear"))
    assert (by_target.level, by_target.outcome) == ("target", "correct")
    wrong = verify_run(run_events("r2", question, "pear apple", target="apple pear"))
    assert (wrong.level, wrong.outcome) == ("target", "wrong")
    sandbox = verify_run(run_events("r3", question, "apple pear", code="print('apple pear')"))
    assert (sandbox.level, sandbox.outcome) == ("sandbox", "verified")
    # A program that printed something else verifies nothing.
    other = verify_run(run_events("r4", question, "apple pear", code="x", stdout="pear\n"))
    assert other.level == "none"
    agree = verify_run(
        run_events(
            "r5",
            question,
            "apple pear",
            experts=("Expert Linguist", "Expert Reviewer"),
            expert_replies=("The order is apple pear.", "I confirm: apple pear"),
        )
    )
    assert (agree.level, agree.outcome) == ("agreement", "verified")
    one = verify_run(
        run_events("r6", question, "apple pear", experts=("Expert Linguist",),
                   expert_replies=("apple pear",))
    )  # fmt: skip
    assert one.level == "none"
    unanswered = verify_run(run_events("r7", question, None, target="apple pear"))
    assert unanswered.outcome == "unanswered"


def test_an_expert_call_that_failed_does_not_count_as_agreement() -> None:
    events = run_events("r1", "q", "42")
    for _ in range(2):
        call = ExpertCallStarted(run_id="r1", name="Expert Math")
        events.insert(
            1, ExpertCallFinished(run_id="r1", parent_id=call.id, text="42", error="boom")
        )
    assert verify_run(events).level == "none"
