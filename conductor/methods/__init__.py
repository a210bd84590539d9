"""Methods: how a run asks its model. Meta-prompting (with or without Python) and the
paper's five baselines, each a `conductor_kernel.interfaces.Method`.

Every method emits the same events and ends recorded the same way (the kernel's
`Conductor` runs it), so transcripts, runs.db, the TUI, audit, exports, replay, batch,
scorers and the notebook need no case of their own. This room names them, in the order
of the paper's Table 1, and builds them; `docs/methods.md` says what each one sends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import get_args

from conductor.method_names import MethodName
from conductor.methods.baselines import (
    expert_dynamic,
    expert_static,
    multipersona,
    standard,
    zero_shot_cot,
)
from conductor_kernel.errors import UserFacingError
from conductor_kernel.interfaces import Method
from conductor_kernel.run.meta import META, META_NO_PYTHON, MetaPrompting

# The methods, in Table 1's column order (the `method` setting's allowed values).
METHODS: tuple[str, ...] = get_args(MethodName)
BASELINES = METHODS[:5]
# What a comparison measures every method against: meta-prompting with Python.
REFERENCE = META

LABELS: dict[str, str] = {
    "standard": "Standard",
    "zero-shot-cot": "0-CoT",
    "expert-static": "Expert static",
    "expert-dynamic": "Expert dynamic",
    "multipersona": "Multi-persona",
    META_NO_PYTHON: "Meta - Python",
    META: "Meta + Python",
}
# The folders of the paper's published runs (../shared/data/meta-prompting/transcripts).
PUBLISHED_FOLDERS: dict[str, str] = {
    "Standard": "standard",
    "ZeroShotCoT": "zero-shot-cot",
    "ExpertStatic": "expert-static",
    "ExpertDynamic": "expert-dynamic",
    "MultiPersona": "multipersona",
    "without-python": META_NO_PYTHON,
    "with-python": META,
}

_BASELINES: dict[str, Callable[[], Method]] = {
    "standard": standard,
    "zero-shot-cot": zero_shot_cot,
    "expert-static": expert_static,
    "expert-dynamic": expert_dynamic,
    "multipersona": multipersona,
}


class UnknownMethodError(UserFacingError):
    """A method name that is not one of METHODS."""


def check_method(name: str) -> str:
    """`name` if it is a method; otherwise a clear refusal listing the methods."""
    if name not in METHODS:
        raise UnknownMethodError(
            f"unknown method {name!r}; the methods are: {', '.join(METHODS)} "
            "(`all` in --methods means every one)"
        )
    return name


def get_method(name: str, *, python: bool = True) -> Method:
    """The method called `name`. `meta` runs without Python when `python` is false (as
    `--method meta --no-python`); the baselines never run code."""
    check_method(name)
    if name in (META, META_NO_PYTHON):
        return MetaPrompting(python=python and name == META)
    return _BASELINES[name]()


def method_name(name: str, *, python: bool = True) -> str:
    """The name a run of `name` is recorded under (`meta` without Python is
    `meta-no-python`)."""
    return get_method(name, python=python).name


def uses_notebook(name: str) -> bool:
    """Whether runs of this method recall and learn by default: meta-prompting does,
    the baselines do not (their prompts are the paper's methods; a comparison measures
    the methods, not the notebook)."""
    return name in (META, META_NO_PYTHON)


def parse_methods(text: str) -> list[str]:
    """`standard,meta` (or `all`) as method names, each once, in the order given."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise UnknownMethodError(
            f"--methods needs method names; the methods are: {', '.join(METHODS)}"
        )
    if names == ["all"]:
        return list(METHODS)
    chosen: list[str] = []
    for name in names:
        check_method(name)
        if name not in chosen:
            chosen.append(name)
    return chosen


def label(name: str) -> str:
    """Table 1's heading for a method (the name itself for one it does not know)."""
    return LABELS.get(name, name)


__all__ = [
    "BASELINES",
    "LABELS",
    "METHODS",
    "PUBLISHED_FOLDERS",
    "REFERENCE",
    "MethodName",
    "UnknownMethodError",
    "check_method",
    "get_method",
    "label",
    "method_name",
    "parse_methods",
    "uses_notebook",
]
