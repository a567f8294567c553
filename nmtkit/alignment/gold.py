"""Alignment quality against gold sure/possible links: precision, recall, AER (Och & Ney, 2003).

Counts are summed over the corpus before dividing, as in Och & Ney (2003), Section 5.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.table import Table

from nmtkit.alignment.links import Link
from nmtkit.alignment.pharaoh import GoldLinks, read_pharaoh
from nmtkit.errors import DataError
from nmtkit.files import display_name


@dataclass(frozen=True, kw_only=True, slots=True)
class AlignmentScores:
    """Link counts summed over a corpus, and the scores they give.

    Attributes:
        num_predicted: |A|, the predicted links.
        num_sure: |S|, the sure gold links.
        sure_hits: |A ∩ S|.
        possible_hits: |A ∩ P|, where P holds the sure links too.
    """

    num_sentences: int
    num_predicted: int
    num_sure: int
    sure_hits: int
    possible_hits: int

    @property
    def precision(self) -> float:
        """|A ∩ P| / |A|, or 0 when nothing is predicted."""
        return self.possible_hits / self.num_predicted if self.num_predicted else 0.0

    @property
    def recall(self) -> float:
        """|A ∩ S| / |S|, or 0 when the gold has no sure link."""
        return self.sure_hits / self.num_sure if self.num_sure else 0.0

    @property
    def aer(self) -> float:
        """1 - (|A ∩ S| + |A ∩ P|) / (|A| + |S|); lower is better."""
        return 1.0 - (self.sure_hits + self.possible_hits) / (self.num_predicted + self.num_sure)

    def to_dict(self) -> dict[str, float | int]:
        """Return the scores (fractions in [0, 1]) and the counts behind them."""
        scores = {"precision": self.precision, "recall": self.recall, "aer": self.aer}
        return {**scores, **asdict(self)}


@dataclass(frozen=True, kw_only=True, slots=True)
class GoldFile:
    """A gold alignment file in Pharaoh format, and how to read it.

    Attributes:
        one_indexed: the file counts words from 1 (the Hansards gold does).
        reverse: the file writes target-source pairs 'j-i'.
    """

    path: Path
    one_indexed: bool = False
    reverse: bool = False

    def read(self) -> list[GoldLinks]:
        """Return one (sure, possible) pair of 0-based (i, j) link sets per line.

        Raises:
            DataError: the file is unreadable or a line is malformed (naming file and line).
        """
        return read_pharaoh(self.path, one_indexed=self.one_indexed, reverse=self.reverse)


def alignment_error_rate(
    predicted: Iterable[Iterable[Link]],
    gold: Sequence[GoldLinks],
    *,
    predicted_name: str = "the predictions",
    gold_name: str = "the gold",
) -> AlignmentScores:
    """Score predicted links A against gold (S, P) pairs, counts summed over the corpus.

    Args:
        predicted: one iterable of (i, j) links per sentence pair; read once, in order.
        predicted_name, gold_name: what errors call the two sides, e.g. their file names.

    Raises:
        DataError: the two sides hold different numbers of sentences, or nothing is to score.
    """
    num_sentences = num_predicted = num_sure = sure_hits = possible_hits = 0
    for links in predicted:
        if num_sentences < len(gold):
            sure, possible = gold[num_sentences]
            found = set(links)
            num_predicted += len(found)
            num_sure += len(sure)
            sure_hits += len(found & sure)
            possible_hits += len(found & (possible | sure))
        num_sentences += 1
    if num_sentences != len(gold):
        raise DataError(
            f"{num_sentences} alignments in {predicted_name} but {len(gold)} in {gold_name}",
            hint="both need one line per sentence pair",
        )
    if num_predicted + num_sure == 0:
        raise DataError("nothing to score: no predicted and no sure gold links")
    return AlignmentScores(
        num_sentences=num_sentences,
        num_predicted=num_predicted,
        num_sure=num_sure,
        sure_hits=sure_hits,
        possible_hits=possible_hits,
    )


def score_alignment_file(path: str | Path, gold: GoldFile) -> AlignmentScores:
    """Score a Pharaoh file of 0-based source-target links (from any aligner) against a gold file.

    Raises:
        DataError: a file is unreadable or malformed, or their line counts differ.
    """
    name = display_name(path)
    predicted = (possible for _, possible in read_pharaoh(path))
    return alignment_error_rate(
        predicted, gold.read(), predicted_name=name, gold_name=str(gold.path)
    )


def report_line(scores: AlignmentScores) -> str:
    """Return 'P<TAB>R<TAB>AER' in percent, two decimals."""
    return "\t".join(f"{100 * x:.2f}" for x in (scores.precision, scores.recall, scores.aer))


def report_json(scores: AlignmentScores) -> str:
    """Return the scores and counts as a JSON object (see :meth:`AlignmentScores.to_dict`)."""
    return json.dumps(scores.to_dict(), indent=2)


def report_table(scores: AlignmentScores) -> Table:
    """Render the scores as a rich table, in percent with one decimal."""
    table = Table(title=f"Alignment quality on {scores.num_sentences} sentence pairs")
    for column in ("Precision", "Recall", "AER", "|A|", "|S|"):
        table.add_column(column, justify="right")
    table.add_row(
        *(f"{100 * x:.1f}" for x in (scores.precision, scores.recall, scores.aer)),
        str(scores.num_predicted),
        str(scores.num_sure),
    )
    return table
