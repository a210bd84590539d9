"""Which carrier a run's protocol takes: the `protocol` setting and what the model says.

`text` is the published runs' form, for every model. `tools` offers the protocol as
tool calls, and needs a model that takes tools (`ToolSupport`: the OpenAI and Anthropic
providers, a scripted model built for it). `grammar` is the text form held to a GBNF
grammar while the server samples it (conductor_kernel/carrier/grammar.py), for a model
that says it can (`GrammarSupport`: an OpenAI-compatible server, meant for
llama-server); `auto` never chooses it. `auto` asks the model: tools where its endpoint
takes tool definitions (a provider may ask the server once, and remembers), text where
it does not or cannot say (the demo, a replay).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from conductor_kernel.errors import ConfigError
from conductor_kernel.interfaces import ChatModel, GrammarSupport, ToolSupport

Carrier = Literal["text", "tools", "grammar"]
CARRIERS: tuple[Carrier, ...] = ("text", "tools", "grammar")


@dataclass(frozen=True)
class CarrierChoice:
    carrier: Carrier
    reason: str  # why, in a few words (shown with the model, recorded in RunStarted)


def choose_carrier(
    protocol: str, model: ChatModel, *, method_carriers: tuple[str, ...]
) -> CarrierChoice:
    """The carrier for a run of a method that can use `method_carriers`."""
    if protocol == "text" or protocol not in (*method_carriers, "auto"):
        why = "asked for" if protocol == "text" else f"the method has no {protocol} form"
        return CarrierChoice("text", why)
    if protocol == "grammar":
        takes, why = model.grammar_support() if isinstance(model, GrammarSupport) else (False, "")
        if not takes:
            raise ConfigError(
                f"--protocol grammar: the model {model.name!r} cannot be held to a grammar "
                f"({why or 'its server takes none'}); it is for llama-server. Use "
                "--protocol text, tools or auto"
            )
        return CarrierChoice("grammar", "asked for")
    if "tools" not in method_carriers:
        return CarrierChoice("text", "the method has no tool form")
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
