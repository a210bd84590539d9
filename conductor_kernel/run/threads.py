"""Running a turn's expert calls side by side: daemon threads, results in order."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

T = TypeVar("T")


def run_concurrently(jobs: Sequence[Callable[[], T]], *, limit: int) -> list[T]:
    """Each job's result, in order, at most `limit` at once; the first failure (in job
    order) is raised once every job has ended.

    Daemon threads, not a ThreadPoolExecutor: the interpreter joins an executor's
    threads at exit, so a run stopped while its experts waited (on a stalled server, a
    retry's back-off, a program in the sandbox) held the process open until they
    returned, after the user was told the run had stopped and was saved.
    """
    results: list[Any] = [None] * len(jobs)
    errors: dict[int, BaseException] = {}
    order = iter(range(len(jobs)))
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                i = next(order, None)
            if i is None:
                return
            try:
                results[i] = jobs[i]()
            except BaseException as exc:
                errors[i] = exc

    threads = [
        threading.Thread(target=work, daemon=True, name=f"conductor-expert-{n}")
        for n in range(min(limit, len(jobs)))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[min(errors)]
    return cast(list[T], results)
