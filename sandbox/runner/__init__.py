"""The in-cell runner: standard library only, copied side by side into the sandbox
(`/opt/conductor/main.py`, `supervise.py`, `child.py`); never imported by the host.
"""
