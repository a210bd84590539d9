"""The experience notebook: runs distilled into notes, recalled on later questions.

Four parts, one folder each: `write/` (a finished run judged, distilled and written),
`read/` (recall before round 1, rendered under a token budget), `storage/` (schema,
migrations, the one connection, the queries the application reads) and `exchange/`
(export, import, merge). `forms/` holds what both paths know of a question: its terms,
its problem identity, its task type, the tools made for its form and how its task's
scorer is asked. `values.py` holds the values both paths share (a note draft, a
verification), `prompts.py` every prompt the notebook sends. The order is an import
contract (pyproject.toml). A notebook judges with the task scorers it is opened with.
See docs/notebook.md.
"""
