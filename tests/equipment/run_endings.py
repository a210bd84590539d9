"""One table of the ways a run ends, each made by a scripted model through the real loop:
answered right and wrong, declined, no answer, an error by each cause, interrupted and
a limit hit. Every way in (CLI, TUI, `serve`, MCP) is tested over this one table and
asserts it shows the status and the reason the run's fold holds (record/ending.py).

`session_for(case)` is a session factory of the shape `build_session` has, so a test
puts it where a way in builds its session.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conductor.methods import get_method
from conductor.session import Session
from conductor_kernel.interfaces import ExecResult, Message, ModelError
from experts.demo import Declined, DemoModel
from record.ending import Ending, ending
from record.fold import outline_file
from record.home import runs_dir
from transcripts.index import RunIndex

GAME24 = "Use 4 7 8 8 to make 24"
OTHER = "What is the capital of Australia?"


def _answer(text: str) -> str:
    return f'Here it is.\n\n>> FINAL ANSWER:\n"""\n{text}\n"""'


_ASK_CHECKER = 'Expert Checker:\n"""\nIs 2 + 2 equal to 4?\n"""'
_ASK_PYTHON = 'Expert Python:\n"""\n```python\nprint(2 + 2)\n```\nPlease run this code!\n"""'


@dataclass(frozen=True)
class EndingCase:
    name: str
    status: str  # the RunFinished status this case ends with
    headline: str  # what the user is told first (Ending.headline)
    said: str  # words the reason holds (so a blank or generic reason fails)
    question: str = OTHER
    turns: tuple[str, ...] = ()  # meta turns in order; the last repeats
    declines: bool = False
    expert_fails: bool = False
    sandbox_fails: bool = False
    cancels: bool = False  # the session is cancelled during the first meta turn
    run: dict[str, Any] = field(default_factory=dict)  # RunConfig changes


CASES = (
    EndingCase(
        "answered right", "answered", "answered, right", "24",
        question=GAME24, turns=(_answer("(7 - 8 / 8) * 4"),),
    ),
    EndingCase(
        "answered wrong", "answered", "answered, wrong", "27",
        question=GAME24, turns=(_answer("4 + 7 + 8 + 8"),),
    ),
    EndingCase(
        "declined", "declined", "declined", "only a person with an atlas",
        turns=("No answer: only a person with an atlas can say; ask one.",), declines=True,
    ),
    EndingCase(
        "no answer", "no_answer", "no answer", "ignored the protocol",
        turns=("Let me think about it some more.",),
    ),
    EndingCase(
        "error (model)", "error", "error in the model", "503 from the expert's server",
        turns=(_ASK_CHECKER, _answer("4")), expert_fails=True, run={"python": False},
    ),
    EndingCase(
        "error (sandbox)", "error", "error in the sandbox", "no sandbox engine answered",
        turns=(_ASK_PYTHON, _answer("4")), sandbox_fails=True,
    ),
    EndingCase(
        "interrupted", "interrupted", "interrupted", "stopped before it answered",
        turns=("Let me think.", _answer("4")), cancels=True,
    ),
    EndingCase(
        "limit hit", "limit", "rounds limit hit", "rounds limit (2)",
        turns=(_ASK_CHECKER,), run={"max_rounds": 2, "python": False},
    ),
)  # fmt: skip


class FailingSandbox:
    """A sandbox whose engine is gone: every program is the machine's failure."""

    name = "failing"

    def run(self, code: str, *, timeout: float = 10.0, stdin: str = "") -> ExecResult:
        return ExecResult(backend=self.name, infra_error="no sandbox engine answered")

    def close(self) -> None:
        pass


class EchoSandbox:
    """Runs nothing; says `4` for every program (enough for a scripted run)."""

    name = "echo"

    def run(self, code: str, *, timeout: float = 10.0, stdin: str = "") -> ExecResult:
        return ExecResult(stdout="4\n", exit_code=0, backend=self.name)

    def close(self) -> None:
        pass


def session_for(case: EndingCase) -> Any:
    """A `build_session` stand-in that makes `case`'s run with the settings given."""

    def build(settings: Any, *_: Any, **__: Any) -> Session:
        config = settings.run.model_copy(update=case.run)
        method = get_method(getattr(settings, "method", "meta"), python=config.python)
        session: Session | None = None
        asked = 0

        def meta(messages: list[Message]) -> str:
            nonlocal asked
            turn = case.turns[min(asked, len(case.turns) - 1)]
            asked += 1
            if case.cancels and session is not None:
                session.cancel()  # as Ctrl-C or a client going away would
            return Declined(turn) if case.declines else turn

        def expert(name: str, instruction: str) -> str:
            if case.expert_fails:
                failed = ModelError("503 from the expert's server after 4 tries")
                failed.failure_kind = "server"
                raise failed
            return "```python\nprint(2 + 2)\n```" if name == "Expert Python" else "Yes."

        sandbox = FailingSandbox() if case.sandbox_fails else EchoSandbox()
        session = Session(
            meta_model=DemoModel(meta, expert, name="scripted"),
            sandbox=sandbox if method.python else None,
            config=config,
            index=RunIndex(),
            method=method,
        )
        return session

    return build


def recorded_ending(run_id: str) -> Ending:
    """The account of run `run_id`, read back from its transcript."""
    return ending(outline_file(runs_dir() / f"{run_id}.jsonl"))


def newest_run_id() -> str:
    """The id of the run recorded last under this home."""
    newest = max(runs_dir().glob("*.jsonl"), key=lambda path: path.stat().st_mtime_ns)
    return newest.stem
