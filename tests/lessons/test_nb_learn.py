"""The write path: verification, deterministic notes, duplicates, merges, reflection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from nb_support import SORT_CODE, run_events, sort_run

from conductor.scoring.notebook import open_notebook
from experts.scripted import ScriptedModel
from lessons.storage.notes import retire
from lessons.storage.store import Notebook
from lessons.write.learn import LearnOptions, learn_from_run, model_can_reflect


@pytest.fixture
def book(tmp_path: Path) -> Notebook:
    return open_notebook(tmp_path / "notebook.db")


def notes(book: Notebook, **where: str) -> list[dict]:
    clause = " and ".join(f"{k} = ?" for k in where) or "1"
    return [
        dict(r) for r in book.read(f"select * from notes where {clause}", tuple(where.values()))
    ]


def test_a_solved_run_gives_example_code_and_procedure(book: Notebook) -> None:
    written = learn_from_run(book, sort_run("r1", ["pear", "apple", "fig"]))
    assert written is not None
    # Judged by the task's scorer against the known answer.
    assert (written.verification, written.outcome) == ("target", "correct")
    kinds = {n["kind"]: n for n in notes(book)}
    assert set(kinds) == {"example", "code", "procedure", "tool"}
    assert set(written.note_ids) == {n["id"] for n in kinds.values()}
    code = kinds["code"]
    assert "sorted(words)" in code["code"] and code["source_run"] == "r1"
    assert code["source_question"].startswith("Sort the following words")
    assert "Expert Python" in kinds["procedure"]["text"]
    assert code["type_id"] == written.task_type
    # A one-question type is not named after its question, nor keyed by its words.
    assert code["key"].startswith("new kind:")
    kind = book.read_one("select name from task_types")
    assert kind["name"].startswith("new kind:") and "pear" not in kind["name"]
    # The tool reads its words from the question: no word of this one is pasted in.
    assert "pear" not in kinds["tool"]["code"] and "_p(0)" in kinds["tool"]["code"]
    # The example is a lesson with its evidence, cut from the input.
    assert "scorer accepted" in kinds["example"]["text"]


def test_when_a_second_question_names_the_type_the_first_ones_notes_take_the_name(
    book: Notebook,
) -> None:
    learn_from_run(book, sort_run("r1", ["pear", "apple", "fig"]))
    assert all(n["key"].startswith("new kind:") for n in notes(book))
    learn_from_run(book, sort_run("r2", ["kiwi", "banana", "cherry"]))
    kind = book.read_one("select name from task_types")
    assert not kind["name"].startswith("new kind:")
    keys = {n["key"] for n in notes(book)}
    assert kind["name"] in keys  # the first question's notes
    assert not any(k.startswith("new kind:") for k in keys)  # a list would show it


def test_the_same_run_is_learned_once(book: Notebook) -> None:
    first = learn_from_run(book, sort_run("r1", ["pear", "apple"]))
    again = learn_from_run(book, sort_run("r1", ["pear", "apple"]))
    assert first is not None and again is not None
    assert again.note_ids == [] and again.skipped == 4
    assert len(notes(book)) == 4


def test_exact_duplicates_are_skipped_and_near_ones_merged(book: Notebook) -> None:
    learn_from_run(book, sort_run("r1", ["pear", "apple", "fig"]))
    # The same program with other data is merged; the identical procedure is skipped.
    # The tool is the same program read from either question: skipped as identical.
    second = learn_from_run(book, sort_run("r2", ["kiwi", "banana", "cherry"]))
    assert second is not None and (second.merged, second.skipped) == (1, 2)
    (tool,) = notes(book, kind="tool")
    assert tool["support"] == 2
    (procedure,) = notes(book, kind="procedure")
    assert procedure["support"] == 2
    code = notes(book, kind="code")
    assert len(code) == 1 and code[0]["support"] == 2
    history = book.read(
        "select action, run_id from note_history where note_id = ?", (code[0]["id"],)
    )
    assert [(h["action"], h["run_id"]) for h in history] == [("created", "r1"), ("merged", "r2")]
    assert len(notes(book, kind="example")) == 2  # worked examples are per question
    # A byte-identical note from another run is skipped by its content hash.
    third = learn_from_run(book, sort_run("r3", ["kiwi", "banana", "cherry"]))
    assert third is not None and third.skipped >= 1
    assert len(notes(book, kind="example")) == 2


def test_a_better_verified_near_duplicate_replaces_the_text_and_keeps_the_old(
    book: Notebook,
) -> None:
    # No target: two derivations that were not shown the answer give `independent`.
    learn_from_run(
        book,
        sort_run(
            "r1", ["pear", "apple"], target=None,
            experts=("Expert A", "Expert B"), expert_replies=("apple pear", "apple pear"),
        ),
    )  # fmt: skip
    assert notes(book, kind="code")[0]["verification"] == "independent"
    learn_from_run(book, sort_run("r2", ["kiwi", "banana"]))  # the scorer and a target
    code = notes(book, kind="code")[0]
    assert code["verification"] == "target" and code["source_run"] == "r2"
    merged = book.read_one(
        "select detail from note_history where note_id = ? and action = 'merged'", (code["id"],)
    )
    assert "pear" in json.loads(merged["detail"])["replaced_code"]


def test_failures_with_a_known_target_write_pitfalls(book: Notebook) -> None:
    question = "Sort the following words alphabetically: List: pear apple"
    events = run_events(
        "r1", question, "pear apple", target="apple pear", task="word_sorting",
        experts=("Expert A", "Expert B"), expert_replies=("pear apple", "apple pear"),
    )  # fmt: skip
    written = learn_from_run(book, events)
    assert written is not None and written.outcome == "wrong"
    (pitfall,) = notes(book)
    # What went wrong: the check that failed and the disagreement, not just "wrong X".
    assert pitfall["kind"] == "pitfall" and "check rejected" in pitfall["text"]
    assert "disagreed" in pitfall["text"]
    unanswered = learn_from_run(
        book, run_events("r2", question + " fig", None, target="x", task="word_sorting")
    )
    assert unanswered is not None and unanswered.outcome == "unanswered"
    assert len(notes(book, kind="pitfall")) == 2
    kind = book.read_one("select wrong, failed, runs from task_types")
    assert (kind["wrong"], kind["failed"], kind["runs"]) == (1, 1, 2)


def test_retire_flags_and_restores_with_history_never_deletes(book: Notebook) -> None:
    learn_from_run(book, sort_run("r1", ["pear", "apple"]))
    note = notes(book, kind="code")[0]
    assert retire(book, note["id"][:6], reason="wrong approach")
    assert not retire(book, note["id"], reason="again")
    row = notes(book, id=note["id"])[0]
    assert row["retired"] == 1 and row["retired_reason"] == "wrong approach"
    assert retire(book, note["id"], restore=True)
    actions = [r["action"] for r in book.read(
        "select action from note_history where note_id = ? order by id", (note["id"],))]  # fmt: skip
    assert actions == ["created", "retired", "restored"]
    assert book.read_one("select count(*) n from notes")["n"] == 4


def reflecting_model(reply: str) -> ScriptedModel:
    seen: list[str] = []

    def experts(_name: str, prompt: str) -> str:
        seen.append(prompt)
        if "A session has just finished" in prompt:
            return reply
        if "Known kinds of task" in prompt:
            return "KIND: none\nDESCRIPTION: ordering words\nNAME: word sorting"
        return "SUGGESTIONS:\n- keep it short\nPROCEDURE:\n1. sort"

    model = ScriptedModel(["unused"], experts, name="test-online")
    model.offline = False  # type: ignore[attr-defined]  # stands in for a real model
    model.prompts = seen  # type: ignore[attr-defined]
    return model


def test_reflection_writes_keyed_insights_and_is_told_the_target(book: Notebook) -> None:
    model = reflecting_model(
        "INSIGHT | sort the following words alphabetically | Let Python sort; never by eye.\n"
        "PITFALL | sort words alphabetically | Keep duplicates when sorting.\n"
        "some chatter the parser ignores"
    )
    written = learn_from_run(
        book, sort_run("r1", ["pear", "apple"], target="apple pear"), model=model
    )
    assert written is not None and written.reflection == "ok: 2 notes"
    insight = notes(book, kind="insight")[0]
    assert insight["key"] == "sort the following words alphabetically"
    assert insight["author"] == "reflection" and insight["verification"] == "target"
    reflection_prompt = next(p for p in model.prompts if "A session has just finished" in p)
    assert "The correct answer is: apple pear" in reflection_prompt
    kind = book.read_one("select name, description from task_types")
    assert (kind["name"], kind["description"]) == ("word sorting", "ordering words")


def test_a_failing_reflection_costs_only_the_reflection(book: Notebook) -> None:
    model = reflecting_model("I would rather not.")
    written = learn_from_run(book, sort_run("r1", ["pear", "apple"]), model=model)
    assert written is not None and written.reflection.startswith("failed")
    assert len(notes(book)) == 4


def test_offline_models_never_reflect() -> None:
    assert not model_can_reflect(ScriptedModel(["x"]))
    assert not model_can_reflect(ScriptedModel(["x"], name="demo"))
    assert not model_can_reflect(None)
    assert model_can_reflect(reflecting_model(""))


def test_induction_merges_notes_into_capped_lists_and_keeps_the_old(book: Notebook) -> None:
    options = LearnOptions(induction_every=3)
    written = [
        learn_from_run(book, sort_run(f"r{i}", [f"w{i}a", f"w{i}b", "pear"]), options=options)
        for i in range(4)
    ]
    assert any(w is not None and w.induced for w in written)
    kind = book.read_one("select * from task_types")
    procedure = json.loads(kind["procedure"])
    suggestions = json.loads(kind["suggestions"])
    assert procedure and any("Expert Python" in step for step in procedure)
    assert any("Working code" in s for s in suggestions) and len(suggestions) <= 8
    induced = book.read("select detail from type_history where action = 'induced'")
    before = json.loads(induced[0]["detail"])["before"]
    assert before == {"suggestions": [], "procedure": []}
    # Named by what its questions share once it has several.
    assert "alphabetically" in kind["name"]


def test_model_induction_is_parsed_and_capped(book: Notebook) -> None:
    items = "\n".join(f"- tip {i}" for i in range(12))
    model = reflecting_model("INSIGHT | sort words | fine")

    def experts(_name: str, prompt: str) -> str:
        if "Rewrite the playbook" in prompt:
            return f"SUGGESTIONS:\n{items}\nPROCEDURE:\n1. one\n2. two"
        if "Known kinds of task" in prompt:
            return "KIND: 1\nDESCRIPTION: x"
        return "INSIGHT | sort words | use sorted()"

    model._experts = experts  # type: ignore[attr-defined]
    for i in range(3):
        learn_from_run(
            book, sort_run(f"r{i}", [f"a{i}", "b"]), model=model,
            options=LearnOptions(induction_every=2),
        )  # fmt: skip
    kind = book.read_one("select suggestions, procedure from task_types")
    assert json.loads(kind["suggestions"]) == [f"tip {i}" for i in range(8)]
    assert json.loads(kind["procedure"]) == ["one", "two"]


def test_only_cited_notes_move_with_the_outcome(book: Notebook) -> None:
    learn_from_run(book, sort_run("r1", ["pear", "apple"]))
    code = notes(book, kind="code")[0]
    shown = [{"id": code["id"], "rank": 1, "score": 0.9}]
    question = "Sort the following words alphabetically: List: kiwi fig"
    cite = (f"Following [{code['id']}] I sort them.",)
    good = run_events("r2", question, "fig kiwi", target="fig kiwi", recalled=shown,
                      task="word_sorting", meta=cite)  # fmt: skip
    bad = run_events("r3", question + " yam", "yam fig", target="fig kiwi yam",
                     recalled=shown, task="word_sorting", meta=cite)  # fmt: skip
    uncited = run_events("r4", question + " elm", "elm", target="elm fig kiwi",
                         recalled=shown, task="word_sorting", meta=("I sort by eye.",))  # fmt: skip
    crashed = run_events("r5", question + " oak", None, recalled=shown, status="error")
    assert learn_from_run(book, good).feedback == {code["id"]: "helpful"}
    assert learn_from_run(book, bad).feedback == {code["id"]: "harmful"}
    assert learn_from_run(book, uncited).feedback == {code["id"]: "used"}
    # A run that failed for a system reason is never learned: nothing moves.
    assert learn_from_run(book, crashed) is None
    row = notes(book, id=code["id"])[0]
    assert (row["helpful"], row["harmful"], row["uses"]) == (1, 1, 3)
    outcomes = [r["outcome"] for r in book.read("select outcome from recalls order by id")]
    assert outcomes == ["correct", "wrong", "wrong"]


def test_non_answers_and_interrupted_runs_are_never_learned(book: Notebook) -> None:
    question = "Sort the following words alphabetically: List: pear apple"
    for status in ("error", "interrupted", "declined", "cannot"):
        events = run_events(f"r-{status}", question, "I cannot do this.", status=status)
        assert learn_from_run(book, events) is None
    assert book.read_one("select count(*) n from distilled_runs")["n"] == 0
    assert notes(book) == []


def test_code_is_taken_from_the_program_that_printed_the_answer(book: Notebook) -> None:
    events = sort_run("r1", ["b", "a"])
    assert SORT_CODE.split("\n")[0].startswith("words")
    learn_from_run(book, events)
    assert "sorted(words)" in notes(book, kind="code")[0]["code"]


def test_a_kind_seen_twice_is_named_by_its_form_not_by_a_bag_of_words(book: Notebook) -> None:
    for run_id, numbers in (("g1", "4 5 6 10"), ("g2", "1 3 4 6")):
        learn_from_run(book, run_events(run_id, f"Use {numbers} to make 24", "(4*5)-(6-10)"))
    names = [r["name"] for r in book.read("select name from task_types")]
    assert names == ["use N N N N to make N"]
    keys = {r["key"] for r in book.read("select key from notes where source_run = 'g2'")}
    assert keys == {"use N N N N to make N"}
