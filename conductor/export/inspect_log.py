"""Runs as an Inspect eval log (`conductor runs export --inspect`), for `inspect view`.

Each run becomes a sample: its question as the input, the item's target, the final answer
as the output with its score, and the run as events: every meta turn and expert call a
model event (its prompt, reply and usage), every sandboxed program an info event. The
method and the models are the eval's configuration; token usage is per model, per sample
and for the whole log. Written with inspect_ai's own log types (the `inspect` extra), so
its reader and viewer take the file as they take their own.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conductor_kernel.errors import UserFacingError
from conductor_kernel.events import (
    Event,
    ExpertCallFinished,
    MetaTurnFinished,
    RunFinished,
    RunStarted,
    SandboxExec,
)
from conductor_kernel.interfaces import Usage

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample

SCORER = "conductor"


@dataclass
class RunSample:
    """One run to export: its recorded events, and what its batch knew of it."""

    id: str
    events: list[Event]
    target: str | None = None
    score: dict[str, Any] | None = None  # ScoreResult.to_dict(), as a batch records it
    usage: Usage | None = None  # the run's total as recorded; None: its RunFinished's

    @property
    def started(self) -> RunStarted | None:
        return next((e for e in self.events if isinstance(e, RunStarted)), None)

    @property
    def finished(self) -> RunFinished | None:
        return next((e for e in reversed(self.events) if isinstance(e, RunFinished)), None)


def _inspect() -> Any:
    try:
        import inspect_ai.log
    except ImportError:
        from conductor.extras import needs_extra

        raise UserFacingError(
            needs_extra("exporting for Inspect", "inspect", "inspect_ai")
        ) from None
    return inspect_ai.log


def eval_log(samples: list[RunSample], *, task: str, method: str | None = None) -> EvalLog:
    """The eval log of `samples` (runs of one method)."""
    log_types = _inspect()
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalMetric,
        EvalResults,
        EvalScore,
        EvalSpec,
        EvalStats,
    )
    from inspect_ai.model import ModelUsage

    if not samples:
        raise UserFacingError("there are no finished runs to export")
    first = next((s.started for s in samples if s.started is not None), None)
    model = first.model if first is not None else "unknown"
    method = method or (first.method if first is not None else "")
    built = [_sample(s) for s in samples]
    totals: dict[str, ModelUsage] = defaultdict(ModelUsage)
    for sample in built:
        for name, used in sample.model_usage.items():
            totals[name] = _add(totals[name], used)
    verdicts = [(s.scores or {}).get(SCORER) for s in built]
    scored = [v for v in verdicts if v is not None]
    correct = len([v for v in scored if v.value == "C"])
    times = [s.events[0].ts for s in samples if s.events]
    spec = EvalSpec(
        created=_iso(min(times) if times else 0.0),
        task=f"conductor/{task}",
        task_args={"method": method},
        dataset=EvalDataset(name=task, samples=len(built)),
        model=_model_name(model),
        config=EvalConfig(),
        metadata={
            "method": method,
            "meta_model": model,
            "expert_model": first.expert_model if first is not None else "",
            "limits": first.limits if first is not None else {},
        },
    )
    results = EvalResults(
        total_samples=len(built),
        completed_samples=len(built),
        scores=[
            EvalScore(
                name=SCORER,
                scorer=SCORER,
                scored_samples=len(scored),
                unscored_samples=len(built) - len(scored),
                metrics={
                    "accuracy": EvalMetric(
                        name="accuracy", value=correct / len(scored) if scored else 0.0
                    )
                },
            )
        ],
    )
    return log_types.EvalLog(
        eval=spec,
        status="success",
        results=results,
        stats=EvalStats(
            started_at=spec.created,
            completed_at=_iso(max((e.ts for s in samples for e in s.events[-1:]), default=0.0)),
            model_usage=dict(totals),
        ),
        samples=built,
    )


def write_inspect_log(samples: list[RunSample], out: Path, *, task: str) -> list[tuple[Path, int]]:
    """Write one log per method among `samples` (a comparison has several); each path
    with the number of samples it holds."""
    write_eval_log = _inspect().write_eval_log  # without the extra: how to add it

    by_method: dict[str, list[RunSample]] = defaultdict(list)
    for sample in samples:
        started = sample.started
        by_method[started.method if started is not None else ""].append(sample)
    written = []
    for method, group in by_method.items():
        path = out if len(by_method) == 1 else out.with_stem(f"{out.stem}-{method or 'unknown'}")
        write_eval_log(eval_log(group, task=task, method=method), str(path))
        written.append((path, len(group)))
    return written


def _sample(run: RunSample) -> EvalSample:
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ModelOutput
    from inspect_ai.scorer import Score

    started, finished = run.started, run.finished
    question = started.question if started is not None else ""
    answer = finished.final_answer if finished is not None else None
    model = _model_name(started.model if started is not None else "unknown")
    scores = {}
    if run.score and run.score.get("scored", True) and "error" not in run.score:
        scores[SCORER] = Score(
            value="C" if run.score.get("correct") else "I",
            answer=answer,
            explanation=str(run.score.get("detail", "")),
            metadata={"paper_correct": run.score.get("paper_correct")},
        )
    messages: list[Any] = [ChatMessageUser(content=question)]
    if answer is not None:
        messages.append(ChatMessageAssistant(content=answer))
    events, usage = _events(run.events)
    recorded = run.usage or (finished.usage if finished is not None else Usage())
    _add_remainder(usage, recorded, model)
    return EvalSample(
        id=run.id,
        epoch=1,
        input=question,
        target=run.target or "",
        messages=messages,
        output=ModelOutput.from_content(model, answer or ""),
        scores=scores,
        events=events,
        model_usage=usage,
        metadata={
            "run_id": started.run_id if started is not None else run.id,
            "status": finished.status if finished is not None else "unfinished",
            "rounds": finished.rounds if finished is not None else 0,
            "expert_calls": finished.expert_calls if finished is not None else 0,
            "cost_usd": recorded.cost_usd,
        },
        total_time=finished.duration_s if finished is not None else None,
    )


def _events(recorded: list[Event]) -> tuple[list[Any], dict[str, Any]]:
    """The run's model calls and programs as Inspect events, and its usage per model:
    each round's meta turn, then the calls it made and the programs they ran, as the
    one fold of a run (record/fold.py) groups them."""
    from inspect_ai.model import ChatMessageSystem, ChatMessageUser, ModelUsage

    from record.fold import outline

    out: list[Any] = []
    usage: dict[str, ModelUsage] = defaultdict(ModelUsage)
    for round_ in outline(recorded).rounds:
        if round_.finished is not None:
            asked = round_.started.user_message if round_.started is not None else ""
            meta = round_.finished
            detail: dict[str, Any] = {"round": meta.round}
            out.append(_model_event(meta, [ChatMessageUser(content=asked)], usage, "meta", detail))
        for call in round_.calls:
            if call.finished is not None:
                started = call.started
                system = started.system_prompt if started is not None else ""
                prompt = (started.prompt or started.instruction) if started is not None else ""
                messages: list[Any] = [ChatMessageSystem(content=system)] if system else []
                messages.append(ChatMessageUser(content=prompt))
                done = call.finished
                detail = {"expert": done.name, "error": done.error}
                out.append(_model_event(done, messages, usage, "expert", detail))
            out.extend(_program_event(run) for run in call.execs)
        out.extend(_program_event(run) for run in round_.execs)
    return out, dict(usage)


def _model_event(
    event: MetaTurnFinished | ExpertCallFinished,
    asked: list[Any],
    usage: dict[str, Any],
    role: str,
    detail: dict[str, Any],
) -> Any:
    from inspect_ai.event import ModelEvent
    from inspect_ai.model import GenerateConfig, ModelOutput

    model = _model_name(event.model or "unknown")
    used = _usage(event.usage)
    usage[model] = _add(usage[model], used)
    output = ModelOutput.from_content(model, event.text)
    output.usage = used
    return ModelEvent(
        timestamp=_time(event.ts),
        model=model,
        role=role,
        input=asked,
        tools=[],
        tool_choice="none",
        config=GenerateConfig(),
        output=output,
        metadata={"conductor_event": event.kind, **detail},
    )


def _program_event(run: SandboxExec) -> Any:
    from inspect_ai.event import InfoEvent

    result = run.result
    return InfoEvent(
        timestamp=_time(run.ts),
        source="sandbox",
        data={
            "code": run.code,
            "exit_code": result.exit_code,
            "timed_out": result.timed_out,
            "stdout": result.stdout,
            "stderr": result.stderr,
        },
    )


def _add_remainder(usage: dict[str, Any], recorded: Usage, model: str) -> None:
    """Calls the run counted that are no turn or expert call (the notebook's recall asks
    the meta model) go to the meta model, so the sample's usage is the run's total."""
    from inspect_ai.model import ModelUsage

    seen_in = sum(u.input_tokens for u in usage.values())
    seen_out = sum(u.output_tokens for u in usage.values())
    extra_in, extra_out = recorded.input_tokens - seen_in, recorded.output_tokens - seen_out
    if extra_in > 0 or extra_out > 0:
        more = ModelUsage(
            input_tokens=max(extra_in, 0),
            output_tokens=max(extra_out, 0),
            total_tokens=max(extra_in, 0) + max(extra_out, 0),
        )
        usage[model] = _add(usage.get(model, ModelUsage()), more)


def _usage(used: Usage) -> Any:
    from inspect_ai.model import ModelUsage

    return ModelUsage(
        input_tokens=used.input_tokens,
        output_tokens=used.output_tokens,
        total_tokens=used.input_tokens + used.output_tokens,
        input_tokens_cache_read=used.cache_read_tokens or None,
        input_tokens_cache_write=used.cache_write_tokens or None,
        total_cost=used.cost_usd or None,
    )


def _add(a: Any, b: Any) -> Any:
    from inspect_ai.model import ModelUsage

    def both(x: int | float | None, y: int | float | None) -> Any:
        return None if x is None and y is None else (x or 0) + (y or 0)

    return ModelUsage(
        input_tokens=a.input_tokens + b.input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        total_tokens=a.total_tokens + b.total_tokens,
        input_tokens_cache_read=both(a.input_tokens_cache_read, b.input_tokens_cache_read),
        input_tokens_cache_write=both(a.input_tokens_cache_write, b.input_tokens_cache_write),
        total_cost=both(a.total_cost, b.total_cost),
    )


def _model_name(spec: str) -> str:
    """Inspect names a model `provider/name`; conductor's `provider:name` reads as that."""
    provider, sep, name = spec.partition(":")
    return f"{provider}/{name}" if sep and "/" not in provider else spec


def _time(ts: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(ts, tz=dt.UTC)


def _iso(ts: float) -> str:
    return _time(ts).isoformat()


def batch_samples(folder: Path) -> list[RunSample]:
    """The finished items of a batch folder, as its report counts them, each with its
    run's transcript (an item whose transcript is gone keeps what results.jsonl says)."""
    from conductor.batch.store import RESULTS_FILE, ResultsLog
    from record.reader import read_transcript

    records = ResultsLog(folder / RESULTS_FILE).read()
    samples = []
    for item_id, record in records.items():
        if not record.get("final"):
            continue
        relative = record.get("transcript")
        path = folder / relative if relative else None
        events = read_transcript(path).events if path is not None and path.exists() else []
        if not events:
            events = _from_record(record)
        samples.append(
            RunSample(
                id=item_id,
                events=events,
                target=record.get("target"),
                score=record.get("score"),
                usage=Usage.from_dict(record.get("usage")),
            )
        )
    return samples


def run_sample(events: list[Event]) -> RunSample:
    finished = next((e for e in reversed(events) if isinstance(e, RunFinished)), None)
    started = next((e for e in events if isinstance(e, RunStarted)), None)
    return RunSample(
        id=events[0].run_id if events else "run",
        events=events,
        target=started.target if started is not None else None,
        score=finished.score if finished is not None else None,
    )


def _from_record(record: Any) -> list[Event]:
    """A run known only from its batch record: its start and end, without the turns."""
    run_id = str(record.get("run_id") or record.get("item_id"))
    return [
        RunStarted(
            run_id=run_id, method=str(record.get("method", "")), target=record.get("target")
        ),
        RunFinished(
            run_id=run_id,
            status=str(record.get("status", "")),
            final_answer=record.get("answer"),
            rounds=int(record.get("rounds", 0)),
            usage=Usage.from_dict(record.get("usage")),
        ),
    ]
