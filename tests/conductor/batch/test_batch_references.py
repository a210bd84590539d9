"""One answer to "which batch does this reference name" (conductor/batch/references.py),
for every command that takes one: a folder, its results.jsonl, an id, or a prefix only
one batch has; a prefix several share is an error that names them."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conductor.batch.references import find_batch, require_batch
from conductor.batch.store import MANIFEST_FILE, RESULTS_FILE
from conductor.cli import main
from conductor_kernel.errors import UserFacingError

NAME = st.text(alphabet="abcGO24-_*?[", min_size=1, max_size=10)


def _make(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / MANIFEST_FILE).write_text("{}")
    (folder / RESULTS_FILE).write_text("")
    return folder


@settings(max_examples=60, deadline=None)
@given(names=st.sets(NAME, min_size=1, max_size=6), ref=NAME)
def test_a_prefix_names_the_one_batch_that_has_it(names: set[str], ref: str) -> None:
    with tempfile.TemporaryDirectory() as home, pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("CONDUCTOR_HOME", home)
        monkeypatch.chdir(home)  # a relative reference is never a file here
        for name in names:
            _make(Path(home) / "batches", name)
        having = sorted(n for n in names if n.startswith(ref))
        if ref in names or len(having) == 1:
            found = find_batch(ref)
            assert found is not None and found.name == (ref if ref in names else having[0])
        elif not having:
            assert find_batch(ref) is None
            with pytest.raises(UserFacingError, match="no batch matches"):
                require_batch(ref)
        else:
            with pytest.raises(UserFacingError, match=f"{len(having)} batches start with"):
                find_batch(ref)


def test_a_folder_its_results_file_and_a_plain_file(tmp_path: Path, isolated_home: Path) -> None:
    folder = _make(tmp_path, "GameOf24-abc")
    assert find_batch(folder) == folder
    assert find_batch(folder / RESULTS_FILE) == folder
    published = tmp_path / "GameOf24.jsonl"
    published.write_text("{}\n")
    assert find_batch(published) is None  # a file to read, not a batch


def test_runs_export_inspect_takes_a_batch_id_prefix(
    isolated_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("inspect_ai")
    from batch_support import BATCH_FLAGS, OFFLINE, consult_then_answer, numbered_tasks

    from equipment.wire_server import WireServer

    tasks = numbered_tasks(tmp_path / "t.jsonl", 2)
    with (
        WireServer(responder=consult_then_answer) as server,
        pytest.MonkeyPatch.context() as monkey,
    ):
        monkey.setenv("OPENAI_BASE_URL", server.openai_url)
        monkey.setenv("OPENAI_API_KEY", "k")
        assert main(["batch", str(tasks), *BATCH_FLAGS, *OFFLINE, "--json"]) == 0
    batch_id = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["batch_id"]
    out = tmp_path / "b.eval"
    assert main(["runs", "export", batch_id[:6], "--inspect", "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert out.exists() and "(2 runs;" in said
