"""Exceptions that carry meaning.

`UserFacingError` and its subclasses are system failures with a message that tells the
user what to do next; the CLI prints them without a traceback. Failures the *model*
causes are never exceptions: they become observations fed back to the meta model.
"""

from __future__ import annotations


class UserFacingError(Exception):
    """A failure the user can fix; `str(exc)` says how."""


class ConfigError(UserFacingError):
    """A broken config file, flag or environment variable."""


class UnknownModelError(UserFacingError):
    """A model name that no provider knows."""


class TranscriptError(UserFacingError):
    """A transcript file that cannot be read past some line."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        self.path, self.line, self.reason = path, line, reason
        super().__init__(
            f"{path}:{line}: {reason}. That line cannot be read (the other lines can); "
            "repair or remove it."
        )


class ModelUnreachable(UserFacingError):
    """A model server that cannot be reached at all (refused, unknown host, no route).

    Not transient: retrying will not help, so the first call fails with the cause and
    the fix, and nothing (learning included) calls the model again in that run.
    """
