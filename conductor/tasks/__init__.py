"""Tasks: the built-in task specs (`specs`) and task files (`files`)."""
