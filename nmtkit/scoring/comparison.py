"""Systems scored against the same references: scores, paired tests, BLEU by length.

What ``nmtkit score`` computes from files, and how it shows it: rich tables, stdout lines, JSON.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.table import Table

from nmtkit.errors import ConfigError, DataError
from nmtkit.files import check_line_counts, display_name
from nmtkit.scoring.length_buckets import (
    BUCKET_BY,
    DEFAULT_EDGES,
    LengthReport,
    bleu_by_length,
    check_edges,
    sentence_lengths,
)
from nmtkit.scoring.metrics import ScoreReport, check_options, read_stream, score
from nmtkit.scoring.significance import (
    SignificanceOptions,
    SignificanceReport,
    check_significance_options,
    paired_test,
)
from nmtkit.scoring.terms import NAME as TERM_NAME
from nmtkit.scoring.terms import RequiredTerms, TermAccuracy, term_accuracy

log = logging.getLogger(__name__)

_TEST_NAMES = {"bs": "paired bootstrap", "ar": "approximate randomization"}
_SAMPLE_NAMES = {"bs": "resamples", "ar": "trials"}


@dataclass(frozen=True, kw_only=True, slots=True)
class LengthOptions:
    """How to bucket sentences for BLEU by length.

    Attributes:
        edges: bucket edges in words, from 0: (0, 10, 20) is [0, 10), [10, 20), [20, inf).
        by: 'source' or 'reference'; None is 'source' when ``src_path`` is given, else
            'reference' (the first reference stream).
        src_path: the source sentences, line-parallel with the references.
    """

    edges: tuple[int, ...] = DEFAULT_EDGES
    by: str | None = None
    src_path: Path | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Comparison:
    """The scores of several systems (the first is the baseline) on the same references, with
    each system's term accuracy (``terms``) when required terms were given."""

    names: tuple[str, ...]
    ref_names: tuple[str, ...]
    reports: tuple[ScoreReport, ...]
    significance: SignificanceReport | None = None
    by_length: LengthReport | None = None
    terms: tuple[TermAccuracy, ...] | None = None

    @property
    def num_sentences(self) -> int:
        return self.reports[0].num_sentences

    @property
    def warnings(self) -> tuple[str, ...]:
        """Every system's warnings, each after the system's name."""
        return tuple(
            f"{name}: {warning}"
            for name, report in zip(self.names, self.reports, strict=True)
            for warning in report.warnings
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready report (the schema is in docs/analysis.md)."""
        scores = [
            {"system": name, **item}
            for name, report in zip(self.names, self.reports, strict=True)
            for item in report.to_dict()["scores"]
        ]
        sig = self.significance
        return {
            "num_sentences": self.num_sentences,
            "references": list(self.ref_names),
            "systems": list(self.names),
            "scores": scores,
            "warnings": list(self.warnings),
            "significance": None if sig is None else sig.to_dict(self.names),
            "by_length": None if self.by_length is None else self.by_length.to_dict(),
            "term_accuracy": None
            if self.terms is None
            else [
                {"system": name, **accuracy.to_dict()}
                for name, accuracy in zip(self.names, self.terms, strict=True)
            ],
        }


def _system_names(hyp_paths: Sequence[str | Path], names: Sequence[str] | None) -> tuple[str, ...]:
    if not hyp_paths:
        raise ConfigError("no system to score", hint="give hypotheses files, or pipe one in")
    if sum(str(path) == "-" for path in hyp_paths) > 1:
        raise ConfigError("stdin ('-') can be read only once")
    if names and len(names) != len(hyp_paths):
        raise ConfigError(
            f"{len(names)} names given for {len(hyp_paths)} systems",
            hint="give one --name per system, in the same order",
        )
    labels = tuple(names) if names else tuple(display_name(path) for path in hyp_paths)
    for label in labels:
        if labels.count(label) > 1:
            raise ConfigError(f"system {label!r} is given twice", hint="name them with --name")
    return labels


def _bucket_measure(options: LengthOptions) -> str:
    by = options.by or ("source" if options.src_path is not None else "reference")
    if by not in BUCKET_BY:
        raise ConfigError(f"unknown bucket measure {by!r}", hint="choose from source, reference")
    if by == "source" and options.src_path is None:
        raise ConfigError("bucketing by source length needs the source", hint="give --source")
    check_edges(options.edges)
    return by


_PARALLEL = "hypotheses and references must be line-parallel"


def _read_parallel(
    hyp_paths: Sequence[str | Path], ref_paths: Sequence[str | Path]
) -> tuple[list[list[str]], list[list[str]]]:
    """Read the systems and references; every file must have the first system's line count."""
    systems = [read_stream(path) for path in hyp_paths]
    refs = [read_stream(path) for path in ref_paths]
    first = hyp_paths[0]
    for ref_path, stream in zip(ref_paths, refs, strict=True):
        check_line_counts(first, len(systems[0]), ref_path, len(stream), hint=_PARALLEL)
    for path, hyps in zip(hyp_paths[1:], systems[1:], strict=True):
        check_line_counts(path, len(hyps), ref_paths[0], len(refs[0]), hint=_PARALLEL)
    return systems, refs


def _lengths(
    by: str, src_path: Path | None, refs: list[list[str]], ref_path: str | Path
) -> list[int]:
    if by == "reference" or src_path is None:
        return sentence_lengths(refs[0])
    src = read_stream(src_path)
    check_line_counts(
        src_path,
        len(src),
        ref_path,
        len(refs[0]),
        hint="the source must be line-parallel with the references",
    )
    return sentence_lengths(src)


def compare_files(
    hyp_paths: Sequence[str | Path],
    ref_paths: Sequence[str | Path],
    *,
    names: Sequence[str] | None = None,
    metrics: Sequence[str] = ("bleu", "chrf", "ter"),
    lowercase: bool = False,
    tokenize: str | None = None,
    significance: SignificanceOptions | None = None,
    by_length: LengthOptions | None = None,
    terms: RequiredTerms | None = None,
) -> Comparison:
    """Score systems (files, '-' for stdin; the first is the baseline) against references.

    Args:
        names: a label per system; the file names by default.
        metrics, lowercase, tokenize: as for :func:`nmtkit.scoring.metrics.score`.
        significance: run this paired test of every system against the first.
        by_length: also compute BLEU per sentence-length bucket.
        terms: also compute each system's term accuracy
            (:func:`nmtkit.scoring.terms.term_accuracy`); a line of terms per hypothesis line.

    Raises:
        ConfigError: bad options, checked before any file is read.
        DataError: an unreadable file, files with different line counts (both named), or a
            term with no word (naming the terms file and line).
    """
    keys = check_options(metrics, tokenize)
    labels = _system_names(hyp_paths, names)
    if not ref_paths:
        raise DataError("no reference file given")
    if significance is not None:
        check_significance_options(significance, num_systems=len(hyp_paths))
    by = None if by_length is None else _bucket_measure(by_length)
    systems, refs = _read_parallel(hyp_paths, ref_paths)
    if terms is not None:
        check_line_counts(
            hyp_paths[0],
            len(systems[0]),
            terms.name,
            len(terms.lines),
            hint="give one line of terms per hypothesis line, an empty line for none",
        )
    accuracies = (
        None
        if terms is None
        else tuple(term_accuracy(hyps, terms.lines, name=terms.name) for hyps in systems)
    )
    reports = tuple(
        score(hyps, refs, metrics=keys, lowercase=lowercase, tokenize=tokenize) for hyps in systems
    )
    tests = None
    if significance is not None:
        options = significance
        tests = paired_test(
            systems, refs, options=options, metrics=keys, lowercase=lowercase, tokenize=tokenize
        )
    buckets = None
    if by_length is not None and by is not None:
        lengths = _lengths(by, by_length.src_path, refs, ref_paths[0])
        edges = by_length.edges
        buckets = bleu_by_length(
            systems, refs, lengths, by=by, edges=edges, lowercase=lowercase, tokenize=tokenize
        )
    return Comparison(
        names=labels,
        ref_names=tuple(display_name(path) for path in ref_paths),
        reports=reports,
        significance=tests,
        by_length=buckets,
        terms=accuracies,
    )


# ------------------------------------------------------------------------------ rendering


def _cell(report: ScoreReport, index: int, tests: SignificanceReport | None, row: int) -> str:
    """One table cell: the score, with the test's mean ± CI and p-value when a test ran."""
    if tests is None:
        return f"{report.scores[index].score:.2f}"
    result = tests.metrics[index].results[row]
    lines = [f"{result.score:.2f}"]
    if result.mean is not None and result.ci is not None:
        lines.append(f"(μ = {result.mean:.2f} ± {result.ci:.2f})")
    if result.p_value is not None:
        lines.append(f"(p = {result.p_value:.4f})" + ("*" if result.significant else ""))
    return "\n".join(lines)


def comparison_table(comparison: Comparison) -> Table:
    """Render one row per system and a column per metric, then term accuracy when computed.

    With a paired test, the baseline's row is labelled, and cells hold the bootstrap mean ± half
    the 95% CI (bootstrap only) and the p-value, marked '*' below 0.05, as sacrebleu prints them.
    """
    tests = comparison.significance
    title = f"Scores on {comparison.num_sentences} sentences"
    if tests is not None:
        test_name, samples = _TEST_NAMES[tests.test], _SAMPLE_NAMES[tests.test]
        title += f", {test_name} ({tests.num_samples} {samples})"
    table = Table(title=title)
    table.add_column("System", overflow="fold")
    for item in comparison.reports[0].scores:
        table.add_column(item.name, justify="right")
    if comparison.terms is not None:
        table.add_column(TERM_NAME, justify="right")
    for row, (name, report) in enumerate(zip(comparison.names, comparison.reports, strict=True)):
        label = f"Baseline: {name}" if tests is not None and row == 0 else name
        cells = [_cell(report, k, tests, row) for k in range(len(report.scores))]
        if comparison.terms is not None:
            cells.append(comparison.terms[row].text)
        table.add_row(label, *cells, end_section=tests is not None)
    return table


def signature_lines(comparison: Comparison) -> list[str]:
    """Return 'METRIC  SIGNATURE' lines for the scores (with the test's seed and samples)."""
    if comparison.significance is not None:
        pairs = [(m.name, m.signature) for m in comparison.significance.metrics]
    else:
        pairs = [(s.name, s.signature) for s in comparison.reports[0].scores]
    if comparison.terms is not None:
        pairs.append((TERM_NAME, comparison.terms[0].signature))
    return [f"{name:<6} {signature}" for name, signature in pairs]


def length_table(report: LengthReport, names: Sequence[str]) -> Table:
    """Render BLEU by length: a row per bucket with its sentence count and each system's BLEU."""
    num_sentences = sum(bucket.num_sentences for bucket in report.buckets)
    table = Table(title=f"BLEU by {report.by} length on {num_sentences} sentences")
    table.add_column("Length")
    table.add_column("Sentences", justify="right")
    for name in names:
        table.add_column(name, justify="right", overflow="fold")
    for bucket in report.buckets:
        cells = ["-" if bleu is None else f"{bleu:.2f}" for bleu in bucket.bleu]
        table.add_row(bucket.label, str(bucket.num_sentences), *cells)
    return table


def comparison_views(comparison: Comparison) -> list[tuple[Table, list[str]]]:
    """Return what ``nmtkit score`` shows on stderr: each table, with signature lines for below."""
    views = [(comparison_table(comparison), signature_lines(comparison))]
    if comparison.by_length is not None:
        table = length_table(comparison.by_length, comparison.names)
        views.append((table, [f"{'BLEU':<6} {comparison.by_length.signature}"]))
    return views


def comparison_lines(comparison: Comparison) -> list[str]:
    """Return the stdout lines: ``METRIC<TAB>SCORE<TAB>SIGNATURE`` per metric and system.

    With several systems each line starts with the system's name and a tab. With term accuracy,
    each system's metrics are followed by ``TermAcc<TAB>SCORE<TAB>matched:N|nterms:M|...``
    (SCORE 'n/a' when no term is required).
    """
    several = len(comparison.names) > 1
    lines: list[str] = []
    for row, (name, report) in enumerate(zip(comparison.names, comparison.reports, strict=True)):
        prefix = f"{name}\t" if several else ""
        lines.extend(
            f"{prefix}{item.name}\t{item.score:.2f}\t{item.signature}" for item in report.scores
        )
        if comparison.terms is not None:
            accuracy = comparison.terms[row]
            score = "n/a" if accuracy.score is None else f"{accuracy.score:.2f}"
            signature = f"matched:{accuracy.matched}|{accuracy.signature}"
            lines.append(f"{prefix}{TERM_NAME}\t{score}\t{signature}")
    return lines


def comparison_json(comparison: Comparison) -> str:
    """Render the whole comparison as one JSON object (see :meth:`Comparison.to_dict`)."""
    return json.dumps(comparison.to_dict(), ensure_ascii=False, indent=2)
