"""Expert Python's program reads its instruction on standard input.

A small model retyping a list into its program drops and adds words (Qwen2.5-Coder-1.5B
on word_sorting, docs/methods.md); read from standard input, the data is the data the
meta model gave. Through a real `Conductor` with scripted models and the real subprocess
sandbox: whatever the instruction holds (generated text, quotes, newlines, non-ASCII),
the program's stdin is exactly it; code the meta model gives itself reads nothing; and
Expert Python is told so.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from conductor_kernel import prompts
from conductor_kernel.events import ExpertCallStarted, SandboxExec
from conductor_kernel.interfaces import Message
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.run.loop import Conductor
from experts.scripted import ScriptedModel
from sandbox.subprocess_backend import SubprocessSandbox

ECHO = (
    "```python\nimport sys\ndata = sys.stdin.read()\nprint(repr(data))\n```\nPlease run this code!"
)
# Instructions as a meta model writes them: any printable text (no triple quote, which
# would end the call) on a few lines.
instructions = st.lists(
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40
    ).filter(lambda s: '"""' not in s and s.strip() and not s.strip().startswith("```")),
    min_size=1,
    max_size=4,
).map(lambda lines: "\n".join(line.strip() for line in lines))


def run_once(instruction: str, expert_reply: str) -> list:
    def meta(history: list[Message]) -> str:
        if history[-1].content.startswith("ROUND 1"):
            return f'Expert Python:\n"""\n{instruction}\n"""'
        return '>> FINAL ANSWER:\n"""\ndone\n"""'

    model = ScriptedModel(meta, lambda _name, _text: expert_reply)
    sandbox = SubprocessSandbox()
    try:
        return list(Conductor(model, model, sandbox, RunConfig(max_rounds=2)).run("q"))
    finally:
        sandbox.close()


@given(instructions)
@settings(max_examples=25, deadline=None)
def test_the_program_reads_its_instruction_word_for_word(instruction: str) -> None:
    events = run_once(instruction, ECHO)
    (started,) = [e for e in events if isinstance(e, ExpertCallStarted)]
    (ran,) = [e for e in events if isinstance(e, SandboxExec)]
    assert ran.result.ok, ran.result.stderr
    assert ran.result.stdout.strip() == repr(started.instruction)
    assert started.instruction.strip() == instruction.strip()


def test_code_the_meta_model_gives_itself_reads_nothing() -> None:
    given_code = "```python\nimport sys\nprint(repr(sys.stdin.read()))\n```\nPlease run this code!"
    events = run_once(given_code, "unused")
    (ran,) = [e for e in events if isinstance(e, SandboxExec)]
    assert ran.source == "instruction"
    assert ran.result.stdout.strip() == repr("")


def test_expert_python_is_told_where_its_data_is() -> None:
    told = prompts.PYTHON_SYSTEM.format(timeout=10)
    assert "standard input is your instruction" in told and "sys.stdin.read()" in told
