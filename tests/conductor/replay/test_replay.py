"""Replay: the published runs through our conductor, answered from the record."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from published_builder import (
    PY_REPLY,
    answer,
    call,
    outputs,
    record,
    retry_defect_record,
    sorting_record,
    write_file,
)

from conductor.cli import main
from conductor.replay.runner import (
    harness_view,
    recorded_view,
    replay_file,
    replay_record,
    same_code_output,
)
from conductor_kernel.events import ExpertCallStarted
from conductor_kernel.interfaces import ExecResult, Message, SandboxUnavailable
from experts.replay import LOST_REPLY, ReplayExhausted, ReplayModel, estimate_tokens
from record.published import parse_record
from sandbox.subprocess_backend import SubprocessSandbox

WITH_PYTHON = (
    "GameOf24",
    "MGSM_ES",
    "MGSM_FR",
    "geometric_shapes",
    "multistep_arithmetic_two",
    "word_sorting",
)


@pytest.fixture
def sandbox():
    box = SubprocessSandbox()
    yield box
    box.close()


def expert(model: ReplayModel, name: str, instruction: str) -> str:
    system = f"You are {name}. Answer."
    return model.complete([Message("user", instruction)], system=system, role="expert").text


def test_meta_turns_come_back_in_order_then_run_out() -> None:
    rec = parse_record(sorting_record(), line=1)
    model = ReplayModel(rec)
    texts = [model.complete([Message("user", "go")], role="meta").text for _ in range(3)]
    assert texts == [t.text for t in rec.turns]
    with pytest.raises(ReplayExhausted, match="3 meta turns"):
        model.complete([Message("user", "go")], role="meta")


def test_expert_replies_are_found_by_instruction_in_any_order() -> None:
    model = ReplayModel(parse_record(sorting_record(), line=1))
    model.complete([], role="meta")
    model.complete([], role="meta")  # turn 2 calls the reviewer and the linguist
    replies: dict[str, str] = {}
    asks = [
        ("Expert Linguist", "Alphabetise: pear, apple."),
        ("Expert Reviewer", "Is 'apple pear' sorted?"),
    ]
    threads = [
        threading.Thread(target=lambda n=n, i=i: replies.__setitem__(n, expert(model, n, i)))
        for n, i in asks
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert replies == {"Expert Linguist": "apple pear", "Expert Reviewer": "Yes."}
    assert model.unmatched == []


def test_two_experts_with_one_instruction_get_their_own_replies() -> None:
    both = (
        call("Expert Geometer", "Which shape?") + "\n\n" + call("Expert Designer", "Which shape?")
    )
    rec = record(
        "shape",
        "(A)",
        (both, outputs(2, ("Expert Geometer", "a kite"), ("Expert Designer", "a sector"))),
        (answer("(A)"), None),
    )
    for order in (("Expert Designer", "Expert Geometer"), ("Expert Geometer", "Expert Designer")):
        model = ReplayModel(parse_record(rec, line=1))
        model.complete([], role="meta")
        replies = {name: expert(model, name, "Which shape?") for name in order}
        assert replies == {"Expert Geometer": "a kite", "Expert Designer": "a sector"}


def test_python_reply_is_the_experts_words_without_what_the_harness_appended() -> None:
    model = ReplayModel(parse_record(sorting_record(), line=1))
    model.complete([], role="meta")
    reply = expert(model, "Expert Python", "Sort the words pear and apple.")
    assert reply == PY_REPLY
    assert "Here is the output" not in reply


def test_an_unknown_instruction_gets_a_placeholder_and_is_reported() -> None:
    model = ReplayModel(parse_record(sorting_record(), line=1))
    model.complete([], role="meta")
    assert "no reply" in expert(model, "Expert Poet", "Write a poem.")
    assert len(model.unmatched) == 1 and "Expert Poet" in model.unmatched[0]


def test_prompt_caching_counts_only_the_new_suffix() -> None:
    model = ReplayModel(parse_record(sorting_record(), line=1))
    history = [Message("user", "ROUND 1:\n\n" + "Sort these words. " * 50)]
    first = model.complete(list(history), system="sys", role="meta", cache=True)
    history += [Message("assistant", first.text), Message("user", "ROUND 2:\n\nok")]
    second = model.complete(list(history), system="sys", role="meta", cache=True)
    assert first.usage.cache_read_tokens == 0
    assert second.usage.cache_read_tokens == first.usage.input_tokens
    new = second.usage.input_tokens - second.usage.cache_read_tokens
    assert 0 < new < first.usage.input_tokens
    uncached = ReplayModel(parse_record(sorting_record(), line=1))
    uncached.complete(history[:1], system="sys", role="meta")
    assert uncached.complete(history, system="sys", role="meta").usage.cache_read_tokens == 0


@pytest.mark.parametrize(
    ("text", "low", "high"),
    [("", 0, 0), ("hello", 1, 1), ("The quick brown fox jumps over the lazy dog.", 9, 11)],
)
def test_token_estimate_is_plausible(text: str, low: int, high: int) -> None:
    assert low <= estimate_tokens(text) <= high


def test_a_record_replays_with_the_same_answer_calls_rounds_and_output(sandbox) -> None:
    result = replay_record(parse_record(sorting_record(), line=7), sandbox)
    assert result.mismatches == []
    assert (result.same_final_answer, result.same_expert_calls, result.same_rounds) == (
        True,
        True,
        True,
    )
    assert (result.sandbox_runs, result.sandbox_compared, result.sandbox_identical) == (1, 1, 1)
    assert (result.quoted_rounds, result.quoted_identical) == (2, 2)
    assert result.input_tokens > result.input_tokens_cached > 0


def test_a_different_program_output_is_a_listed_mismatch(sandbox) -> None:
    result = replay_record(parse_record(sorting_record(printed="['pear']"), line=3), sandbox)
    assert result.faithful  # the meta model's side is unchanged
    assert result.sandbox_identical == 0
    mismatch, quoted = result.mismatches
    assert (mismatch.line, mismatch.kind) == (3, "sandbox")
    assert "['pear']" in mismatch.detail and "['apple', 'pear']" in mismatch.detail
    # ... and the meta model was shown the new output, not the recorded one
    assert (quoted.kind, result.quoted_rounds, result.quoted_identical) == ("quoted_output", 2, 1)
    assert "code output" in quoted.detail


def test_what_the_loop_quotes_back_is_checked_against_the_record(sandbox) -> None:
    from conductor.replay.quotes import check_quotes, quoted_blocks

    rec = parse_record(sorting_record(), line=5)
    model = ReplayModel(rec)
    from conductor.replay.runner import question_of, replay_config
    from conductor_kernel.run.loop import Conductor

    config = replay_config()
    config.python_timeout_s = 60  # the paper's 3 s is for replays, not a loaded test machine
    events = list(Conductor(model, model, sandbox, config).run(question_of(rec)))
    names: dict[int, list[str]] = {}
    # By place in the turn: concurrent calls start in any order (the flake this had).
    started = [e for e in events if isinstance(e, ExpertCallStarted)]
    for e in sorted(started, key=lambda e: (e.round, e.index)):
        names.setdefault(e.round, []).append(e.name)
    requests = model.meta_requests
    assert check_quotes(rec, requests, names).identical == 2
    # One character of an expert's reply lost on the way back is a difference.
    reviewer, linguist = quoted_blocks(requests[2], names[2])
    assert (reviewer, linguist) == ("Yes.", "apple pear")
    tampered = requests[2].replace("apple pear\n", "apple pea\n", 1)
    check = check_quotes(rec, [*requests[:2], tampered], names)
    assert (check.rounds, check.identical) == (2, 1) and check.differences


def test_a_turn_with_calls_and_an_answer_runs_the_calls_first(sandbox) -> None:
    rec = record(
        "q",
        "t",
        (
            call("Expert Checker", "Check 7.") + "\n\n" + answer("7"),
            outputs(2, ("Expert Checker", "7 is right.")),
        ),
        (answer("7"), None),
    )
    result = replay_record(parse_record(rec, line=1), sandbox)
    assert result.faithful and result.same_rounds and result.mismatches == []


def test_a_retry_defect_record_replays_and_is_flagged(sandbox) -> None:
    rec = parse_record(retry_defect_record(), line=2)
    assert rec.retry_defect and rec.turns[0].text.startswith("Expert Python")
    model = ReplayModel(rec)
    model.complete([], role="meta")
    assert expert(model, "Expert Python", "Sort kiwi and fig.") == LOST_REPLY
    result = replay_record(rec, sandbox)
    assert result.retry_defect and result.faithful and result.same_rounds
    assert result.sandbox_runs == 0


def test_more_meta_turns_than_recorded_is_a_reported_mismatch(sandbox) -> None:
    rec = record("q", "t", ("Let me think about it.", None))  # ends with no call, no answer
    result = replay_record(parse_record(rec, line=5), sandbox)
    kinds = {m.kind for m in result.mismatches}
    assert "replay_error" in kinds
    # Neither has an answer, but ours wanted to go on: that is not the recorded ending.
    assert not result.same_final_answer and not result.same_rounds


@pytest.mark.parametrize(
    ("result", "recorded", "same"),
    [
        (ExecResult(stdout="24\n", exit_code=0), "24", True),
        (ExecResult(stdout="24\n", stderr="warning", exit_code=0), "24", True),
        (ExecResult(stdout="25\n", exit_code=0), "24", False),
        (
            ExecResult(
                stderr='Traceback...\n  File "/x.py"\nZeroDivisionError: division by zero',
                exit_code=1,
            ),
            'Error in execution: Traceback...\n  File "/tmp/a.py"\nZeroDivisionError: division by zero',
            True,
        ),
        (ExecResult(timed_out=True), "Execution took too long, aborting...", True),
        (ExecResult(exit_code=0), "(No output was generated. Add a print.)", True),
        (ExecResult(infra_error="daemon down"), "24", False),
    ],
)
def test_code_output_is_compared_as_the_harness_reported_it(
    result: ExecResult, recorded: str, same: bool
) -> None:
    assert same_code_output(result, recorded)[0] is same
    assert (harness_view(result) == recorded_view(recorded)) is same


def test_a_truncated_line_is_reported_and_the_records_before_it_replay(tmp_path: Path) -> None:
    line = json.dumps(sorting_record())
    path = write_file(tmp_path / "cut.jsonl", sorting_record(), sorting_record(), tail=line[:200])
    report = replay_file(path, lambda: None)
    assert report.records == 2 and report.same_answer_and_calls == 2
    assert report.read_problem is not None
    assert "cut.jsonl:3" in report.read_problem and "cut short" in report.read_problem


def test_a_record_of_the_wrong_shape_is_reported_with_its_line(tmp_path: Path) -> None:
    path = write_file(tmp_path / "odd.jsonl", sorting_record(), {"input": "no log here"})
    report = replay_file(path, lambda: None)
    assert report.records == 1
    assert "odd.jsonl:2" in (report.read_problem or "") and "message_log" in report.read_problem


def test_cli_prints_one_json_object_per_file_and_warns_about_bad_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write_file(tmp_path / "good.jsonl", sorting_record(), retry_defect_record())
    bad = write_file(tmp_path / "bad.jsonl", sorting_record(), tail="{not json\n")
    code = main(["replay", str(good), str(bad), "--json", "--sandbox", "subprocess"])
    out, err = capsys.readouterr()
    assert code == 0
    first, second = (json.loads(line) for line in out.strip().splitlines())
    for key in (
        "file",
        "records",
        "same_final_answer",
        "same_expert_calls",
        "same_rounds",
        "sandbox_outputs_identical",
        "sandbox_runs",
        "input_tokens",
        "input_tokens_cached",
        "retry_defect_records",
    ):
        assert key in first
    assert (first["records"], first["retry_defect_records"], first["same_expert_calls"]) == (
        2,
        1,
        2,
    )
    assert first["sandbox_outputs_identical"] == first["sandbox_runs"] == 1
    assert second["records"] == 1 and "bad.jsonl:2" in err and "not valid JSON" in err


def test_cli_table_and_min_fidelity(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec = sorting_record()
    rec["message_log"][-1]["content"] = "I give up."  # the recorded run ended unanswered
    path = write_file(tmp_path / "mixed.jsonl", sorting_record(), rec)
    assert main(["replay", str(path), "--sandbox", "none", "--min-fidelity", "0.99"]) == 1
    out = capsys.readouterr().out
    assert "mixed" in out and "answer+calls" in out and "1 (50.0%)" in out
    assert "replay_error" in out  # each mismatch is listed with its reason


def test_cli_rejects_a_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "no/such/file.jsonl", "--sandbox", "none"]) == 2
    assert "no such file" in capsys.readouterr().err


# --- the published runs -----------------------------------------------------------------


@pytest.mark.slow
def test_every_with_python_file_replays_at_99_percent_or_better(shared_dir: Path) -> None:
    """All 1,350 records, code not run (the next tests run it): same answer and calls."""
    defects = {}
    for task in WITH_PYTHON:
        report = replay_file(
            shared_dir / "transcripts" / "with-python" / f"{task}.jsonl", lambda: None, jobs=2
        )
        assert report.read_problem is None
        assert report.records >= 100
        assert report.fidelity >= 0.99, [m for m in report.mismatches if m.kind != "sandbox"]
        assert report.same_rounds / report.records >= 0.99
        defects[task] = report.retry_defect_records
    assert defects == {
        "GameOf24": 3,
        "MGSM_ES": 2,
        "MGSM_FR": 0,
        "geometric_shapes": 0,
        "multistep_arithmetic_two": 0,
        "word_sorting": 22,
    }


@pytest.mark.slow
def test_recorded_code_prints_the_same_again_in_our_sandbox(shared_dir: Path, sandbox) -> None:
    path = shared_dir / "transcripts" / "with-python" / "GameOf24.jsonl"
    report = replay_file(path, SubprocessSandbox, jobs=2)
    assert report.fidelity >= 0.99
    assert report.sandbox_compared >= 100
    assert report.sandbox_outputs_identical / report.sandbox_compared >= 0.95


@pytest.mark.slow
@pytest.mark.docker
def test_replay_through_the_docker_sandbox(shared_dir: Path, require_docker) -> None:
    from sandbox.registry import open_sandbox
    from support import skip_or_fail

    try:
        open_sandbox("docker").close()
    except SandboxUnavailable as exc:
        skip_or_fail(str(exc), "CONDUCTOR_REQUIRE_DOCKER")
    path = shared_dir / "transcripts" / "with-python" / "word_sorting.jsonl"
    report = replay_file(path, lambda: open_sandbox("docker"), limit=8)
    assert report.sandbox == "docker" and report.records == 8
    assert report.sandbox_compared >= 5
    assert report.sandbox_outputs_identical == report.sandbox_compared, report.mismatches


def test_readme_replay_table_has_the_columns_the_markdown_option_prints(tmp_path: Path) -> None:
    from conductor.export.replay_tables import markdown_table

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- replay-table -->")[1].split("<!-- /replay-table -->")[0]
    assert markdown_table([]).splitlines()[0] in block.splitlines()
    path = write_file(tmp_path / "GameOf24.jsonl", sorting_record())
    report = replay_file(path, SubprocessSandbox)
    [row] = markdown_table([report]).splitlines()[2:]
    assert row.startswith("| GameOf24 | 1 | 1 | 1 | 1 (100.0%) | 1 | 1/1 | 2/2 |")
