"""N-best rescoring: Moses n-best lists (``i ||| hypothesis ||| features ||| score``, or
``translate --output-format nbest``'s ``i ||| hypothesis ||| score``) scored by a model's forced
decoding, its score set as a feature and as the total, each sentence's list re-sorted by it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from nmtkit.errors import ConfigError, DataError
from nmtkit.files import count_lines, read_lines
from nmtkit.outputs import open_output
from nmtkit.translation.forced import CHUNK_SIZE, ForcedScorer

NBEST_FORMS = "i ||| hypothesis ||| score, or i ||| hypothesis ||| features ||| score"


@dataclass(frozen=True, kw_only=True, slots=True)
class NbestEntry:
    """One n-best line.

    Attributes:
        index: the 0-based sentence number.
        text: the hypothesis.
        features: Moses' feature field (``Name= v1 v2 Other= v3``); '' when the line has none.
        score: the total score.
        rest: the fields after the score (e.g. Moses' word alignment), kept as they are.
        line: the 1-based line number in its file.
    """

    index: int
    text: str
    features: str
    score: float
    rest: tuple[str, ...] = ()
    line: int = 0


def parse_nbest_line(text: str, *, where: str) -> NbestEntry:
    """Read one n-best line (``where`` is its ``path:line``).

    Raises:
        DataError: fewer than three fields, or a sentence number or score that is not a number.
    """
    fields = [field.strip() for field in text.split("|||")]
    if len(fields) < 3:
        raise DataError(f"not an n-best line ({NBEST_FORMS})", where=where)
    features, score, rest = (
        ("", fields[2], ()) if len(fields) == 3 else (fields[2], fields[3], fields[4:])
    )
    if not fields[0].isdigit():
        raise DataError(f"sentence number {fields[0]!r} is not a number from 0 on", where=where)
    try:
        total = float(score)
    except ValueError:
        raise DataError(f"score {score!r} is not a number", where=where) from None
    return NbestEntry(
        index=int(fields[0]), text=fields[1], features=features, score=total, rest=tuple(rest)
    )


def set_feature(features: str, name: str, value: float) -> str:
    """``features`` with feature ``name``'s values replaced by ``value``, or it appended."""
    label, tokens, out, skipping = f"{name}=", features.split(), [], False
    for token in tokens:
        if token.endswith("="):
            skipping = token == label
        if not skipping:
            out.append(token)
    return " ".join([*out, label, f"{value:.6f}"])


def format_entry(entry: NbestEntry) -> str:
    """The Moses line ``i ||| hypothesis ||| features ||| score`` (and any fields kept after)."""
    fields = [str(entry.index), entry.text, entry.features, f"{entry.score:.6f}", *entry.rest]
    return " ||| ".join(fields) + "\n"


def read_nbest(path: str | Path, *, num_sentences: int) -> Iterator[list[NbestEntry]]:
    """Yield the n-best list of each sentence that has one, in order.

    Raises:
        DataError: a malformed line, a sentence number at or over ``num_sentences`` or below
            the one before it (a sentence's lines must be together, in order), invalid UTF-8.
    """
    group: list[NbestEntry] = []
    for number, text in enumerate(read_lines(path), start=1):
        where = f"{path}:{number}"
        entry = replace(parse_nbest_line(text or "", where=where), line=number)
        if entry.index >= num_sentences:
            raise DataError(
                f"sentence {entry.index}, but the source has {num_sentences} (numbered from 0)",
                where=where,
            )
        if group and entry.index < group[-1].index:
            raise DataError(
                f"sentence {entry.index} after sentence {group[-1].index}",
                where=where,
                hint="keep each sentence's hypotheses together, sentences in order",
            )
        if group and entry.index != group[-1].index:
            yield group
            group = []
        group.append(entry)
    if group:
        yield group


def check_nbest(src_path: str | Path, nbest_path: str | Path) -> int:
    """Read an n-best list and its source through, before any work: return its lines.

    Raises:
        DataError: see :func:`read_nbest`; an empty source line that has hypotheses; a missing
            or unreadable file.
    """
    sources = _sources(src_path)
    count = 0
    for group in read_nbest(nbest_path, num_sentences=count_lines(src_path)):
        sources(group[0].index)
        count += len(group)
    return count


def check_feature_name(name: str) -> None:
    """Raises ConfigError unless ``name`` can be a Moses feature name (no space, '=' or '|')."""
    if not name or any(c.isspace() or c in "=|" for c in name):
        raise ConfigError(
            f"--feature must be a name without spaces, '=' or '|', got {name!r}",
            hint="e.g. --feature nmt",
        )


def rescore_nbest(
    scorer: ForcedScorer,
    src_path: str | Path,
    nbest_path: str | Path,
    *,
    feature: str = "nmt",
    output: str = "-",
) -> int:
    """Score every hypothesis of an n-best list against its source line, set the score as
    feature ``feature`` (replaced, or appended) and as the total, and write each sentence's
    list re-sorted by it (ties keep their order) in Moses format; return the lines written.
    :func:`check_nbest` finds every problem of the input without a model.

    Raises:
        ConfigError: a bad feature name.
        DataError: see :func:`check_nbest`; ``output`` cannot be written.
    """
    check_feature_name(feature)
    num_sentences = count_lines(src_path)
    sources = _sources(src_path)
    groups = read_nbest(nbest_path, num_sentences=num_sentences)
    count = 0
    with open_output(output) as stream:
        while chunk := _take(groups, CHUNK_SIZE):
            src_lines = [sources(group[0].index) for group in chunk for _ in group]
            texts = [entry.text for group in chunk for entry in group]
            found = iter(scorer.score_texts(src_lines, texts))
            for group in chunk:
                rescored = [
                    replace(entry, features=set_feature(entry.features, feature, s), score=s)
                    for entry, s in zip(group, (next(found).score for _ in group), strict=True)
                ]
                for entry in sorted(rescored, key=lambda e: -e.score):
                    stream.write(format_entry(entry))
                    count += 1
            if output == "-":
                stream.flush()
    return count


def _take(groups: Iterator[list[NbestEntry]], size: int) -> list[list[NbestEntry]]:
    """The next sentences' lists, up to about ``size`` hypotheses (at least one sentence)."""
    chunk: list[list[NbestEntry]] = []
    total = 0
    for group in groups:
        chunk.append(group)
        total += len(group)
        if total >= size:
            break
    return chunk


def _sources(path: str | Path) -> Callable[[int], str]:
    """A reader of ``path``'s lines by 0-based index, called with indices that never fall.

    Raises:
        DataError: the line asked for is empty.
    """
    lines = enumerate(read_lines(path))
    current: tuple[int, str | None] = (-1, None)

    def line(index: int) -> str:
        nonlocal current
        while current[0] < index:
            current = next(lines)
        if not (current[1] or "").strip():
            raise DataError(
                "empty source line, but the n-best list has hypotheses for it",
                where=f"{path}:{index + 1}",
            )
        return current[1] or ""

    return line
