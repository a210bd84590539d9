"""Tools, not transcripts: a verified program becomes a tool that reads its inputs from
any question of its kind, is tested in a sandbox, and is recalled best-tested first."""

from __future__ import annotations

from pathlib import Path

import pytest
from nb_support import SCORING, run_events, sort_run

from conductor.scoring.notebook import open_notebook
from conductor_kernel.interfaces import SandboxUnavailable
from lessons.forms.tool_making import make_tool
from lessons.forms.toolbox import retest_tools, run_tool, tools_of
from lessons.forms.tools import applies, instantiate, program_for
from lessons.read.recall import RecallOptions, recall
from lessons.write.learn import learn_from_run
from sandbox.subprocess_backend import SubprocessSandbox

GAME = (
    "from itertools import permutations, product\n"
    "def solve(a, b, c, d):\n"
    "    for p in permutations([a, b, c, d]):\n"
    "        for o in product('+-*/', repeat=3):\n"
    "            e = f'(({p[0]}{o[0]}{p[1]}){o[1]}{p[2]}){o[2]}{p[3]}'\n"
    "            try:\n"
    "                if abs(eval(e) - 24) < 1e-9:\n"
    "                    return e\n"
    "            except ZeroDivisionError:\n"
    "                pass\n"
    "print(solve(4, 5, 6, 10))\n"
)
ARITHMETIC = "result = ((-1 + 2 + 9 * 5) - (-2 + -4 + -4 * -7))\nprint(result)\n"


def test_literals_from_the_question_become_parameters() -> None:
    sort = make_tool(
        "Sort the following words alphabetically: List: pear apple fig",
        "words = ['pear', 'apple', 'fig']\nprint(' '.join(sorted(words)))",
        "apple fig pear\n",
        "apple fig pear",
        scoring=SCORING,
    )
    assert sort is not None and [p.kind for p in sort.params] == ["words"]
    assert "pear" not in sort.program
    written = instantiate(
        sort, "Sort the following words alphabetically: List: kiwi yam", scoring=SCORING
    )
    assert written is not None and "['kiwi', 'yam']" in written
    game = make_tool("4 5 6 10", GAME, "((4+5)*6)-10\n", "((4+5)*6)-10", scoring=SCORING)
    assert game is not None and [p.kind for p in game.params] == ["ints"]
    expr = make_tool(
        "((-1 + 2 + 9 * 5) - (-2 + -4 + -4 * -7)) =", ARITHMETIC, "24\n", "24", scoring=SCORING
    )
    assert expr is not None and [p.kind for p in expr.params] == ["expr"]
    # A program that takes nothing from the question is not a tool.
    assert (
        make_tool("4 5 6 10", "print('(4+5*6)-10')", "(4+5*6)-10\n", "(4+5*6)-10", scoring=SCORING)
        is None
    )
    # Nor is one whose output does not state the answer.
    assert make_tool("4 5 6 10", GAME, "no luck\n", "(4+5*6)-10", scoring=SCORING) is None


def test_a_tool_is_not_applied_to_a_task_that_only_looks_alike() -> None:
    sort = make_tool(
        "Sort the following words alphabetically: List: pear apple",
        "words = ['pear', 'apple']\nprint(' '.join(sorted(words)))",
        "apple pear\n",
        "apple pear",
        scoring=SCORING,
    )
    assert sort is not None
    assert applies(
        sort, "Sort the following words alphabetically: List: kiwi yam fig", scoring=SCORING
    )
    assert not applies(
        sort, "Sort the following words in reverse alphabetical order: List: a b", scoring=SCORING
    )
    assert not applies(
        sort, "Sort the following words alphabetically by length: List: a bb", scoring=SCORING
    )
    game = make_tool("4 5 6 10", GAME, "((4+5)*6)-10\n", "((4+5)*6)-10", scoring=SCORING)
    assert game is not None and applies(game, "1 2 4 7", scoring=SCORING)
    assert not applies(
        game, "Which two of the numbers 1 2 4 7 have the largest product?", scoring=SCORING
    )
    assert not applies(game, "1 2 4 7 8", scoring=SCORING)  # five numbers, not four


def test_tools_run_in_the_sandbox_and_are_tested_on_stored_questions(tmp_path: Path) -> None:
    book = open_notebook(tmp_path / "nb.db")
    lists = [["pear", "apple"], ["kiwi", "fig", "date"], ["yam", "oat"], ["b", "a", "c"]]
    for i, words in enumerate(lists):
        learn_from_run(book, sort_run(f"r{i}", words))
    # A wrong run of the kind: the tool's answer will not match its (wrong) answer,
    # but its target is known, so the test judges by the scorer.
    learn_from_run(
        book,
        run_events("bad", "Sort the following words alphabetically: List: z y", "z y",
                   target="y z", task="word_sorting"),
    )  # fmt: skip
    sandbox = SubprocessSandbox()
    try:
        (tool,) = retest_tools(book, sandbox, per_tool=10)
        assert tool.tests == 4 and tool.passes == 4  # every other stored question
        question = "Sort the following words alphabetically: List: zeta alpha mu"
        assert run_tool(tool.tool, question, sandbox, scoring=SCORING) == "alpha mu zeta"
    finally:
        sandbox.close()
    shown = recall(book, question).shown
    assert shown[0].note["kind"] == "tool" and "tested pass rate" not in shown[0].note["text"]
    assert "['zeta', 'alpha', 'mu']" in shown[0].note["code"]
    assert "passed 4 of 4 tests" in shown[0].note["text"]
    rendered = recall(book, question).rendered.text
    assert "tested pass rate 100%" in rendered
    assert tools_of(book)[0].tests == 4


@pytest.mark.slow
def test_the_best_tested_tool_comes_first(tmp_path: Path) -> None:
    book = open_notebook(tmp_path / "nb.db")
    # One program sorts right; the other keeps the list's order (wrong in general).
    learn_from_run(book, sort_run("good", ["b", "a"]))
    keep = "words = ['a', 'b']\nprint(' '.join(words))"
    learn_from_run(
        book,
        run_events("lucky", "Sort the following words alphabetically: List: a b", "a b",
                   target="a b", task="word_sorting", code=keep),
    )  # fmt: skip
    for i, words in enumerate([["d", "c"], ["f", "e"], ["h", "g"]]):
        learn_from_run(book, sort_run(f"more{i}", words))
    sandbox = SubprocessSandbox()
    try:
        tested = {t.tool.program: t for t in retest_tools(book, sandbox, per_tool=6)}
    finally:
        sandbox.close()
    assert len(tested) == 2
    rates = sorted(t.pass_rate for t in tested.values())
    assert rates[0] < 0.5 and rates[1] == 1.0
    top = recall(book, "Sort the following words alphabetically: List: y x").shown[0]
    assert top.note["kind"] == "tool" and "sorted" in top.note["code"]


@pytest.mark.slow
@pytest.mark.docker
def test_a_tool_runs_in_the_docker_sandbox(require_docker: None) -> None:
    from sandbox.registry import open_sandbox
    from support import skip_or_fail

    try:
        sandbox = open_sandbox("docker")
    except SandboxUnavailable as exc:
        skip_or_fail(str(exc), "CONDUCTOR_REQUIRE_DOCKER")
        return
    game = make_tool("4 5 6 10", GAME, "((4+5)*6)-10\n", "((4+5)*6)-10", scoring=SCORING)
    assert game is not None
    try:
        result = sandbox.run(program_for(game), timeout=20, stdin="1 2 4 7")
        answer = run_tool(game, "1 2 4 7", sandbox, scoring=SCORING)
    finally:
        sandbox.close()
    assert result.ok and answer is not None
    assert sorted(int(c) for c in answer if c.isdigit()) == [1, 2, 4, 7]
    assert abs(eval(answer) - 24) < 1e-9


def test_evaluation_never_recalls_a_note_from_the_same_question(tmp_path: Path) -> None:
    book = open_notebook(tmp_path / "nb.db")
    learn_from_run(book, sort_run("r1", ["pear", "apple"]))
    learn_from_run(book, sort_run("r2", ["kiwi", "fig"]))
    question = "Sort the following words alphabetically: List: pear apple"
    normal = recall(book, question).shown
    assert any(s.note["source_run"] == "r1" for s in normal)
    evaluation = recall(book, question, options=RecallOptions(exclude_question=True)).shown
    assert evaluation and all(s.note["source_run"] != "r1" for s in evaluation)
    # Also when the question comes with a task description before it.
    described = "Put the words in order.\n\n" + question
    evaluation = recall(book, described, options=RecallOptions(exclude_question=True)).shown
    assert all(s.note["source_run"] != "r1" for s in evaluation)


def test_the_cli_tests_tools_and_prints_their_pass_rate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from conductor.cli import main

    path = tmp_path / "nb.db"
    book = open_notebook(path)
    for i, words in enumerate([["pear", "apple"], ["yam", "oat"], ["b", "a"]]):
        learn_from_run(book, sort_run(f"r{i}", words))
    book.close()
    code = main(["notebook", "test-tools", "--notebook", str(path), "--sandbox", "subprocess",
                 "--json"])  # fmt: skip
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0 and len(rows) == 1
    assert (rows[0]["tests"], rows[0]["passes"], rows[0]["params"]) == (2, 2, ["words"])
