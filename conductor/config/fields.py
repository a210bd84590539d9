"""Reading the settings' declarations: each field's flag, description, bounds and checks.

A field is declared once (`conductor_kernel.limits.run_config.setting`); everything a user sees
about it is derived here from that declaration: the words that say what is allowed, the
help of its flag, the check of a value and the message that refuses one.
"""

from __future__ import annotations

import difflib
import types
from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from conductor_kernel.errors import ConfigError


def section_model(info: FieldInfo) -> type[BaseModel] | None:
    """The model of a field that is a table of settings (`[run]`), else None."""
    kind = info.annotation
    return kind if isinstance(kind, type) and issubclass(kind, BaseModel) else None


@dataclass(frozen=True)
class SettingField:
    """One leaf of the settings (`model`, `run.max_rounds`) and what its declaration says."""

    path: str
    info: FieldInfo

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    @property
    def section(self) -> str:
        """The table the field sits in (`run`), or "" at the top of the file."""
        return self.path.rpartition(".")[0]

    @property
    def description(self) -> str:
        return self.info.description or ""

    @property
    def flag(self) -> str:
        return str(self._extra.get("flag", ""))

    @property
    def metavar(self) -> str | None:
        if self.kind == "choice":
            return "{" + ",".join(self.choices) + "}"
        given = self._extra.get("metavar")
        return str(given) if given else {"text": "TEXT", "int": "N", "float": "X"}.get(self.kind)

    @property
    def default(self) -> Any:
        return self.info.get_default(call_default_factory=True)

    @property
    def optional(self) -> bool:
        """Whether the field may be unset (None): an optional limit."""
        return type(None) in get_args(self.info.annotation)

    @property
    def kind(self) -> Literal["bool", "int", "float", "choice", "text"]:
        base = self._base
        if get_origin(base) is Literal:
            return "choice"
        if base is bool:
            return "bool"
        if base is int:
            return "int"
        if base is float:
            return "float"
        if base is str:
            return "text"
        raise TypeError(f"setting {self.path}: no flag or message for type {base!r}")

    @property
    def choices(self) -> tuple[str, ...]:
        return tuple(str(v) for v in get_args(self._base)) if self.kind == "choice" else ()

    @property
    def bounds(self) -> dict[str, float]:
        """The numeric constraints of the declaration: ge, gt, le, lt."""
        found: dict[str, float] = {}
        for item in self.info.metadata:
            for key in ("ge", "gt", "le", "lt"):
                value = getattr(item, key, None)
                if value is not None and isinstance(item, annotated_types.BaseMetadata):
                    found[key] = value
        return found

    def allowed(self) -> str:
        """What a value may be, in words (for messages, help and the README)."""
        if self.kind == "bool":
            words = "true or false"
        elif self.kind == "choice":
            *rest, last = self.choices
            words = f"{', '.join(rest)} or {last}" if rest else last
        elif self.kind == "text":
            words = "text"
        else:
            words = ("a whole number" if self.kind == "int" else "a number") + _range(self.bounds)
        return words + (", or unset" if self.optional else "")

    def shown_default(self) -> str:
        value = self.default
        if value is None:
            return "unset"
        if isinstance(value, bool):
            return "true" if value else "false"
        if value == "":
            return "empty"
        return f"{value:g}" if isinstance(value, float) else str(value)

    def check(self, value: Any, where: str, *, strict: bool) -> Any:
        """`value` as the field holds it, or `ConfigError` naming `where` and what is allowed.

        `strict` for the config file, whose TOML values are typed: they are taken as
        written (`max_rounds = true` is no number, `python = "yes"` no boolean); text from
        a variable or a flag is parsed.
        """
        try:
            return self._adapter.validate_python(value, strict=strict)
        except ValidationError as exc:
            error = exc
        if strict:
            try:
                self._adapter.validate_python(value)
            except ValidationError as lax:
                error = lax  # both refuse it: the lax reason is plainer ("fractional part")
        problems = error.errors()
        reason = problems[0].get("msg", "invalid") if problems else "invalid"
        raise ConfigError(
            f"{where}: {self.path} = {value!r} is not allowed ({reason}); "
            f"allowed: {self.allowed()}. Fix or unset it."
        )

    @cached_property
    def _adapter(self) -> TypeAdapter[Any]:
        kind: Any = self.info.annotation
        return TypeAdapter(Annotated[kind, *self.info.metadata] if self.info.metadata else kind)

    @property
    def _base(self) -> Any:
        kind = self.info.annotation
        if get_origin(kind) in (Union, types.UnionType):
            kind = next(arg for arg in get_args(kind) if arg is not type(None))
        return kind

    @property
    def _extra(self) -> dict[str, Any]:
        extra = self.info.json_schema_extra
        return extra if isinstance(extra, dict) else {}


def _range(bounds: dict[str, float]) -> str:
    """ " from 1 to 1000", ", 1 or more", " more than 0 and at most 3600"..."""
    ge, gt, le, lt = (bounds.get(key) for key in ("ge", "gt", "le", "lt"))
    if ge is not None and le is not None:
        return f" from {ge:g} to {le:g}"
    low = f"{ge:g} or more" if ge is not None else f"more than {gt:g}" if gt is not None else ""
    high = f"at most {le:g}" if le is not None else f"less than {lt:g}" if lt is not None else ""
    if low and high:
        return f" {low} and {high}"
    if ge is not None:
        return f", {low}"
    return f" {low or high}" if low or high else ""


def setting_fields(model: type[BaseModel], prefix: str = "") -> list[SettingField]:
    """Every leaf field of `model`, tables walked into, in declaration order."""
    found: list[SettingField] = []
    for name, info in model.model_fields.items():
        inner = section_model(info)
        if inner is not None:
            found += setting_fields(inner, f"{prefix}{name}.")
        else:
            found.append(SettingField(f"{prefix}{name}", info))
    return found


def nearest(name: str, known: list[str]) -> str:
    """`; did you mean X?` for a mistyped name, or the list of known names."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]!r}?"
    return f"known: {', '.join(sorted(known))}"
