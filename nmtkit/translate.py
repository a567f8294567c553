"""Translator: raw lines in, detokenized translations out, streamed in chunks.

Each chunk is sorted by length, cut into batches, searched, and written back in input order,
so that a pipe or an interactive session sees each chunk as soon as it is done.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from nmtkit import registry
from nmtkit.align import argmax_links, format_pharaoh, piece_weights_to_words
from nmtkit.checkpoint import LoadedModel, load_model
from nmtkit.config import ComponentSpec
from nmtkit.data.batching import collate_source
from nmtkit.data.text import BOS_ID, EOS_ID, PAD_ID
from nmtkit.errors import ConfigError
from nmtkit.files import read_lines
from nmtkit.models import Seq2Seq
from nmtkit.registry import Hypothesis, SearchStrategy

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True, slots=True)
class Candidate:
    """One hypothesis as text: its length-normalized score and word alignment (Pharaoh)."""

    text: str
    score: float
    alignment: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Translation:
    """The translations of input line ``index`` (0-based), best first."""

    index: int
    source: str
    candidates: tuple[Candidate, ...]

    @property
    def text(self) -> str:
        return self.candidates[0].text if self.candidates else ""


def build_strategy(spec: ComponentSpec) -> SearchStrategy:
    """Instantiate a registered search strategy from its spec."""
    return registry.get("search", spec.name)(spec.options)


def max_lengths(src_lengths: torch.Tensor, *, a: float, b: int) -> torch.Tensor:
    """Output caps a * |x| + b per sentence (source length without EOS): [B]."""
    return (a * (src_lengths - 1).float() + b).floor().long().clamp(min=1)


def decode_sequences(
    model: Seq2Seq,
    sequences: Sequence[Sequence[int]],
    strategy: SearchStrategy,
    *,
    batch_size: int,
    max_len_a: float,
    max_len_b: int,
    with_weights: bool = False,
) -> list[list[Hypothesis]]:
    """Search every id sequence, batching by length; results come back in input order."""
    order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
    results: list[list[Hypothesis]] = [[] for _ in sequences]
    model.eval()
    device = next(model.parameters()).device
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            src, lengths = collate_source([sequences[i] for i in chunk])
            src, lengths = src.to(device), lengths.to(device)
            found = strategy.search(
                model,
                src,
                lengths,
                max_lengths=max_lengths(lengths, a=max_len_a, b=max_len_b),
                pad_id=PAD_ID,
                bos_id=BOS_ID,
                eos_id=EOS_ID,
                with_weights=with_weights,
            )
            for i, hyps in zip(chunk, found, strict=True):
                results[i] = hyps
    return results


class Translator:
    """Translate raw text with a loaded model.

    Args:
        loaded: the model and its text pipelines (:func:`nmtkit.checkpoint.load_model`).
        strategy: the search; the checkpoint's configured one when None.
        nbest: hypotheses kept per sentence (at most the beam size).
        with_alignment: compute each hypothesis's word alignment from its attention.
    """

    def __init__(
        self,
        loaded: LoadedModel,
        *,
        strategy: SearchStrategy | None = None,
        batch_size: int | None = None,
        max_len_a: float | None = None,
        max_len_b: int | None = None,
        nbest: int = 1,
        with_alignment: bool = False,
    ) -> None:
        search = loaded.config.search
        self.loaded = loaded
        self.strategy = strategy or build_strategy(search.strategy)
        self.batch_size = batch_size or search.batch_size
        self.max_len_a = search.max_len_a if max_len_a is None else max_len_a
        self.max_len_b = search.max_len_b if max_len_b is None else max_len_b
        self.nbest = nbest
        self.with_alignment = with_alignment
        self.max_src_len = loaded.vocab.max_src_len

    def translate_stream(
        self, path: str | Path, *, chunk_size: int | None = None
    ) -> Iterator[Translation]:
        """Translate a file or stdin ('-'); a terminal gets each line translated as it comes.

        Raises:
            DataError: the input is missing or not valid UTF-8 (naming the line).
        """
        if chunk_size is None:
            chunk_size = 1 if str(path) == "-" and sys.stdin.isatty() else 1000
        lines = (line or "" for line in read_lines(path))
        yield from self.translate(lines, chunk_size=chunk_size)

    def translate(self, lines: Iterable[str], *, chunk_size: int = 1000) -> Iterator[Translation]:
        """Translate ``lines`` in chunks of ``chunk_size``, yielding results in input order."""
        chunk: list[str] = []
        offset = 0
        for line in lines:
            chunk.append(line)
            if len(chunk) >= chunk_size:
                yield from self.translate_chunk(chunk, offset=offset)
                offset += len(chunk)
                chunk = []
        if chunk:
            yield from self.translate_chunk(chunk, offset=offset)

    def translate_chunk(self, lines: Sequence[str], *, offset: int = 0) -> list[Translation]:
        """Translate one chunk of lines numbered from ``offset``."""
        src_text = self.loaded.src_text
        ids = [src_text.encode(line) if line.strip() else [] for line in lines]
        for number, seq in enumerate(ids, start=offset + 1):
            if len(seq) > self.max_src_len:
                log.warning(
                    "input line %d has %d pieces, over the model's %d: translating the first %d",
                    number,
                    len(seq),
                    self.max_src_len,
                    self.max_src_len,
                )
        ids = [seq[: self.max_src_len] for seq in ids]
        pieces = [src_text.id_to_piece(seq) for seq in ids]
        busy = [i for i, seq in enumerate(ids) if seq]
        found = decode_sequences(
            self.loaded.model,
            [ids[i] for i in busy],
            self.strategy,
            batch_size=self.batch_size,
            max_len_a=self.max_len_a,
            max_len_b=self.max_len_b,
            with_weights=self.with_alignment,
        )
        hypotheses: list[list[Hypothesis]] = [[] for _ in lines]
        for i, hyps in zip(busy, found, strict=True):
            hypotheses[i] = hyps[: self.nbest]
        return [
            Translation(
                index=offset + i,
                source=line,
                candidates=tuple(self._candidate(h, pieces[i]) for h in hypotheses[i])
                or (Candidate(text="", score=0.0, alignment="" if self.with_alignment else None),),
            )
            for i, line in enumerate(lines)
        ]

    def _candidate(self, hyp: Hypothesis, src_pieces: list[str]) -> Candidate:
        text = self.loaded.tgt_text.decode(hyp.tokens)
        alignment = None
        if self.with_alignment and hyp.weights is not None:
            tgt_pieces = self.loaded.tgt_text.id_to_piece(hyp.tokens)
            alignment = word_alignment(hyp.weights, src_pieces, tgt_pieces)
        return Candidate(text=text, score=hyp.score, alignment=alignment)


def open_translator(
    model_path: str | Path,
    *,
    beam: int | None = None,
    length_penalty: float | None = None,
    batch_size: int | None = None,
    max_len_a: float | None = None,
    max_len_b: int | None = None,
    nbest: int = 1,
    with_alignment: bool = False,
    device: str = "cpu",
    threads: int | None = None,
) -> Translator:
    """Load a model and set up its translator; None keeps the model's own search settings.

    Raises:
        CheckpointError: ``model_path`` holds no usable checkpoint.
        ConfigError: ``nbest`` above the beam size, or a beam or batch size below 1.
    """
    if batch_size is not None and batch_size < 1:
        raise ConfigError(f"--batch-size must be at least 1, got {batch_size}")
    if threads:
        torch.set_num_threads(threads)
    loaded = load_model(model_path, device=device)
    spec = loaded.config.search.strategy
    if beam == 1:
        spec = ComponentSpec(name="greedy", options=registry.get("search", "greedy").Config())
    elif beam is not None or length_penalty is not None:
        options = spec.options if spec.name == "beam" else registry.get("search", "beam").Config()
        changes = {"beam_size": beam, "length_penalty": length_penalty}
        options = dataclasses.replace(
            options, **{k: v for k, v in changes.items() if v is not None}
        )
        spec = ComponentSpec(name="beam", options=options)
    if beam is not None and beam < 1:
        raise ConfigError(f"--beam must be at least 1, got {beam}")
    width = getattr(spec.options, "beam_size", 1)
    if nbest < 1 or nbest > width:
        raise ConfigError(f"--nbest must be between 1 and the beam size ({width}), got {nbest}")
    return Translator(
        loaded,
        strategy=build_strategy(spec),
        batch_size=batch_size,
        max_len_a=max_len_a,
        max_len_b=max_len_b,
        nbest=nbest,
        with_alignment=with_alignment,
    )


def word_alignment(weights: torch.Tensor, src_pieces: list[str], tgt_pieces: list[str]) -> str:
    """Pharaoh links from attention over pieces [T+1, S+1] (EOS step and position included)."""
    if not src_pieces or not tgt_pieces:
        return ""
    return format_pharaoh(argmax_links(piece_weights_to_words(weights, src_pieces, tgt_pieces)))
