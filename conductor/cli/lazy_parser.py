"""An argparse parser that adds some of its arguments when it is first used.

`conductor --help` lists the commands; it must not pay for every command's flags (the
settings' flags are made from pydantic declarations). A `LazyParser` keeps such work
(`defer(fn)`) until the parser parses or prints its help or usage, so only the command
that runs builds its flags. Subparsers are of the parent's class, so they defer alike.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any


class ExactParser(argparse.ArgumentParser):
    """A parser that takes every flag only as spelled: argparse's abbreviations read
    `batch --out DIR` as `--output-cap DIR`, a setting the user never meant (and a new
    flag can change what an old abbreviation means). Subparsers are of its class."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


class LazyParser(ExactParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Each deferred addition, with where it would have gone (its arguments' and
        # groups' places), so the usage and help list them as an eager parser does.
        self._pending: list[tuple[Callable[[], None], int, int]] = []

    def defer(self, add: Callable[[], None]) -> None:
        """Run `add` (which adds arguments to this parser) before it is first used."""
        self._pending.append((add, len(self._actions), len(self._action_groups)))

    def complete(self) -> LazyParser:
        """Add every deferred argument now, each where it was declared."""
        shift_actions = shift_groups = 0
        while self._pending:
            add, at_action, at_group = self._pending.pop(0)
            actions, groups = len(self._actions), len(self._action_groups)
            add()
            _move_tail(self._actions, actions, at_action + shift_actions)
            _move_tail(self._action_groups, groups, at_group + shift_groups)
            shift_actions += len(self._actions) - actions
            shift_groups += len(self._action_groups) - groups
        return self

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self.complete()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self.complete()
        return super().format_help()

    def format_usage(self) -> str:
        self.complete()
        return super().format_usage()


def _move_tail(items: list[Any], start: int, to: int) -> None:
    """Move `items[start:]` (just added) to index `to`."""
    tail = items[start:]
    del items[start:]
    items[to:to] = tail
