"""Task files (JSONL, CSV) and task specs (built-in, spec files, flags)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from conductor.tasks.files import Problem, TaskFileError, read_task_file
from conductor.tasks.specs import (
    BUILTIN,
    TaskSpec,
    TaskSpecError,
    UnknownTaskError,
    builtin_for_file,
    get_spec,
    resolve_spec,
)
from conductor_kernel.errors import UserFacingError


def write_jsonl(path: Path, *records: object) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_jsonl_items_keep_target_id_and_metadata(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "sums.jsonl",
        {"input": "1 + 1 =", "target": 2, "id": "one", "level": "easy"},
        {"input": "2 + 2 =", "target": "4"},
        {"input": "3 + 3 =", "target": None},
        {"input": "4 + 4 =", "target": ""},
    )
    items = read_task_file(path).items
    assert [i.target for i in items] == ["2", "4", None, None]
    assert items[0].id == "one" and items[0].metadata == {"level": "easy"}
    assert [i.line for i in items] == [1, 2, 3, 4]
    assert items[1].id.startswith("sums-") and len(items[1].id) == len("sums-") + 10
    assert [i.has_target for i in items] == [True, True, False, False]


def test_derived_ids_are_stable_under_reordering_and_unique_for_repeats(tmp_path: Path) -> None:
    a, b = {"input": "alpha"}, {"input": "beta"}
    first = read_task_file(write_jsonl(tmp_path / "q.jsonl", a, b, a)).items
    second = read_task_file(write_jsonl(tmp_path / "q.jsonl", b, {"input": "new"}, a)).items
    assert first[0].id == second[2].id  # "alpha" keeps its id wherever it moves
    assert first[1].id == second[0].id
    assert first[2].id == first[0].id + "-2"


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"target": "x"}', "no `input` field (fields here: target)"),
        ('{"input": ""}', "`input` must be non-empty text"),
        ('{"input": "q", "target": ["a"]}', "`target` must be text or a number"),
        ('{"input": "q", "id": "same"}', "duplicate id 'same'"),
    ],
)
def test_malformed_jsonl_line_stops_with_file_and_line(
    tmp_path: Path, bad_line: str, message: str
) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", {"input": "ok", "id": "same"}, "", bad_line)
    with pytest.raises(TaskFileError) as caught:
        read_task_file(path)
    assert f"{path}:3: {message}" in str(caught.value)
    assert "--on-bad-line skip" in str(caught.value)


def test_skip_policy_warns_and_keeps_the_good_lines(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", {"input": "a"}, "{oops", {"input": "b"})
    with caplog.at_level(logging.WARNING, logger="conductor"):
        task_file = read_task_file(path, on_error="skip")
    assert [i.input for i in task_file.items] == ["a", "b"]
    assert task_file.problems == [Problem(str(path), 2, task_file.problems[0].message)]
    assert f"{path}:2: not valid JSON" in caplog.text
    seen: list[Problem] = []
    read_task_file(path, on_error="skip", warn=seen.append)
    assert [p.line for p in seen] == [2]


def test_csv_reads_columns_and_reports_true_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(
        'id,input,target,topic\nq1,"two\nlines",x,misc\nq2,short,,misc\nq3,too,many,cells,here\n',
        encoding="utf-8",
    )
    task_file = read_task_file(path, on_error="skip", warn=lambda p: None)
    first, second = task_file.items
    assert (first.id, first.input, first.target, first.line) == ("q1", "two\nlines", "x", 2)
    assert (second.target, second.metadata, second.line) == (None, {"topic": "misc"}, 4)
    assert task_file.problems[0].line == 5
    assert "5 fields where the header has 4" in task_file.problems[0].message


def test_csv_without_input_column_and_other_bad_files(tmp_path: Path) -> None:
    no_input = tmp_path / "t.csv"
    no_input.write_text("question,answer\nq,a\n")
    with pytest.raises(TaskFileError, match=r"t.csv:1: the header row has no `input` column"):
        read_task_file(no_input)
    with pytest.raises(TaskFileError, match=r"unknown task file type '\.txt'"):
        read_task_file(tmp_path / "t.txt")
    with pytest.raises(TaskFileError, match="no such task file"):
        read_task_file(tmp_path / "missing.jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(TaskFileError, match="no items found"):
        read_task_file(empty)
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"input": "caf\xe9"}\n')
    with pytest.raises(TaskFileError, match="not UTF-8"):
        read_task_file(latin)


def test_byte_order_mark_is_tolerated(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes('\ufeff{"input": "hi"}\n'.encode())
    assert read_task_file(path).items[0].input == "hi"


def test_extra_fields_of_published_records_become_metadata(tmp_path: Path) -> None:
    record = {"input": "def sat(x): ...", "target": "", "sat": "def sat(x): ...", "name": "S:0"}
    (item,) = read_task_file(write_jsonl(tmp_path / "P3_Test.jsonl", record)).items
    assert item.target is None and item.metadata == {"sat": "def sat(x): ...", "name": "S:0"}


# --- task specs ----------------------------------------------------------------------


def test_builtin_specs_with_our_descriptions() -> None:
    assert len(BUILTIN) == 17  # 7 tasks + MGSM in 10 languages
    assert {s.scorer for s in BUILTIN.values()} == {
        "game24",
        "checkmate",
        "choice",
        "exact",
        "sonnet",
        "p3",
        "numeric",
    }
    assert all(len(s.description) > 80 for s in BUILTIN.values())
    assert "Spanish" in get_spec("mgsm-es").description
    assert get_spec("MGSM_ES").prompt("¿Cuánto?").endswith("\n\n¿Cuánto?")


@pytest.mark.shared
def test_every_published_task_file_has_a_builtin_spec(shared_dir: Path) -> None:
    files = sorted((shared_dir / "tasks").glob("*.jsonl"))
    assert len(files) == 17  # the README says 16, but lists 17
    names = {builtin_for_file(f).name for f in files}  # type: ignore[union-attr]
    assert names == set(BUILTIN)


def test_file_names_match_builtins_with_suffixes() -> None:
    assert builtin_for_file("out/GameOf24-zero-shot-cot.jsonl").name == "GameOf24"  # type: ignore[union-attr]
    assert builtin_for_file("MGSM_ZH.jsonl").name == "MGSM_ZH"  # type: ignore[union-attr]
    assert builtin_for_file("sonnets-standard.csv").name == "Sonnets-Standard"  # type: ignore[union-attr]
    assert builtin_for_file("capitals.jsonl") is None


def test_unknown_task_and_scorer_list_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(UnknownTaskError, match="built-in tasks: GameOf24, CheckmateInOne"):
        get_spec("Chess")
    with pytest.raises(TaskSpecError, match="known scorers: game24"):
        TaskSpec("capitals", "Name the capital.", "fuzzy")
    with pytest.raises(UnknownTaskError, match=r"capitals\.task\.toml beside it"):
        resolve_spec(tmp_path / "capitals.jsonl")


def test_spec_file_beside_the_task_file_and_explicit(tmp_path: Path) -> None:
    (tmp_path / "capitals.task.toml").write_text(
        'name = "capitals"\ndescription = "Name the capital."\nscorer = "exact"\n'
        '[metadata]\nsource = "atlas"\n'
    )
    spec = resolve_spec(tmp_path / "capitals.jsonl")
    assert (spec.name, spec.scorer, spec.metadata) == ("capitals", "exact", {"source": "atlas"})
    as_json = tmp_path / "other.json"
    as_json.write_text(json.dumps({"name": "other", "scorer": "numeric"}))
    assert resolve_spec(tmp_path / "capitals.jsonl", spec_file=as_json).name == "other"
    assert TaskSpec.from_dict(spec.to_dict()) == spec


def test_bad_spec_files_say_where_and_what(tmp_path: Path) -> None:
    broken = tmp_path / "a.task.toml"
    broken.write_text('name = "a"\nscorer = \n')
    with pytest.raises(TaskSpecError, match=r"a\.task\.toml: not valid TOML"):
        resolve_spec(spec_file=broken)
    wrong = tmp_path / "b.task.json"
    wrong.write_text(json.dumps({"name": "b", "scorer": "exact", "rules": "x"}))
    with pytest.raises(TaskSpecError, match=r"b\.task\.json: unknown fields rules"):
        resolve_spec(spec_file=wrong)
    assert isinstance(TaskSpecError("x"), UserFacingError)


def test_flags_override_and_build_specs() -> None:
    spec = resolve_spec("data/capitals.jsonl", scorer="exact", description="Name it.")
    assert (spec.name, spec.scorer, spec.description) == ("capitals", "exact", "Name it.")
    spec = resolve_spec("whatever.jsonl", task="GameOf24")
    assert spec.scorer == "game24" and spec.description == BUILTIN["GameOf24"].description
    assert resolve_spec("GameOf24.jsonl", task="word_sorting").name == "word_sorting"
