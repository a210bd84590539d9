"""The write path: a finished run's events in, verified notes in the notebook (verify,
distill, reflect, choose the type, induce the type's experience).
"""
