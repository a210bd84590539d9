"""Model problems diagnosed against a real server: llama-server with SmolLM2, which does
not follow the meta-prompting format, ends a run after a few turns with that said and
nothing learned; with no model named, the server's own model is used."""

from __future__ import annotations

import pytest
from conftest import kinds, run_cli, solve_json, spec, transcript_of
from servers import LlamaServer

from conductor_kernel.run.conversation import OFF_PROTOCOL, OFF_PROTOCOL_TURNS

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("peers")]


def test_a_model_that_ignores_the_protocol_is_stopped_and_named(llama: LlamaServer) -> None:
    proc, result = solve_json(
        "What is 2+2?", "--model", spec("openai", "smollm2", llama), "--max-rounds", "15",
        "--no-python",
    )  # fmt: skip
    assert proc.returncode == 1
    transcript = transcript_of(result["run_id"])
    finished = transcript.finished
    assert finished is not None and finished.status == "no_answer"
    assert finished.rounds == OFF_PROTOCOL_TURNS  # not all 15
    (stop,) = [o for o in kinds(transcript, "observation") if o.reason == OFF_PROTOCOL]
    assert "chat template does not follow the format" in stop.message
    assert not kinds(transcript, "notes_written")  # nothing learned from it


def test_quiet_says_why_a_protocol_ignoring_model_gave_no_answer(llama: LlamaServer) -> None:
    proc = run_cli(
        "solve", "What is 2+2?", "--quiet", "--model", spec("openai", "smollm2", llama),
        "--no-python", "--no-recall", "--no-learn",
    )  # fmt: skip
    assert proc.returncode == 1 and proc.stdout == ""
    assert "does not follow the format" in " ".join(proc.stderr.split())


def test_with_no_model_named_the_servers_model_is_used(llama: LlamaServer) -> None:
    proc = run_cli(
        "solve", "What is 2+2?", "--json", "--max-rounds", "1", "--no-python",
        "--no-recall", "--no-learn",
        key="",
        env={"OPENAI_BASE_URL": llama.openai_url},
    )  # fmt: skip
    assert "Traceback" not in proc.stderr and "--model openai:NAME" not in proc.stderr
    assert '"status": "limit"' in proc.stdout or '"status": "no_answer"' in proc.stdout
