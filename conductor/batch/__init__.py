"""Batches: every item of a task file through the conductor, resumable, scored and reported.

`runner` runs items; `session` builds and keeps the per-item sessions; `setup` chooses
live or replayed models; `store` owns the batch folder (manifest, results log);
`report` tallies and writes the report; `ablation` is the notebook A/B; `ray/` runs
items on a Ray cluster.
"""
