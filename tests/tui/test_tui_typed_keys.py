"""Text that arrives as keystrokes (issue 36, item 11): a terminal without bracketed
paste, or a tool typing, sends one key event per character. A burst is inserted in a
few pieces, as a paste would be, and any edit keys among it keep their order."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textual import events
from textual.app import App, ComposeResult
from textual.widgets import Input
from tui_helpers import make_settings, wait_for

from tui.app import ConductorApp
from tui.widgets.typed_input import TypedInput

pytestmark = pytest.mark.anyio

BURST = ("make 24 from 4 7 8 8 using + - * / and each number once; " * 80)[:4000]


class OneInput(App[None]):
    def __init__(self, kind: type[Input]) -> None:
        super().__init__()
        self.kind = kind
        self.changes = 0
        self.submitted: list[str] = []

    def compose(self) -> ComposeResult:
        yield self.kind(id="typed")

    def on_input_changed(self, _message: Input.Changed) -> None:
        self.changes += 1

    def on_input_submitted(self, message: Input.Submitted) -> None:
        self.submitted.append(message.value)


async def test_a_burst_of_keys_is_inserted_in_a_few_pieces() -> None:
    app = OneInput(TypedInput)
    async with app.run_test() as pilot:
        field = app.query_one(Input)
        field.focus()
        await pilot.pause()
        # As the terminal driver does: every key posted before the first is handled.
        for char in BURST:
            app.post_message(events.Key(char, char))
        await wait_for(pilot, lambda: len(field.value) >= len(BURST))
        assert field.value == BURST
        # Textual's own Input changes once per key (4,000 times); collected, a handful.
        assert app.changes < len(BURST) // 20, app.changes


# Keys a user types: letters, a space, and the keys that edit (each its own event).
KEYS = st.lists(
    st.sampled_from(["a", "b", "7", "space", "backspace", "left", "right", "home", "end"]),
    max_size=14,
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keys=KEYS)
async def test_edits_among_typed_keys_end_as_textual_own_input_ends(keys: list[str]) -> None:
    values = []
    for kind in (Input, TypedInput):
        app = OneInput(kind)
        async with app.run_test() as pilot:
            app.query_one(Input).focus()
            await pilot.press(*keys, "enter")
            await pilot.pause()
            values.append(app.submitted)
    assert values[0] == values[1]
    assert len(values[1]) == 1


async def test_every_text_field_of_the_tui_collects_typed_keys() -> None:
    app = ConductorApp(make_settings(), clock=lambda: 0.0)
    async with app.run_test(size=(100, 30)) as pilot:
        seen = 0
        for mode in ("solve", "runs", "notebook", None):
            if mode is None:
                app.action_choose_model()
            else:
                await app.switch_mode(mode)
            await pilot.pause()
            for field in app.screen.query(Input):
                assert isinstance(field, TypedInput), (mode, field.id)
                seen += 1
        assert seen >= 5  # solve, runs (2), notebook, model (2)
