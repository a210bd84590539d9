"""A type's experience (its suggestions and procedure, shown by recall without a trust
label) carries only what has evidence (issue 25): what runs that were right did, and
failures as they happened. Against Qwen2.5-Coder-1.5B, five wrong Game of 24 answers
put the model's own lessons from them ("use PEMDAS") into the suggestions every later
puzzle was shown. Generated here: runs right and wrong, each reflected on by a model
that writes a lesson naming its run; after induction, no lesson of a wrong run is in
the experience, and the procedure comes from a right run or there is none.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nb_support import SORT_CODE, run_events

from conductor.scoring.notebook import open_notebook
from experts.scripted import ScriptedModel
from lessons.write.learn import LearnOptions, learn_from_run

WORDS = ["pear", "fig", "kiwi", "plum", "lime", "date", "yam", "okra"]


def lesson_writer() -> ScriptedModel:
    """Reflects on every run with a lesson that names it (the run id is in the prompt's
    question), and declines to induce, so the deterministic experience is tested."""

    def experts(_name: str, prompt: str) -> str:
        if "A session has just finished" in prompt:
            tag = next(w for w in prompt.split() if w.startswith("zz"))
            return f"INSIGHT | sort words | lesson from {tag.strip('.,:')}\n"
        if "Known kinds of task" in prompt:
            return "KIND: 1\nDESCRIPTION: x"
        return "no"

    model = ScriptedModel(["unused"], experts, name="test-online")
    model.offline = False  # type: ignore[attr-defined]  # stands in for a real model
    return model


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rights=st.lists(st.booleans(), min_size=2, max_size=6))
def test_the_experience_carries_only_what_right_runs_taught(rights: list[bool]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        book = open_notebook(Path(folder) / "nb.db")
        model = lesson_writer()
        for i, right in enumerate(rights):
            words = [f"zz{i}", *WORDS[i : i + 2]]
            target = " ".join(sorted(words))
            answer = target if right else " ".join(reversed(sorted(words)))
            question = "Sort the following words alphabetically: List: " + " ".join(words)
            events = run_events(
                f"r{i}", question, answer, target=target, task="word_sorting",
                code=SORT_CODE.format(words=words), stdout=answer + "\n",
                experts=("Expert Linguist",), expert_replies=(answer,),
            )  # fmt: skip
            learn_from_run(book, events, model=model, options=LearnOptions(induction_every=1))
        kinds = book.read("select suggestions, procedure from task_types")
        lessons = book.read_column("select text from notes where kind = 'insight'")
        book.close()
    # Every run was reflected on: the lessons exist, wrong runs' among them.
    assert len(lessons) == len(rights), lessons
    wrong_tags = {f"zz{i}" for i, right in enumerate(rights) if not right}
    for kind in kinds:
        shown = " ".join(json.loads(kind["suggestions"]) + json.loads(kind["procedure"]))
        for tag in wrong_tags:
            assert f"lesson from {tag}" not in shown, (rights, shown)
        if not any(rights):
            assert json.loads(kind["procedure"]) == []
