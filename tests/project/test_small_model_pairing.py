"""bench/small_model.py's `vs_standard`, the yardstick of whether conducting helps: the
items a method got right that standard did not, and the reverse, over the items both
ran. A comparison names each run `ITEM@method`; compared as they were, no item was ever
shared, and every row read +0/-0 whatever the runs did."""

from __future__ import annotations

from typing import Any

from bench_modules import load_bench
from hypothesis import given
from hypothesis import strategies as st


def _bench() -> Any:
    return load_bench("small_model")


def _row(variant: str, method: str, right: dict[str, bool]) -> dict[str, Any]:
    items = [f"{item}@{method}" for item in right]
    return {
        "variant": variant,
        "task": "t",
        "method": method,
        "items": items,
        "right_items": [f"{item}@{method}" for item, ok in right.items() if ok],
    }


outcomes = st.dictionaries(
    st.sampled_from([f"t-{n}" for n in range(8)]),
    st.tuples(st.booleans(), st.booleans()),
    min_size=1,
)


@given(outcomes)
def test_vs_standard_counts_each_item_right_with_one_and_not_the_other(
    outcome: dict[str, tuple[bool, bool]],
) -> None:
    bench = _bench()
    meta = _row("tools", "meta", {i: m for i, (m, _) in outcome.items()})
    grammar = _row("grammar", "meta", {i: m for i, (m, _) in outcome.items()})
    standard = _row("tools", "standard", {i: s for i, (_, s) in outcome.items()})
    bench.paired([meta, grammar, standard])
    gained = sum(m and not s for m, s in outcome.values())
    lost = sum(s and not m for m, s in outcome.values())
    assert meta["vs_standard"] == f"+{gained}/-{lost}"
    assert grammar["vs_standard"] == f"+{gained}/-{lost}"  # standard sends no protocol
    assert standard["vs_standard"] == "-"


@given(
    task=st.sampled_from(["GameOf24", "word_sorting", "multistep_arithmetic_two"]),
    compare=st.booleans(),
    described=st.booleans(),
    python=st.booleans(),
)
def test_a_plain_batch_and_a_comparison_are_paired_by_their_task(
    tmp_path_factory: Any, task: str, compare: bool, described: bool, python: bool
) -> None:
    """A plain batch's folder (`TASK-ID`, a learning arm) names the same task as a
    comparison's (`TASK-compare-ID`), so its rows pair with the comparison's standard."""
    import json

    folder = tmp_path_factory.mktemp("b") / (f"{task}-compare-c5e1" if compare else f"{task}-4e53")
    folder.mkdir()
    if described:
        spec = {"identity": {"spec": {"name": task}, "python": python}}
        (folder / "batch.json").write_text(json.dumps(spec), encoding="utf-8")
    assert _bench().task_of(folder) == task
    # A plain batch's records name no method: meta, or meta-no-python without Python.
    plain = "meta" if python or not described else "meta-no-python"
    assert _bench().plain_method(folder) == plain
