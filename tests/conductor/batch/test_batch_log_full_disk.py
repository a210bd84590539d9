"""batch.log on a full disk: the batch is told once, on stderr, and goes on; closing
the log does not raise (the last lines cannot be flushed). /dev/full fails every write
with ENOSPC, as a full disk does."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from conductor.batch.session import LogFile

FULL = Path("/dev/full")


@pytest.mark.skipif(not FULL.exists(), reason="no /dev/full on this system")
def test_a_log_the_disk_cannot_take_is_said_once_and_closes_quietly(
    capsys: pytest.CaptureFixture[str],
) -> None:
    handler = LogFile(FULL, encoding="utf-8")
    logger = logging.getLogger("conductor.test-full-log")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        for n in range(50):
            logger.warning("line %d %s", n, "x" * 200)
    finally:
        logger.removeHandler(handler)
        handler.close()  # must not raise
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--- Logging error ---" not in err
    assert err.count("cannot write /dev/full") == 1 and "No space left" in err
