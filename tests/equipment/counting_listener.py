"""A TCP port on 127.0.0.1 that only counts the connections made to it.

It accepts each one and closes it at once (a client gets an empty reply, not a hang),
and `connections()` also takes in any still waiting in the backlog, so a connect that
returned before the count is always in it.
"""

from __future__ import annotations

import selectors
import socket
import threading


class CountingListener:
    def __init__(self) -> None:
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        self._socket.setblocking(False)
        self.port: int = self._socket.getsockname()[1]
        self._count = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="counting-listener", daemon=True)

    def __enter__(self) -> CountingListener:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._socket.close()

    def url(self, host: str = "127.0.0.1", scheme: str = "http", path: str = "/v1") -> str:
        return f"{scheme}://{host}:{self.port}{path}"

    def connections(self) -> int:
        self._take_waiting()
        with self._lock:
            return self._count

    def _serve(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._socket, selectors.EVENT_READ)
            while not self._stop.is_set():
                if selector.select(timeout=0.05):
                    self._take_waiting()

    def _take_waiting(self) -> None:
        with self._lock:
            while True:
                try:
                    connection, _ = self._socket.accept()
                except (BlockingIOError, OSError):
                    return
                connection.close()
                self._count += 1
