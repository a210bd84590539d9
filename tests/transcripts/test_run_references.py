"""One answer to "which run does this reference name" (transcripts/references.py): `runs
show`, `runs audit RUN` and the MCP server's `run_show` agree on every reference, and
the MCP tool, which a client drives, never takes a file path."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conductor.cli import main
from conductor.session import Session
from conductor_kernel.errors import UserFacingError
from experts.scripted import ScriptedModel
from transcripts.index import RunIndex
from transcripts.references import indexed_run, transcript_of

TURNS = ('>> FINAL ANSWER:\n"""\napple fig pear\n"""',)


def _run() -> str:
    session = Session(ScriptedModel(TURNS, lambda name, text: "fine"), index=RunIndex())
    return [e.run_id for e in session.solve("Sort pear apple fig", task="word_sorting")][-1]


def _cli_accepts(args: list[str], capsys: pytest.CaptureFixture[str]) -> bool:
    code = main(args)
    capsys.readouterr()
    return code == 0


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(cut=st.integers(min_value=0, max_value=40), noise=st.sampled_from(["", "x", "%", "_", "/"]))
def test_show_audit_and_the_resolver_agree_on_every_prefix(
    cut: int, noise: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = getattr(test_show_audit_and_the_resolver_agree_on_every_prefix, "run_id", None)
    if run_id is None:
        run_id = _run()
        test_show_audit_and_the_resolver_agree_on_every_prefix.run_id = run_id  # type: ignore[attr-defined]
    ref = run_id[:cut] + noise
    try:
        transcript_of(ref)
        resolved = True
    except UserFacingError:
        resolved = False
    # The one id starts with `ref`: it names the run (an empty ref names nothing).
    assert resolved == (bool(ref) and run_id.startswith(ref))
    assert _cli_accepts(["runs", "show", ref], capsys) == resolved
    assert _cli_accepts(["runs", "audit", ref], capsys) == resolved


def test_a_transcript_path_is_a_reference_for_the_cli_but_never_for_the_mcp_tool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from conductor.mcp_server.tools import run_show

    run_id = _run()
    copy = tmp_path / "elsewhere.jsonl"
    shutil.copy(transcript_of(run_id), copy)
    assert transcript_of(str(copy)) == copy
    assert _cli_accepts(["runs", "show", str(copy)], capsys)
    with pytest.raises(UserFacingError, match="no run matches"):
        indexed_run(str(copy))
    with pytest.raises(UserFacingError, match="no run matches"):
        run_show(str(copy))
    with pytest.raises(UserFacingError):
        transcript_of(str(copy), files=False)
    assert run_show(run_id[:12])["run_id"] == run_id


def test_a_transcript_runs_db_lost_is_still_found_by_its_id(isolated_home: Path) -> None:
    run_id = _run()
    path = transcript_of(run_id)
    (isolated_home / "runs.db").unlink()
    for extra in ("-wal", "-shm"):
        Path(f"{isolated_home / 'runs.db'}{extra}").unlink(missing_ok=True)
    if path.parent.name != "runs":
        pytest.skip(f"transcripts are kept in {path.parent}, not the runs folder")
    assert transcript_of(run_id) == path
    with pytest.raises(UserFacingError):
        transcript_of(run_id[:8])  # a prefix needs the index
