"""`conductor sandbox doctor|exec` through the real CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conductor.cli import main


@pytest.mark.slow
def test_doctor_lists_every_backend_and_what_auto_picks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["sandbox", "doctor"])
    out = capsys.readouterr().out
    for name in ("docker", "bwrap", "subprocess"):
        assert name in out
    assert ("auto picks:" in out) == (code == 0)
    from sandbox.registry import probe

    for name in ("docker", "bwrap"):  # each working backend's protections, checked live
        if probe(name) is None:
            assert f"{name}: protections on this machine" in out
    if probe("bwrap") is None or probe("docker") is None:
        for protection in ("uid separation", "cgroup bound", "seccomp", "Yama", "user namesp"):
            assert protection in out


def test_exec_prints_the_result_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cell = tmp_path / "cell.py"
    cell.write_text("print(6 * 7)\n")
    assert main(["sandbox", "exec", "--backend", "subprocess", str(cell)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["stdout"], result["exit_code"], result["backend"]) == ("42\n", 0, "subprocess")


def test_exec_exit_code_tells_failed_code_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cell = tmp_path / "boom.py"
    cell.write_text("raise ValueError('boom')\n")
    assert main(["sandbox", "exec", "--backend", "subprocess", str(cell)]) == 1
    assert "ValueError: boom" in json.loads(capsys.readouterr().out)["stderr"]


def test_exec_of_a_missing_file_says_what_to_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sandbox", "exec", "--backend", "subprocess", str(tmp_path / "nope.py")]) == 2
    err = capsys.readouterr().err
    assert "nope.py" in err and "or - for stdin" in err


def test_exec_rejects_an_unknown_backend(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sandbox", "exec", "--backend", "podman", "-"]) == 2
    assert "unknown sandbox backend 'podman'" in capsys.readouterr().err
