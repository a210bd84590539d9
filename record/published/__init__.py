"""The meta-prompting paper's published runs: read them (read.py: the records, and what
the original harness did in each), and make a record our events (events.py: the one
conversion the importer, the audit, the replay and the notebook use).

Pure, no replay and no I/O beyond reading the file: `experts.replay`,
`conductor.replay.runner` and `transcripts.importer` build on it.
"""

from record.published.events import (
    example_events,
    published_events,
    recorded_result,
    run_id_for,
    without_calls,
)
from record.published.read import (
    ANSWER_MARK,
    CODE_HEADER,
    MODEL,
    OUTPUT_HEADER,
    RUN_MARKER,
    PublishedFile,
    PublishedRecord,
    PublishedTurn,
    RecordedCall,
    harness_answer,
    harness_calls,
    must_be_a_file,
    normalise_expert_name,
    nothing_readable,
    parse_record,
    read_published,
    split_outputs,
    split_python_output,
    strip_round,
)

__all__ = [
    "ANSWER_MARK",
    "CODE_HEADER",
    "MODEL",
    "OUTPUT_HEADER",
    "RUN_MARKER",
    "PublishedFile",
    "PublishedRecord",
    "PublishedTurn",
    "RecordedCall",
    "example_events",
    "harness_answer",
    "harness_calls",
    "must_be_a_file",
    "normalise_expert_name",
    "nothing_readable",
    "parse_record",
    "published_events",
    "read_published",
    "recorded_result",
    "run_id_for",
    "split_outputs",
    "split_python_output",
    "strip_round",
    "without_calls",
]
