"""No traceback from any input: files of every structure, nesting depth, encoding, line
separator and size go through every command that reads them (batch, runs audit, runs
import, score, replay; a config file through batch). Each ends with an exit code, a
message on stderr when it refuses, and the run recorded before it intact."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from fuzz_budget import TIERS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conductor.cli import main

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
TEXT = st.text(max_size=40) | st.sampled_from(["Sort these words: b a", "[bold]x[/]", "\u2028\x85"])
RECORDS = st.one_of(
    JSON,
    st.fixed_dictionaries({"input": TEXT}, optional={"target": JSON, "id": JSON}),
    st.fixed_dictionaries(
        {
            "input": TEXT,
            "target": TEXT,
            "output": TEXT,
            "message_log": st.lists(
                st.fixed_dictionaries(
                    {"role": st.sampled_from(["system", "user", "assistant"]), "content": TEXT}
                ),
                max_size=4,
            ),
        }
    ),
    st.fixed_dictionaries(
        {
            "kind": st.sampled_from(
                ["run_started", "meta_turn_finished", "final_answer", "run_finished"]
            ),
            "run_id": st.text(max_size=8),
        },
        optional={"tags": JSON, "usage": JSON, "round": JSON},
    ),
)
DEPTHS = st.sampled_from([1, 99, 100, 101, 1_000, 100_000])
OPENERS = st.sampled_from([("[", "]"), ('{"a":', "}"), ('{"input": "x", "target": ', "}")])


@st.composite
def deep_line(draw: st.DrawFn) -> str:
    depth = draw(DEPTHS)
    opener, closer = draw(OPENERS)
    return opener * depth + "1" + closer * depth * draw(st.sampled_from([1, 0]))  # or cut


@st.composite
def hostile_files(draw: st.DrawFn) -> bytes:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=2_000))
    line = st.builds(lambda r, a: json.dumps(r, ensure_ascii=a), RECORDS, st.booleans())
    lines = draw(st.lists(line | deep_line() | st.text(max_size=30), min_size=1, max_size=6))
    if draw(st.booleans()):  # size: one long line
        lines.append(json.dumps({"input": "y" * draw(st.sampled_from([10, 300_000]))}))
    separator = draw(st.sampled_from(["\n", "\r\n", "\r", "\u2028", "\x85", "\x0c", "\n\n"]))
    text = separator.join(lines) + draw(st.sampled_from(["", "\n"]))
    encoding = draw(st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "latin-1"]))
    return text.encode(encoding, errors="replace")


def commands(path: Path) -> list[list[str]]:
    offline = ["--no-python", "--no-recall", "--no-learn"]
    return [
        ["batch", str(path), "--scorer", "exact", "--model", "demo", *offline],
        ["runs", "audit", str(path)],
        ["runs", "import", str(path)],
        ["score", str(path)],
        ["replay", str(path), "--sandbox", "none"],
    ]


@pytest.fixture
def recorded(isolated_home: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, Path, bytes]:
    """A run recorded before the hostile input arrives: it must come through intact."""
    flags = ["--sandbox", "subprocess", "--quiet", "--no-learn", "--no-recall"]
    assert main(["solve", "Sort these words: pear apple fig", *flags]) == 0
    capsys.readouterr()
    assert main(["runs", "list", "--json"]) == 0
    row = json.loads(capsys.readouterr().out.splitlines()[0])
    path = Path(row["path"])
    return row["run_id"], path, path.read_bytes()


def _still_recorded(recorded: tuple[str, Path, bytes], capsys: pytest.CaptureFixture[str]) -> None:
    run_id, path, data = recorded
    assert path.read_bytes() == data
    assert main(["runs", "list", "--json", "--limit", "10000"]) == 0
    listed = [json.loads(line)["run_id"] for line in capsys.readouterr().out.splitlines()]
    assert run_id in listed


def _ran(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own refusal
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, (argv, err)
    # 3: a batch whose items all ended without a scored answer (docs/batch.md)
    assert code in (0, 1, 2, 3), (argv, code, err)
    if code == 2:
        assert err.strip(), f"{argv}: refused without a message"
    return code, err


FUZZ_SETTINGS: dict[str, Any] = {
    "deadline": None,
    "suppress_health_check": [
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
}


@TIERS
def test_hostile_files_through_every_reading_command(
    budget: int,
    recorded: tuple[str, Path, bytes],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "word_sorting.jsonl"  # a name `score` knows

    @settings(max_examples=budget, **FUZZ_SETTINGS)
    @given(hostile_files(), st.sampled_from(range(len(commands(path)))))
    def check(data: bytes, which: int) -> None:
        path.write_bytes(data)
        _ran(commands(path)[which], capsys)
        _still_recorded(recorded, capsys)

    check()


@st.composite
def hostile_configs(draw: st.DrawFn) -> bytes:
    depth = draw(DEPTHS)
    value = draw(
        st.sampled_from(
            [
                "[" * depth + "1" + "]" * depth,
                "{a = " * depth + "1" + "}" * depth,
                '"' + "[" * depth + '"',  # brackets inside a string: no nesting at all
                "'''\n" + "{" * depth + "\n'''",
            ]
        )
    )
    lines = [
        f"x = {value}",
        "[run]",
        f"max_rounds = {draw(st.integers(-5, 5))}",
        draw(st.text(max_size=20)),
    ]
    separator = draw(st.sampled_from(["\n", "\r\n", "\u2028", "\x85"]))
    order = draw(st.permutations(lines))
    encoding = draw(st.sampled_from(["utf-8", "utf-16", "latin-1"]))
    return separator.join(order).encode(encoding, errors="replace")


@TIERS
def test_hostile_config_files_get_a_message(
    budget: int,
    recorded: tuple[str, Path, bytes],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"input": "Sort these words: b a", "target": "a b"}) + "\n")
    config = tmp_path / "config.toml"
    argv = commands(tasks)[0]

    @settings(max_examples=budget, **FUZZ_SETTINGS)
    @given(hostile_configs())
    def check(data: bytes) -> None:
        config.write_bytes(data)
        os.environ["CONDUCTOR_CONFIG"] = str(config)
        try:
            _ran(argv, capsys)
        finally:
            del os.environ["CONDUCTOR_CONFIG"]
        _still_recorded(recorded, capsys)

    check()


@pytest.mark.parametrize("which", range(5), ids=["batch", "audit", "import", "score", "replay"])
def test_a_hundred_thousand_levels_are_a_message_naming_file_and_line(
    which: int,
    recorded: tuple[str, Path, bytes],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "word_sorting.jsonl"
    depth = 100_000
    deep = '{"input": "x", "target": "y", "message_log": ' + "[" * depth + "]" * depth + "}"
    path.write_text(deep + "\n")
    code, err = _ran(commands(path)[which], capsys)
    assert code == 2
    message = " ".join(err.split())
    assert str(path) in message.replace(" ", "") or str(path) in message
    assert "nested more than" in message and ("1:" in message or "line 1" in message)
    _still_recorded(recorded, capsys)


@pytest.mark.parametrize(
    "value",
    ["[" * 100_000 + "]" * 100_000, "{a = " * 100_000 + "1" + "}" * 100_000],
    ids=["arrays", "inline-tables"],
)
def test_a_config_nested_a_hundred_thousand_levels_is_a_message_naming_file_and_line(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f"[run]\nmax_rounds = 3\nx = {value}\n")
    monkeypatch.setenv("CONDUCTOR_CONFIG", str(config))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"input": "Sort these words: b a"}) + "\n")
    code, err = _ran(commands(tasks)[0], capsys)
    assert code == 2 and f"{config}:3:" in "".join(err.split()) and "nested more than" in err


@pytest.mark.parametrize("which", range(5), ids=["batch", "audit", "import", "score", "replay"])
def test_a_folder_is_called_a_folder_and_random_bytes_are_refused(
    which: int,
    recorded: tuple[str, Path, bytes],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = tmp_path / "word_sorting.jsonl"
    folder.mkdir()
    code, err = _ran(commands(folder)[which], capsys)
    assert code == 2 and "folder" in err and "no such file" not in err
    folder.rmdir()
    folder.write_bytes(bytes(range(256)) * 8)
    code, err = _ran(commands(folder)[which], capsys)
    assert code == 2 and "word_sorting.jsonl" in "".join(err.split())
    _still_recorded(recorded, capsys)
