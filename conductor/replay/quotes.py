"""Did our loop quote back to the meta model what the original harness quoted?

For every round whose expert calls the published record answered, the next meta request
our loop sent holds one `NAME's output:` block per call. Each block is compared with
the recorded one, our own prompt words aside:

* an expert's reply must come back unchanged (no cut, no reordering);
* for Expert Python, the reply before the code, and the program's outcome as the
  harness reported it (stdout when there was any, else the error's last line, a
  timeout, or nothing), read back from our run report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conductor.replay.outputs import recorded_view
from conductor_kernel import prompts
from record.published import PublishedRecord, RecordedCall

_RUN_REPORT = "\n\n" + prompts.PYTHON_RAN.split("\n", 1)[0] + "\n"
_NO_CODE = "\n\n" + prompts.PYTHON_NO_CODE
_FENCE = "```"


@dataclass
class QuoteCheck:
    rounds: int = 0  # rounds with recorded expert outputs to compare
    identical: int = 0
    differences: list[str] = field(default_factory=list)


def quoted_blocks(message: str, names: list[str]) -> list[str | None]:
    """The text of each named output block in one of our user turns, in order."""
    blocks: list[str | None] = []
    pos = 0
    for j, name in enumerate(names):
        header = prompts.EXPERT_OUTPUT.split("{output}")[0].format(name=name)
        start = message.find(header, pos)
        if start == -1:
            blocks.append(None)
            continue
        start += len(header)
        if j + 1 < len(names):
            following = prompts.EXPERT_OUTPUT.split("{output}")[0].format(name=names[j + 1])
            end = message.find('\n"""\n\n' + following, start)
        else:
            end = message.rfind('\n"""', start)
        blocks.append(message[start:end] if end >= start else None)
        pos = max(pos, end)
    return blocks


def _report_view(report: str) -> tuple[str, str]:
    """Our run report classified the way the original harness reported a run."""
    status = report.split("\n", 1)[0]
    stdout = ""
    if "stdout:\n```\n" in report:
        rest = report.split("stdout:\n```\n", 1)[1]
        cut = rest.find("\n```\nstderr:\n```\n")
        stdout = rest[:cut] if cut != -1 else rest.rsplit("\n```", 1)[0]
    stdout = "" if stdout == "(nothing)" else stdout
    stderr = ""
    if "\nstderr:\n```\n" in report:
        stderr = report.split("\nstderr:\n```\n", 1)[1].rsplit("\n```", 1)[0]
    if "time limit" in status and not stdout.strip():
        return "timeout", ""
    if stdout.strip():
        return "stdout", stdout.strip()
    if stderr.strip():
        lines = [x.strip() for x in stderr.strip().splitlines() if x.strip()]
        return "error", lines[-1]
    return "empty", ""


def same_quote(ours: str, recorded: RecordedCall) -> str | None:
    """None when our quote of `recorded` carries what the harness's did, else why not."""
    if recorded.code_output is not None:
        reply, sep, report = ours.partition(_RUN_REPORT)
        if not sep:
            return "no run report where the harness ran code"
        if reply.strip() != (recorded.reply or "").strip():
            return "Expert Python's reply differs"
        mine, theirs = _report_view(report), recorded_view(recorded.code_output)
        if mine != theirs:
            return f"code output: recorded {theirs[0]} {theirs[1][:40]!r}, ours {mine[0]} {mine[1][:40]!r}"
        return None
    reply = ours.split(_NO_CODE, 1)[0]
    if reply.strip() != (recorded.output or "").strip():
        return f"{recorded.expert}'s reply differs ({len(reply)} vs {len(recorded.output or '')} chars)"
    return None


def check_quotes(
    record: PublishedRecord, requests: list[str], names_by_round: dict[int, list[str]]
) -> QuoteCheck:
    """Compare every round's quoted outputs; `requests[k]` is the message before turn k+1."""
    check = QuoteCheck(differences=[])
    for turn in record.turns:
        calls = turn.calls or []
        if turn.outcome != "calls" or not calls or any(c.output is None for c in calls):
            continue
        if turn.number >= len(requests):
            continue  # our run ended before sending this round's outputs back
        check.rounds += 1
        names = names_by_round.get(turn.number, [])
        if len(names) != len(calls):
            check.differences.append(
                f"turn {turn.number}: {len(names)} outputs quoted, {len(calls)} recorded"
            )
            continue
        blocks = quoted_blocks(requests[turn.number], names)
        why = next(
            (
                f"turn {turn.number} {call.expert}: " + (reason or "")
                for block, call in zip(blocks, calls, strict=True)
                if (reason := "not quoted" if block is None else same_quote(block, call))
            ),
            None,
        )
        if why is None:
            check.identical += 1
        else:
            check.differences.append(why)
    return check
