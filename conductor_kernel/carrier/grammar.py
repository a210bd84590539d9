"""The text protocol as a grammar: a meta turn held to its two forms while it is written.

With the `grammar` carrier, each meta request carries this GBNF grammar (llama-server's
`grammar` field), so the server can only sample a turn the text parser reads as expert
calls or as a final answer: a short lead line, then one `Expert Name:` call with a
triple-quoted instruction, or `>> FINAL ANSWER:` with a triple-quoted answer. One call
a turn: allowed four, Qwen2.5-Coder-1.5B wrote its call again until the output limit
cut the turn off, and a turn cut off runs nothing. The lead holds no colon, quote or
`>`, so nothing in it is read as a marker (the same model led with `>> FINAL ANSWER`); a
quoted body holds anything but three quotes in a row, so it ends where the parser ends
it. The parser is the text carrier's; the prompt is the compact one (compact_prompt.py).
A round that withholds the answer (`--consult-first`) is held to the calls alone
(`PROTOCOL_CALLS_GBNF`); one that offers only the answer, to the answer alone.
"""

from __future__ import annotations

PROTOCOL_GBNF = r"""
root   ::= lead? (calls | answer)
lead   ::= [^\n":>]{1,160} "\n\n"
calls  ::= call
call   ::= "Expert " word (" " word)? (" " word)? ":\n\"\"\"\n" body "\n\"\"\""
word   ::= [A-Z] [a-zA-Z]*
answer ::= ">> FINAL ANSWER:\n\"\"\"\n" body "\n\"\"\""
body   ::= char char*
char   ::= [^"] | "\"" [^"] | "\"\"" [^"]
"""

# Round 1 under consult-first: the same forms, without the answer.
PROTOCOL_CALLS_GBNF = PROTOCOL_GBNF.replace(
    "root   ::= lead? (calls | answer)", "root   ::= lead? calls"
)


# The last round: the answer alone (a small model went on calling Expert Python in the
# round told to answer, and its run ended with no answer though its program had printed it).
PROTOCOL_ANSWER_GBNF = PROTOCOL_GBNF.replace(
    "root   ::= lead? (calls | answer)", "root   ::= lead? answer"
)


def grammar_for_round(*, answer: bool, calls: bool = True) -> str:
    """The grammar of one meta turn: both forms, the calls alone, or the answer alone."""
    if not calls:
        return PROTOCOL_ANSWER_GBNF
    return PROTOCOL_GBNF if answer else PROTOCOL_CALLS_GBNF
