"""Small things a new user trips on (issue 10, item 8)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conductor.cli import main
from conductor.export.terminal import RichPrinter
from conductor_kernel.events import RunFinished, RunStarted
from conductor_kernel.text.counts import plural

CONDUCTOR = str(Path(sys.executable).with_name("conductor"))


def test_plurals() -> None:
    assert plural(1, "round") == "1 round"
    assert plural(0, "round") == "0 rounds"
    assert plural(2, "sandbox run") == "2 sandbox runs"
    assert plural(1, "query", "queries") == "1 query"


def test_the_run_summary_says_1_round_and_1_sandbox_run(capsys) -> None:
    from rich.console import Console

    printer = RichPrinter(console=Console(width=200, file=sys.stdout))
    printer.handle(RunStarted(run_id="r", question="q"))
    printer.handle(
        RunFinished(run_id="r", status="answered", rounds=1, expert_calls=1, sandbox_runs=1)
    )
    out = capsys.readouterr().out
    assert "1 round ·" in out and "1 expert call ·" in out and "1 sandbox run ·" in out


@pytest.mark.slow
def test_sandbox_exec_takes_sandbox_and_still_backend(tmp_path: Path) -> None:
    code = tmp_path / "hello.py"
    code.write_text("print('hi')\n")
    for flag in ("--sandbox", "--backend"):
        done = subprocess.run(
            [CONDUCTOR, "sandbox", "exec", str(code), flag, "subprocess"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert "hi" in done.stdout
    shown = subprocess.run(
        [CONDUCTOR, "sandbox", "exec", "--help"], capture_output=True, text=True, timeout=60
    ).stdout
    assert "--sandbox" in shown and "--backend" not in shown


def test_the_palette_offers_the_readmes_default_models() -> None:
    from tui.app import MODEL_CHOICES

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    for choice in MODEL_CHOICES:
        if ":" in choice:
            assert choice.split(":", 1)[1] in readme, choice


def test_audit_summary_warns_about_a_truncated_file(tmp_path: Path, capsys) -> None:
    path = tmp_path / "cut.jsonl"
    lines = [
        json.dumps(RunStarted(run_id="r", question="q").to_dict()),
        json.dumps(RunFinished(run_id="r", status="answered", rounds=1).to_dict())[:30],
    ]
    path.write_text("\n".join(lines) + "\n")
    assert main(["runs", "audit", str(path), "--summary"]) == 0
    err = capsys.readouterr().err
    assert "warning" in err and "cut.jsonl" in err


@pytest.mark.slow
def test_notebook_list_never_cuts_keys_or_ids_at_80_columns() -> None:
    from conductor.config import Settings
    from conductor.session import build_session
    from conductor_kernel.limits.run_config import RunConfig

    session = build_session(Settings(model="demo", run=RunConfig(python=False)))
    for question in ("Use 4 5 6 10 to make 24", "Sort these words: pear apple fig"):
        list(session.solve(question))
    import sqlite3

    from record.home import home_dir

    key = "a long key that a later question would contain word for word to the very END"
    with sqlite3.connect(home_dir() / "notebook.db") as conn:
        conn.execute("update notes set key = ? where seq = (select min(seq) from notes)", (key,))
    done = subprocess.run(
        [CONDUCTOR, "notebook", "list"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**__import__("os").environ, "COLUMNS": "80"},
    )
    assert done.returncode == 0, done.stderr
    assert "…" not in done.stdout
    assert "END" in done.stdout and "very" in done.stdout
    assert all(len(line) <= 80 for line in done.stdout.splitlines())


def test_a_runs_verification_is_said_in_words() -> None:
    from conductor.export.wording import verification_words

    assert verification_words("none") == "not verified"
    assert verification_words(None) == "not verified"
    assert verification_words("target") == "checked against the known answer"
    assert verification_words("new-level") == "new-level"  # a newer record, shown as it is


@pytest.mark.slow
def test_the_unisolated_sandbox_is_warned_of_once_a_batch(tmp_path: Path, shared_dir: Path) -> None:
    """A comparison opens a sandbox per item and method (and for its checks): the
    warning that the subprocess sandbox isolates nothing is one line, not one a sandbox."""
    done = subprocess.run(
        [CONDUCTOR, "batch", str(shared_dir / "tasks" / "word_sorting.jsonl"), "--limit", "2",
         "--methods", "meta,standard", "--sandbox", "subprocess", "--model", "demo"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode in (0, 3), done.stderr  # 3: nothing scored right is no failure
    assert "4/4 runs finished" in " ".join(done.stdout.split()), done.stdout  # all four ran
    assert done.stderr.count("isolates nothing") == 1, done.stderr


ONE_OF_A_PLURAL = re.compile(
    r"(?<![\d.,/])1 (items|methods|runs|notes|findings|rounds|expert calls)\b"
)


@pytest.mark.parametrize("methods", ["standard", "standard,meta-no-python"])
def test_a_comparison_of_one_item_says_1_item_and_counts_its_methods(
    tmp_path: Path, shared_dir: Path, capsys, methods: str
) -> None:
    """The batch's announcement, report and summary say `1 item`, `1 method`,
    `2 methods`: never `1 items` or `1 methods`."""
    rc = main(["batch", str(shared_dir / "tasks" / "word_sorting.jsonl"), "--limit", "1",
               "--methods", methods, "--model", "demo", "--no-learn"])  # fmt: skip
    assert rc in (0, 3)
    out = " ".join(capsys.readouterr().out.split())
    count = len(methods.split(","))
    assert f"1 item x {plural(count, 'method')}" in out, out
    assert not ONE_OF_A_PLURAL.search(out), ONE_OF_A_PLURAL.search(out)
