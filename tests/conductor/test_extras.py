"""Installing an extra names this checkout, never the public index's `conductor` (an
unrelated project): the command printed, and the make target the README shows."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conductor.cli import main
from conductor.extras import CHECKOUT, DISTRIBUTION, install_command

REPO = Path(__file__).resolve().parents[2]
EXTRAS = sorted(
    tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
)


@pytest.mark.parametrize("extra", EXTRAS)
def test_the_install_command_adds_the_extra_to_this_checkout_here(extra: str) -> None:
    command = install_command(extra)
    assert command.startswith(sys.executable) and " -m pip install -e " in command
    assert f"{CHECKOUT}[{extra}]" in command and CHECKOUT == REPO
    assert "'conductor[" not in command


# Each command whose extra is missing, what to hide from it, and the extra it names.
MISSING = [
    (["serve", "--no-api-key"], "conductor.serve.app", "serve"),
    (["mcp"], "conductor.mcp_server.server", "mcp"),
    (["runs", "export", "RUN", "--inspect", "-o", "x.eval"], "inspect_ai", "inspect"),
]
SOLVE = ["solve", "Sort these words: pear apple fig", "--model", "demo", "--quiet"]
SOLVE += ["--sandbox", "subprocess", "--no-learn"]


@pytest.mark.parametrize(("argv", "hidden", "extra"), MISSING)
def test_a_missing_extra_prints_the_command_that_adds_it(
    argv: list[str],
    hidden: str,
    extra: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    isolated_home: Path,
) -> None:
    if "RUN" in argv:  # a run to export
        assert main(SOLVE) == 0
        capsys.readouterr()
        assert main(["runs", "list", "--json"]) == 0
        run_id = json.loads(capsys.readouterr().out.splitlines()[0])["run_id"]
        argv = [run_id if a == "RUN" else a for a in argv]
        argv[-1] = str(isolated_home.parent / argv[-1])
    monkeypatch.setitem(sys.modules, hidden, None)  # as if it were not installed
    if hidden == "inspect_ai":
        monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    assert main(argv) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert install_command(extra) in err, err
    assert "'conductor[" not in err


def test_the_readme_and_help_never_send_to_the_public_index() -> None:
    texts = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    for path in texts:
        assert "install 'conductor[" not in path.read_text(encoding="utf-8"), path


@pytest.mark.skipif(shutil.which("make") is None, reason="no make here")
def test_make_extras_installs_into_the_checkouts_venv() -> None:
    done = subprocess.run(
        ["make", "-n", "-C", str(REPO), "extras", "EXTRAS=serve"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "install -e '.[serve]'" in done.stdout and ".venv/bin/python" in done.stdout
    refused = subprocess.run(["make", "-s", "-C", str(REPO), "extras"], capture_output=True,
                             text=True, check=False)  # fmt: skip
    assert refused.returncode != 0 and "EXTRAS=serve" in refused.stderr


def test_the_distribution_is_named_apart_from_the_public_conductor() -> None:
    """`pip install <name>` must never fetch the unrelated project, if this is published."""
    name = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]
    assert name != "conductor"
    assert name == DISTRIBUTION


def test_extras_that_name_this_project_name_it_by_its_own_distribution() -> None:
    """An extra listing `conductor[...]` installed the public index's unrelated
    `conductor` 1.0.0 once the distribution was renamed (CI's environment had it)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for extra, needs in project["optional-dependencies"].items():
        for need in needs:
            name = need.split("[", 1)[0].split(";", 1)[0].strip()
            assert name != "conductor", (extra, need)
