"""P3 in the real sandbox: reference solutions pass, adversarial answers all fail."""

from __future__ import annotations

from pathlib import Path

import pytest
from p3_cases import ADVERSARIAL, reference_answers
from test_scorers import puzzle_sandbox  # noqa: F401  (a fixture)

from conductor.scoring import score
from conductor.tasks.files import TaskItem, read_task_file

# Puzzles a constant or None could never satisfy by accident; one of each answer type.
SAMPLE = [0, 101, 202, 303, 404, 505, 606, 707, 808, 909, 1008]


@pytest.fixture
def p3_items(shared_dir: Path) -> list[TaskItem]:
    return read_task_file(shared_dir / "tasks" / "P3_Test.jsonl").items


@pytest.mark.slow
@pytest.mark.shared
def test_a_sample_of_reference_solutions_pass(p3_items, puzzle_sandbox) -> None:  # noqa: F811
    checked = 0
    for index in SAMPLE:
        for answer in reference_answers(p3_items[index]):
            result = score("P3_Test", answer, p3_items[index], sandbox=puzzle_sandbox)
            assert result.correct, (p3_items[index].metadata["name"], result.detail)
            checked += 1
    assert checked >= len(SAMPLE) - 1


@pytest.mark.slow
@pytest.mark.shared
@pytest.mark.parametrize("attack", sorted(ADVERSARIAL))
def test_every_adversarial_answer_scores_wrong(attack: str, p3_items, puzzle_sandbox) -> None:  # noqa: F811
    for index in (0, 404):
        result = score(
            "P3_Test",
            ADVERSARIAL[attack],
            p3_items[index],
            sandbox=puzzle_sandbox,
            timeout_s=3,
            with_paper=False,
        )
        assert not result.correct, (attack, result.detail)


@pytest.mark.slow
@pytest.mark.docker
def test_the_batch_scorer_passes_back_a_large_solution_value(require_docker) -> None:
    """A batch hands the scorer its run's sandbox, opened without P3's options; the
    scorer must still carry a value far over the run sandbox's output cap."""
    from conductor.batch.setup import make_scorer
    from conductor.config import Settings
    from conductor.tasks.specs import get_spec
    from sandbox.registry import open_sandbox

    sat = (
        "def sat(x: list):\n"
        "    return len(x) == 300000 and all(v == i * 7919 % 1000003 for i, v in enumerate(x))"
    )
    item = TaskItem(id="large-value", input=sat, metadata={"sat": sat, "ans_type": "List[int]"})
    answer = "def solution():\n    return [i * 7919 % 1000003 for i in range(300000)]"
    run_sandbox = open_sandbox("docker")
    try:
        verdict = make_scorer(get_spec("P3_Test"), "docker", Settings())(
            answer, item, run_sandbox, ""
        )
    finally:
        run_sandbox.close()
    assert verdict["correct"], verdict
