"""A meta turn carried by tool calls is shown with its calls (issue 34): its text may be
empty, and what it did is in the calls, which every export shows after the text."""

from __future__ import annotations

from conductor.export.markdown import to_markdown
from conductor_kernel.interfaces import Completion, ToolCall
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.run.loop import Conductor
from experts.scripted import ScriptedToolModel
from record.fold import outline


def test_a_tools_turn_is_shown_with_its_calls() -> None:
    calls = [ToolCall("final_answer", '{"answer": "7"}', "a")]
    model = ScriptedToolModel([Completion("Sure.", tool_calls=calls)])
    events = list(Conductor(model, config=RunConfig(python=False, consult_first=False)).run("Q?"))
    rounds = outline(events).rounds
    assert rounds[0].shown_text == 'Sure.\n\n→ final_answer {"answer": "7"}'
    assert 'Sure.\n\n→ final_answer {"answer": "7"}' in to_markdown(outline(events))
