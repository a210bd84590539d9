"""What a model call costs: a price table by model-name prefix, which the user can override.

Prices are USD per million tokens for uncached input, output, cache reads and cache
writes, as the providers published them (checked 2025; providers change them, so
`prices.toml` or `prices.json` in `$CONDUCTOR_HOME` or the user config dir overrides or
extends the table). A name prices itself and its dated snapshots
(`claude-sonnet-4-5-20250929`, `gpt-4o-2024-08-06`); a key ending in `*` prices every
model whose name starts with the rest. A model the table does not know costs 0 and is
flagged as unpriced, never guessed from a similar name.

Override file (TOML; the JSON form is the same mapping):

    [models."llama3*"]
    input = 0.0
    output = 0.0

    [models."gpt-4o"]
    input = 2.5
    output = 10.0
    cache_read = 1.25   # optional: defaults to the input price
    cache_write = 2.5   # optional: defaults to the input price
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conductor_kernel.errors import ConfigError
from conductor_kernel.interfaces import Usage

OVERRIDE_NAMES = ("prices.toml", "prices.json")


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    def cost(self, usage: Usage) -> float:
        # Usage.input_tokens counts every prompt token; the cached parts are billed apart.
        uncached = max(0, usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens)
        total = (
            uncached * self.input
            + usage.output_tokens * self.output
            + usage.cache_read_tokens * self.cache_read
            + usage.cache_write_tokens * self.cache_write
            # What no server reported (a call cut part-way, a server that sends no usage)
            # is estimated; it is priced like what was measured, output at the output price.
            + usage.estimated_input_tokens * self.input
            + usage.estimated_output_tokens * self.output
        )
        return total / 1_000_000


def _anthropic(input: float, output: float) -> Price:
    # Anthropic bills 5-minute cache writes at 1.25x input and cache reads at 0.1x.
    return Price(input, output, cache_read=input * 0.1, cache_write=input * 1.25)


def _openai(input: float, output: float, cached: float | None = None) -> Price:
    # OpenAI caches automatically: no write surcharge, reads at a discount.
    return Price(input, output, cache_read=input if cached is None else cached, cache_write=input)


_SONNET, _OPUS_OLD = _anthropic(3.0, 15.0), _anthropic(15.0, 75.0)

BUILTIN_PRICES: dict[str, Price] = {
    # Anthropic
    "claude-opus-4-5": _anthropic(5.0, 25.0),
    "claude-opus-4-1": _OPUS_OLD,
    "claude-opus-4-0": _OPUS_OLD,
    "claude-opus-4": _OPUS_OLD,
    "claude-3-opus": _OPUS_OLD,
    "claude-sonnet-4-6": _SONNET,
    "claude-sonnet-4-5": _SONNET,
    "claude-sonnet-4-0": _SONNET,
    "claude-sonnet-4": _SONNET,
    "claude-3-7-sonnet": _SONNET,
    "claude-3-5-sonnet": _SONNET,
    "claude-3-sonnet": _SONNET,
    "claude-haiku-4-5": _anthropic(1.0, 5.0),
    "claude-3-5-haiku": _anthropic(0.8, 4.0),
    "claude-3-haiku": _anthropic(0.25, 1.25),
    # OpenAI
    "gpt-5": _openai(1.25, 10.0, 0.125),
    "gpt-5-chat": _openai(1.25, 10.0, 0.125),
    "gpt-5-mini": _openai(0.25, 2.0, 0.025),
    "gpt-5-nano": _openai(0.05, 0.40, 0.005),
    "gpt-4.1": _openai(2.0, 8.0, 0.50),
    "gpt-4.1-mini": _openai(0.40, 1.60, 0.10),
    "gpt-4.1-nano": _openai(0.10, 0.40, 0.025),
    "gpt-4o": _openai(2.50, 10.0, 1.25),
    "gpt-4o-mini": _openai(0.15, 0.60, 0.075),
    "gpt-4-turbo": _openai(10.0, 30.0),
    "gpt-4-turbo-preview": _openai(10.0, 30.0),
    "gpt-4": _openai(30.0, 60.0),
    "gpt-4-32k": _openai(60.0, 120.0),
    "gpt-3.5-turbo": _openai(0.50, 1.50),
    "o1": _openai(15.0, 60.0, 7.50),
    "o1-preview": _openai(15.0, 60.0, 7.50),
    "o1-mini": _openai(1.10, 4.40, 0.55),
    "o3": _openai(2.0, 8.0, 0.50),
    "o3-mini": _openai(1.10, 4.40, 0.55),
    "o3-pro": _openai(20.0, 80.0),
    "o4-mini": _openai(1.10, 4.40, 0.275),
}

# A dated snapshot or alias of a priced name costs the same: `-20250514`, `-2024-08-06`,
# `-0613`, `-latest`. Anything else (`gpt-4o-audio-preview`, a newer `claude-opus-4-7`)
# is another model, priced only if listed; guessing from a shorter name misprices.
_SNAPSHOT_SUFFIX = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|\d{4}|latest)$")


@dataclass(frozen=True)
class PriceLookup:
    """The price found for a model, and whether one was found at all."""

    price: Price | None
    prefix: str | None = None
    source: str = "builtin"  # "builtin", or the override file's path

    @property
    def known(self) -> bool:
        return self.price is not None

    def cost(self, usage: Usage) -> float:
        return self.price.cost(usage) if self.price else 0.0


class PriceTable:
    """Model name (or `prefix*`) -> price; the longest matching key wins."""

    def __init__(self, prices: dict[str, Price], sources: dict[str, str] | None = None) -> None:
        self.prices = dict(prices)
        self.sources = dict(sources or {})

    @classmethod
    def load(cls, override: Path | None = None) -> PriceTable:
        """The built-in table with the user's override file (if any) on top."""
        path = override or find_override_file()
        table = cls(BUILTIN_PRICES)
        if path is not None:
            user = read_override_file(path)
            table.prices.update(user)
            table.sources.update(dict.fromkeys(user, str(path)))
        return table

    def lookup(self, model: str) -> PriceLookup:
        # A registry-style name ("anthropic:claude-...", "openai/gpt-4o") is priced by
        # its model part; other colons stay (Ollama tags such as "llama3:8b").
        name = model.rsplit("/", 1)[-1].lower()
        for provider in ("anthropic:", "openai:"):
            name = name.removeprefix(provider)
        best = max(
            (key for key in self.prices if _matches(key.lower(), name)), key=len, default=None
        )
        if best is None:
            return PriceLookup(None)
        return PriceLookup(self.prices[best], best, self.sources.get(best, "builtin"))

    def cost(self, model: str, usage: Usage) -> float:
        return self.lookup(model).cost(usage)


def _matches(key: str, name: str) -> bool:
    """`gpt-4o` prices `gpt-4o` and `gpt-4o-2024-08-06`; `my-llama*` any name starting so."""
    if key.endswith("*"):
        return name.startswith(key[:-1])
    return name == key or (
        name.startswith(key) and bool(_SNAPSHOT_SUFFIX.fullmatch(name[len(key) :]))
    )


def override_dirs() -> list[Path]:
    """Where an override file is looked for, first match wins."""
    dirs = []
    home = os.environ.get("CONDUCTOR_HOME")
    if home:
        dirs.append(Path(home).expanduser())
    from record.home import config_path

    dirs.append(config_path().parent)
    return dirs


def find_override_file() -> Path | None:
    for directory in override_dirs():
        for name in OVERRIDE_NAMES:
            candidate = directory / name
            if candidate.is_file():
                return candidate
    return None


def read_override_file(path: Path) -> dict[str, Price]:
    """Parse a prices file; any mistake is a ConfigError naming the file and the entry."""
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read price file {path}: {exc}") from exc
    try:
        data: Any = json.loads(raw) if path.suffix == ".json" else tomllib.loads(raw)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path} is not valid {path.suffix[1:].upper()}: {exc}") from exc
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, dict):
        raise ConfigError(
            f'{path}: expected a "models" table mapping model-name prefixes to prices, '
            'e.g. [models."gpt-4o"] with input = 2.5 and output = 10.0 (USD per million tokens)'
        )
    return {prefix: _parse_entry(path, raw, prefix, entry) for prefix, entry in models.items()}


def _line_of(raw: str, prefix: str, key: str | None = None) -> int | None:
    """The line (1-based) of `prefix`'s entry in the file, or of its `key` when given:
    the parsers keep no positions, so the text is searched (a best effort for a message)."""
    lines = raw.splitlines()
    start = next((i for i, line in enumerate(lines) if prefix in line), None)
    if start is None or key is None:
        return None if start is None else start + 1
    key_at = re.compile(rf'(^|[\s{{,]|["\']){re.escape(key)}(["\'])?\s*[=:]')
    for i in range(start, len(lines)):
        if key_at.search(lines[i]):
            return i + 1
    return start + 1


def _parse_entry(path: Path, raw: str, prefix: str, entry: Any) -> Price:
    line = _line_of(raw, prefix)
    where = f'{path}{f", line {line}" if line else ""}: models."{prefix}"'
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a table with input and output prices")
    unknown = set(entry) - {"input", "output", "cache_read", "cache_write"}
    if unknown:
        raise ConfigError(
            f"{where} has unknown keys {sorted(unknown)}; "
            "allowed: input, output, cache_read, cache_write"
        )
    values: dict[str, float] = {}
    for key in ("input", "output", "cache_read", "cache_write"):
        if key not in entry:
            continue
        value = entry[key]
        # NaN and infinity parse in TOML (`nan`, `inf`) and in Python's JSON (`NaN`,
        # `Infinity`); either would make every cost NaN and switch the cost limit off.
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value < 0
        ):
            at = _line_of(raw, prefix, key)
            place = f'{path}{f", line {at}" if at else ""}: models."{prefix}"'
            raise ConfigError(
                f"{place}.{key} must be a finite number >= 0 (USD per million tokens), "
                f"got {value!r}"
            )
        values[key] = float(value)
    missing = [key for key in ("input", "output") if key not in values]
    if missing:
        raise ConfigError(f"{where} lacks {' and '.join(missing)} (USD per million tokens)")
    return Price(
        input=values["input"],
        output=values["output"],
        cache_read=values.get("cache_read", values["input"]),
        cache_write=values.get("cache_write", values["input"]),
    )
