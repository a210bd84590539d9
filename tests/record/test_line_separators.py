"""A JSON Lines line ends at "\\n" only: U+2028, U+2029, U+0085, form feeds and the other
characters `str.splitlines` splits on may stand unescaped inside a JSON string, and every
reader of lines (task files, transcripts and their pages, published files, results,
notebook exports) keeps them inside the value."""

from __future__ import annotations

import json
from pathlib import Path

from fuzz_budget import TIERS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from published_builder import record, write_file

from conductor.batch.store import ResultsLog
from conductor.tasks.files import read_task_file
from conductor_kernel.events import FinalAnswer, RunStarted
from record.pages import TranscriptPages
from record.published import read_published
from record.reader import read_transcript
from record.writer import TranscriptWriter

# Every character str.splitlines splits on that JSON leaves unescaped.
SEPARATORS = "\u2028\u2029\x85\x1c\x1d\x1e"
WORDS = st.text(alphabet=st.sampled_from("ab " + SEPARATORS), min_size=1, max_size=10).filter(
    lambda text: text.strip() != ""
)
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@TIERS
def test_task_files_keep_separators_inside_values(budget: int, tmp_path: Path) -> None:
    @settings(SETTINGS, max_examples=budget * 4)
    @given(st.lists(WORDS, min_size=1, max_size=4), st.sampled_from([".jsonl", ".csv"]))
    def check(inputs: list[str], suffix: str) -> None:
        path = tmp_path / f"t{suffix}"
        if suffix == ".jsonl":
            rows = [json.dumps({"input": text}, ensure_ascii=False) for text in inputs]
            path.write_text("\n".join(rows) + "\n", encoding="utf-8")
        else:
            quoted = ['"' + text.replace('"', '""') + '"' for text in inputs]
            path.write_text("input\n" + "\n".join(quoted) + "\n", encoding="utf-8")
        items = read_task_file(path).items
        assert [item.input for item in items] == inputs
        assert [item.line for item in items] == list(
            range(1 + (suffix == ".csv"), len(inputs) + 1 + (suffix == ".csv"))
        )

    check()


@TIERS
def test_transcripts_pages_results_and_published_files_keep_them(
    budget: int, tmp_path: Path
) -> None:
    @settings(SETTINGS, max_examples=budget * 4)
    @given(WORDS)
    def check(text: str) -> None:
        path = tmp_path / "run.jsonl"
        path.unlink(missing_ok=True)
        with TranscriptWriter(path) as writer:
            writer.handle(RunStarted(run_id="r1", question=text))
            writer.handle(FinalAnswer(run_id="r1", answer=text))
        transcript = read_transcript(path, strict=True)
        assert [e.question for e in transcript.events if isinstance(e, RunStarted)] == [text]
        pages = TranscriptPages.open(path)
        events = [e for i in range(len(pages.pages)) for e in pages.events(i)]
        assert [e.answer for e in events if isinstance(e, FinalAnswer)] == [text]

        results = ResultsLog(tmp_path / "results.jsonl")
        results.path.unlink(missing_ok=True)
        results.append({"item_id": text, "final": True})
        assert list(results.read()) == [text] and not results.problems

        published = write_file(
            tmp_path / "pub.jsonl",
            record(text, text, (f'>> FINAL ANSWER:\n"""\n{text}\n"""', None)),
        )
        read = read_published(published)
        assert read.problem is None and [r.question for r in read.records] == [text]

    check()
