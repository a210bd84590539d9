"""A run diff for the terminal (`conductor runs diff`) and the TUI's diff screen.

Same rounds are one dim line each; a changed round is a panel with each differing field
shown word by word (removed struck through in red, added in green). All text from the
runs goes through `visible()` into `Text` objects, never markup.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from conductor.export.terminal import usage_line
from conductor_kernel.text.display import visible, visible_line
from record.fold import RunOutline
from transcripts.run_diff import CallPair, FieldDiff, RoundPair, RunDiff

REMOVED = "red strike"
ADDED = "green bold"


def marked(piece: str, op: str, markers: bool) -> str:
    """A removed or added piece, between `[-…-]` or `{+…+}` (as `git diff --word-diff`
    marks them) when colour cannot show it: piped, the words would run together."""
    if not markers or op == "=":
        return piece
    return f"[-{piece}-]" if op == "-" else f"{{+{piece}+}}"


def field_text(diff: FieldDiff, *, context: int = 120, markers: bool = False) -> Text:
    """One field's change, word by word. Unchanged stretches keep `context` characters
    on each side of a change (the HTML page has every field whole). With `markers`,
    each change is also bracketed, for output without colour."""
    text = Text()
    ops = diff.ops()
    for i, (op, piece) in enumerate(ops):
        piece = visible(piece)
        if op != "=":
            text.append(marked(piece, op, markers), style=REMOVED if op == "-" else ADDED)
            continue
        head = piece[:context] if i > 0 else ""
        tail = piece[-context:] if i < len(ops) - 1 else ""
        if len(piece) <= len(head) + len(tail) + 5:
            text.append(piece)
        else:
            text.append(head)
            text.append(" … ", style="dim")
            text.append(tail)
    return text


def _answer(run: RunOutline) -> str:
    return run.final.answer if run.final is not None else "(none)"


def score_line(run: RunOutline) -> str:
    """correct, wrong or unscored (with the scorer and why): the field the HTML shows."""
    from conductor.scoring.runs import verdict_of

    return verdict_of(run).describe()


def totals_table(diff: RunDiff, *, markers: bool = False) -> Table:
    table = Table(title="runs side by side", expand=True, title_justify="left")
    table.add_column("", style="bold", no_wrap=True)
    table.add_column(Text(visible_line(diff.left.run_id)), ratio=1)
    table.add_column(Text(visible_line(diff.right.run_id)), ratio=1)
    rows: list[tuple[str, str, str]] = []
    for label, get in (
        ("model", lambda r: r.started.model if r.started else ""),
        ("status", lambda r: r.status),
        ("score", score_line),
        ("rounds", lambda r: str(len(r.rounds))),
        ("expert calls", lambda r: str(len(r.calls))),
        ("sandbox runs", lambda r: str(sum(len(c.execs) for c in r.calls))),
        ("usage", lambda r: usage_line(r.usage)),
        ("time", lambda r: f"{r.finished.duration_s:.1f} s" if r.finished else "-"),
        ("findings", lambda r: " ".join(r.audit.badges) or "-"),
        ("notes recalled", _recalled),
    ):
        rows.append((label, get(diff.left), get(diff.right)))
    for label, left, right in rows:
        style = "" if left == right else "yellow"
        table.add_row(label, Text(visible(left), style), Text(visible(right), style))
    answers = FieldDiff("final answer", _answer(diff.left), _answer(diff.right))
    table.add_row(
        "final answer",
        Text(
            marked(visible(answers.left), "=" if answers.same else "-", markers),
            "" if answers.same else REMOVED,
        ),
        Text(
            marked(visible(answers.right), "=" if answers.same else "+", markers),
            "" if answers.same else ADDED,
        ),
    )
    return table


def _recalled(run: RunOutline) -> str:
    notes = [f"{n.get('kind', 'note')} {n.get('id')}" for r in run.recalls for n in r.notes]
    return ", ".join(notes) if notes else "none"


def _call_lines(call: CallPair, markers: bool = False) -> list[Any]:
    name = visible_line(call.name)
    if call.status == "only_left":
        return [Text(f"  {name}: only in the left run", style=REMOVED)]
    if call.status == "only_right":
        return [Text(f"  {name}: only in the right run", style=ADDED)]
    if call.status == "same":
        return [Text(f"  {name}: same", style="dim")]
    names = [f.name for f in call.changed]
    verb = "differs" if len(names) == 1 else "differ"
    parts: list[Any] = [Text(f"  {name}: {', '.join(names)} {verb}")]
    for f in call.changed:
        parts.append(
            Panel(
                field_text(f, markers=markers),
                title=Text(f.name),
                title_align="left",
                padding=(0, 1),
            )
        )
    return parts


def round_renderable(pair: RoundPair, *, markers: bool = False) -> Any:
    if pair.status == "same":
        names = ", ".join(visible_line(c.name) for c in pair.calls) or "no calls"
        return Text(f"round {pair.label} · same · {names}", style="dim")
    if pair.status in ("only_left", "only_right"):
        side = "left" if pair.status == "only_left" else "right"
        only = pair.left or pair.right
        assert only is not None
        names = ", ".join(visible_line(c.name) for c in only.calls) or "no calls"
        return Text(
            f"round {pair.label} · only in the {side} run · {names}",
            style=REMOVED if side == "left" else ADDED,
        )
    parts: list[Any] = []
    if not pair.meta.same:
        parts.append(
            Panel(
                field_text(pair.meta, markers=markers),
                title="meta model",
                title_align="left",
                padding=(0, 1),
            )
        )
    for call in pair.calls:
        parts += _call_lines(call, markers)
    return Panel(Group(*parts), title=f"round {pair.label} · changed", border_style="yellow")


def diff_renderables(diff: RunDiff, *, markers: bool = False) -> list[Any]:
    """Everything the terminal view prints, in order; `markers` brackets each removed
    and added piece (`[-old-]{+new+}`) for output that shows no colour."""
    out: list[Any] = [totals_table(diff, markers=markers)]
    if not diff.question.same:
        out.append(Panel(field_text(diff.question, markers=markers), title="the questions differ"))
    changes = len(diff.changes)
    summary = (
        "the runs are the same, round by round"
        if diff.identical
        else (
            f"{changes} difference{'s' if changes != 1 else ''} in {len(diff.rounds)} aligned rounds"
        )
    )
    out.append(Text(summary, style="bold"))
    out += [round_renderable(pair, markers=markers) for pair in diff.rounds]
    return out
