"""Replay of published records through our loop, parser and sandbox, the models answering
from the record (docs/replay.md). The replay model itself is experts.replay.
"""
