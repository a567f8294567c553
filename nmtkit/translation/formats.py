"""Output formats of ``translate``: plain text, Moses n-best lists, and JSON lines."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

from nmtkit.alignment.links import Link
from nmtkit.alignment.pharaoh import format_pharaoh
from nmtkit.errors import unknown_name
from nmtkit.outputs import check_writable, open_output
from nmtkit.translation.results import Candidate, Translation


def format_text(item: Translation) -> str:
    return item.text + "\n"


def format_nbest(item: Translation) -> str:
    """Moses n-best lines: ``i ||| hypothesis ||| score`` (0-based sentence number)."""
    return "".join(f"{item.index} ||| {c.text} ||| {c.score:.6f}\n" for c in item.candidates)


def format_jsonl(item: Translation) -> str:
    """One JSON object per line: source, best translation, score, alignment and n-best; with
    sentence splitting, also ``parts``, each sentence with its translation, score and
    alignment; under constraints or a glossary, ``terms`` (for the best and each n-best
    candidate): each term's target and source (null for a bare constraint), whether it is
    ``met`` and whether its words are ``aligned`` to its source term (null when unknown)."""
    best = item.candidates[0]
    record: dict[str, Any] = {
        "id": item.index,
        "src": item.source,
        "hyp": best.text,
        "score": round(best.score, 6),
        "alignment": _pharaoh(best.links),
        "nbest": [
            {"hyp": c.text, "score": round(c.score, 6), "alignment": _pharaoh(c.links)} | _terms(c)
            for c in item.candidates
        ],
    } | _terms(best)
    if item.parts is not None:
        record["parts"] = [
            {
                "src": part.source,
                "hyp": part.candidate.text,
                "score": round(part.candidate.score, 6),
                "alignment": _pharaoh(part.candidate.links),
            }
            for part in item.parts
        ]
    return json.dumps(record, ensure_ascii=False) + "\n"


def _terms(candidate: Candidate) -> dict[str, Any]:
    """``{"terms": [...]}``, how ``candidate`` uses its terms, or nothing when it had none."""
    if not candidate.terms:
        return {}
    return {
        "terms": [
            {"target": t.target, "source": t.source, "met": t.met, "aligned": t.aligned}
            for t in candidate.terms
        ]
    }


def _pharaoh(links: tuple[Link, ...] | None) -> str | None:
    return None if links is None else format_pharaoh(list(links))


FORMATS: dict[str, Callable[[Translation], str]] = {
    "text": format_text,
    "nbest": format_nbest,
    "jsonl": format_jsonl,
}


def check_output(path: str, fmt: str) -> None:
    """Check ``translate``'s output before the model loads: a known format, and a ``path``
    ('-' is stdout) that can be written, so that no work is lost to a bad one.

    Raises:
        ConfigError: unknown format.
        DataError: ``path`` cannot be written (a missing folder, a folder, a read-only place).
    """
    if fmt not in FORMATS:
        raise unknown_name("output format", fmt, FORMATS)
    check_writable(path)


@contextlib.contextmanager
def open_translation_writer(path: str, fmt: str) -> Iterator[Callable[[Translation], None]]:
    """Yield a function that writes one translation in ``fmt`` to ``path`` ('-' is stdout).

    Output to a file is atomic (renamed into place at the end); stdout is flushed after each
    translation so that pipes and terminals see results as they come.

    Raises:
        ConfigError: unknown format.
    """
    if fmt not in FORMATS:
        raise unknown_name("output format", fmt, FORMATS)
    formatter = FORMATS[fmt]
    with contextlib.ExitStack() as stack:
        stream = stack.enter_context(open_output(path))

        def write(item: Translation) -> None:
            stream.write(formatter(item))
            if path == "-":
                stream.flush()

        yield write
