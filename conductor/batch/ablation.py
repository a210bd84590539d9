"""`conductor batch TASKFILE --ablation`: does the notebook make the next run better?

The same-model A/B: the task file's items are shuffled with a seed and cut in two
disjoint splits. Split A is solved with recall off and learning on, into a notebook of
its own (the batch's, never the default one). Split B is then solved twice, learning
off, in the same order: once with recall on (a note made from the very question under
test is never shown) and once with recall off. The report gives each arm's accuracy,
the change with a 95% confidence interval (paired, over the same questions), the
right→wrong and wrong→right flips, tokens and cost per arm, and what learning cost.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conductor.config import Settings
from conductor.session import Session
from conductor.tasks.files import TaskItem
from conductor.tasks.specs import TaskSpec
from conductor_kernel.interfaces import Sandbox, Usage
from conductor_kernel.limits.ledger import UsageLedger
from conductor_kernel.text.counts import plural

Z95 = 1.96


@dataclass
class Arm:
    name: str
    correct: list[bool] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)  # the items, in the order they ran
    usage: Usage = field(default_factory=Usage)
    recalled: int = 0  # runs shown at least one note

    def to_dict(self) -> dict[str, Any]:
        n = len(self.correct)
        return {
            "items": n,
            "correct": sum(self.correct),
            "accuracy": sum(self.correct) / n if n else None,
            "tokens": self.usage.input_tokens + self.usage.output_tokens,
            "estimated_tokens": self.usage.estimated_tokens,
            "cost_usd": round(self.usage.cost_usd, 6),
            "runs_shown_notes": self.recalled,
            "item_ids": self.ids,
        }


def split(
    items: list[TaskItem], seed: int, share_a: float
) -> tuple[list[TaskItem], list[TaskItem]]:
    """Disjoint learn (A) and test (B) splits, the same for the same seed."""
    order = list(items)
    random.Random(seed).shuffle(order)
    cut = max(1, min(len(order) - 1, round(len(order) * share_a)))
    return order[:cut], order[cut:]


def paired_change(on: list[bool], off: list[bool]) -> dict[str, Any]:
    """Accuracy change (on − off) with a 95% interval from the paired differences."""
    n = len(on)
    diffs = [int(a) - int(b) for a, b in zip(on, off, strict=True)]
    mean = sum(diffs) / n if n else 0.0
    var = sum((d - mean) ** 2 for d in diffs) / (n - 1) if n > 1 else 0.0
    half = Z95 * math.sqrt(var / n) if n else 0.0
    return {
        "change": mean,
        "ci95": [mean - half, mean + half],
        "wrong_to_right": sum(1 for d in diffs if d == 1),
        "right_to_wrong": sum(1 for d in diffs if d == -1),
        "both_right": sum(1 for a, b in zip(on, off, strict=True) if a and b),
        "both_wrong": sum(1 for a, b in zip(on, off, strict=True) if not a and not b),
    }


@dataclass
class AblationPlan:
    spec: TaskSpec
    items: list[TaskItem]
    question: Callable[[TaskItem], str]
    # A session for one item of one phase ("learn", "recall_on", "recall_off"): models
    # and sandbox, no notebook attached (the harness attaches it).
    make_session: Callable[[TaskItem, str], Session]
    score: Callable[[str | None, TaskItem, Sandbox | None, str], dict[str, Any]]
    notebook: Path
    seed: int = 0
    share_a: float = 0.5


def _run_item(plan: AblationPlan, session: Session, item: TaskItem, arm: Arm) -> None:
    with session:
        run = session.run(plan.question(item), task=plan.spec.name, target=item.target)
        finished = run.finished
        answer = finished.final_answer if finished else None
        # Scored apart from the run's sandbox: a scorer that runs code opens its own.
        result = plan.score(answer, item, None, "")
    arm.correct.append(bool(result.get("correct")))
    arm.ids.append(item.id)
    if finished is not None:
        arm.usage = arm.usage + finished.usage
    arm.recalled += any(r.notes for r in (run.outline.recalls if run.outline else []))


def run_ablation(plan: AblationPlan, *, progress: Callable[[str], None] = print) -> dict[str, Any]:
    from conductor.scoring.notebook import open_notebook
    from conductor.session.notebook_hooks import NotebookHooks
    from lessons.read.recall import RecallOptions

    learn_split, test_split = split(plan.items, plan.seed, plan.share_a)
    book = open_notebook(plan.notebook)
    learned = Arm("learn")
    arms = {"recall_on": Arm("recall_on"), "recall_off": Arm("recall_off")}
    learning_usage = Usage()
    try:
        # A: learning on, recall off; the learning calls' own usage is metered.
        for item in learn_split:
            session = plan.make_session(item, "learn")
            spent = UsageLedger()  # besides the run's own ledger, which the run ends with
            metered = spent.metered(session.meta_model, "learning")
            NotebookHooks(book, model=metered).attach(session, recall=False, learn=True)
            _run_item(plan, session, item, learned)
            learning_usage = learning_usage + spent.total()
        progress(f"learned from {plural(len(learn_split), 'item')} into {plan.notebook}")
        for name, arm in arms.items():
            for item in test_split:  # the same order in both arms
                session = plan.make_session(item, name)
                if name == "recall_on":
                    hooks = NotebookHooks(
                        book, model=session.meta_model,
                        recall_options=RecallOptions(exclude_question=True),
                    )  # fmt: skip
                    hooks.attach(session, recall=True, learn=False)
                _run_item(plan, session, item, arm)
            progress(f"{name}: {sum(arm.correct)}/{len(arm.correct)} right")
    finally:
        book.close()
    on, off = arms["recall_on"], arms["recall_off"]
    return {
        "task": plan.spec.name,
        "seed": plan.seed,
        "notebook": str(plan.notebook),
        "learn_items": [i.id for i in learn_split],
        "test_items": [i.id for i in test_split],
        "learn": learned.to_dict()
        | {
            "learning_calls_usage": _usage(learning_usage),
            # What learning costs an item beside what running it costs.
            "run_tokens_per_item": _per_item(learned.to_dict()["tokens"], len(learn_split)),
            "learning_tokens_per_item": _per_item(
                learning_usage.input_tokens + learning_usage.output_tokens, len(learn_split)
            ),
        },
        "arms": {name: arm.to_dict() for name, arm in arms.items()},
        "paired": paired_change(on.correct, off.correct),
    }


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "tokens": usage.input_tokens + usage.output_tokens,
        # Calls stopped part-way (a looping reply) never had their usage sent: estimated.
        "estimated_tokens": usage.estimated_tokens,
        "cost_usd": round(usage.cost_usd, 6),
        "calls": usage.calls,
    }


def _per_item(tokens: int, items: int) -> float:
    return round(tokens / items, 1) if items else 0.0


def _estimated(usage: dict[str, Any]) -> str:
    extra = usage.get("estimated_tokens", 0)
    return f" (and about {extra:,} more, estimated: calls stopped part-way)" if extra else ""


def render(report: dict[str, Any]) -> str:
    on, off = report["arms"]["recall_on"], report["arms"]["recall_off"]
    paired, learn = report["paired"], report["learn"]
    low, high = paired["ci95"]
    return "\n".join(
        [
            f"ablation of the notebook on {report['task']} (seed {report['seed']}): "
            f"learned on {plural(len(report['learn_items']), 'item')}, tested on "
            f"{len(report['test_items'])}",
            f"  recall on : {on['correct']}/{on['items']} right, {on['tokens']:,} tokens, "
            f"${on['cost_usd']:.4f}, {on['runs_shown_notes']} runs shown notes",
            f"  recall off: {off['correct']}/{off['items']} right, {off['tokens']:,} tokens, "
            f"${off['cost_usd']:.4f}",
            f"  change {paired['change']:+.3f} (95% CI {low:+.3f} to {high:+.3f}); "
            f"wrong→right {paired['wrong_to_right']}, right→wrong {paired['right_to_wrong']}",
            f"  learning: {learn['tokens']:,} tokens, ${learn['cost_usd']:.4f} for the runs, "
            f"plus {learn['learning_calls_usage']['tokens']:,} tokens "
            f"(${learn['learning_calls_usage']['cost_usd']:.4f}) in "
            f"{learn['learning_calls_usage']['calls']} learning calls"
            + _estimated(learn["learning_calls_usage"]),
            f"  per learned item: {learn.get('run_tokens_per_item', 0):,.0f} tokens to run it, "
            f"{learn.get('learning_tokens_per_item', 0):,.0f} to learn from it",
        ]
    )


def ablate_batch(
    settings: Settings, spec: TaskSpec, items: list[TaskItem], *, seed: int, as_json: bool
) -> int:
    """The `--ablation` entry point of `conductor batch`: runs, writes and prints.

    Everything goes to a folder of its own under the home's `ablations/`, the notebook
    too unless `--notebook` names one."""
    import time

    from conductor.batch.setup import make_scorer, sandbox_opener
    from conductor.session import build_session
    from conductor_kernel.errors import ConfigError
    from record.home import home_dir

    if len(items) < 2:
        raise ConfigError("--ablation needs at least 2 items: one split learns, one tests")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    folder = home_dir() / "ablations" / f"{spec.name}-seed{seed}-{stamp}"

    no_python = settings.run.model_copy(update={"python": False})
    plain = settings.model_copy(update={"recall": False, "learn": False, "run": no_python})
    template = build_session(plain, index=False)
    sandbox_name, open_box = sandbox_opener(settings)

    def make_session(_item: TaskItem, _phase: str) -> Session:
        return Session(
            meta_model=template.meta_model,
            expert_model=template.expert_model,
            sandbox=open_box(),
            config=settings.run,
            runs_path=folder / "runs",
            fresh_sandbox=open_box if sandbox_name else None,
        )

    folder.mkdir(parents=True, exist_ok=True)
    plan = AblationPlan(
        spec, items, lambda item: spec.prompt(item.input), make_session,
        make_scorer(spec, sandbox_name, settings),
        Path(settings.notebook) if settings.notebook else folder / "notebook.db", seed=seed,
    )  # fmt: skip
    report = run_ablation(plan, progress=lambda text: None if as_json else print(text))
    (folder / "ablation.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(json.dumps(report) if as_json else render(report))
    return 0
