"""Our rhyme rule against hand-labelled line-end pairs (tests/data/rhyme_pairs.tsv).

`python tests/conductor/scoring/test_rhyme_labels.py` prints the figures docs/scoring.md gives, and every
pair where our rule and the label part.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from conductor.scoring import sonnet_paper
from conductor.scoring.rhyme import rhyme, rhyme_kind

PAIRS = Path(__file__).resolve().parents[2] / "data" / "rhyme_pairs.tsv"


def labelled() -> list[tuple[str, str, str, str]]:
    rows = []
    for raw in PAIRS.read_text(encoding="utf-8").splitlines():
        if raw.strip() and not raw.startswith("#"):
            a, b, label, reason = raw.split("\t")
            rows.append((a, b, label, reason))
    return rows


def paper_accepts(a: str, b: str) -> bool | None:
    """The paper's pair test (perfect or slant), None when a word is not in its dictionary."""
    known = sonnet_paper._dictionary_words()
    if a not in known or b not in known:
        return None
    return a != b and sonnet_paper.pair_rhymes(a, b) is not None


def test_the_labelled_set_is_large_varied_and_explained() -> None:
    rows = labelled()
    counts = Counter(label for _, _, label, _ in rows)
    assert len(rows) >= 200 and set(counts) == {"rhyme", "slant", "none"}
    assert min(counts.values()) >= 45
    assert all(reason.strip() for *_, reason in rows)
    assert len({tuple(sorted((a, b))) for a, b, *_ in rows}) == len(rows)  # no repeats


def test_our_rule_agrees_with_the_labels() -> None:
    rows = labelled()
    binary = sum(rhyme(a, b) == (label != "none") for a, b, label, _ in rows)
    three_way = sum((rhyme_kind(a, b) or "none") == label for a, b, label, _ in rows)
    assert binary / len(rows) >= 0.95
    assert (binary, three_way, len(rows)) == (342, 332, 349)  # as docs/scoring.md says


def test_the_papers_pair_test_agrees_less() -> None:
    rows = [(a, b, label) for a, b, label, _ in labelled() if paper_accepts(a, b) is not None]
    agree = sum(paper_accepts(a, b) == (label != "none") for a, b, label in rows)
    assert (agree, len(rows)) == (274, 347)


def test_the_issues_examples_are_rhymes_and_a_word_is_not_its_own_rhyme() -> None:
    for a, b in [
        ("near", "hear"),
        ("desire", "aspire"),
        ("conspire", "afire"),
        ("ease", "release"),
        ("calls", "fall"),
        ("see", "destiny"),
        ("dwell", "rebels"),
    ]:
        assert rhyme(a, b), (a, b)
    assert not rhyme("love", "love") and not rhyme("cat", "bit")


if __name__ == "__main__":
    rows = labelled()
    for a, b, label, reason in rows:
        ours = rhyme_kind(a, b) or "none"
        if (ours != "none") != (label != "none"):
            print(f"{a}/{b}: labelled {label}, ours {ours} ({reason})")
    binary = sum(rhyme(a, b) == (label != "none") for a, b, label, _ in rows)
    print(f"ours: {binary}/{len(rows)} accept/reject agree; labels {Counter(r[2] for r in rows)}")
