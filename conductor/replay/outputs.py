"""Whether the code Expert Python wrote printed, replayed in our sandbox, what it
printed for the original harness: both runs classified the way the harness reported
them (stdout, an error's last line, a timeout, nothing), then compared.
"""

from __future__ import annotations

from conductor_kernel.interfaces import ExecResult


def harness_view(result: ExecResult) -> tuple[str, str]:
    """What the original harness would have reported for this run: (kind, text)."""
    if result.infra_error:
        return "sandbox_failed", result.infra_error
    if result.timed_out:
        return "timeout", ""
    if result.stdout.strip():
        return "stdout", result.stdout.strip()
    if result.stderr.strip():
        return "error", _last_line(result.stderr)
    return "empty", ""


def recorded_view(code_output: str) -> tuple[str, str]:
    """The harness's report of a run, classified the same way as `harness_view`."""
    if code_output.startswith("Execution took too long"):
        return "timeout", ""
    if code_output.startswith("Error in execution:"):
        return "error", _last_line(code_output)
    if code_output.startswith("(No output was generated"):
        return "empty", ""
    return "stdout", code_output.strip()


def same_code_output(result: ExecResult, code_output: str) -> tuple[bool, str]:
    """Whether our run printed what the recorded run printed, and if not, how it differs.

    The harness kept stdout and dropped stderr whenever stdout was non-empty, so stdout
    is compared whole; for a failure, the exception line (file paths differ).
    """
    ours, theirs = harness_view(result), recorded_view(code_output)
    if ours == theirs:
        return True, ""
    if ours[0] != theirs[0]:
        return (
            False,
            f"recorded {theirs[0]} {short(theirs[1])}, replayed {ours[0]} {short(ours[1])}",
        )
    return False, f"{ours[0]} differs: recorded {short(theirs[1])}, replayed {short(ours[1])}"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def short(text: str | None, width: int = 70) -> str:
    """A recorded or replayed text for a mismatch line: on one line, quoted, cut short."""
    if text is None:
        return "no answer"
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= width else flat[: width - 3] + "...")
