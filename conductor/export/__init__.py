"""A run shown outside the live view: the terminal printer, Markdown, the HTML pages and
the run diff, all rendered from the one fold of events (record.fold).
"""
