"""What the audit finds (record/audit.py) as plain values: the kinds of finding, one
finding, and a run's report. Kept apart so the fold can carry a run's findings beside
its rounds and calls without importing the audit, which reads the fold.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from conductor_kernel.errors import UserFacingError

AUDIT_FORMAT_VERSION = 1

# kind -> (short badge, what it means). The order is the order of columns in reports.
FINDING_KINDS: dict[str, tuple[str, str]] = {
    "unconfirmed_answer": (
        "unconf",
        "the final answer was not confirmed by a second expert or by a sandbox run",
    ),
    "hidden_context": (
        "ctx",
        "an expert instruction leans on context the expert cannot see",
    ),
    "ignored_error": (
        "err",
        "a Python error or timeout that the meta model's next turn did not take up",
    ),
    "changed_after_verified": (
        "changed",
        "the final answer differs from one that code or an expert had verified",
    ),
    "limit_hit": ("limit", "a run or sandbox limit was reached"),
    "nudged": ("nudge", "the meta model had to be nudged to call an expert or answer"),
    "fabricated_reply": (
        "fake",
        "the meta model wrote an expert's reply itself",
    ),
}

# The short badges, in column order: the values a filter by finding takes.
BADGES = tuple(badge for badge, _ in FINDING_KINDS.values())


def finding_badge(name: str | None) -> str | None:
    """A finding as a filter takes it (its badge, its kind's name, or any) as the
    badge runs.db holds; a name that is neither says which are."""
    if not name:
        return None
    if name == "any" or name in BADGES:
        return name
    if name in FINDING_KINDS:
        return FINDING_KINDS[name][0]
    raise UserFacingError(
        f"no finding is called {name!r}; give one of {', '.join(BADGES)} (or any), "
        "as `conductor runs audit` names them."
    )


@dataclass
class Finding:
    kind: str
    message: str
    round: int | None = None
    event_id: str | None = None

    @property
    def badge(self) -> str:
        return FINDING_KINDS[self.kind][0]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class AuditReport:
    run_id: str
    task: str = ""
    question: str = ""
    findings: list[Finding] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        counted = Counter(f.kind for f in self.findings)
        return {kind: counted[kind] for kind in FINDING_KINDS if counted[kind]}

    @property
    def badges(self) -> list[str]:
        return [FINDING_KINDS[kind][0] for kind in self.counts()]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AuditReport | None:
        """A report as `to_dict` gave it; None for another format's (or unknown kinds)."""
        if data.get("v") != AUDIT_FORMAT_VERSION:
            return None
        findings = [
            Finding(str(f["kind"]), str(f["message"]), f.get("round"), f.get("event_id"))
            for f in data.get("findings", [])
        ]
        if any(f.kind not in FINDING_KINDS for f in findings):
            return None
        return cls(str(data["run_id"]), str(data["task"]), str(data["question"]), findings)

    def to_dict(self) -> dict[str, Any]:
        return {
            "v": AUDIT_FORMAT_VERSION,
            "run_id": self.run_id,
            "task": self.task,
            "question": self.question,
            "counts": self.counts(),
            "findings": [f.to_dict() for f in self.findings],
        }
