"""The terminal's usage line never shows a measured `0 in, 0 out` for tokens that were
exchanged but not reported by the server: those are shown estimated, and marked."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from conductor.export.terminal import usage_line
from conductor_kernel.interfaces import Usage

counts = st.integers(0, 10**6)


@given(inp=counts, out=counts, est_calls=st.integers(0, 5), est_tokens=counts)
def test_unreported_tokens_are_estimated_and_marked(
    inp: int, out: int, est_calls: int, est_tokens: int
) -> None:
    usage = Usage(
        input_tokens=inp,
        output_tokens=out,
        calls=1 + est_calls,
        estimated_calls=est_calls,
        estimated_tokens=est_tokens if est_calls else 0,
    )
    line = usage_line(usage)
    if est_calls:
        assert f"~{usage.estimated_tokens:,} tokens estimated" in line
        assert not line.startswith("0 in, 0 out")
    else:
        assert "estimated" not in line and line.startswith(f"{inp:,} in")
