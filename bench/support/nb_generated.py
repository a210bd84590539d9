"""Generated near misses (tests/equipment/perturb.py): does learned experience present
itself as applicable to a question it does not fit? Thousands of questions over every
perturbation kind, with a fixed seed, beside baselines:

- tools: our full-parse rule against the old rule (the code at `OLD`: anchors found,
  numbers counted, every word in the tool's bag of known words), each tool made from the
  base question's program, asked the perturbed question: offered where the task changed
  (must be 0), and offered on the same form with other data (coverage);
- recognition of a built-in task: ours against the old recogniser, on the near misses
  (must be 0) and on the bases (coverage);
- recall over a notebook learned from the base questions (solved, targets known): the
  share of questions shown a note of a different question presented as fitting (a tool
  for a changed task; an example, pitfall, code or procedure of another question not
  marked as another question's, or ranked before one that fits), beside the share shown
  such a note at all, plain bm25 over the question's rarest terms (its top note) and a
  random note.
"""

from __future__ import annotations

import importlib.util
import random
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from equipment.perturb import Perturbed, generate, program_for_base

REPO = Path(__file__).resolve().parents[2]
OLD = "a857b36"  # main before issue 25's changes
SEED = 2026


def _old_module(path: str, name: str) -> Any:
    """`path` as it was at OLD, loaded as a module of its own."""
    source = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{OLD}:{path}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    file = Path(tempfile.mkdtemp()) / f"{name}.py"
    file.write_text(source)
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def rules(questions: list[Perturbed]) -> dict[str, Any]:
    from conductor.scoring.recognise import recognise
    from conductor.scoring.task_scoring import BuiltinTaskScoring
    from lessons.forms import tool_making, tools

    scoring = BuiltinTaskScoring()
    old_tools = _old_module("lessons/forms/tools.py", "old_tools")
    old_recognise = _old_module("conductor/scoring/recognise.py", "old_recognise").recognise
    per_kind: dict[str, Counter[str]] = {}
    for p in questions:
        c = per_kind.setdefault(p.kind, Counter())
        c["questions"] += 1
        c[f"effect_{p.effect}"] += 1
        code, printed = program_for_base(p.base)
        made = [  # ours makes tools in tool_making.py; the old tree in tools.py
            make(p.base.question, code, printed + "\n", printed, scoring=scoring)
            for make in (tool_making.make_tool, old_tools.make_tool)
        ]
        for name, module, tool in (("ours", tools, made[0]), ("old", old_tools, made[1])):
            if tool is None:
                continue
            c[f"tool_{name}"] += 1
            offered = module.applies(tool, p.question, scoring=scoring)
            c[f"offered_{name}"] += offered
            c[f"own_{name}"] += module.applies(tool, p.base.question, scoring=scoring)
        for name, recognised in (("ours", recognise), ("old", old_recognise)):
            found = recognised(p.question)
            c[f"recognised_{name}"] += found is not None
            c[f"base_recognised_{name}"] += recognised(p.base.question) is not None
    return {k: dict(v) for k, v in sorted(per_kind.items())}


def _rarest_top(book: Any, question: str, rarest: int = 8) -> dict[str, Any] | None:
    from lessons.forms.terms import fts_query, is_shape, question_terms

    terms = [t for t in question_terms(question) if not is_shape(t)]
    if not terms:
        return None
    marks = ",".join("?" * len(terms))
    df = {r["term"]: r["df"] for r in book.read(
        f"select term, df from term_df where term in ({marks})", terms
    )}  # fmt: skip
    known = sorted((t for t in terms if df.get(t)), key=lambda t: (df[t], t))[:rarest]
    if not known:
        return None
    row = book.read_one(
        "select n.* from notes_fts join notes n on n.seq = notes_fts.rowid "
        "where notes_fts match ? and n.kind != 'tool' order by notes_fts.rank limit 1",
        (fts_query(known),),
    )
    return dict(row) if row else None


def recall_figures(questions: list[Perturbed], workdir: Path) -> dict[str, Any]:
    from conductor.scoring.notebook import open_notebook
    from lessons.forms.problems import same_question
    from lessons.read.recall import RecallOptions, recall
    from lessons.write.learn import learn_from_run

    sys.path.insert(0, str(REPO / "tests" / "lessons"))
    from nb_support import run_events

    rng = random.Random(SEED)
    book = open_notebook(workdir / "generated.db")
    learned: set[str] = set()
    for i, p in enumerate(questions):
        if p.base.question in learned:
            continue
        learned.add(p.base.question)
        code, printed = program_for_base(p.base)
        answer = printed if p.base.form != "word_problem" else "42"
        learn_from_run(book, run_events(f"b{i}", p.base.question, answer, target=answer,
                                        code=code, stdout=printed + "\n"))  # fmt: skip
    every = [dict(r) for r in book.read("select * from notes where kind != 'tool'")]
    per_kind: dict[str, Counter[str]] = {}

    def other(note: dict[str, Any], p: Perturbed) -> bool:
        source = note.get("source_question") or ""
        if not source.strip() or same_question(source, p.question):
            return False
        return not (p.effect == "same" and source == p.base.question)

    for p in questions:
        c = per_kind.setdefault(p.kind, Counter())
        c["questions"] += 1
        shown = recall(book, p.question, options=RecallOptions()).shown
        misled, seen_marked, any_other = False, False, False
        for item in shown:
            note = item.note
            if note["kind"] == "tool":
                misled |= p.effect == "task"
                continue
            if not other(note, p):
                misled |= seen_marked  # a fitting note ranked after another question's
                continue
            any_other = True
            if note.get("differs"):
                seen_marked = True
            else:
                misled = True
        c["misled"] += misled
        c["other_shown"] += any_other
        top = _rarest_top(book, p.question)
        c["bm25_other"] += bool(top) and other(top, p)
        c["random_other"] += bool(every) and other(rng.choice(every), p)
    book.close()
    return {k: dict(v) for k, v in sorted(per_kind.items())}


def generated(workdir: Path, n: int = 2000, recall_n: int | None = None) -> dict[str, Any]:
    questions = generate(SEED, n)
    return {
        "seed": SEED,
        "questions": len(questions),
        "kinds": len({p.kind for p in questions}),
        "rules": rules(questions),
        "recall": recall_figures(questions[: recall_n or n], workdir),
    }
