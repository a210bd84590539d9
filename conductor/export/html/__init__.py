"""Self-contained HTML pages: one run, a two-run diff, a batch. See docs/export.md."""
