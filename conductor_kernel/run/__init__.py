"""A run: the loop that starts and ends it (loop.py), the one way a method calls its model
(context.py), a conversation of turns (conversation.py), meta-prompting (meta.py), the fresh-eyes expert call (expert_call.py)
and the side-by-side expert calls of one turn (threads.py)."""
