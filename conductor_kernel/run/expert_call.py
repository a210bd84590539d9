"""Calling one expert with fresh eyes, and Expert Python with the sandbox.

An expert sees a persona line naming it and the instruction: nothing of the question,
the meta history or other experts. The exact prompt it saw goes into the event, since
the original harness kept only the meta model's view.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from conductor_kernel import prompts
from conductor_kernel.errors import ModelUnreachable
from conductor_kernel.events import (
    Event,
    ExpertCallFinished,
    ExpertCallStarted,
    Observation,
    SandboxExec,
    TextDelta,
)
from conductor_kernel.interfaces import (
    ChatModel,
    ExecResult,
    Message,
    ModelError,
    Sandbox,
    Usage,
    cut_cause,
)
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.limits.streaming import RunGuard, StreamWatch
from conductor_kernel.protocol import RUN_MARKER, ExpertCall, extract_code
from conductor_kernel.text.display import visible
from conductor_kernel.text.output import cap_text

Emit = Callable[[Event], None]


@dataclass
class ExpertOutcome:
    name: str
    output: str  # what the meta model is shown
    usage: Usage = field(default_factory=Usage)
    sandbox_runs: int = 0


@dataclass
class ExpertContext:
    """What an expert call needs from the run it belongs to."""

    model: ChatModel
    sandbox: Sandbox | None
    config: RunConfig
    emit: Emit
    run_id: str
    guard: RunGuard | None = None  # cancel and limits, checked while the reply streams


def call_expert(
    call: ExpertCall, ctx: ExpertContext, *, parent_id: str, round: int, index: int
) -> ExpertOutcome:
    python = call.is_python and ctx.config.python
    system = (
        prompts.PYTHON_SYSTEM.format(timeout=ctx.config.python_timeout_s)
        if python
        else prompts.EXPERT_SYSTEM.format(name=call.name)
    )
    started = ExpertCallStarted(
        parent_id=parent_id,
        run_id=ctx.run_id,
        round=round,
        index=index,
        name=call.name,
        instruction=call.instruction,
        system_prompt=system,
        prompt=call.instruction,
        is_python=python,
    )
    ctx.emit(started)
    t0 = time.monotonic()

    given_code = extract_code(call.instruction) if python else None
    if given_code is not None:
        # The meta model wrote the code itself: run it as given, no model call.
        result = _run(ctx, given_code, started.id, source="instruction")
        output = _describe_run(result, ctx.config)
        _finish(ctx, started, text="", output=output, usage=Usage(), t0=t0, model="")
        return ExpertOutcome(call.name, output, Usage(), sandbox_runs=1)

    def on_text(chunk: str) -> None:
        ctx.emit(TextDelta(parent_id=started.id, run_id=ctx.run_id, text=chunk))

    watch: Callable[[str], None] = on_text
    if ctx.guard is not None:
        guarded = StreamWatch(
            ctx.guard,
            ctx.emit,
            run_id=ctx.run_id,
            parent_id=started.id,
            model=ctx.model,
            prompt=lambda: f"{system}\n{call.instruction}",
        )
        guarded.check_before()
        watch = guarded
    try:
        completion = ctx.model.complete(
            [Message("user", call.instruction)],
            system=system,
            on_text=watch,
            role="expert",
            max_tokens=ctx.config.expert_max_tokens,
        )
    except ModelUnreachable:
        raise  # the server is down: a system failure, not this expert's
    except ModelError as exc:
        # One failing expert is an observation for the meta model; the run goes on and
        # the usage of its siblings is kept.
        output = prompts.EXPERT_FAILED.format(error=exc)
        ctx.emit(
            Observation(
                parent_id=started.id, run_id=ctx.run_id, reason="expert_failed", message=output
            )
        )
        _finish(
            ctx,
            started,
            text="",
            output=output,
            usage=Usage(),
            t0=t0,
            model="",
            error=str(exc),
            server_failed=exc.server_failed,
        )
        return ExpertOutcome(call.name, output, Usage())
    reply = completion.text
    output = cap_text(reply, ctx.config.expert_reply_cap_chars)
    if completion.truncated:
        output = f"{output}\n\n" + prompts.EXPERT_TRUNCATED.format(
            cause=cut_cause(completion.stop_reason, ctx.config.expert_max_tokens)
        )
    runs = 0
    if completion.stopped:
        pass  # cancelled or at a limit: show what came, run nothing
    elif python and RUN_MARKER.lower() in reply.lower():
        code = extract_code(reply)
        if code is None:
            ctx.emit(
                Observation(
                    parent_id=started.id,
                    run_id=ctx.run_id,
                    reason="no_code",
                    message="Expert Python asked to run code but gave no fenced block.",
                )
            )
            output = f"{output}\n\n{prompts.PYTHON_NO_CODE}"
        else:
            # The program reads its instruction on standard input: data taken from there
            # is the data the meta model gave, not a copy the expert typed again (a small
            # model's copy of a word list dropped and added words).
            result = _run(ctx, code, started.id, source="expert", stdin=call.instruction)
            runs = 1
            output = f"{output}\n\n{_describe_run(result, ctx.config)}"
    _finish(
        ctx,
        started,
        text=reply,
        output=output,
        usage=completion.usage,
        t0=t0,
        model=completion.model,
        stop_reason=completion.stop_reason,
        truncated=completion.truncated,
    )
    return ExpertOutcome(call.name, output, completion.usage, sandbox_runs=runs)


def _run(
    ctx: ExpertContext, code: str, parent_id: str, *, source: str, stdin: str = ""
) -> ExecResult:
    if ctx.sandbox is None:
        result = ExecResult(infra_error="no sandbox is configured for this run", backend="none")
    else:
        result = _run_stoppable(ctx, ctx.sandbox, code, stdin)
    ctx.emit(
        SandboxExec(parent_id=parent_id, run_id=ctx.run_id, code=code, result=result, source=source)
    )
    return result


def _run_stoppable(ctx: ExpertContext, sandbox: Sandbox, code: str, stdin: str) -> ExecResult:
    """Run the cell so that the run's cancel (or a limit that stops the run) kills it
    at once: the sandbox's `interrupt` is registered with the run's guard like a stream
    in flight, and `close_streams` calls it."""
    guard = ctx.guard
    interrupt = getattr(sandbox, "interrupt", None)
    if guard is None or not callable(interrupt):
        return sandbox.run(code, timeout=ctx.config.python_timeout_s, stdin=stdin)
    done = threading.Event()

    def stop() -> None:
        # The cell may not have reached the sandbox yet (waiting for its lock or its
        # container): keep trying until it is killed or has returned.
        def keep_stopping() -> None:
            while not done.is_set() and not interrupt():
                done.wait(0.01)

        threading.Thread(target=keep_stopping, name="conductor-stop-cell", daemon=True).start()

    key = id(done)
    guard.register(key, stop)
    try:
        if guard.cancel.is_set() or guard.limit is not None:
            # Stopped before the cell began: run nothing.
            return ExecResult(
                backend=sandbox.name, cancelled=True, stderr="[not run: the run was stopped]"
            )
        return sandbox.run(code, timeout=ctx.config.python_timeout_s, stdin=stdin)
    finally:
        done.set()
        guard.register(key, None)


def _describe_run(result: ExecResult, config: RunConfig) -> str:
    """The program's outcome as the meta model reads it: status, stdout, stderr, capped."""
    if result.cancelled:
        status = "It was stopped before it finished: the run was cancelled."
    elif result.infra_error:
        status = f"The sandbox failed, so the program did not run: {result.infra_error}"
    elif result.sandbox_error:  # e.g. the runner's reply was malformed; it was replaced
        status = f"The sandbox broke down while running it: {result.sandbox_error}"
    elif result.timed_out:
        status = f"It was stopped after {config.python_timeout_s:g} seconds (time limit)."
    elif result.oom_killed:
        status = "It was killed for using too much memory."
    elif result.signal:
        status = f"It was killed by signal {result.signal}."
    else:
        status = f"Exit code: {result.exit_code}."
    if result.output_limit_hit:
        status += " It printed too much and was stopped."
    # What the program printed reaches the meta model with every control and invisible
    # character shown as an escape, as on screen: nothing hidden in it is read unseen.
    stdout = visible(cap_text(result.stdout, config.output_cap_chars)) or "(nothing)"
    stderr = visible(cap_text(result.stderr, config.output_cap_chars))
    stderr_block = f"\nstderr:\n```\n{stderr}\n```" if stderr.strip() else ""
    return prompts.PYTHON_RAN.format(
        status=status, stdout=stdout.rstrip("\n"), stderr_block=stderr_block
    )


def _finish(
    ctx: ExpertContext,
    started: ExpertCallStarted,
    *,
    text: str,
    output: str,
    usage: Usage,
    t0: float,
    model: str,
    stop_reason: str = "",
    truncated: bool = False,
    error: str | None = None,
    server_failed: bool = False,
) -> None:
    ctx.emit(
        ExpertCallFinished(
            parent_id=started.id,
            run_id=ctx.run_id,
            name=started.name,
            text=text,
            output=output,
            usage=usage,
            model=model,
            duration_s=time.monotonic() - t0,
            stop_reason=stop_reason,
            truncated=truncated,
            error=error,
            server_failed=server_failed,
        )
    )
