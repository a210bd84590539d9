"""A chat request's messages as the question of one run.

A run answers one question, so the conversation is folded into it: the last user
message is the question; system (or developer) messages come first as instructions,
earlier turns as the conversation so far. Text parts of a multi-part content are joined;
any other part (an image, audio) is refused rather than silently dropped. A question
longer than the server takes is refused before any run starts: every character of it
is sent to the models, round after round.
"""

from __future__ import annotations

from typing import Any

from conductor_kernel.errors import UserFacingError

SPEAKERS = {"user": "User", "assistant": "Assistant", "tool": "Tool"}
INSTRUCTING = ("system", "developer")
MAX_QUESTION_CHARS = 100_000


class BadConversation(UserFacingError):
    """Messages that cannot become a question."""


def question_from(messages: Any, max_chars: int = MAX_QUESTION_CHARS) -> str:
    question = _folded(messages)
    if len(question) > max_chars:
        raise BadConversation(
            f"the question is {len(question):,} characters; this server takes at most "
            f"{max_chars:,} (the operator sets it with --max-question-chars)"
        )
    return question


def _folded(messages: Any) -> str:
    if not isinstance(messages, list) or not messages:
        raise BadConversation("`messages` must be a non-empty list of chat messages")
    turns = [(_role(m, i), _text(m, i)) for i, m in enumerate(messages)]
    if turns[-1][0] != "user":
        raise BadConversation("the last message must be the user's: it is the question to answer")
    instructions = [text for role, text in turns if role in INSTRUCTING and text]
    earlier = [(role, text) for role, text in turns[:-1] if role not in INSTRUCTING]
    question = turns[-1][1]
    if not question.strip():
        raise BadConversation("the last user message is empty: there is no question")
    if not instructions and not earlier:
        return question
    parts = []
    if instructions:
        parts.append("Instructions:\n" + "\n\n".join(instructions))
    if earlier:
        said = "\n\n".join(f"{SPEAKERS[role]}: {text}" for role, text in earlier)
        parts.append("The conversation so far:\n" + said)
    parts.append("The question to answer now:\n" + question)
    return "\n\n".join(parts)


def _role(message: Any, index: int) -> str:
    role = message.get("role") if isinstance(message, dict) else None
    if role not in SPEAKERS and role not in INSTRUCTING:
        raise BadConversation(
            f"messages[{index}]: role {role!r} is not one of {', '.join([*INSTRUCTING, *SPEAKERS])}"
        )
    return str(role)


def _text(message: dict[str, Any], index: int) -> str:
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not (isinstance(part, dict) and part.get("type") == "text"):
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise BadConversation(
                    f"messages[{index}]: a {kind!r} part cannot be read; only text parts are"
                )
            texts.append(str(part.get("text", "")))
        return "\n".join(texts)
    raise BadConversation(f"messages[{index}].content must be a string or a list of parts")
