"""Test equipment: servers and data generators the tests and benchmarks use.

Kept out of the installed packages: a user's wheel holds only what a user runs.
"""
