"""Task specs: what a task is called, the rules put before each input, how it is scored.

Built-in specs cover the 16 task files published with the meta-prompting paper
(../shared/data/meta-prompting/tasks); their descriptions are ours. Another task
file gets its spec from a small file beside it (`<stem>.task.toml` or
`<stem>.task.json`), from an explicit spec file, or from flags:

    name = "capitals"
    description = "Name the capital city of the country below."
    scorer = "exact"
    [metadata]
    source = "my notes"
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from conductor.scorer_table import SCORERS, known_scorers
from conductor_kernel.bounded import TooDeep, loads_json, loads_toml
from conductor_kernel.errors import UserFacingError

FORMAT_VERSION = 1
SPEC_SUFFIXES = (".task.toml", ".task.json")


class UnknownTaskError(UserFacingError):
    """A task name with no built-in spec."""


class TaskSpecError(UserFacingError):
    """A spec file or flags that do not make a valid spec."""


@dataclass(frozen=True)
class TaskSpec:
    """A task: its name, the rules put before each input, and its scorer's name."""

    name: str
    description: str
    scorer: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise TaskSpecError("a task spec needs a non-empty `name`")
        if self.scorer not in SCORERS:
            raise TaskSpecError(
                f"task {self.name!r}: unknown scorer {self.scorer!r}; known scorers: "
                f"{known_scorers()}"
            )

    def prompt(self, task_input: str) -> str:
        """The question as the conductor sees it: the rules, then the input."""
        if not self.description.strip():
            return task_input
        return f"{self.description.strip()}\n\n{task_input}"

    def to_dict(self) -> dict[str, Any]:
        return {"format_version": FORMAT_VERSION, **asdict(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, where: str = "spec") -> TaskSpec:
        unknown = set(data) - {"format_version", "name", "description", "scorer", "metadata"}
        if unknown:
            raise TaskSpecError(f"{where}: unknown fields {', '.join(sorted(unknown))}")
        for key in ("name", "scorer"):
            if not isinstance(data.get(key), str):
                raise TaskSpecError(f"{where}: `{key}` must be given as text")
        description = data.get("description", "")
        metadata = data.get("metadata", {})
        if not isinstance(description, str) or not isinstance(metadata, dict):
            raise TaskSpecError(f"{where}: `description` must be text, `metadata` a table")
        try:
            return cls(data["name"], description, data["scorer"], dict(metadata))
        except TaskSpecError as exc:
            raise TaskSpecError(f"{where}: {exc}") from None


_MGSM_LANGUAGES = {
    "BN": "Bengali",
    "DE": "German",
    "ES": "Spanish",
    "FR": "French",
    "JA": "Japanese",
    "RU": "Russian",
    "SW": "Swahili",
    "TE": "Telugu",
    "TH": "Thai",
    "ZH": "Chinese",
}


def _mgsm(code: str) -> TaskSpec:
    language = _MGSM_LANGUAGES[code]
    return TaskSpec(
        name=f"MGSM_{code}",
        description=(
            f"The word problem below is written in {language}. Solve it with careful "
            "arithmetic, checking each step. Your final answer must be one number "
            "written in digits, without units or any other words."
        ),
        scorer="numeric",
        metadata={"family": "MGSM", "language": language},
    )


BUILTIN: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in [
        TaskSpec(
            "GameOf24",
            "You get four whole numbers. Combine all four, each exactly once, with "
            "addition, subtraction, multiplication, division and parentheses, so that "
            "the result is exactly 24. Give as your final answer only the arithmetic "
            "expression, written with + - * / and parentheses, with nothing after it.",
            "game24",
        ),
        TaskSpec(
            "CheckmateInOne",
            "Below is a chess game so far in standard algebraic notation, move numbers "
            "included. It is the turn of the side to move, and that side can deliver "
            "checkmate at once. Find that single move and give it in standard algebraic "
            "notation (for example Qxf7#) as your final answer.",
            "checkmate",
        ),
        TaskSpec(
            "geometric_shapes",
            "An SVG path element is given below with a list of lettered options. Work "
            "out which shape the path draws by following its coordinates. Give as your "
            "final answer the letter of the matching option in parentheses, e.g. (C).",
            "choice",
        ),
        TaskSpec(
            "multistep_arithmetic_two",
            "Work out the value of the arithmetic expression below. Respect the usual "
            "order of operations and the parentheses, and watch the signs of negative "
            "numbers. Give only the resulting integer as your final answer.",
            "exact",
        ),
        TaskSpec(
            "word_sorting",
            "Put the words listed below in alphabetical order. Give as your final "
            "answer the sorted words on one line, separated by single spaces, spelled "
            "exactly as given and with no other text.",
            "exact",
        ),
        TaskSpec(
            "Sonnets-Standard",
            "Write an original poem of exactly fourteen lines, a sonnet, in English. "
            "Follow the rhyme scheme and use the words that the request below names. "
            "Give the fourteen lines, and nothing else, as your final answer.",
            "sonnet",
        ),
        TaskSpec(
            "P3_Test",
            "Below is a Python function `sat` that returns True for the inputs it "
            "accepts. Write a Python function `solution()` that takes no arguments and "
            "returns an input for which `sat` returns True. Give only the code of "
            "`solution()` (standard library only, no printing) as your final answer.",
            "p3",
        ),
        *(_mgsm(code) for code in _MGSM_LANGUAGES),
    ]
}


def known_tasks() -> str:
    return ", ".join(BUILTIN)


def get_spec(name: str) -> TaskSpec:
    """The built-in spec called `name` (any case, `-`/`_` alike)."""
    wanted = _key(name)
    for spec in BUILTIN.values():
        if _key(spec.name) == wanted:
            return spec
    raise UnknownTaskError(
        f"unknown task {name!r}; built-in tasks: {known_tasks()}. For another task "
        "give a spec file (name, description, scorer) or --description and --scorer."
    )


def _key(name: str) -> str:
    return re.sub(r"[-_\s]", "", name).lower()


def builtin_for_file(path: str | Path) -> TaskSpec | None:
    """The built-in spec a file name points to: `MGSM_ES.jsonl`, `GameOf24-run3.jsonl`."""
    stem = _key(Path(path).name.split(".", 1)[0])
    matches = [spec for spec in BUILTIN.values() if stem.startswith(_key(spec.name))]
    return max(matches, key=lambda spec: len(spec.name)) if matches else None


def load_spec_file(path: str | Path) -> TaskSpec:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TaskSpecError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise TaskSpecError(f"{path}: cannot read the spec file ({exc.strerror})") from None
    try:
        data = loads_json(text) if path.suffix == ".json" else loads_toml(text)
    except TooDeep as exc:
        raise TaskSpecError(f"{path}:{exc.line}: {exc}; a spec file is a flat table") from None
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise TaskSpecError(f"{path}: not valid {path.suffix[1:].upper()}: {exc}") from None
    if not isinstance(data, dict):
        raise TaskSpecError(f"{path}: a spec file holds one table/object")
    return TaskSpec.from_dict(data, where=str(path))


def spec_beside(task_file: str | Path) -> Path | None:
    task_file = Path(task_file)
    stem = task_file.name.split(".", 1)[0]
    for suffix in SPEC_SUFFIXES:
        candidate = task_file.with_name(stem + suffix)
        if candidate.is_file():
            return candidate
    return None


def folder_given(folder: Path) -> str:
    """What to say when a folder is given where a task file goes, naming a few of the
    task files in it."""
    files = sorted(p.name for p in folder.glob("*.jsonl"))[:3]
    inside = f" (it holds {', '.join(files)})" if files else ""
    return (
        f"{folder} is a folder, not a task file{inside}: give one JSON Lines file of items, "
        f"e.g. {folder / (files[0] if files else 'GameOf24.jsonl')}"
    )


def resolve_spec(
    task_file: str | Path | None = None,
    *,
    task: str | None = None,
    spec_file: str | Path | None = None,
    description: str | None = None,
    scorer: str | None = None,
) -> TaskSpec:
    """The spec to use, by precedence: spec file > --task > --scorer/--description >
    a spec file beside the task file > the built-in its name points to."""
    if task_file is not None and Path(task_file).is_dir():
        raise UnknownTaskError(folder_given(Path(task_file)))
    if spec_file is not None:
        return load_spec_file(spec_file)
    if task is not None:
        base = get_spec(task)
        return TaskSpec(
            base.name,
            description if description is not None else base.description,
            scorer or base.scorer,
            base.metadata,
        )
    if scorer is not None:
        name = Path(task_file).name.split(".", 1)[0] if task_file else "custom"
        return TaskSpec(name, description or "", scorer)
    if task_file is not None:
        beside = spec_beside(task_file)
        if beside is not None:
            return load_spec_file(beside)
        builtin = builtin_for_file(task_file)
        if builtin is not None:
            return builtin
        raise UnknownTaskError(
            f"{task_file}: its name matches no built-in task ({known_tasks()}); pass "
            "--task NAME, or --scorer and --description, or put a spec file "
            f"{Path(task_file).name.split('.', 1)[0]}.task.toml beside it"
        )
    raise UnknownTaskError(f"no task given; built-in tasks: {known_tasks()}")
