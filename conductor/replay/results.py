"""What a replay found: each record's comparison with the published run, and a file's totals.

`RecordResult` is one record's verdict (same final answer, same expert calls, same
number of meta turns, sandbox outputs and quoted rounds that agree) with its
mismatches; `FileReport` adds them up for one published file (conductor/replay/runner.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Mismatch:
    line: int  # the record's line in its file
    # final_answer | expert_calls | rounds | sandbox | quoted_output | replay_error | no_reply
    kind: str
    detail: str


@dataclass
class RecordResult:
    line: int
    same_final_answer: bool = False
    same_expert_calls: bool = False
    same_rounds: bool = False
    retry_defect: bool = False
    sandbox_runs: int = 0
    sandbox_compared: int = 0  # runs with a recorded output to compare with
    sandbox_identical: int = 0
    quoted_rounds: int = 0  # rounds whose recorded expert outputs our loop sent back
    quoted_identical: int = 0  # ... quoting what the harness quoted (prompt words aside)
    input_tokens: int = 0
    input_tokens_cached: int = 0  # the uncached part when the history is cached
    duration_s: float = 0.0
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def faithful(self) -> bool:
        return self.same_final_answer and self.same_expert_calls


@dataclass
class FileReport:
    file: str
    method: str = "meta"  # the method its records ran (conductor/methods)
    records: int = 0
    same_final_answer: int = 0
    same_expert_calls: int = 0
    same_answer_and_calls: int = 0
    same_rounds: int = 0
    sandbox_outputs_identical: int = 0
    sandbox_runs: int = 0
    sandbox_compared: int = 0
    quoted_rounds: int = 0
    quoted_identical: int = 0
    input_tokens: int = 0
    input_tokens_cached: int = 0
    retry_defect_records: int = 0
    retry_defect_faithful: int = 0
    read_problem: str | None = None
    sandbox: str = ""
    record_seconds: list[float] = field(default_factory=list, repr=False)
    duration_s: float = 0.0
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def fidelity(self) -> float:
        return self.same_answer_and_calls / self.records if self.records else 0.0

    def add(self, result: RecordResult) -> None:
        self.records += 1
        self.same_final_answer += result.same_final_answer
        self.same_expert_calls += result.same_expert_calls
        self.same_answer_and_calls += result.faithful
        self.same_rounds += result.same_rounds
        self.sandbox_runs += result.sandbox_runs
        self.sandbox_compared += result.sandbox_compared
        self.sandbox_outputs_identical += result.sandbox_identical
        self.quoted_rounds += result.quoted_rounds
        self.quoted_identical += result.quoted_identical
        self.input_tokens += result.input_tokens
        self.input_tokens_cached += result.input_tokens_cached
        self.retry_defect_records += result.retry_defect
        self.retry_defect_faithful += result.retry_defect and result.faithful
        self.mismatches.extend(result.mismatches)
        self.record_seconds.append(result.duration_s)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["fidelity"] = round(self.fidelity, 4)
        data["mismatches"] = [asdict(m) for m in self.mismatches]
        del data["record_seconds"]
        return data
