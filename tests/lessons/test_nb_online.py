"""The write path with a real model client: the openai SDK against the local wire server.

The model places the question in a task type (its `none` overrules a lexical match; its
pick stands only among the types the question's own words allow)
and reflects into keyed insights; a model that fails costs only what it was asked for.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from nb_support import run_events, sort_run

from conductor.scoring.notebook import open_notebook
from equipment.wire_server import Fault, WireServer
from experts.openai_model import OpenAIModel
from lessons.forms.tasktypes import pick_allowed, score_types
from lessons.forms.terms import question_terms
from lessons.storage.store import Notebook
from lessons.write.learn import learn_from_run


class Replies:
    """What the 'model' says to each kind of notebook prompt; records the prompts."""

    def __init__(self) -> None:
        self.kind = "KIND: none\nDESCRIPTION: Put words in dictionary order.\nNAME: word sorting"
        self.reflection = "INSIGHT | sort words | Let a program sort; never sort by eye."
        self.prompts: list[str] = []

    def __call__(self, body: dict[str, Any]) -> str:
        prompt = str(body["messages"][-1]["content"])
        self.prompts.append(prompt)
        if "Known kinds of task" in prompt:
            return self.kind
        if "A session has just finished" in prompt:
            return self.reflection
        return "SUGGESTIONS:\n- Sort with a program.\nPROCEDURE:\n1. Ask Expert Python."


@pytest.fixture
def online(tmp_path: Path) -> Iterator[tuple[Notebook, OpenAIModel, Replies]]:
    replies = Replies()
    with WireServer(responder=replies) as server:
        model = OpenAIModel("t", base_url=server.openai_url, api_key="k", max_retries=0)
        yield open_notebook(tmp_path / "nb.db"), model, replies


def types(book: Notebook) -> list[dict[str, Any]]:
    return [dict(r) for r in book.read("select * from task_types order by created_at, id")]


def test_the_model_names_a_new_type_and_reflects(online) -> None:
    book, model, replies = online
    events = sort_run("r1", ["pear", "apple"], target="apple pear")
    written = learn_from_run(book, events, model=model)
    assert written is not None and written.reflection == "ok: 1 notes"
    (kind,) = types(book)
    assert (kind["name"], kind["description"]) == ("word sorting", "Put words in dictionary order.")
    insight = book.read_one("select * from notes where kind = 'insight'")
    assert insight["key"] == "sort words" and "never sort by eye" in insight["text"]
    assert insight["source_run"] == "r1"
    assert any("The correct answer is: apple pear" in p for p in replies.prompts)


def test_the_models_none_overrules_a_lexical_match(online) -> None:
    book, model, replies = online
    learn_from_run(book, sort_run("r1", ["pear", "apple"]), model=model)
    # Lexically the same kind; the model says it is not one of the known kinds.
    replies.kind = "KIND: none\nDESCRIPTION: Another task.\nNAME: other task"
    written = learn_from_run(book, sort_run("r2", ["kiwi", "fig"]), model=model)
    assert written is not None
    assert [k["name"] for k in types(book)] == ["word sorting", "other task"]
    assert written.task_type == types(book)[1]["id"]


def test_the_models_pick_decides_among_the_types_the_words_allow(online) -> None:
    book, model, replies = online
    learn_from_run(book, sort_run("r1", ["pear", "apple"]), model=model)
    replies.kind = "KIND: none\nDESCRIPTION: Order numbers.\nNAME: number sorting"
    numbers = "Sort the following numbers in ascending order: List: 3 1 2"
    learn_from_run(book, run_events("r2", numbers, "1 2 3", target="1 2 3", code="print(1)"),
                   model=model)  # fmt: skip
    assert len(types(book)) == 2
    # Both types are plausible by its words: the model's pick decides between them.
    events = sort_run("r3", ["kiwi", "fig"])
    events[0].question = "Sort the following words by length: List: kiwi fig"
    with book.reading() as conn:
        found = score_types(conn, question_terms(events[0].question))
    allowed = [m for m in found if pick_allowed(m, found[0])]
    assert len(allowed) == 2
    replies.kind = "KIND: 2\nDESCRIPTION: Put things in order.\nNAME: sorting"
    written = learn_from_run(book, events, model=model)
    assert written is not None and written.task_type == allowed[1].type_id


def test_the_models_pick_never_joins_a_type_the_words_do_not_support(online) -> None:
    book, model, replies = online
    learn_from_run(book, sort_run("r1", ["pear", "apple"]), model=model)
    replies.kind = "KIND: 1\nDESCRIPTION: Put words in dictionary order.\nNAME: word sorting"
    events = sort_run("r2", ["kiwi", "fig"])
    events[0].question = "Alphabetize: kiwi fig"  # no words in common with the type
    written = learn_from_run(book, events, model=model)
    first, second = types(book)
    assert written is not None and written.task_type == second["id"] and first["members"] == 1
    # Nor by the name it gives: a type of that name the words do not support stays apart.
    assert second["name"] == "word sorting" == first["name"]


def test_a_failing_model_costs_only_its_own_part(tmp_path: Path) -> None:
    with WireServer(responder=lambda _body: Fault(status=400)) as server:
        model = OpenAIModel("t", base_url=server.openai_url, api_key="k", max_retries=0)
        book = open_notebook(tmp_path / "nb.db")
        written = learn_from_run(book, sort_run("r1", ["pear", "apple"]), model=model)
    assert written is not None and written.reflection.startswith("failed")
    kinds = {r["kind"] for r in book.read("select kind from notes")}
    assert kinds == {"example", "code", "procedure", "tool"}  # the deterministic notes stand
    (kind,) = types(book)
    # Named by its form when the model cannot: never after its first question.
    assert kind["name"].startswith("new kind:") and "pear" not in kind["name"]
