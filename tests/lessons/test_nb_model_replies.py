"""What the notebook keeps of a model's reply: lessons in the asked form, never the
prompt written back, and no more of a looping reply than it takes to see it loop.

These are the failures SmolLM2-135M showed against the real server
(tests/peers/test_notebook_llama.py), replayed here through the openai SDK and the
local wire server, so they are checked on every run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from nb_support import sort_run

from conductor.scoring.notebook import open_notebook
from conductor_kernel.interfaces import StreamStopped
from equipment.wire_server import WireServer
from experts.openai_model import OpenAIModel
from lessons.write.asking import RepetitionGuard
from lessons.write.distill import parse_reflection
from lessons.write.induction import parse_experience
from lessons.write.learn import learn_from_run, prepare_run
from lessons.write.prepare import choose_type


def test_reflection_keeps_lessons_and_drops_what_only_looks_like_one() -> None:
    prompt = "Question:\nSort the following words alphabetically: List: pear apple\n"
    reply = "\n".join(
        [
            "INSIGHT | <key> | <lesson>",  # the prompt's slots written back
            "PITFALL | 42 | Do not sort the words by eye at all.",  # a key with no words
            "INSIGHT | sorting | Sort them!",  # two words are no lesson
            "INSIGHT | sorting | Sort the following words alphabetically: List: pear",  # echo
            "INSIGHT | sort words | Let a program sort the words; eyes skip letters.",
            "INSIGHT | sort words | Let a program sort the words; eyes skip letters.",
            "The answer to the question is apple pear.",
        ]
    )
    drafts = parse_reflection(reply, prompt)
    assert [(d.kind, d.key, d.text) for d in drafts] == [
        ("insight", "sort words", "Let a program sort the words; eyes skip letters.")
    ]


def test_a_repeating_stream_is_stopped_at_the_third_copy_of_a_line() -> None:
    guard = RepetitionGuard()
    guard("The session ")
    guard("failed.\n\nThe session failed.\n")
    guard("\nThe session")
    with pytest.raises(StreamStopped):
        guard(" failed.\n")
    varied = RepetitionGuard()
    for line in ("1. Ask Expert Python.", "2. Check it.", "3. Answer.", "- Sort."):
        varied(line + "\n")  # different lines never stop it


def test_induction_keeps_items_once_without_the_prompts_labels_or_slots() -> None:
    label = "[code; helped 0, hurt 0, seen 2x] "
    reply = (
        "SUGGESTIONS:\n- <suggestion>\n"
        + f"- {label}Give the program to Expert Python.\n" * 3
        + "PROCEDURE:\n1. <step>\n2. Ask Expert Python.\n"
    )
    assert parse_experience(reply) == (
        ["Give the program to Expert Python."],
        ["Ask Expert Python."],
    )
    assert parse_experience("SUGGESTIONS:\n- <suggestion>\nPROCEDURE:\n1. <step>\n") is None
    # What SmolLM2 wrote: the slot in square brackets.
    assert parse_experience("SUGGESTIONS:\n- [suggestion]\nPROCEDURE:\n1. [step]\n") is None


class Said:
    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.name = "some-model"

    def complete(self, messages, **kwargs):  # type: ignore[no-untyped-def]
        from conductor_kernel.interfaces import Completion

        return Completion(text=self.reply)


def test_a_type_choice_out_of_form_leaves_the_lexical_match_standing(tmp_path: Path) -> None:
    book = open_notebook(tmp_path / "nb.db")
    learn_from_run(book, sort_run("r1", ["pear", "apple"]))
    # What SmolLM2 answered: prose, no KIND line.
    prose = Said("This question is about sorting words alphabetically.")
    prepared = prepare_run(book, sort_run("r2", ["kiwi", "fig"]), model=prose)
    assert prepared is not None and prepared.rejected_types == []
    written = learn_from_run(book, sort_run("r3", ["yam", "oat"]), model=prose)
    assert written is not None
    assert book.read_one("select count(*) as n from task_types")["n"] == 1
    # An explicit "none" still founds a new type.
    declined = Said("KIND: none\nDESCRIPTION: Ordering words.\nNAME: ordering words")
    prepared = prepare_run(book, sort_run("r4", ["rye", "bay"]), model=declined)
    assert prepared is not None and prepared.rejected_types != []


def test_a_type_name_that_is_the_prompts_slot_is_not_kept() -> None:
    echo = Said("KIND: none\nDESCRIPTION: <one sentence>\nNAME: <two to five words naming this>")
    choice = choose_type(echo, "Sort: b a", [])
    assert choice.asked and choice.name == "" and choice.description == ""


def test_a_looping_reply_is_cut_short_and_its_reflection_fails_cleanly(tmp_path: Path) -> None:
    looping = "The session failed.\n\n" * 200
    with WireServer(responder=lambda _body: looping, chunk_chars=8) as server:
        model = OpenAIModel("t", base_url=server.openai_url, api_key="k", max_retries=0)
        book = open_notebook(tmp_path / "nb.db")
        written = learn_from_run(book, sort_run("r1", ["pear", "apple"]), model=model)
    assert written is not None
    assert (
        written.reflection == "failed: the reply repeated itself before any INSIGHT/PITFALL lesson"
    )
    assert book.read("select * from notes where author = 'reflection'") == []
    assert {r["kind"] for r in book.read("select kind from notes")} == {
        "example", "code", "procedure", "tool"
    }  # fmt: skip
