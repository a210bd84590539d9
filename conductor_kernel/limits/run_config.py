"""What one conductor run may do: the limits the loop checks before each model call.

Each field is declared once, with `setting(...)`: its type, default, bounds, one-line
description and the command-line flag that sets it. The application (conductor/config)
derives everything else from these declarations: the flags and their help, the checks of
a value from a flag, a variable or the config file, the messages that refuse one, and the
README's table of settings.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


def setting(
    default: Any,
    *,
    flag: str,
    description: str,
    metavar: str | None = None,
    **bounds: Any,
) -> Any:
    """The declaration of one setting field.

    `flag` is the command-line option that sets it (`--max-rounds`; a true/false field
    gets `--X` and `--no-X`), `metavar` the word its help shows for the value
    (SECONDS...), `bounds` pydantic's numeric constraints (`ge`, `gt`, `le`, `lt`).
    The allowed words of a field with a fixed set of values are its `Literal` type.
    """
    extra: dict[str, Any] = {"flag": flag}
    if metavar:
        extra["metavar"] = metavar
    return Field(default, description=description, json_schema_extra=extra, **bounds)


# One run's wall-clock limit unless set: generous for hosted models (a hard GPT-4 run
# of the paper takes a few minutes), and a stop for a CPU-served model at under a token
# a second, whose one 4,096-token turn ran for over 7 minutes.
DEFAULT_MAX_WALL_S = 1200.0


class RunConfig(BaseModel):
    """What one conductor run may do: the `[run]` table of the config file."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    max_rounds: int = setting(
        15, ge=1, le=1000, flag="--max-rounds", metavar="N",
        description="Meta-model turns at most; the run ends without an answer past it.",
    )  # fmt: skip
    last_round_notice: bool = setting(
        True, flag="--last-round-notice",
        description="Tell the meta model, in the round before the limit, that it must answer now.",
    )  # fmt: skip
    last_round_notice_at: int | None = setting(
        None, ge=1, flag="--last-round-notice-at", metavar="ROUND",
        description="Round whose user message carries that notice; unset: the round before "
        "the limit.",
    )  # fmt: skip
    max_tokens: int | None = setting(
        None, ge=1, flag="--max-tokens", metavar="N",
        description="Total tokens (meta and experts, input and output) a run may spend.",
    )  # fmt: skip
    max_cost_usd: float | None = setting(
        None, gt=0, flag="--max-cost", metavar="DOLLARS",
        description="Dollars a run may spend, by the price table.",
    )  # fmt: skip
    max_wall_s: float | None = setting(
        DEFAULT_MAX_WALL_S, gt=0, flag="--max-wall", metavar="SECONDS",
        description="Seconds a run may take (default 20 minutes: a slow local model "
        "cannot run on for hours); `--max-wall none` for no limit.",
    )  # fmt: skip
    python: bool = setting(
        True, flag="--python",
        description="Offer Expert Python and run its code in the sandbox.",
    )  # fmt: skip
    python_timeout_s: float = setting(
        10.0, gt=0, le=3600, flag="--python-timeout", metavar="SECONDS",
        description="Seconds each sandboxed program may run.",
    )  # fmt: skip
    output_cap_chars: int = setting(
        4000, ge=1, flag="--output-cap", metavar="CHARS",
        description="Characters of each stream of program output shown to the meta model.",
    )  # fmt: skip
    expert_reply_cap_chars: int = setting(
        20000, ge=1, flag="--expert-reply-cap", metavar="CHARS",
        description="Characters of an expert's reply shown to the meta model.",
    )  # fmt: skip
    parallel_experts: bool = setting(
        True, flag="--parallel-experts",
        description="Dispatch several calls of one turn concurrently.",
    )  # fmt: skip
    calls_and_answer: Literal["calls_first", "answer"] = setting(
        "calls_first", flag="--calls-and-answer",
        description="A turn with calls and an answer: `calls_first` runs the calls (as the "
        "paper), `answer` takes the answer.",
    )  # fmt: skip
    check_before_answer: bool = setting(
        False, flag="--check-before-answer",
        description="Send a final answer given before any expert was consulted back once, "
        "asking for one check first (for small models that answer in round 1 alone; "
        "measured in docs/methods.md).",
    )  # fmt: skip
    protocol: Literal["auto", "text", "tools", "grammar"] = setting(
        "auto", flag="--protocol",
        description="How the meta model's calls and answer are carried: `text` (`Expert X:` "
        "and `>> FINAL ANSWER:`, as the paper), `tools` (native tool calls), `grammar` (the "
        "text held to its forms by llama-server's grammar), `auto` (tools where the endpoint "
        "takes them, else text; docs/models.md).",
    )  # fmt: skip
    consult_first: bool = setting(
        True, flag="--consult-first",
        description="Round 1 cannot end the run: with tool calls it offers no final-answer "
        "tool, with the grammar carrier its grammar allows only expert calls (plain text "
        "cannot enforce it); a checked program the notebook handed over counts as consulted.",
    )  # fmt: skip
    ready_call: bool = setting(
        True, flag="--ready-call",
        description="An answer given in a round that withholds it (`consult_first`) is not "
        "sent back: the conductor makes the ready call the first message showed (the "
        "question, to Expert Python or, without Python, to an expert) and the model reads "
        "that reply next round. For servers that do not enforce tool_choice.",
    )  # fmt: skip
    answer_once_checked: bool = setting(
        True, flag="--answer-once-checked",
        description="Once a line a program printed passes the task's own check, the rounds "
        "after offer only the answer: with tool calls only final_answer and "
        "answer_with_checked_result, with the grammar carrier only the answer form (plain "
        "text cannot enforce it). The last round of those carriers offers only the answer "
        "either way.",
    )  # fmt: skip
    answer_check: bool = setting(
        True, flag="--answer-check",
        description="A final answer the task's own check rejects (one that needs no known "
        "answer, e.g. Game of 24's arithmetic) goes back to the model once with the reason "
        "before it is taken (meta-prompting).",
    )  # fmt: skip
    python_check_retries: int = setting(
        1, ge=0, le=5, flag="--python-check-retries", metavar="N",
        description="Where the task's own check applies, an Expert Python program that "
        "fails, or whose printed lines include one the check rejects and none it accepts, "
        "goes back to the expert with the reason, and it writes the program again, up to N "
        "times per call (0: never).",
    )  # fmt: skip
    python_retry_temperature: float = setting(
        0.7, ge=0, le=2, flag="--python-retry-temperature", metavar="T",
        description="Sampling temperature of the request for a corrected program (a "
        "program sent back): at temperature 0 a small model sent the same program back.",
    )  # fmt: skip
    prompt_cache: bool = setting(
        True, flag="--prompt-cache",
        description="Ask the provider to cache the growing meta history.",
    )  # fmt: skip
    expert_max_tokens: int = setting(
        4096, ge=1, flag="--expert-max-tokens", metavar="N",
        description="Output token cap per expert reply; a reply cut there is marked truncated.",
    )  # fmt: skip
    meta_max_tokens: int = setting(
        4096, ge=1, flag="--meta-max-tokens", metavar="N",
        description="Output token cap per meta-model turn; a turn cut there is never acted on.",
    )  # fmt: skip

    def limits(self) -> dict[str, Any]:
        return {
            "max_rounds": self.max_rounds,
            "max_tokens": self.max_tokens,
            "max_cost_usd": self.max_cost_usd,
            "max_wall_s": self.max_wall_s,
            "python_timeout_s": self.python_timeout_s,
        }
