"""Fuzzing the host's end of the runner protocol from inside real sandboxes.

tests/sandbox/fuzz_runner.py stands in for the runner inside a real Docker container
and a real bubblewrap sandbox and answers with random and adversarial frames: random
bytes, frames of random bytes, JSON of the wrong shape or types, oversized streams,
deep nesting, floods of stray frames, a header promising 2 GiB followed by 768 MiB,
truncation, death and silence. Whatever arrives, `Sandbox.run` must return an
`ExecResult` (never raise, never an infra error), the host's memory must stay bounded
(peak RSS measured), and the next cell must run in a clean or replaced sandbox.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conductor_kernel.interfaces import ExecResult
from sandbox.registry import probe
from support import skip_or_fail

FUZZ_RUNNER = (Path(__file__).parent / "fuzz_runner.py").read_text()
ADVERSARIAL = [
    {"kind": "random_bytes", "seed": 1},
    {"kind": "random_frame", "seed": 2},
    {"kind": "not_an_object", "seed": 3},
    {"kind": "invalid_json"},
    {"kind": "deep_json"},
    {"kind": "missing_stdout"},
    {"kind": "oversized_stream"},
    {"kind": "stray_frames", "count": 1000},
    {"kind": "huge_header", "flood_mb": 64},
    {"kind": "truncated"},
    {"kind": "exit", "code": 3},
    {"kind": "silence"},
    {"kind": "stderr_flood", "mb": 8},
]
RANDOM_CASES = {"bwrap": 40, "docker": 12}
FLOOD_MB = 768
RSS_BOUND_MB = 64


@pytest.fixture(scope="module", params=["bwrap", "docker"])
def fuzzed(request: pytest.FixtureRequest) -> Iterator[object]:
    name = request.param
    reason = probe(name)
    if reason is not None:
        skip_or_fail(
            f"sandbox backend {name!r} cannot run here: {reason}", "CONDUCTOR_REQUIRE_DOCKER"
        )
    if name == "docker":
        from sandbox.docker.backend import DockerSandbox

        box = DockerSandbox(runner_command=["python3", "-I", "-c", FUZZ_RUNNER], grace_s=1.0)
    else:
        from sandbox.bwrap.backend import BwrapSandbox

        command = ["/usr/bin/python3", "-I", "-c", FUZZ_RUNNER]
        box = BwrapSandbox(rootfs="/", runner_command=command, grace_s=1.0)
    yield box
    box.close()


def run_spec(box: object, spec: dict) -> ExecResult:
    started = time.monotonic()
    result = box.run(json.dumps(spec), timeout=1.0)  # type: ignore[attr-defined]
    assert isinstance(result, ExecResult), f"{spec}: got {type(result)}"
    assert result.infra_error is None, f"{spec}: {result.infra_error}"
    # A runner that never answers is given up on, not waited for: a bound far above the
    # timeout and grace (1 s each), so a busy machine does not fail it.
    assert time.monotonic() - started < 1.0 + 1.0 + 60, f"{spec}: never given up on"
    return result


def assert_next_cell_clean(box: object, spec: dict) -> None:
    again = run_spec(box, {"kind": "valid"})
    assert again.ok and again.stdout == "ok\n", f"after {spec}: {again}"


def test_a_valid_answer_is_taken_as_is(fuzzed: object) -> None:
    result = run_spec(fuzzed, {"kind": "valid"})
    assert result.ok and result.stdout == "ok\n" and result.sandbox_error is None


@pytest.mark.slow
@pytest.mark.parametrize("spec", ADVERSARIAL, ids=[s["kind"] for s in ADVERSARIAL])
def test_adversarial_answers_become_data(fuzzed: object, spec: dict) -> None:
    result = run_spec(fuzzed, spec)
    if spec["kind"] == "stderr_flood":
        assert result.ok  # the runner's diagnostics are capped, never part of the result
    elif spec["kind"] == "silence":
        assert result.timed_out and not result.ok
    elif spec["kind"] in ("exit", "truncated"):
        assert result.sandbox_error and "ended" in result.sandbox_error and not result.ok
    else:
        assert result.sandbox_error and not result.ok, f"{spec}: {result}"
    assert_next_cell_clean(fuzzed, spec)


@pytest.mark.slow
def test_random_answers_always_become_data(fuzzed: object) -> None:
    rng = random.Random(20261124)
    kinds = ["mutated", "mutated", "random_bytes", "random_frame", "not_an_object"]
    for _ in range(RANDOM_CASES[fuzzed.name]):  # type: ignore[attr-defined]
        spec = {"kind": rng.choice(kinds), "seed": rng.randrange(2**32)}
        result = run_spec(fuzzed, spec)
        # A mutation may happen to leave a valid result; anything else is a sandbox_error.
        assert result.sandbox_error or result.exit_code is not None or result.signal, spec
        if result.sandbox_error:
            assert_next_cell_clean(fuzzed, spec)


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


def reset_peak_rss() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS


def test_a_flood_behind_a_2_gib_header_leaves_host_memory_bounded(
    fuzzed: object, record_property: pytest.RecordProperty
) -> None:
    run_spec(fuzzed, {"kind": "valid"})
    reset_peak_rss()
    baseline = peak_rss_mb()
    result = run_spec(fuzzed, {"kind": "huge_header", "flood_mb": FLOOD_MB})
    peak = peak_rss_mb()
    growth = peak - baseline
    record_property("host_peak_rss_growth_mb", round(growth, 1))
    print(f"\n{fuzzed.name}: {FLOOD_MB} MiB flood, host peak RSS {baseline:.0f} -> {peak:.0f} MiB")  # type: ignore[attr-defined]
    assert result.sandbox_error and "announced" in result.sandbox_error
    assert growth < RSS_BOUND_MB, f"host RSS grew {growth:.0f} MiB under a {FLOOD_MB} MiB flood"
    assert_next_cell_clean(fuzzed, {"kind": "huge_header"})
    assert os.getpid()  # the test process is still the one that started
