"""What each baseline method sends, in our own words.

The shapes follow the baselines of the meta-prompting paper (Suzgun & Kalai, 2024,
Table 1): the question alone; the question with a step-by-step suffix; a fixed expert
persona; an expert persona the model writes first; several personas the model plays in
one reply (solo performance prompting, Wang et al. 2023). Every method shares the run's
system prompt (`conductor_kernel.prompts.META_SYSTEM`, which asks for the
`>> FINAL ANSWER:` form), as the paper's harness did; only the user messages differ.
"""

from __future__ import annotations

QUESTION = "Question:\n{question}"

STEP_BY_STEP = "Reason it out step by step before you give the answer."

STATIC_EXPERT = (
    "You are an expert in the subject of the question below, careful and precise. Follow "
    "its instructions exactly and answer what it asks. If it offers options, choose "
    "exactly one; it has one right answer, so weigh the information before you choose."
)

# expert-dynamic, first call: the model describes the expert; it does not answer yet.
IDENTITY_SYSTEM = (
    "You describe experts. Given a question, you say who would be best placed to answer "
    "it; you never answer the question yourself."
)
IDENTITY_REQUEST = (
    "Describe the expert best placed to answer the question below, in two to four "
    'sentences addressed to that expert ("You are ..."): their field, their experience, '
    "and the skills this particular question calls for. Do not answer the question.\n\n"
    "Question:\n{question}"
)
# expert-dynamic, second call: the description, then the question to answer as that expert.
AS_THAT_EXPERT = "Answer the question below as the expert described above."
# When the first call gave no description (empty, or declined), this one stands in.
FALLBACK_IDENTITY = "You are an expert in the subject of the question below."

MULTIPERSONA = '''Solve the task below by holding a short discussion among several personas, \
all of them played by you, in this one reply:

1. Name the participants: yourself (AI Assistant) and one to three experts whose \
knowledge the task needs. Describe each in one line.
2. Hold the discussion: the experts give advice and check each attempt of the \
assistant step by step; the assistant revises until every expert agrees the result \
is right.
3. Close the discussion and give the agreed result in the answer form.

An example of the form, on another task:

Task: A train leaves at 9:40 and arrives at 13:05. How long is the journey?
Participants: AI Assistant (you); Timetable Expert
Profiles:
- AI Assistant (you): works the task out and revises it on advice.
- Timetable Expert: reads times and durations, and checks every step.
Discussion begins.
Timetable Expert: Count the whole hours first, then the minutes left over.
AI Assistant (you): From 9:40 to 12:40 is 3 hours, and from 12:40 to 13:05 is 35 \
minutes, so 3 hours 35 minutes.
Timetable Expert: Check it: 9:40 plus 3 h 35 min is 13:15, not 13:05. Count the minutes \
again.
AI Assistant (you): From 12:40 to 13:05 is 25 minutes, so the journey takes 3 hours 25 \
minutes.
Timetable Expert: 9:40 plus 3 h 25 min is 13:05. Right.
Discussion ends.

>> FINAL ANSWER:
"""
3 hours 25 minutes
"""

Now the real task: name the participants, describe them, hold the discussion, and end \
with the final answer in the form above.'''

# A turn without a final answer: said plainly, with what was missing.
NUDGE = (
    "Your reply had no final answer in the required form, so nothing was taken as your "
    "answer. If you have the answer, give it now, exactly like this:\n"
    '>> FINAL ANSWER:\n"""\n[final answer]\n"""'
)

TRUNCATED = (
    "Your last reply was cut off by {cause} before it ended, so it was not taken as an "
    "answer. Give your final answer again, more briefly, in the required form."
)

IDENTITY_CUT = (
    "The expert description was cut off by {cause}; the answer was asked for with the "
    "part that came."
)
IDENTITY_EMPTY = "The model wrote no expert description; a generic one stood in."
