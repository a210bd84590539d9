"""Batches on a Ray cluster: workers run items with their own sandboxes, the driver owns
the records and the notebook (the single writer). See docs/batch.md.
"""
