"""`conductor score` takes a batch's folder or its results.jsonl, and suggests no flag
it does not have."""

from __future__ import annotations

import contextlib
import io
import json
import re
import tempfile
from pathlib import Path

import pytest
from batch_support import BATCH_FLAGS, OFFLINE, answer, batch_folder, item_number, numbered_tasks
from hypothesis import given, settings
from hypothesis import strategies as st

from conductor.cli import build_parser, main
from equipment.wire_server import Answer, WireServer


def right_for_even(body: dict) -> Answer:
    n = item_number(body)
    return answer(str(2 * n if n % 2 == 0 else 2 * n + 1))


@pytest.mark.slow
def test_score_reads_a_batch_folder_and_its_results_file_alike(
    tmp_path: Path, wire: WireServer, capsys: pytest.CaptureFixture[str], isolated_home: Path
) -> None:
    tasks = numbered_tasks(tmp_path / "t.jsonl", 5)
    wire.responder = right_for_even
    assert main(["batch", str(tasks), *BATCH_FLAGS, *OFFLINE, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["accuracy"]["correct"] == 3  # items 0, 2, 4
    folder = batch_folder(isolated_home)
    for given_path in (folder, folder / "results.jsonl"):
        assert main(["score", str(given_path), "--json"]) == 0
        (line,) = capsys.readouterr().out.splitlines()
        scored = json.loads(line)
        assert scored["scorer"] == "exact"  # the batch's own spec, from batch.json
        assert (scored["n"], scored["correct"]) == (5, report["accuracy"]["correct"])


def _flags(parser_args: list[str]) -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    command = sub.choices[parser_args[0]]  # type: ignore[index]
    return {flag for action in command._actions for flag in action.option_strings}


@settings(max_examples=25, deadline=None)
@given(st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True), st.booleans())
def test_score_suggests_only_flags_it_has(name: str, as_task: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        task_file = Path(folder) / f"{name}.jsonl"
        task_file.write_text('{"input": "q", "target": "a", "output": "x"}\n')
        argv = ["score", str(task_file), *(["--task", name] if as_task else [])]
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main(argv)
    message = " ".join(err.getvalue().split())
    if code == 0:
        return  # the name happened to be a built-in task's
    assert code == 2 and "built-in" in message, message
    suggested = set(re.findall(r"--[a-z][a-z-]*", message))
    assert suggested and suggested <= _flags(argv), message
