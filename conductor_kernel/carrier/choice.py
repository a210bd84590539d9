"""Which carrier a run's protocol takes: the `protocol` setting and what the model says.

`text` is the published runs' form, for every model. `tools` offers the protocol as
tool calls, and needs a model that takes tools (`ToolSupport`: the OpenAI and Anthropic
providers, a scripted model built for it). `auto` asks the model: tools where its
endpoint takes tool definitions (a provider may ask the server once, and remembers),
text where it does not or cannot say (the demo, a replay).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from conductor_kernel.errors import ConfigError
from conductor_kernel.interfaces import ChatModel, ToolSupport

Carrier = Literal["text", "tools"]
CARRIERS: tuple[Carrier, ...] = ("text", "tools")


@dataclass(frozen=True)
class CarrierChoice:
    carrier: Carrier
    reason: str  # why, in a few words (shown with the model, recorded in RunStarted)


def choose_carrier(
    protocol: str, model: ChatModel, *, method_carriers: tuple[str, ...]
) -> CarrierChoice:
    """The carrier for a run of a method that can use `method_carriers`."""
    if protocol == "text" or "tools" not in method_carriers:
        why = "asked for" if protocol == "text" else "the method has no tool form"
        return CarrierChoice("text", why)
    if protocol == "tools":
        if not isinstance(model, ToolSupport):
            raise ConfigError(
                f"--protocol tools: the model {model.name!r} takes no tool calls (the demo "
                "and replays speak only the text protocol); use --protocol text or auto"
            )
        return CarrierChoice("tools", "asked for")
    if not isinstance(model, ToolSupport):
        return CarrierChoice("text", "auto: this model takes no tool definitions")
    takes, why = model.tool_support()
    return CarrierChoice("tools" if takes else "text", f"auto: {why}")
