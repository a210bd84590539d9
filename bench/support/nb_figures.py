"""The notebook's usefulness figures, each beside trivial baselines measured in the same
run (bench/notebook.py prints them). See docs/notebook.md for what each one means.

- verified: over every published run, targets withheld, how often the `verified` label
  is right (the task scorer accepts the answer) and how many right answers get it;
- tools: learn the first half of a task's published runs, then run the best-tested
  recalled tool on each held-back question in the sandbox and score it;
- kin: MGSM learned in one language, asked in another: is the same problem's note first;
- paraphrase: English rewordings of the same MGSM problem by the published runs;
- near-miss: variant tasks of our own: is the old task's tool or pitfall shown.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

from conductor.methods import BASELINES, PUBLISHED_FOLDERS
from conductor.scoring.notebook import open_notebook
from conductor.scoring.task_scoring import BuiltinTaskScoring
from conductor.tasks.files import TaskItem, read_task_file
from conductor_kernel.events import Event
from conductor_kernel.interfaces import Sandbox
from lessons.forms.judging import scorer_verdict
from lessons.forms.terms import fts_query, is_shape, question_terms
from lessons.forms.toolbox import retest_tools, run_tool, tools_of
from lessons.read.recall import RecallOptions, recall, tool_candidate
from lessons.storage.store import Notebook
from lessons.values import trust_name
from lessons.write.learn import LearnOptions, learn_from_run
from lessons.write.verify import independent_derivations, output_contains
from record.fold import outline
from record.published import (
    PublishedRecord,
    example_events,
    published_events,
    read_published,
    without_calls,
)


def _load_variants() -> Any:
    """bench/support/nb_variants.py, loaded by path (bench/notebook.py would shadow the package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "nb_variants", Path(__file__).with_name("nb_variants.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_variants = _load_variants()
VARIANTS, variant_questions = _variants.VARIANTS, _variants.variant_questions

TOOL_TASKS = ("GameOf24", "word_sorting", "multistep_arithmetic_two")
MGSM = ("BN", "DE", "ES", "FR", "JA", "RU", "SW", "TE", "TH", "ZH")
PIVOT = "ES"
TOOL_TESTS = 8
# The application's scorers, as conductor/session/notebook_hooks.py hands them to a notebook.
SCORING = BuiltinTaskScoring()


def _right(task: str, question: str, target: str | None, answer: str | None) -> bool:
    if not answer:
        return False
    judge = SCORING.judge_for(task)
    assert judge is not None, task
    return bool(scorer_verdict(SCORING, judge, question, answer, str(target)))


def _records(path: Path) -> list[PublishedRecord]:
    return read_published(path).records


def _items(path: Path) -> list[TaskItem]:
    return read_task_file(path).items


# -- verified precision and coverage ------------------------------------------------------


def _old_rule(events: list[Event], answer: str | None) -> bool:
    """The label the notebook gave before: a program printed it, or two replies hold it."""
    if not answer:
        return False
    run = outline(events)
    for x in run.execs:
        if x.result.ok and output_contains(x.result.stdout, answer):
            return True
    replies = [c.finished for c in run.replied if c.finished and c.finished.error is None]
    return sum(output_contains(e.text, answer) for e in replies) >= 2


def _events(folder: str, task: str, i: int, record: PublishedRecord) -> list[Event]:
    """A published run's events; a baseline's as its harness ran it (no expert calls:
    an "Expert X:" in a multi-persona reply dispatched nothing)."""
    method = PUBLISHED_FOLDERS.get(Path(folder).name, "")
    if method in BASELINES:
        record = without_calls(record)
    return published_events(record, run_id=f"{folder}:{task}:{i}", method=method)


def verified(data: Path, workdir: Path, sandbox: Sandbox | None) -> dict[str, Any]:
    """Two folds by question: learn one with targets, label the other without."""
    runs = []
    for folder in published_folders(data):
        for path in sorted((data / "transcripts" / folder).glob("*.jsonl")):
            for i, record in enumerate(_records(path)):
                runs.append((folder, path.stem, i, record))
    labels: dict[str, bool] = {}
    trusts: dict[str, str] = {}
    levels: Counter[str] = Counter()
    for fold in (0, 1):
        book = open_notebook(workdir / f"verified-{fold}.db")
        for folder, task, i, record in runs:
            if i % 2 != fold:
                events = _events(folder, task, i, record)
                learn_from_run(book, events, options=LearnOptions(sandbox=sandbox))
        if sandbox is not None:
            retest_tools(book, sandbox, per_tool=TOOL_TESTS)
        for folder, task, i, record in runs:
            if i % 2 == fold:
                events = _events(folder, task, i, record)
                options = LearnOptions(sandbox=sandbox, use_target=False)
                learn_from_run(book, events, options=options)
        for row in book.read("select run_id, outcome, verification from distilled_runs"):
            folder, task, i = row["run_id"].split(":")
            if int(i) % 2 == fold:
                labels[row["run_id"]] = row["outcome"] in ("correct", "verified")
                trusts[row["run_id"]] = trust_name(row["verification"], row["outcome"])
                if labels[row["run_id"]]:
                    levels[row["verification"]] += 1
        book.close()
    per_task: dict[str, Counter[str]] = {}
    per_folder: dict[str, Counter[str]] = {}
    for folder, task, i, record in runs:
        events = _events(folder, task, i, record)
        finished = outline(events).finished
        answer = finished.final_answer if finished is not None else None
        right = _right(task, record.question, record.target, answer)
        label = labels.get(f"{folder}:{task}:{i}", False)
        old = _old_rule(events, answer)
        one = bool(answer) and independent_derivations(outline(events), answer) >= 1
        c = per_task.setdefault(task, Counter())
        c["runs"] += 1
        c["right"] += right
        c["label"] += label
        c["label_right"] += label and right
        c["old"] += old
        c["old_right"] += old and right
        c["one"] += one
        c["one_right"] += one and right
        trust = trusts.get(f"{folder}:{task}:{i}", "unverified")
        c[trust] += 1
        c[trust + "_right"] += right
        by_folder = per_folder.setdefault(folder, Counter())
        by_folder.update({"runs": 1, "right": right, trust: 1, trust + "_right": right})
    total: Counter[str] = Counter()
    for c in per_task.values():
        total.update(c)
    return {"per_task": {k: dict(v) for k, v in per_task.items()}, "total": dict(total),
            "per_folder": {k: dict(v) for k, v in per_folder.items()},
            "levels": dict(levels), "sandbox": sandbox.name if sandbox else None}  # fmt: skip


def published_folders(data: Path) -> list[str]:
    """Every folder of published runs: meta-prompting with and without Python, and each
    baseline method's (transcripts/baselines/METHOD)."""
    root = data / "transcripts"
    baselines = sorted(p.name for p in (root / "baselines").glob("*") if p.is_dir())
    return ["with-python", "without-python", *(f"baselines/{name}" for name in baselines)]


# -- tool accuracy ------------------------------------------------------------------------


def tool_accuracy(data: Path, workdir: Path, sandbox: Sandbox) -> dict[str, Any]:
    """One notebook learns the first halves of all three tasks; tools are tested; then
    each held-back question gets the best-tested tool that applies, run in the sandbox."""
    book = open_notebook(workdir / "tools.db")
    held: dict[str, list[PublishedRecord]] = {}
    for task in TOOL_TASKS:
        records = _records(data / "transcripts" / "with-python" / f"{task}.jsonl")
        half = len(records) // 2
        held[task] = records[half:]
        for i, record in enumerate(records[:half]):
            learn_from_run(book, published_events(record, run_id=f"{task}-{i}"))
    stored = retest_tools(book, sandbox, per_tool=TOOL_TESTS)
    every_tool = tools_of(book)
    rng = random.Random(7)
    out: dict[str, Any] = {}
    for task, records in held.items():
        codes = book.read(
            "select code from notes where kind = 'code' and retired = 0 and source_task = ? "
            "order by seq desc",
            (task,),
        )
        mine = [s for s in stored if s.task == task]
        c: Counter[str] = Counter()
        for record in records:
            question, target = record.question, record.target
            c["questions"] += 1
            top = tool_candidate(book, question, [], exclude_question=True)
            if top is not None:
                c["with_tool"] += 1
                best = next(s for s in every_tool if s.note_id == top.note["id"])
                answer = run_tool(best.tool, question, sandbox, scoring=book.scoring)
                c["right"] += _right(task, question, target, answer)
            if codes:  # the old notebook's offer: the newest code note, run unchanged
                result = sandbox.run(codes[0]["code"], timeout=10)
                lines = [x for x in result.stdout.splitlines() if x.strip()]
                printed = lines[-1].strip() if lines else None
                c["copy_right"] += bool(lines) and _right(task, question, target, printed)
            if every_tool:  # a random tool of the notebook, whatever it was tested on
                pick = rng.choice(every_tool)
                answer = run_tool(pick.tool, question, sandbox, scoring=book.scoring)
                c["random_right"] += _right(task, question, target, answer)
        out[task] = dict(c) | {
            "tools": len(mine),
            "tested": sum(s.tests for s in mine),
            "best_pass_rate": max((s.pass_rate for s in mine), default=0.0),
        }
    book.close()
    return out


# -- translated kin -----------------------------------------------------------------------


def _mgsm(data: Path, code: str) -> list[TaskItem]:
    return _items(data / "tasks" / f"MGSM_{code}.jsonl")


def _bm25_top(book: Notebook, question: str) -> str | None:
    terms = sorted(t for t in question_terms(question) if not is_shape(t))
    if not terms:
        return None
    row = book.read_one(
        "select n.source_run from notes_fts join notes n on n.seq = notes_fts.rowid "
        "where notes_fts match ? order by notes_fts.rank limit 1",
        (fts_query(terms[:60]),),
    )
    return row["source_run"] if row else None


def _shape_top(shapes: dict[str, frozenset[str]], question: str) -> str | None:
    mine = frozenset(t for t in question_terms(question) if is_shape(t))
    best = max(shapes.items(), key=lambda kv: (len(kv[1] & mine), kv[0]), default=None)
    return best[0] if best else None


def kin(data: Path, workdir: Path, *, semantic: bool = False) -> dict[str, Any]:
    """Learn one language's problems as solved examples; ask them in another
    (`semantic`: with the optional semantic index fused in)."""
    pairs = [(PIVOT, c) for c in MGSM if c != PIVOT] + [(c, PIVOT) for c in MGSM if c != PIVOT]
    questions = {
        code: [(item.input, str(item.target)) for item in _mgsm(data, code)] for code in MGSM
    }
    return _same_problem_first(
        [(a, b, questions[a], questions[b]) for a, b in pairs], workdir, semantic
    )


def kin_transcripts(data: Path, workdir: Path) -> dict[str, Any]:
    """Kin learned from real runs, not task files: every published run of MGSM in one
    language (meta-prompting with and without Python and the five baselines, about
    seven runs a problem, right and wrong), learned with targets and without; then each
    problem asked in every other language (the task files' questions). Counts the same
    problem's note first, another problem's note first (and of those, how many were not
    marked as another question), and nothing shown, beside bm25 over past questions."""
    folders = published_folders(data)
    out: dict[str, Any] = {}
    for learned in ("ES", "FR"):
        runs = []
        for folder in folders:
            path = data / "transcripts" / folder / f"MGSM_{learned}.jsonl"
            if path.is_file():
                runs += [(folder, i, r) for i, r in enumerate(_records(path))]
        for targets in (True, False):
            name = f"kinrun-{learned}-{'targets' if targets else 'none'}"
            book = open_notebook(workdir / f"{name}.db")
            problem_of: dict[str, int] = {}
            options = LearnOptions(use_target=targets)
            for folder, i, record in runs:
                events = _events(folder, f"MGSM_{learned}", i, record)
                problem_of[events[0].run_id] = i
                learn_from_run(book, events, options=options)
            c: Counter[str] = Counter()
            for asked in MGSM:
                if asked == learned:
                    continue
                for i, item in enumerate(_mgsm(data, asked)):
                    c["questions"] += 1
                    shown = recall(book, item.input, options=RecallOptions(k=3)).shown
                    first = shown[0].note if shown else None
                    if first is None:
                        c["nothing"] += 1
                    elif problem_of.get(first["source_run"] or "") == i:
                        c["first"] += 1
                    else:
                        c["other_first"] += 1
                        c["other_first_unmarked"] += not first.get("differs")
                    top = _bm25_top(book, item.input)
                    c["bm25"] += top is not None and problem_of.get(top) == i
            out[name] = dict(c) | {"runs_learned": len(runs)}
            book.close()
    return out


def paraphrase(data: Path, workdir: Path, *, semantic: bool = False) -> dict[str, Any]:
    """English paraphrases of the same MGSM problem: the meta model's first expert
    instruction restates the question in its own words, once per published run (Spanish
    and French questions, with and without Python: four wordings of each problem).
    Learn one run set's wordings, ask another's."""
    sets = {
        f"{code}/{mode}": _restatements(data / "transcripts" / mode / f"MGSM_{code}.jsonl")
        for code in ("ES", "FR")
        for mode in ("with-python", "without-python")
    }
    names = list(sets)
    pairs = [(a, b) for a in names for b in names if a != b and a[:2] != b[:2]]
    return _same_problem_first(
        [(a, b, sets[a], sets[b]) for a, b in pairs], workdir, semantic, prefix="para"
    )


def _restatements(transcript: Path) -> list[tuple[str, str]]:
    """Each run's first expert instruction ('' where the run called no expert), and
    the problem's answer."""
    out = []
    for record in _records(transcript):
        first = record.turns[0].text if record.turns else ""
        found = re.search(r'"""(.*?)"""', first, re.S)
        out.append((found.group(1).strip() if found else "", str(record.target)))
    return out


def _same_problem_first(
    pairs: list[tuple[str, str, list[tuple[str, str]], list[tuple[str, str]]]],
    workdir: Path,
    semantic: bool,
    prefix: str = "kin",
) -> dict[str, Any]:
    """For each pair: learn the first list as solved examples, ask the second (the same
    problems in the same order); count how often the same problem's note comes first,
    beside bm25 over past questions, shape-only matching and a random note."""
    learn_options = LearnOptions(semantic=semantic)
    recall_options = RecallOptions(k=3, semantic=semantic)
    rng = random.Random(11)
    out: dict[str, Any] = {}
    for learned, asked, learned_questions, asked_questions in pairs:
        name = f"{prefix}-{learned}-{asked}-{int(semantic)}".replace("/", "_")
        book = open_notebook(workdir / f"{name}.db")
        shapes = {}
        for i, (question, answer) in enumerate(learned_questions):
            if not question:
                continue
            run_id = f"{learned}-{i}"
            learn_from_run(book, example_events(run_id, question, answer), options=learn_options)
            shapes[run_id] = frozenset(t for t in question_terms(question) if is_shape(t))
        c: Counter[str] = Counter()
        for i, (question, _answer) in enumerate(asked_questions):
            if not question:
                continue
            wanted = f"{learned}-{i}"
            c["questions"] += 1
            shown = recall(book, question, options=recall_options).shown
            c["first"] += bool(shown) and shown[0].note["source_run"] == wanted
            c["bm25"] += _bm25_top(book, question) == wanted
            c["shape"] += _shape_top(shapes, question) == wanted
            c["random"] += rng.choice(list(shapes)) == wanted
        out[f"{learned}->{asked}"] = dict(c)
        book.close()
    return out


# -- near-miss tasks ----------------------------------------------------------------------


def _learn_shipped(book: Notebook, data: Path, tasks: set[str]) -> None:
    for task in sorted(tasks):
        transcript = data / "transcripts" / "with-python" / f"{task}.jsonl"
        if transcript.exists():
            records = _records(transcript)
            for i, record in enumerate(records[: len(records) // 2]):
                learn_from_run(book, published_events(record, run_id=f"{task}-{i}"))
            continue
        items = _items(data / "tasks" / f"{task}.jsonl")
        for i, item in enumerate(items[: len(items) // 2]):
            events = example_events(f"{task}-{i}", item.input, str(item.target), task)
            learn_from_run(book, events)


def near_miss(data: Path, workdir: Path, per_variant: int = 40) -> dict[str, Any]:
    book = open_notebook(workdir / "near-miss.db")
    tasks = {task for task, _ in VARIANTS.values()}
    _learn_shipped(book, data, tasks)
    bound = ("tool", "pitfall", "code")
    out: dict[str, Any] = {}
    for name, (task, _rewrite) in VARIANTS.items():
        items = _items(data / "tasks" / f"{task}.jsonl")
        held = [item.input for item in items[len(items) // 2 :]]
        c: Counter[str] = Counter()
        for question in variant_questions(name, held, per_variant):
            c["questions"] += 1
            shown = recall(book, question).shown
            c["shown_old"] += any(
                s.note["kind"] in bound and s.note["source_task"] == task for s in shown
            )
            top = _bm25_top(book, question)
            c["bm25_old"] += bool(top) and top.startswith(f"{task}-")
        for question in held[:per_variant]:  # the task itself: recall is not simply off
            shown = recall(book, question).shown
            c["own_task_shown"] += any(s.note["kind"] in bound for s in shown)
        out[name] = dict(c) | {"task": task}
    book.close()
    return out
