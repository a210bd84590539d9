"""What the notebook knows of a question's form, shared by learning and recall: its terms,
its problem identity, its task type, and tools (programs parameterised by the form).
"""
