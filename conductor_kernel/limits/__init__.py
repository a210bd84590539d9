"""What a run may spend, and how it is held to it: the limits (run_config.py), the usage
ledger and the one metered model (ledger.py), the guard on a streamed call (streaming.py)."""
