"""Screens of the conductor TUI: Solve, Runs (with the run detail), Notebook, Batch."""
