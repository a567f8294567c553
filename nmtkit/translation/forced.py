"""Forced decoding: what a model thinks of given translations. Teacher forcing through the model
gives each pair's log p, the score the search would rank it by, and its perplexity, batched by
length under a token budget and streamed back in input order (``nmtkit score-pairs``).

A translation's ``score`` is the search's own (:meth:`nmtkit.registry.SearchStrategy.score`):
scoring what ``translate`` produced gives back the score it reported, to float rounding, when
both run at one precision (without ``--shortlist``, which renormalizes over fewer words) and
the text encodes to the pieces the search chose.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from nmtkit.checkpoint import LoadedModel, load_model
from nmtkit.data.batching import collate
from nmtkit.data.text import PAD_ID
from nmtkit.errors import ConfigError, DataError, unknown_name
from nmtkit.files import read_pairs
from nmtkit.models import Seq2Seq
from nmtkit.models.inference_weights import prepare_weights
from nmtkit.outputs import open_output
from nmtkit.registry import Batch, SearchStrategy
from nmtkit.runtime import autocast, resolve_search_precision, tune_allocator
from nmtkit.search.decode import build_strategy
from nmtkit.search.length_policy import LengthPolicy
from nmtkit.search.overrides import SearchOverrides, describe_search, resolve_search

log = logging.getLogger(__name__)

CHUNK_SIZE = 1000  # pairs read, sorted by length and batched at a time
# A batch of more target x source positions than this is forced step by step: every batch of
# ordinary sentences under the default token budget stays below it (8192 x 250 pieces).
STEP_CELLS = 1 << 22


@dataclass(frozen=True, kw_only=True, slots=True)
class PairScore:
    """The model's view of one translation.

    Attributes:
        log_prob: log p(y | x), summed over the target pieces and EOS.
        num_tokens: |y|, the target pieces and EOS.
        score: the search's score of the translation (length-normalized as its strategy says).
    """

    log_prob: float
    num_tokens: int
    score: float

    @property
    def ppl(self) -> float:
        """Perplexity, exp(-log p / |y|)."""
        nll = -self.log_prob / self.num_tokens
        return math.exp(nll) if nll < 700 else math.inf


class ForcedScorer:
    """Score translations with a loaded model by teacher forcing.

    Args:
        loaded: the model and its text pipelines (:func:`nmtkit.checkpoint.load_model`).
        strategy: whose :meth:`~nmtkit.registry.SearchStrategy.score` gives ``score``; the
            model's configured search when None.
        batch_size: the most pairs in a batch.
        lengths: the token budget of a batch (``max_tokens``, the longer side counts); its
            ``max_source_len`` is not applied (a cut would change the pair being scored).
        precision: of the matrix products, as ``translate --precision`` (``int8`` quantizes the
            loaded model's decoder in place); the model's ``search.precision`` when None.

    Raises:
        ConfigError: a batch size below 1, an unknown precision, ``int8`` without torchao or
            ``packed16`` without fbgemm.
    """

    def __init__(
        self,
        loaded: LoadedModel,
        *,
        strategy: SearchStrategy | None = None,
        batch_size: int = 64,
        lengths: LengthPolicy | None = None,
        precision: str | None = None,
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"--batch-size must be at least 1, got {batch_size}")
        self.loaded = loaded
        self.strategy = strategy or build_strategy(loaded.config.search.strategy)
        self.batch_size = batch_size
        self.lengths = lengths or LengthPolicy()
        self.device = next(loaded.model.parameters()).device
        self.precision = resolve_search_precision(
            precision or loaded.config.search.precision, self.device
        )
        prepare_weights(loaded.model, self.precision)

    def score_ids(
        self, src_ids: Sequence[Sequence[int]], tgt_ids: Sequence[Sequence[int]]
    ) -> list[PairScore]:
        """Score id pairs (without EOS; empty targets are fine), in input order."""
        found: list[PairScore | None] = [None] * len(src_ids)
        sizes = ([len(ids) for ids in src_ids], [len(ids) for ids in tgt_ids])
        for rows in self.lengths.batches(*sizes, max_sentences=self.batch_size):
            batch_scores = self._score_batch([src_ids[i] for i in rows], [tgt_ids[i] for i in rows])
            for i, item in zip(rows, batch_scores, strict=True):
                found[i] = item
        assert all(item is not None for item in found), "every pair is in one batch"
        return found  # type: ignore[return-value]

    def _score_batch(
        self, src_ids: Sequence[Sequence[int]], tgt_ids: Sequence[Sequence[int]]
    ) -> list[PairScore]:
        model = self.loaded.model.eval()
        batch = collate(src_ids, tgt_ids, range(len(src_ids))).to(self.device)
        real = batch.tgt_out != PAD_ID  # [b, T]
        lengths = real.sum(dim=1)  # [b]
        by_steps = batch.tgt_out.numel() * batch.src.size(1) > STEP_CELLS
        force = force_by_steps if by_steps else force_at_once
        with torch.inference_mode(), autocast(self.precision, self.device):
            log_prob, coverage = force(model, batch)  # [b], [b, S]
        score = self.strategy.score(
            log_prob, lengths=lengths, coverage=coverage, pad_mask=batch.src == PAD_ID
        )  # [b]
        return [
            PairScore(log_prob=lp, num_tokens=n, score=s)
            for lp, n, s in zip(log_prob.tolist(), lengths.tolist(), score.tolist(), strict=True)
        ]

    def score_texts(self, src_lines: Sequence[str], tgt_lines: Sequence[str]) -> list[PairScore]:
        """Score raw text pairs, in input order."""
        src_text, tgt_text = self.loaded.src_text, self.loaded.tgt_text
        return self.score_ids(
            [src_text.encode(line) for line in src_lines],
            [tgt_text.encode(line) for line in tgt_lines],
        )

    def score_stream(
        self, pairs: Iterable[tuple[str, str]], *, chunk_size: int = CHUNK_SIZE
    ) -> Iterator[PairScore]:
        """Score raw text pairs ``chunk_size`` at a time, yielding in input order."""
        stream = iter(pairs)
        while chunk := list(itertools.islice(stream, chunk_size)):
            src_lines, tgt_lines = zip(*chunk, strict=True)
            yield from self.score_texts(src_lines, tgt_lines)


def force_at_once(model: Seq2Seq, batch: Batch) -> tuple[Tensor, Tensor]:
    """log p(y | x) [b] and the attention paid to each source position [b, S], through the
    decoder's teacher-forced pass over all steps at once (it holds the weights [b, T, S])."""
    token_log_probs, weights = model.target_log_probs(batch)  # [N], [b, T, S]
    real = batch.tgt_out != PAD_ID  # [b, T]
    rows = torch.arange(real.size(0), device=real.device).repeat_interleave(real.sum(dim=1))
    log_prob = torch.zeros(real.size(0), device=real.device).index_add_(
        0, rows, token_log_probs
    )  # [b]
    return log_prob, (weights.float() * real[:, :, None]).sum(dim=1)  # [b, S]


def force_by_steps(model: Seq2Seq, batch: Batch) -> tuple[Tensor, Tensor]:
    """:func:`force_at_once`, one decoding step at a time (the search's steps, each fed the
    given word): memory linear in the lengths, for pairs whose [T, S] weights would be large."""
    state = model.init_state(model.encode(batch.src, batch.src_lengths))
    log_prob = torch.zeros(batch.src.size(0), device=batch.src.device)  # [b]
    coverage = torch.zeros(batch.src.shape, device=batch.src.device)  # [b, S]
    for prev, gold in zip(batch.tgt_in.unbind(1), batch.tgt_out.unbind(1), strict=True):
        step = model.decode_step(prev, state)
        real = gold != PAD_ID  # [b]
        picked = step.log_probs.float().gather(1, gold[:, None]).squeeze(1)  # [b]
        log_prob += picked.masked_fill(~real, 0.0)
        coverage += step.weights.float() * real[:, None]
        state = step.state
    return log_prob, coverage


def open_scorer(
    model_path: str | Path,
    *,
    search: SearchOverrides | None = None,
    batch_size: int = 64,
    lengths: LengthPolicy | None = None,
    device: str = "cpu",
    threads: int | None = None,
    precision: str | None = None,
) -> ForcedScorer:
    """Load a model and set up its scorer; ``search`` changes the model's own search as
    ``translate``'s flags do (:func:`nmtkit.search.overrides.resolve_search`).

    Raises:
        CheckpointError: ``model_path`` holds no usable checkpoint.
        ConfigError: search overrides that conflict or are out of range, a batch size below 1,
            an unknown precision.
    """
    if batch_size < 1:
        raise ConfigError(f"--batch-size must be at least 1, got {batch_size}")
    search = search or SearchOverrides()
    if search.greedy and search.beam_options():
        raise ConfigError(
            "--greedy cannot be combined with --length-penalty or --coverage-penalty",
            hint="--greedy scores log p / length; the penalties are beam search's",
        )
    if threads:
        torch.set_num_threads(threads)
    tune_allocator()
    loaded = load_model(model_path, device=device)
    spec = resolve_search(loaded.config.search.strategy, search, nbest=1)
    scorer = ForcedScorer(
        loaded,
        strategy=build_strategy(spec),
        batch_size=batch_size,
        lengths=lengths,
        precision=precision,
    )
    log.info("scores as: %s", describe_search(spec, precision=scorer.precision))
    return scorer


def read_pairs_to_score(src_path: str | Path, tgt_path: str | Path) -> Iterator[tuple[str, str]]:
    """Stream the sentence pairs of two line-parallel files (:func:`nmtkit.files.read_pairs`).
    An empty translation is one (the search outputs one when EOS wins at once); an empty
    source line is an error.

    Raises:
        DataError: a missing or unreadable file, invalid UTF-8, an empty source line (naming the
            file and line), or files of different line counts (naming both counts).
    """
    for number, (src, tgt) in enumerate(read_pairs(src_path, tgt_path), start=1):
        if not src.strip():
            raise DataError(
                "empty source line",
                where=f"{src_path}:{number}",
                hint="every pair needs a source sentence; an empty translation is fine",
            )
        yield src, tgt


def check_pairs(src_path: str | Path, tgt_path: str | Path) -> int:
    """Read two line-parallel files through, before any work: return the number of pairs.

    Raises:
        DataError: see :func:`read_pairs_to_score`.
    """
    return sum(1 for _ in read_pairs_to_score(src_path, tgt_path))


def _number(value: float) -> float | None:
    """``value`` rounded for JSON, None when it is not finite (JSON has no infinity)."""
    return round(value, 6) if math.isfinite(value) else None


def format_tsv(index: int, item: PairScore) -> str:
    """``log_prob<TAB>score<TAB>ppl<TAB>num_tokens``."""
    return f"{item.log_prob:.6f}\t{item.score:.6f}\t{item.ppl:.6f}\t{item.num_tokens}\n"


def format_jsonl(index: int, item: PairScore) -> str:
    """One JSON object: ``id`` (0-based), ``log_prob``, ``score``, ``ppl``, ``num_tokens``."""
    record = {
        "id": index,
        "log_prob": _number(item.log_prob),
        "score": _number(item.score),
        "ppl": _number(item.ppl),
        "num_tokens": item.num_tokens,
    }
    return json.dumps(record) + "\n"


SCORE_FORMATS: dict[str, Callable[[int, PairScore], str]] = {
    "tsv": format_tsv,
    "jsonl": format_jsonl,
}


def check_format(fmt: str) -> None:
    """Raises ConfigError for an unknown output format."""
    if fmt not in SCORE_FORMATS:
        raise unknown_name("output format", fmt, SCORE_FORMATS)


def score_files(
    scorer: ForcedScorer,
    src_path: str | Path,
    tgt_path: str | Path,
    *,
    output: str = "-",
    fmt: str = "tsv",
) -> int:
    """Score the pairs of two line-parallel files into ``output`` ('-' is stdout, flushed
    after each chunk; a file is written atomically), one line per pair; return the count.

    Raises:
        ConfigError: an unknown format.
        DataError: see :func:`read_pairs_to_score`; ``output`` cannot be written.
    """
    check_format(fmt)
    formatter = SCORE_FORMATS[fmt]
    count = 0
    pairs = read_pairs_to_score(src_path, tgt_path)
    with open_output(output) as stream:
        for count, item in enumerate(scorer.score_stream(pairs), 1):
            stream.write(formatter(count - 1, item))
            if output == "-" and count % CHUNK_SIZE == 0:
                stream.flush()
    return count
