"""The audit checks, each shown firing on a run that has the problem and not on one without."""

from __future__ import annotations

from conductor_kernel.events import (
    Event,
    ExpertCallFinished,
    ExpertCallStarted,
    FinalAnswer,
    LimitHit,
    MetaTurnFinished,
    MetaTurnStarted,
    Observation,
    RunFinished,
    RunStarted,
    SandboxExec,
)
from conductor_kernel.interfaces import ExecResult
from record.audit import audit_outline, normalise, program_failed, summarise
from record.findings import AuditReport
from record.fold import outline


def audit(events: list[Event]) -> AuditReport:
    return audit_outline(outline(events))


class Run:
    """Builds a run's events round by round, linked as the loop links them."""

    def __init__(self, task: str = "GameOf24") -> None:
        self.events: list[Event] = [RunStarted(run_id="r1", question="q", task=task)]
        self.round = 0

    def turn(self, text: str) -> Run:
        self.round += 1
        start = MetaTurnStarted(run_id="r1", round=self.round)
        self.turn_id = start.id
        self.events += [
            start,
            MetaTurnFinished(run_id="r1", parent_id=start.id, round=self.round, text=text),
        ]
        return self

    def expert(self, name: str, instruction: str, reply: str, run: ExecResult | None = None) -> Run:
        start = ExpertCallStarted(
            run_id="r1", parent_id=self.turn_id, round=self.round, name=name,
            instruction=instruction, is_python=name == "Expert Python",
        )  # fmt: skip
        self.events.append(start)
        if run is not None:
            self.events.append(
                SandboxExec(run_id="r1", parent_id=start.id, code="print(1)", result=run)
            )
        self.events.append(
            ExpertCallFinished(run_id="r1", parent_id=start.id, name=name, text=reply)
        )
        return self

    def answer(self, text: str) -> Run:
        self.turn(f'>> FINAL ANSWER:\n"""\n{text}\n"""')
        self.events.append(
            FinalAnswer(run_id="r1", parent_id=self.turn_id, round=self.round, answer=text)
        )
        self.events.append(RunFinished(run_id="r1", status="answered", final_answer=text))
        return self

    def kinds(self) -> dict[str, int]:
        return audit(self.events).counts()


OK = ExecResult(stdout="(4 + 5 * 6) - 10\n", exit_code=0)
TRACEBACK = ExecResult(
    stdout="", stderr="Traceback (most recent call last):\nNameError: x\n", exit_code=1
)


def test_a_clean_run_has_no_findings() -> None:
    run = (
        Run()
        .turn('Expert Python:\n"""\nfind it\n"""')
        .expert("Expert Python", "find it", "code", OK)
        .turn("The program printed (4 + 5 * 6) - 10; confirmed.")
        .answer("(4 + 5 * 6) - 10")
    )
    assert run.kinds() == {}


def test_an_answer_no_second_expert_or_program_confirmed() -> None:
    run = Run().turn("x").expert("Expert Mathematician", "solve 2+2", "4").answer("4")
    assert run.kinds() == {"unconfirmed_answer": 1}
    run = (
        Run()
        .turn("x")
        .expert("Expert Mathematician", "solve 2+2", "4")
        .expert("Expert Checker", "is 2+2=4?", "Yes, 4.")
        .answer("4")
    )
    assert "unconfirmed_answer" not in run.kinds()


def test_an_instruction_leaning_on_unseen_context() -> None:
    run = Run().turn("x").expert("Expert Reviewer", "Verify the previous solution again.", "ok")
    report = audit(run.events)
    assert [f.kind for f in report.findings] == ["hidden_context"]
    assert "previous solution" in report.findings[0].message
    fine = (
        Run().turn("x").expert("Expert Reviewer", "Verify that 2+2 = 4, shown below: 2+2=4", "ok")
    )
    assert fine.kinds() == {}


def test_an_error_the_next_turn_ignored_and_one_it_took_up() -> None:
    ignored = (
        Run()
        .turn("x")
        .expert("Expert Python", "compute", "code", TRACEBACK)
        .expert("Expert Solver", "compute", "(4 + 5 * 6) - 10")
        .turn("So the expression is settled.")
    )
    assert ignored.kinds() == {"ignored_error": 1}
    taken_up = (
        Run()
        .turn("x")
        .expert("Expert Python", "compute", "code", TRACEBACK)
        .turn("The code raised an error; let me ask differently.")
    )
    assert taken_up.kinds() == {}
    timeout = ExecResult(timed_out=True, exit_code=None)
    assert program_failed(timeout) and not program_failed(ExecResult(infra_error="no daemon"))


def test_an_answer_changed_after_code_verified_another() -> None:
    run = (
        Run()
        .turn("x")
        .expert("Expert Python", "find it", "code", OK)
        .turn("Code says (4 + 5 * 6) - 10. Now I prefer another.")
        .expert("Expert A", "?", "(10 - 4) * (6 - 5) * 4")
        .expert("Expert B", "?", "(10 - 4) * (6 - 5) * 4")
        .answer("(10 - 4) * (6 - 5) * 4")
    )
    assert run.kinds() == {"changed_after_verified": 1}


def test_limits_nudges_and_fabricated_replies() -> None:
    run = Run().turn('Expert Poet\'s output:\n"""a poem"""')
    run.events.append(Observation(run_id="r1", parent_id=run.turn_id, reason="no_call_or_answer"))
    run.turn("x").expert("Expert Python", "loop", "code", ExecResult(timed_out=True, stdout="..."))
    run.events.append(LimitHit(run_id="r1", limit="rounds", value=2, maximum=2))
    kinds = run.kinds()
    assert kinds["nudged"] == 1 and kinds["fabricated_reply"] == 1
    assert kinds["limit_hit"] == 2  # the sandbox timeout and the round limit


def test_normalise_and_summarise() -> None:
    assert normalise(' "Apple  Fig." ') == "applefig"
    reports = [
        audit(Run().turn("x").expert("E", "the above", "1").answer("1").events),
        audit(Run(task="word_sorting").answer("a").events),
    ]
    table = summarise(reports)
    assert table["GameOf24"] == {"runs": 1, "unconfirmed_answer": 1, "hidden_context": 1}
    assert table["word_sorting"] == {"runs": 1, "unconfirmed_answer": 1}
