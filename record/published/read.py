"""Reading the meta-prompting paper's published runs, and what their harness did in each.

A published record is one conversation of the meta model (`message_log`). Everything a
replay or an import needs is recovered from it here, following the behaviour the data
README describes for the original harness:

* which expert calls each meta turn dispatched (`harness_calls`): a turn is scanned for
  calls only when some line ends in `Expert <one to five words>:`; then every
  triple-quoted block whose preceding line mentions "Expert " was sent to an expert;
* each expert's reply, cut out of the next user turn (`NAME's output:` blocks), and for
  Expert Python the code the harness ran and what it printed;
* the retry defect: a meta turn followed directly by another meta turn lost its
  experts' replies (the harness crashed in the round and asked the meta model again);
* the final answer, from the last meta turn.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conductor_kernel.bounded import TooDeep, loads_json
from conductor_kernel.errors import TranscriptError, UserFacingError

QUOTE = '"""'
RUN_MARKER = "Please run this code!"
# What the harness appended to Expert Python's reply after running its code.
CODE_HEADER = "Here is the Python code used to solve the problem:\n\n"
OUTPUT_HEADER = "\n\nHere is the output of the code when executed:\n\n"
ANSWER_MARK = ">> FINAL ANSWER:"

# The harness looked for calls only when a line ended in "Expert" plus 1-5 words and ":".
_CALL_GATE = re.compile(r"Expert (?:\w+ ?){1,5}:\n")
_ROUND_PREFIX = re.compile(r"ROUND \d+:\n\n")
_LAST_ROUND = re.compile(r"(?i)this is the last round")

# What an imported run says of itself: the model, the harness's cap, the "sandbox".
MODEL = "gpt-4 (published run)"
META_TURN_CAP = 16
RECORDED_BACKEND = "recorded"


@dataclass
class RecordedCall:
    """One expert call the original harness made, and what came back."""

    name: str  # the harness's name for it: the line before the block, less a final ":"
    instruction: str
    output: str | None = None  # the whole quoted block the meta model was shown
    reply: str | None = None  # the expert's own words (for Expert Python: before the code)
    code: str | None = None  # the code the harness ran, if any
    code_output: str | None = None  # what the harness reported the code printed

    @property
    def expert(self) -> str:
        """The expert's name alone: "... checked by Expert Poet" gives "Expert Poet"."""
        return normalise_expert_name(self.name)

    @property
    def is_python(self) -> bool:
        return self.name == "Expert Python"  # the harness matched this exact name

    @property
    def lost(self) -> bool:
        """True when the log never received this call's reply (retry defect)."""
        return self.output is None


@dataclass
class PublishedTurn:
    """One meta-model (assistant) turn and what the harness did with it."""

    number: int  # 1-based position among the meta turns
    text: str  # as the model wrote it (a prefix the harness added is removed)
    calls: list[RecordedCall] | None  # None: not scanned for calls (no call line)
    answer: str | None  # the final answer when the turn ended the run with one
    # "calls" | "answer" | "nudge" | "lost" (retry defect) | "last" (the log ends here)
    outcome: str = ""
    prompt: str = ""  # the user message it answered; empty when it was a retry
    reply_to_it: str | None = None  # the user message that followed it, if any


@dataclass
class PublishedRecord:
    """One published run, parsed."""

    line: int  # 1-based line in its file
    task: str
    question: str
    target: str | None
    system: str
    first_user: str  # the first user turn, ROUND header removed
    turns: list[PublishedTurn] = field(default_factory=list)
    final_answer: str | None = None
    notice_round: int | None = None  # the round whose user turn said "last round"
    problems: list[str] = field(default_factory=list)  # blocks that could not be split

    @property
    def retry_defect(self) -> bool:
        return any(t.outcome == "lost" for t in self.turns)

    @property
    def rounds(self) -> int:
        return len(self.turns)

    @property
    def calls(self) -> list[RecordedCall]:
        return [c for t in self.turns for c in t.calls or []]


@dataclass
class PublishedFile:
    path: Path
    records: list[PublishedRecord] = field(default_factory=list)
    problem: TranscriptError | None = None  # set when reading stopped at a bad line

    @property
    def task(self) -> str:
        return self.path.stem


def normalise_expert_name(name: str) -> str:
    name = name.replace("*", "")
    at = name.rfind("Expert ")
    return " ".join((name[at:] if at >= 0 else name).split())


def harness_calls(turn: str) -> list[tuple[str, str]] | None:
    """(name, instruction) of each call the original harness dispatched from `turn`.

    None when the turn has no call line, so the harness looked at its answer instead.
    """
    if not _CALL_GATE.search(turn):
        return None
    pieces = turn.split(QUOTE)
    calls = []
    for i in range(1, len(pieces), 2):  # odd pieces lie between quotes
        before = pieces[i - 1].strip()
        name = before.split("\n")[-1].strip()
        if "Expert " in name:
            calls.append((name.removesuffix(":"), pieces[i].strip()))
    return calls


def harness_answer(turn: str) -> str | None:
    """The final answer of a turn the harness took as an answer: after the last marker."""
    at = turn.rfind(ANSWER_MARK)
    if at == -1:
        return None
    rest = turn[at + len(ANSWER_MARK) :].lstrip()
    if rest.startswith(QUOTE):
        rest = rest[len(QUOTE) :]
        end = rest.find(QUOTE)
        rest = rest if end == -1 else rest[:end]
    return rest.strip()


def strip_round(text: str) -> str:
    m = _ROUND_PREFIX.match(text)
    return text[m.end() :] if m else text


def split_outputs(user_turn: str, names: list[str]) -> list[str | None]:
    """The quoted output block of each named call, cut from the user turn that follows.

    Blocks follow each other with nothing between; after the last comes the feedback
    paragraph (which holds no triple quotes). None for a block that is not found.
    """
    body = strip_round(user_turn)
    outputs: list[str | None] = []
    pos = 0
    for j, name in enumerate(names):
        header = f"{name}'s output:\n{QUOTE}\n"
        start = body.find(header, pos)
        if start == -1:
            outputs.append(None)
            continue
        start += len(header)
        if j + 1 < len(names):
            end = body.find(f"\n{QUOTE}{names[j + 1]}'s output:\n{QUOTE}\n", start)
        else:
            end = body.rfind(f"\n{QUOTE}")
        if end < start:
            outputs.append(None)
            continue
        outputs.append(body[start:end])
        pos = end + len(QUOTE) + 1
    return outputs


def split_python_output(output: str) -> tuple[str, str | None, str | None]:
    """(reply, code, code output) from Expert Python's block; code is None if none ran."""
    marker = output.find(RUN_MARKER)
    at = output.find(CODE_HEADER, marker) if marker != -1 else -1
    if at == -1:
        return output, None, None
    rest = output[at + len(CODE_HEADER) :]
    cut = rest.find(OUTPUT_HEADER)
    if cut == -1:
        return output[:at], rest, None
    return output[:at], rest[:cut], rest[cut + len(OUTPUT_HEADER) :]


def parse_record(raw: dict[str, Any], *, line: int = 0, task: str = "") -> PublishedRecord:
    """A published record, parsed; raises ValueError when its shape is wrong."""
    log = raw.get("message_log")
    if not isinstance(log, list) or not log:
        raise ValueError("no 'message_log' list")
    for i, message in enumerate(log):
        if not (
            isinstance(message, dict)
            and message.get("role") in ("system", "user", "assistant")
            and isinstance(message.get("content"), str)
        ):
            raise ValueError(f"message_log[{i}] is not a {{role, content}} message")
    system = log[0]["content"] if log[0]["role"] == "system" else ""
    rest = log[1:] if system else log
    first_user = strip_round(rest[0]["content"]) if rest and rest[0]["role"] == "user" else ""
    target = raw.get("target")
    record = PublishedRecord(
        line=line,
        task=task,
        question=str(raw.get("input", "")),
        target=None if target is None else str(target),
        system=system,
        first_user=first_user,
    )
    for i, message in enumerate(rest):
        if message["role"] == "user" and _LAST_ROUND.search(message["content"]):
            record.notice_round = record.notice_round or _round_of(message["content"])
        if message["role"] != "assistant":
            continue
        following = rest[i + 1] if i + 1 < len(rest) else None
        turn = _parse_turn(record, len(record.turns) + 1, message, following)
        before = rest[i - 1] if i > 0 else None
        turn.prompt = before["content"] if before and before["role"] == "user" else ""
        if following is not None and following["role"] == "user":
            turn.reply_to_it = following["content"]
        record.turns.append(turn)
    last = record.turns[-1] if record.turns else None
    if last is not None and last.outcome == "answer":
        record.final_answer = last.answer
    return record


def _round_of(text: str) -> int | None:
    m = re.match(r"ROUND (\d+):", text)
    return int(m.group(1)) if m else None


def _parse_turn(
    record: PublishedRecord, number: int, message: dict[str, str], following: dict | None
) -> PublishedTurn:
    text = message["content"]
    lost = following is not None and following["role"] == "assistant"
    if lost:
        # The harness wrote "ROUND N:" into this turn when it retried after a crash.
        text = strip_round(text)
    found = harness_calls(text)
    if found is None:
        answer = harness_answer(text)
        outcome = "answer" if answer is not None else ("last" if following is None else "nudge")
        return PublishedTurn(number, text, None, answer, outcome)
    calls = [RecordedCall(name, instruction) for name, instruction in found]
    if lost:
        return PublishedTurn(number, text, calls, None, "lost")
    if following is None:
        return PublishedTurn(number, text, calls, None, "last")
    outputs = split_outputs(following["content"], [c.name for c in calls])
    for call, output in zip(calls, outputs, strict=True):
        if output is None:
            record.problems.append(f"turn {number}: no output block for {call.name}")
            continue
        call.output = output
        if call.is_python:
            call.reply, call.code, call.code_output = split_python_output(output)
        else:
            call.reply = output
    return PublishedTurn(number, text, calls, None, "calls")


def iter_published(path: Path | str) -> Iterator[PublishedRecord]:
    """Records of a published file in order; raises `TranscriptError` at a bad line."""
    path = Path(path)
    with path.open(encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                raw = loads_json(line)
            except TooDeep as exc:
                raise TranscriptError(str(path), number, f"not a record: {exc.args[0]}") from None
            except json.JSONDecodeError as exc:
                cut = "" if line.endswith("\n") else " (the line is cut short)"
                raise TranscriptError(
                    str(path), number, f"not valid JSON: {exc.msg}{cut}"
                ) from None
            if not isinstance(raw, dict):
                raise TranscriptError(str(path), number, "not a published record (a JSON object)")
            try:
                yield parse_record(raw, line=number, task=path.stem)
            except ValueError as exc:
                raise TranscriptError(str(path), number, f"not a published record: {exc}") from None


def read_published(path: Path | str, *, limit: int | None = None) -> PublishedFile:
    """Every record up to `limit` or the first bad line, which is reported, not raised."""
    path = Path(path)
    example = "../shared/data/meta-prompting/transcripts/with-python/GameOf24.jsonl"
    must_be_a_file(path, f"give a published .jsonl file, e.g. {example}")
    result = PublishedFile(path)
    try:
        for record in iter_published(path):
            if limit is not None and len(result.records) >= limit:
                break
            result.records.append(record)
    except TranscriptError as exc:
        result.problem = exc
    nothing_readable(path, result.records, result.problem, "published record")
    return result


def must_be_a_file(path: Path, what_to_give: str) -> None:
    """Refuse a path that is a folder or is missing, saying which, before reading it."""
    if path.is_dir():
        raise UserFacingError(f"{path}: a folder, not a file; {what_to_give}")
    if not path.is_file():
        raise UserFacingError(f"{path}: no such file; {what_to_give}")


def nothing_readable(
    path: Path, records: Sequence[object], problem: TranscriptError | None, kind: str
) -> None:
    """A file whose very first line is unreadable (random bytes, another format) is an
    error, not an empty success."""
    if not records and problem is not None:
        raise UserFacingError(
            f"{path}: no {kind} could be read: line {problem.line}: {problem.reason}. "
            f"Is it the right file?"
        )
