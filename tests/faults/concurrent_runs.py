"""One of several processes writing runs into one runs.db and one notebook at once.

`python concurrent_runs.py HOME RUNS GO_FILE`: waits for GO_FILE (so every process
opens the fresh files at the same moment), then runs RUNS questions through a real
`Session` (scripted model, real runs index, real notebook learning) and prints one JSON
line: the run ids and every failure seen, exception or otherwise.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path


class _Failures(logging.Handler):
    """Anything logged at WARNING or above is a failure here (a sink that raised...)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def main(home: str, runs: int, go: str) -> None:
    os.environ["CONDUCTOR_HOME"] = home
    failures = _Failures()
    logging.getLogger().addHandler(failures)
    while not Path(go).exists():
        time.sleep(0.005)

    from conductor.session import Session
    from conductor.session.notebook_hooks import NotebookHooks
    from conductor_kernel.events import RunFinished
    from conductor_kernel.limits.run_config import RunConfig
    from experts.scripted import ScriptedModel
    from transcripts.index import RunIndex

    model = ScriptedModel(lambda messages: '>> FINAL ANSWER:\n"""\n42\n"""')
    session = Session(model, config=RunConfig(python=False), index=RunIndex())
    NotebookHooks.open().attach(session)
    done, problems = [], []
    for n in range(runs):
        try:
            question = f"Process {os.getpid()} asks question {n}: what is 6 times 7?"
            finished = [e for e in session.solve(question) if isinstance(e, RunFinished)]
            if len(finished) != 1 or finished[0].status != "answered":
                problems.append(f"run {n}: {finished}")
            else:
                done.append(finished[0].run_id)
        except Exception as exc:
            problems.append(f"run {n}: {type(exc).__name__}: {exc}")
    print(json.dumps({"runs": done, "problems": problems + failures.messages}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
