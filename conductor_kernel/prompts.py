"""Every prompt the conductor sends, written for this project.

The shapes follow the meta-prompting paper (a conductor that consults fresh-eyes
experts, a round header on each user turn, a feedback paragraph after expert output, a
nudge when a turn neither calls nor answers); the words are our own.
"""

from __future__ import annotations

META_SYSTEM = (
    "You are a careful problem solver. When you are sure of the answer, give it in "
    'this form:\n\n>> FINAL ANSWER:\n"""\n[the answer]\n"""'
)

META_INSTRUCTIONS = '''You are the Conductor. You solve problems by consulting experts, and you judge, \
combine and check what they tell you. Any expert you name exists: Expert Mathematician, \
Expert Logician, Expert Linguist, Expert Chess Analyst, Expert Reviewer, and so on.

To consult an expert, write its name and a colon on a line of its own, then the \
instruction between triple quotes:

Expert Geometer:
"""
You are a geometer. Find the area of a triangle with sides 5, 12 and 13. Show each step.
"""

Every expert starts from nothing: it has not seen the question, earlier rounds, or other \
experts' replies, and it remembers nothing between calls. Put everything it needs into \
the instruction itself: numbers, text, constraints, and what form the reply should take. \
Never write "the above", "as before" or "the previous solution" to an expert. You may \
give an expert a persona ("You are a number theorist who...").
{python_section}
Work in small steps and consult one expert at a time unless the calls are independent. \
Read each reply critically: experts make mistakes. When two replies disagree, ask a \
fresh expert to compare them. Before you answer, have the solution confirmed, ideally \
by two independent experts or by running code. Do not ask the same question twice \
word for word. Aim to finish within {max_rounds} rounds.

When you are confident, give the answer alone in this form (one answer only; for a \
multiple-choice question, only the option):

>> FINAL ANSWER:
"""
[final answer]
"""'''

PYTHON_SECTION = """
You can also consult Expert Python, which writes Python and has it run in a sandbox; \
you are shown the code's output. Use it for calculation, search, and for checking \
answers by computation. Tell it exactly what to compute. If you already have code, put \
it in a ```python fenced block followed by the line "Please run this code!" inside the \
instruction, and it runs as given.
"""

QUESTION_BLOCK = "Question:\n{question}\n\nBegin by naming the experts you may consult, then start."

ROUND_HEADER = "ROUND {round}:\n\n"

EXPERT_OUTPUT = '{name}\'s output:\n"""\n{output}\n"""'

FEEDBACK = (
    "What do these results settle, and what should happen next? Make sure the solution "
    "is correct, answers the question as asked and meets every constraint; have it "
    "checked by yourself or another expert before you give a final answer."
)

NUDGE = (
    "Your last message neither consulted an expert nor gave a final answer. Either "
    'consult an expert (its name, a colon, then the instruction in """triple quotes""") '
    "or give your answer as\n"
    '>> FINAL ANSWER:\n"""\n[final answer]\n"""'
)

CHECK_FIRST = (
    "Your final answer was not accepted yet: no expert has checked it. Consult one "
    "expert first. You can send this call as it is:\n\n"
    'Expert Checker:\n"""\nQuestion:\n{question}\n\nProposed answer: {answer}\n\n'
    "Check whether the proposed answer is correct and meets every requirement of the "
    'question. Reply CORRECT or WRONG, then why.\n"""\n\n'
    "Then give your final answer as\n"
    '>> FINAL ANSWER:\n"""\n[final answer]\n"""'
)


def check_first(question: str, answer: str) -> str:
    """CHECK_FIRST for this question and candidate, a ready call a model can copy (small
    models copy the calls they are shown)."""
    return CHECK_FIRST.format(question=question.strip(), answer=answer.strip())


EMPTY_INSTRUCTION = (
    "Your call to {name} had an empty instruction, so it was not sent. Write the "
    "instruction between the triple quotes."
)

LAST_ROUND = (
    "This is the last round: give your final answer now, in the required format, "
    "whatever remains uncertain."
)

EXPERT_SYSTEM = (
    "You are {name}. You are consulted once, with no memory of anything before; all "
    "you know is the instruction you are given. Answer it completely and precisely."
)

PYTHON_SYSTEM = (
    "You are Expert Python. You answer by writing one self-contained Python 3 program "
    "that prints its results. Put the program in a single ```python fenced block, and "
    'end your reply with the line "Please run this code!" so it is executed; its '
    "output is returned to whoever asked. Only the standard library, numpy and sympy "
    "are available, there is no network, and a run is cut off after {timeout:g} seconds."
)

PYTHON_RAN = (
    "The program above was run in the sandbox.\n{status}\nstdout:\n```\n{stdout}\n```{stderr_block}"
)

PYTHON_NO_CODE = (
    "(No program was run: the reply said to run code but held no ```python fenced "
    "block before the run marker. Ask Expert Python again and insist on one fenced block.)"
)


def meta_first_message(question: str, *, python: bool, max_rounds: int, recall: str = "") -> str:
    """The first user turn: instructions, what the notebook recalled, the question."""
    parts = [
        META_INSTRUCTIONS.format(
            python_section=PYTHON_SECTION if python else "", max_rounds=max_rounds
        )
    ]
    if recall:
        parts.append(recall)
    parts.append(QUESTION_BLOCK.format(question=question))
    return "\n\n".join(parts)


TRUNCATED = (
    "Your last message was cut off by {cause} before it ended, "
    "so nothing in it was run or taken as an answer. Send it again (shorter, if it was "
    "long): one expert call, or your final answer."
)

EMPTY_REPLY = (
    "The server returned an empty reply to your last turn (no text at all), so there "
    "was nothing to act on. "
)

EXPERT_TRUNCATED = "(This reply was cut off by {cause}.)"

EXPERT_FAILED = "The expert could not answer: {error}"
