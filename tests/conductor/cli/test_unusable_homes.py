"""Every command that writes the data folder, on every kind of folder it cannot write:
one line naming the true cause and the fix, exit 2, no traceback, nothing changed.

The product of home kinds by commands, all run in-process through `conductor.cli.main`.
Read-only and full file systems are real small tmpfs mounts (root only: skipped
elsewhere); a pseudo file system is /proc; "no permission" needs a user the kernel
checks (skipped for root, whom permissions do not stop).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from published_builder import sorting_record, write_file

from conductor.cli import main

NOTICES = ("offline demo model", "isolates nothing")  # printed before any write


def _mount(where: Path, size: str) -> bool:
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)])
    return done.returncode == 0


@pytest.fixture(scope="module")
def disks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path | None]]:
    """A read-only tmpfs holding a home with a run in it, and a full one."""
    base = tmp_path_factory.mktemp("disks")
    found: dict[str, Path | None] = {"read-only": None, "full": None}
    if _mount(base / "ro", "2m"):
        (base / "ro" / "home" / "runs").mkdir(parents=True)
        (base / "ro" / "home" / "runs" / "kept.jsonl").write_text("{}\n")
        subprocess.run(["mount", "-o", "remount,ro", str(base / "ro")], check=True)
        found["read-only"] = base / "ro"
    if _mount(base / "full", "400k"):
        (base / "full" / "home").mkdir()
        fs = os.statvfs(base / "full")
        with (base / "full" / "filler").open("wb") as fh:
            fh.write(b"\0" * (fs.f_bavail * fs.f_frsize))
        found["full"] = base / "full"
    try:
        yield found
    finally:
        for name in ("ro", "full"):
            subprocess.run(["umount", "-l", str(base / name)], check=False, capture_output=True)


def _home(kind: str, disks: dict[str, Path | None], tmp_path: Path) -> tuple[Path, str]:
    """A home of `kind` and the words its message must hold."""
    if kind in ("read-only", "missing parent on read-only", "full"):
        disk = disks["read-only" if kind != "full" else "full"]
        if disk is None:
            pytest.skip("mounting a small file system needs root")
        if kind == "missing parent on read-only":
            return disk / "absent" / "home", "read-only file system"
        return disk / "home", "read-only file system" if kind == "read-only" else "full"
    if kind == "a file":
        (tmp_path / "home").write_text("not a folder")
        return tmp_path / "home", "is a file, not a folder"
    if kind == "inside a file":
        (tmp_path / "file").write_text("not a folder")
        return tmp_path / "file" / "home", "is a file, so no folder can be made"
    if kind == "pseudo file system":
        return Path("/proc/self/conductor-home"), "pseudo file system"
    assert kind == "no permission"
    if os.geteuid() == 0:
        pytest.skip("permissions do not stop root")
    (tmp_path / "locked").mkdir(mode=0o500)
    return tmp_path / "locked", "no permission"


def _commands(inputs: Path, home: Path) -> dict[str, list[str]]:
    published = str(inputs / "word_sorting.jsonl")
    return {
        "solve": ["solve", "Sort these words: pear apple fig", "--model", "demo",
                  "--sandbox", "subprocess", "--quiet", "--no-learn"],
        "batch": ["batch", str(inputs / "GameOf24.jsonl"), "--model", "demo",
                  "--sandbox", "subprocess", "--no-learn", "--no-recall"],
        "runs import": ["runs", "import", published],
        "notebook learn": ["notebook", "learn", published],
        "notebook merge": ["notebook", "merge", str(home / "merged.db"), str(inputs / "nb.db")],
        "notebook import": ["notebook", "import", str(inputs / "export.jsonl")],
        "serve": ["serve", "--port", "0", "--no-api-key"],
    }  # fmt: skip


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the commands read, made with a working home of their own."""
    where = tmp_path_factory.mktemp("inputs")
    write_file(where / "word_sorting.jsonl", sorting_record())
    (where / "GameOf24.jsonl").write_text('{"input": "4 5 6 10", "target": "24"}\n')
    before = os.environ.get("CONDUCTOR_HOME")
    os.environ["CONDUCTOR_HOME"] = str(where / "home")
    try:
        assert main(["notebook", "--notebook", str(where / "nb.db"), "learn",
                     str(where / "word_sorting.jsonl")]) == 0  # fmt: skip
        assert main(["notebook", "--notebook", str(where / "nb.db"), "export", "-o",
                     str(where / "export.jsonl")]) == 0  # fmt: skip
    finally:
        if before is None:
            os.environ.pop("CONDUCTOR_HOME", None)
        else:
            os.environ["CONDUCTOR_HOME"] = before
    return where


KINDS = (
    "read-only", "missing parent on read-only", "full", "a file", "inside a file",
    "pseudo file system", "no permission",
)  # fmt: skip
COMMANDS = tuple(_commands(Path("."), Path(".")))


def _contents(home: Path) -> dict[str, bytes]:
    if not home.is_dir():
        return {}
    return {str(p): p.read_bytes() for p in home.rglob("*") if p.is_file()}


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("kind", KINDS)
def test_every_command_on_an_unusable_home_says_why_in_one_line(
    kind: str,
    command: str,
    disks: dict[str, Path | None],
    inputs: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    isolated_home: Path,
) -> None:
    home, cause = _home(kind, disks, tmp_path)
    monkeypatch.setenv("CONDUCTOR_HOME", str(home))

    def served(*args: object, **kwargs: object) -> None:
        raise AssertionError("serve started on a data folder it cannot write")

    monkeypatch.setattr("conductor.serve.server.serve", served)  # never block the test
    before = _contents(home)
    capsys.readouterr()
    code = main(_commands(inputs, home)[command])
    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip() and not any(n in ln for n in NOTICES)]
    assert code == 2, (out, err)
    assert "Traceback" not in out + err
    assert len(" ".join(lines).split("error: ")) == 2, err  # one message
    message = " ".join(" ".join(lines).split())
    assert message.startswith("error: ") and cause in message, message
    if kind == "full":
        assert "free some space" in message.lower()
    else:
        assert "CONDUCTOR_HOME" in message
        assert "disk" not in message or "full" not in message  # not misread as full
    after = _contents(home)
    assert {path: after.get(path) for path in before} == before  # nothing recorded changed
    if kind == "full":  # SQLite may leave an empty file where it tried to make one
        assert all(not after[path] for path in set(after) - set(before))
    else:
        assert after == before
