"""Running Expert Python's programs: in the run's sandbox, stoppable by the run's
cancel, and described as the meta model reads them (status, stdout, stderr, capped and
shown escaped)."""

from __future__ import annotations

import threading

from conductor_kernel import prompts
from conductor_kernel.events import Observation, SandboxExec
from conductor_kernel.interfaces import Completion, ExecResult, Sandbox, cut_cause
from conductor_kernel.limits.run_config import RunConfig
from conductor_kernel.protocol import RUN_MARKER, ExpertCall, extract_code
from conductor_kernel.run.expert_context import ExpertContext, ExpertReply
from conductor_kernel.text.display import visible
from conductor_kernel.text.output import cap_text


def shown_reply(completion: Completion, config: RunConfig) -> str:
    output = cap_text(completion.text, config.expert_reply_cap_chars)
    if completion.truncated:
        output = f"{output}\n\n" + prompts.EXPERT_TRUNCATED.format(
            cause=cut_cause(completion.stop_reason, config.expert_max_tokens)
        )
    return output


def run_reply(ctx: ExpertContext, call: ExpertCall, reply: ExpertReply, parent_id: str) -> None:
    """Run the program of an Expert Python reply that asks for it; the reply then holds
    the program, its result and what the meta model is shown."""
    text = reply.completion.text
    if RUN_MARKER.lower() not in text.lower():
        return
    code = extract_code(text)
    if code is None:
        ctx.emit(
            Observation(
                parent_id=parent_id,
                run_id=ctx.run_id,
                reason="no_code",
                message="Expert Python asked to run code but gave no fenced block.",
            )
        )
        reply.output = f"{reply.output}\n\n{prompts.PYTHON_NO_CODE}"
        return
    # The program reads its instruction on standard input: data taken from there is the
    # data the meta model gave, not a copy the expert typed again (a small model's copy
    # of a word list dropped and added words).
    result = run_program(ctx, code, parent_id, source="expert", stdin=call.instruction)
    reply.code, reply.result, reply.runs = code, result, reply.runs + 1
    reply.output = f"{reply.output}\n\n{describe_run(result, ctx.config)}"


def run_program(
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


def describe_run(result: ExecResult, config: RunConfig) -> str:
    """The program's outcome as the meta model reads it: status, stdout, stderr, capped."""
    status = run_status(result, config)
    # What the program printed reaches the meta model with every control and invisible
    # character shown as an escape, as on screen: nothing hidden in it is read unseen.
    stdout = visible(cap_text(result.stdout, config.output_cap_chars)) or "(nothing)"
    stderr = visible(cap_text(result.stderr, config.output_cap_chars))
    stderr_block = f"\nstderr:\n```\n{stderr}\n```" if stderr.strip() else ""
    return prompts.PYTHON_RAN.format(
        status=status, stdout=stdout.rstrip("\n"), stderr_block=stderr_block
    )


def run_status(result: ExecResult, config: RunConfig) -> str:
    """How the program ended, in a sentence."""
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
    return status
