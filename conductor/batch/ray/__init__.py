"""Batches on a Ray cluster: workers run items with their own sandboxes, the driver owns
the records and the notebook (the single writer). See docs/batch.md.
"""

# How a cluster's batch learns (conductor/batch/ray/learning.py); here, with nothing
# imported, for the `batch` command's flags.
POLICIES = ("frozen", "waves", "off")
