"""bench/experience_ab.py reads a comparison batch as its `off` arm: the meta runs only,
named by item as a plain batch names them, so the learning arm pairs with it item by
item (a standard run counted as `off`, or ids that never match, would make the paired
figures meaningless)."""

from __future__ import annotations

import json
from typing import Any

from bench_modules import load_bench
from hypothesis import given, settings
from hypothesis import strategies as st


def _bench() -> Any:
    return load_bench("experience_ab")


def _record(item: str, line: int, right: bool, method: str | None) -> dict[str, Any]:
    return {
        "item_id": f"{item}@{method}" if method else item,
        "line": line,
        "final": True,
        "method": method,
        "transcript": "",
        "score": {"correct": right, "scored": True},
        "usage": {"input_tokens": 1, "output_tokens": 1},
        "sandbox_runs": 1,
    }


@settings(max_examples=40, deadline=None)
@given(outcomes=st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans()),
                         min_size=1, max_size=8))  # fmt: skip
def test_the_off_arm_of_a_comparison_is_its_meta_runs_paired_by_item(
    tmp_path_factory: Any, outcomes: list[tuple[bool, bool, bool]]
) -> None:
    folder = tmp_path_factory.mktemp("ab")
    compared, learned = [], []
    for line, (meta, standard, learn) in enumerate(outcomes, 1):
        item = f"word_sorting-{line:04d}"
        compared += [_record(item, line, meta, "meta"), _record(item, line, standard, "standard")]
        learned.append(_record(item, line, learn, None))
    for name, rows in (("off.jsonl", compared), ("learn.jsonl", learned)):
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    bench = _bench()
    off = bench.arm_figures("off", folder / "off.jsonl")
    learn = bench.arm_figures("learn", folder / "learn.jsonl")
    assert set(off["items"]) == set(learn["items"])
    assert [i["right"] for i in off["items"].values()] == [m for m, _, _ in outcomes]
    row = bench.summary(learn, off)
    assert row["paired_items"] == len(outcomes)
    assert row["right_only_here"] == sum(1 for m, _, lr in outcomes if lr and not m)
    assert row["right_only_off"] == sum(1 for m, _, lr in outcomes if m and not lr)
