"""`conductor score` from a plain `pip install` of the built wheel, in a throwaway venv.

Slow, and needs the package index (pip): skipped when it cannot be reached, failed then
under CI=true. Every task the published data has is scored by the installed wheel and
must give the same numbers as this checkout: Table 1 on the published runs, and the
same verdicts on answers built for the tasks without published runs (sonnets, checkmate).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from conductor.cli import main
from support import REPO, skip_or_fail

pytestmark = pytest.mark.slow


def _run(
    *args: str | Path, cwd: Path | None = None, timeout: int = 900
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(a) for a in args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        check=False,
    )


def _built_tasks(shared_dir: Path, tmp: Path) -> list[Path]:
    """Published-format files for the tasks without published runs, with answers to judge."""
    checkmate = [
        json.loads(x) for x in (shared_dir / "tasks/CheckmateInOne.jsonl").read_text().splitlines()
    ]
    mates = tmp / "CheckmateInOne.jsonl"
    mates.write_text(
        "".join(
            json.dumps({**row, "output": f'>> FINAL ANSWER:\n"""\n{answer}\n"""'}) + "\n"
            for row in checkmate[:40]
            for answer in (row["target"], row["target"].rstrip("#") + " Kh1 Qh2")
        )
    )
    poems = [
        json.loads(x)["poem"]
        for x in (REPO / "tests/data/sonnet_reference_verdicts.jsonl").read_text().splitlines()
    ]
    sonnets = [
        json.loads(x)
        for x in (shared_dir / "tasks/Sonnets-Standard.jsonl").read_text().splitlines()
    ]
    sonnet_file = tmp / "Sonnets-Standard.jsonl"
    sonnet_file.write_text(
        "".join(
            json.dumps({**row, "output": f'>> FINAL ANSWER:\n"""\n{poem}\n"""'}) + "\n"
            for row, poem in zip(sonnets * 2, poems[:120] + poems[-120:], strict=False)
        )
    )
    return [mates, sonnet_file]


@pytest.mark.slow
def test_the_installed_wheel_scores_every_task_as_this_checkout_does(
    shared_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "src"
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(".venv", ".git", "*.egg-info", "build", "__pycache__"),
    )
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    built = _run(python, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp_path / "dist", source)
    if built.returncode != 0:
        reason = f"cannot build the wheel (package index unreachable?): {built.stderr[-300:]}"
        skip_or_fail(reason, "CI")
    [wheel] = (tmp_path / "dist").glob("conductor_metaprompt-*.whl")
    installed = _run(python, "-m", "pip", "install", "-q", wheel)
    assert installed.returncode == 0, installed.stderr[-2000:]

    runs = shared_dir / "transcripts"
    files = [*sorted(runs.glob("*/*.jsonl")), *_built_tasks(shared_dir, tmp_path)]
    done = _run(env_dir / "bin" / "conductor", "score", "--json", *files, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    theirs = [json.loads(x) for x in done.stdout.splitlines()]
    assert main(["score", "--json", *map(str, files)]) == 0
    ours = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    keys = ("file", "n", "paper_correct", "ours_correct", "no_answer")
    assert [{k: r[k] for k in keys} for r in theirs] == [{k: r[k] for k in keys} for r in ours]
    by_task = {(Path(r["file"]).parent.name, r["task"]): r for r in theirs}
    assert by_task[("with-python", "GameOf24")]["paper_correct"] == 67  # Table 1, spot check
    assert (
        by_task[(tmp_path.name, "CheckmateInOne")]["ours_correct"] == 40
    )  # the continuations fail
    assert os.environ.get("PYTHONPATH") is None or str(REPO) not in os.environ["PYTHONPATH"]
    assert sys.prefix != str(env_dir)
