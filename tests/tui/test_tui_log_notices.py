"""A warning logged while the TUI runs is a notification, never text written over the
screen (the subprocess sandbox's warning was drawn across the first screen's banner)."""

from __future__ import annotations

import logging
import threading

import pytest
from tui_helpers import make_settings, wait_for

from tui.app import ConductorApp
from tui.cli import logs_as_notifications

pytestmark = pytest.mark.anyio


async def test_a_warning_from_a_worker_thread_is_a_notification(
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = logging.getLogger()
    terminal = logging.StreamHandler()  # as `conductor`'s own set-up adds (cli/__init__.py)
    root.addHandler(terminal)
    app = ConductorApp(make_settings(), clock=lambda: 0.0)
    try:
        with logs_as_notifications(app):
            async with app.run_test(size=(80, 24)) as pilot:
                said = "a worker's warning \x1b[2J here"
                worker = threading.Thread(
                    target=lambda: logging.getLogger("conductor.sandbox").warning(said)
                )
                worker.start()
                worker.join()

                def shown() -> list[str]:
                    return [n.message for n in app._notifications if "worker's" in n.message]

                await wait_for(pilot, lambda: bool(shown()))
                assert "\x1b" not in shown()[0] and "here" in shown()[0]
            assert terminal not in root.handlers  # set aside while the app ran
        assert terminal in root.handlers  # and back afterwards
    finally:
        root.removeHandler(terminal)
    assert "worker's warning" not in capsys.readouterr().err
