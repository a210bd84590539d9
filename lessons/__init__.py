"""The experience notebook: runs distilled into notes, recalled on later questions.

Modules: schema (tables, migrations), store (opening, safe writes), terms (matching
terms in any script), verify, runview and distill (run -> notes), tasktypes (kinds of
question), notes (adding, merging, retiring, counters), learn (the write path), induction
(a type's experience), recall and render (the read path), hooks (Session integration),
published (the paper's records as events), transfer (export/import), stats, cli.
See docs/notebook.md.
"""
