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

_EXPERTS_EXIST = (
    "You are the Conductor. You solve problems by consulting experts, and you judge, "
    "combine and check what they tell you. Any expert you name exists: Expert "
    "Mathematician, Expert Logician, Expert Linguist, Expert Chess Analyst, Expert "
    "Reviewer, and so on."
)

# How to work with experts, whichever form the calls take: fresh eyes, small steps,
# checked answers. `{python_section}` and `{max_rounds}` are filled in with it.
_HOW_TO_WORK = """Every expert starts from nothing: it has not seen the question, earlier rounds, or other \
experts' replies, and it remembers nothing between calls. Put everything it needs into \
the instruction itself: numbers, text, constraints, and what form the reply should take. \
Never write "the above", "as before" or "the previous solution" to an expert. You may \
give an expert a persona ("You are a number theorist who...").
{python_section}
Work in small steps and consult one expert at a time unless the calls are independent. \
Read each reply critically: experts make mistakes. When two replies disagree, ask a \
fresh expert to compare them. Before you answer, have the solution confirmed, ideally \
by two independent experts or by running code. Do not ask the same question twice \
word for word. Aim to finish within {max_rounds} rounds."""

META_INSTRUCTIONS = (
    _EXPERTS_EXIST
    + '''

To consult an expert, write its name and a colon on a line of its own, then the \
instruction between triple quotes:

Expert Geometer:
"""
You are a geometer. Find the area of a triangle with sides 5, 12 and 13. Show each step.
"""

'''
    + _HOW_TO_WORK
    + '''

When you are confident, give the answer alone in this form (one answer only; for a \
multiple-choice question, only the option):

>> FINAL ANSWER:
"""
[final answer]
"""'''
)

PYTHON_SECTION = """
You can also consult Expert Python, which writes Python and has it run in a sandbox; \
you are shown the code's output. Use it for calculation, search, and for checking \
answers by computation. Tell it exactly what to compute. If you already have code, put \
it in a ```python fenced block followed by the line "Please run this code!" inside the \
instruction, and it runs as given.
"""

QUESTION_BLOCK = "Question:\n{question}\n\nBegin by naming the experts you may consult, then start."
# With a checked program's result handed over before round 1 (tools carrier).
HANDED_QUESTION_BLOCK = (
    "Question:\n{question}\n\nThe notebook holds a program from an earlier run that fits "
    "this question; it is run on it next, and its result follows. If the result answers "
    "the question, give it with answer_with_checked_result; if not, consult an expert."
)

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
    "that prints its results, whatever form of answer the instruction asks for: what "
    "the program prints is your answer. Put the program in a single ```python fenced block, and "
    'end your reply with the line "Please run this code!" so it is executed; its '
    "output is returned to whoever asked. The program's standard input is your "
    "instruction, word for word: read the data you need from it (sys.stdin.read()) "
    "rather than typing it again. Only the standard library, numpy and sympy "
    "are available, there is no network, and a run is cut off after {timeout:g} seconds."
)

PYTHON_RAN = (
    "The program above was run in the sandbox.\n{status}\nstdout:\n```\n{stdout}\n```{stderr_block}"
)

# A program's printed answer that the task's own check rejects goes back to the expert
# (run_config.python_check_retries): the check needs no known answer, so nothing of the
# item's answer is told. Qwen2.5-Coder-1.5B's Game of 24 programs printed a guess or a
# partial search and passed it on (docs/methods.md).
PROGRAM_FAILS_CHECK = (
    "It ran and printed the line\n\n{line}\n\nwhich fails the task's own check: {why}."
)
PROGRAM_TRIED_AGAIN = (
    "(Expert Python's first program printed `{line}`, which fails the task's own check "
    "({why}); it was asked to write the program again. Its second reply:)"
)
PROGRAM_FAILED = "It failed. {status} The end of its error output:\n```\n{stderr}\n```"
# The request to a fresh Expert Python for a corrected program.
PROGRAM_AGAIN = (
    "{instruction}\n\nA program written for this:\n```python\n{code}\n```\n{fault}\n\n"
    "Fix the fault and write the whole program again: where the task asks you to find "
    "something, make it try every candidate, test each one against the task's rule, and "
    'print one that passes. Reply with one ```python fenced block and the line "Please '
    'run this code!".'
)
PROGRAM_FAILED_BEFORE = (
    "(Expert Python's first program failed ({status}); it was asked to write "
    "the program again. Its second reply:)"
)
PROGRAM_SAME_AGAIN = (
    "(Asked to fix it, Expert Python sent the same program back, so it was not run "
    "again: the output above stands.)"
)
# A printed line the check accepts, said beside the program's output.
PROGRAM_PASSES_CHECK = "The task's own check accepts this printed line: {line}"
PROGRAM_PASSES_CHECK_TOOLS = (
    "The task's own check accepts this printed line: {line}\nanswer_with_checked_result "
    "gives it as the final answer exactly."
)

PYTHON_NO_CODE = (
    "(No program was run: the reply said to run code but held no ```python fenced "
    "block before the run marker. Ask Expert Python again and insist on one fenced block.)"
)


def meta_first_message(question: str, *, python: bool, max_rounds: int, recall: str = "") -> str:
    """The first user turn of the text carrier (the paper's form): instructions, what the
    notebook recalled, the question."""
    instructions = META_INSTRUCTIONS.format(
        python_section=PYTHON_SECTION if python else "", max_rounds=max_rounds
    )
    parts = [instructions]
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


# -- the protocol as tool calls (conductor_kernel/carrier) -------------------------------

META_TOOLS_SYSTEM = (
    "You are a careful problem solver. You act through tool calls: consult experts with "
    "consult_expert, and when you are sure of the answer, give it with final_answer."
)

# Checked experience, with the tools carrier (conductor_kernel/run/experience.py).
EXPERIENCE_RESULT = (
    "The notebook's program{note} ran on your question and printed this answer:\n\n"
    "{answer}\n\nThe task's own check accepts that answer for this question."
)
# Said beside an answer the check rejected, when a checked one was handed over.
EXPERIENCE_REMINDER = (
    "The notebook's program printed this answer for this question, and the check accepts "
    "it:\n\n{answer}"
)

CONSULT_FIRST_TEXT_NOTE = (
    "\n\nBegin by consulting an expert: a final answer is accepted once an expert has "
    "been consulted."
)

CONSULT_FIRST_NOTE = (
    " final_answer is offered once you have consulted an expert: begin with consult_expert."
)

NUDGE_TOOLS = (
    "Your last message neither consulted an expert nor gave a final answer. Call "
    "consult_expert to consult an expert, or final_answer to give your answer."
)

# Rounds that offer only the answer (run/tool_turns.py: answer_only): the last one, and
# those after a printed line passed the task's own check.
CALLS_NOT_OFFERED = "This round takes only a final answer: the turn's expert calls were not run."
ANSWER_NOW_TOOLS = "This round offers only final_answer: call it with your answer."
ANSWER_NOW = (
    "This round takes only a final answer: write >> FINAL ANSWER: and the answer in triple quotes."
)
ANSWER_NOW_CHECKED_TOOLS = (
    "A program of this run printed a line that the task's own check accepts:\n\n{line}\n\n"
    "So this round offers only the answer: answer_with_checked_result gives that line "
    "exactly, final_answer gives another answer."
)
ANSWER_NOW_CHECKED = (
    "A program of this run printed a line that the task's own check accepts:\n\n{line}\n\n"
    "So this round takes only a final answer: write >> FINAL ANSWER: and the answer in "
    "triple quotes."
)
ANSWER_NEXT_TOOLS = (
    "A line printed above passes the task's own check, so the next round offers only the "
    "answer: answer_with_checked_result gives that line exactly, final_answer another answer."
)
ANSWER_NEXT = (
    "A line printed above passes the task's own check, so the next round takes only a "
    "final answer: if the line answers the question, give it as the final answer."
)

CHECK_FIRST_TOOLS = (
    "Your final answer was not accepted yet: no expert has checked it. Consult one "
    'expert first. You can call consult_expert with name "Expert Checker" and this '
    "instruction:\n\nQuestion:\n{question}\n\nProposed answer: {answer}\n\n"
    "Check whether the proposed answer is correct and meets every requirement of the "
    "question. Reply CORRECT or WRONG, then why.\n\nThen call final_answer."
)

ANSWER_FAILS_CHECK = (
    "Your final answer was not taken: the task's own check rejects it ({why}). The "
    "answer was: {answer}\n\n"
)
ANSWER_SEARCH_AGAIN = (
    "Find one that passes (a program can search and check candidates), then give the "
    "final answer again."
)
PRINTED_PASSES = (
    "A program of this run printed this line, and the task's own check accepts it:\n\n"
    "{answer}\n\nIf it answers the question, give it as the final answer."
)
PRINTED_PASSES_TOOLS = (
    "A program of this run printed this line, and the task's own check accepts it:\n\n"
    "{answer}\n\nIf it answers the question, give it with answer_with_checked_result."
)
ANSWER_FAILS_LAST = (
    "The final answer was taken in the last round, though the task's check rejects it ({why})."
)

# An answer before any expert was consulted (consult first), with a ready call to send.
CONSULT_FIRST_TEXT = (
    "Your answer was not taken: consult an expert before answering. For this question "
    'you can send this call as it is:\n\n{name}:\n"""\n{instruction}\n"""'
)
CONSULT_FIRST_TOOLS = (
    "Your answer was not taken: consult an expert before answering. For this question "
    'you can call consult_expert with name "{name}" and instruction:\n\n{instruction}\n\n'
    "Then give the answer with final_answer."
)

EMPTY_INSTRUCTION_TOOLS = (
    "Your call to {name} had an empty instruction, so it was not sent. Put the whole "
    "instruction in the call."
)

TOOL_NOT_RUN = "This call was not run: {problem}."
AFTER_ANSWER = "it came after the final_answer call of the same turn"
ANSWER_SET_ASIDE = (
    "This answer was set aside: the same turn consulted experts. Read their results, "
    "then give the answer again."
)
ANSWER_NOT_YET = "This answer was not accepted yet; the message after the results says why."
# consult first, enforced by the conductor (`ready_call`): the model answered instead.
READY_CALL_MADE = (
    "Your answer was not taken: an expert is consulted before any answer. So {name} "
    "was consulted for you, with the first call the instructions showed; its reply is "
    "below. Read it, then go on: consult again or give your final answer."
)
READY_CALL_NOTE = (
    "The model answered before consulting anyone; the conductor made the ready call to "
    "{name} for it (--no-ready-call sends the answer back instead)."
)
TOOL_CALLS_FAILED = "None of your calls could be run; each call's result says why. "
