"""The user's settings, every field declared once: here, and in `RunConfig` (the `[run]`
table, conductor_kernel/limits/run_config.py).

A plain pydantic model, so that the command line can make its flags from it without
loading how settings are read (`Settings`, in settings.py, adds the sources).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from conductor.method_names import MethodName
from conductor_kernel.limits.run_config import RunConfig, setting


class Declaration(BaseModel):
    """User settings beyond one run's limits, and those limits (`run`)."""

    model_config = ConfigDict(extra="forbid")

    model: str = setting(
        "auto", flag="--model", metavar="NAME",
        description="Meta model: `auto` (by the keys set), `demo`, `anthropic:NAME`, "
        "`openai:NAME` (`NAME@URL` for a server of its own).",
    )  # fmt: skip
    expert_model: str = setting(
        "", flag="--expert-model", metavar="NAME",
        description="Expert model; empty means the same as the meta model.",
    )  # fmt: skip
    sandbox: Literal["auto", "docker", "bwrap", "subprocess"] = setting(
        "auto", flag="--sandbox",
        description="Sandbox backend: `auto` (docker, else bwrap), docker, bwrap, "
        "subprocess (unsafe: only by name).",
    )  # fmt: skip
    sandbox_cells: int = setting(
        0, ge=0, le=4096, flag="--sandbox-cells", metavar="N",
        description="Sandboxes a batch keeps alive at once, shared by its items in flight; "
        "0 sizes the pool to this machine (two per core, within half its memory).",
    )  # fmt: skip
    notebook: str = setting(
        "", flag="--notebook", metavar="PATH",
        description="Notebook database; empty means notebook.db in the data directory.",
    )  # fmt: skip
    recall: bool = setting(
        True, flag="--recall",
        description="Put notes from the notebook into the first meta turn.",
    )  # fmt: skip
    learn: bool = setting(
        True, flag="--learn",
        description="Distill each finished run into the notebook.",
    )  # fmt: skip
    model_timeout_s: float = setting(
        60.0, gt=0, le=3600, flag="--model-timeout", metavar="SECONDS",
        description="Seconds a model call may go without a byte from the server before it "
        "is retried.",
    )  # fmt: skip
    method: MethodName = setting(
        "meta", flag="--method",
        description="How a run asks the model: `meta` (meta-prompting; with `python` off, "
        "`meta-no-python`) or a baseline of the paper's Table 1 (docs/methods.md).",
    )  # fmt: skip
    run: RunConfig = Field(default_factory=RunConfig, description="What one run may do.")
