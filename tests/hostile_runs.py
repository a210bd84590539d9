"""Runs whose every model- and sandbox-written field holds hostile text, for the tests
that check each output path shows it inert (terminal, TUI, Markdown, HTML)."""

from __future__ import annotations

from hypothesis import strategies as st

from conductor_kernel.events import (
    ErrorEvent,
    Event,
    ExpertCallFinished,
    ExpertCallStarted,
    FinalAnswer,
    LimitHit,
    MetaTurnFinished,
    MetaTurnStarted,
    NotesWritten,
    Observation,
    Recall,
    RunFinished,
    RunStarted,
    SandboxExec,
)
from conductor_kernel.interfaces import ExecResult, Usage

# What the hostile suite sent, and its kin.
SEQUENCES = [
    "\x1b]52;c;cHduZWQ=\x07",  # OSC 52: write the clipboard
    "\x1b[2J\x1b[H",  # clear the screen, cursor home
    "\x1b[1A\x1b[2K✔ final answer verified",  # rewrite the line above
    "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\",  # OSC 8 hyperlink
    "\x9b31m",  # 8-bit CSI
    "\x9d0;title\x9c",  # 8-bit OSC ... ST
    "abc\u202eevil\u202c",  # right-to-left override
    "nul\x00byte",
    "bell\x07",
    "back\x08space",
    "carriage\rreturn",
    "\U000e0041\U000e0042",  # tag characters (invisible ASCII)
    "\u2066isolate\u2069",
    "zero\u200bwidth",
]
# What must stay text in a page or a markup-reading terminal.
MARKUP = [
    "<script>alert('x')</script>",
    '<img src=x onerror="alert(1)">',
    '<a href="javascript:alert(2)">click</a>',
    "[click](javascript:alert(3))",
    "</textarea><script>alert(4)</script>",
    "</pre></details></section><b>broken",
    "[bold red]markup[/] [link=https://evil.example]l[/link]",
    "```` fence ```` ` tick",
    "{{ 7*7 }} {% raw %}",
    "\"quoted\" & 'single'",
]

hostile_piece = st.sampled_from(SEQUENCES + MARKUP)
hostile_text = st.lists(
    st.one_of(hostile_piece, st.text(max_size=12), st.characters()), min_size=1, max_size=6
).map("".join)


def hostile_events(text: str, *, short: str | None = None) -> list[Event]:
    """One run of every event kind, each untrusted field set from `text`."""
    short = short if short is not None else text[:40]
    run = "hostile-run"
    started = RunStarted(run_id=run, question=text, task="t", target=text, model=short)
    turn = MetaTurnStarted(run_id=run, parent_id=None, round=1, user_message=text)
    call = ExpertCallStarted(
        run_id=run,
        parent_id=turn.id,
        round=1,
        name=f"Expert {short}",
        instruction=text,
        system_prompt=text,
        prompt=text,
        is_python=True,
    )
    result = ExecResult(
        stdout=text, stderr=text, exit_code=1, backend="subprocess", stdout_truncated=True
    )
    return [
        started,
        Recall(
            run_id=run,
            task_type=short,
            notes=[{"id": f"r-{short}", "key": text, "kind": short, "score": 0.5, "rank": 1}],
            rendered=text,
        ),
        turn,
        MetaTurnFinished(run_id=run, parent_id=turn.id, round=1, text=text, usage=Usage(1, 2)),
        call,
        SandboxExec(run_id=run, parent_id=call.id, code=text, result=result, source="expert"),
        Observation(run_id=run, parent_id=call.id, reason=short, message=text),
        ExpertCallFinished(
            run_id=run, parent_id=call.id, name=f"Expert {short}", text=text, output=text
        ),
        Observation(run_id=run, parent_id=turn.id, reason="no_call_or_answer", message=text),
        LimitHit(run_id=run, limit=short, value=1, maximum=2),
        FinalAnswer(run_id=run, parent_id=turn.id, round=1, answer=text),
        ErrorEvent(run_id=run, message=text, where=short),
        RunFinished(
            run_id=run,
            status="answered",
            final_answer=text,
            rounds=1,
            usage=Usage(3, 4),
            score={"correct": False, "detail": text, "scored": True},
        ),
        NotesWritten(
            run_id=run,
            notebook=short,
            task_type=short,
            verification=short,
            note_ids=[f"w-{short}"],
            outcome=short,
            reflection=text,
            feedback={short: text},
        ),
    ]
