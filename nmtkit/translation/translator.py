"""Translator: raw lines in, detokenized translations out, streamed in chunks.

Each chunk is sorted by length, cut into batches under a token budget, searched, and written
back in input order, so that a pipe or an interactive session sees each chunk as soon as it is
done. Long lines follow the one :class:`~nmtkit.search.decode.LengthPolicy`. With sentence
splitting, a chunk's lines are cut into sentences, translated as one batch and joined back.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from nmtkit import registry
from nmtkit.alignment.links import Link, argmax_links, piece_weights_to_words
from nmtkit.checkpoint import LoadedModel, load_model
from nmtkit.data.text import words
from nmtkit.errors import ConfigError
from nmtkit.files import check_line_counts, read_lines
from nmtkit.models import Seq2Seq
from nmtkit.models.quantization import quantize_int8
from nmtkit.registry import Hypothesis, SearchStrategy
from nmtkit.runtime import resolve_precision, tune_allocator
from nmtkit.search.decode import LengthPolicy, build_strategy, decode_sequences
from nmtkit.search.ensemble import Ensemble, check_vocabularies
from nmtkit.search.overrides import (
    SearchOverrides,
    describe_search,
    max_hypotheses,
    resolve_search,
)
from nmtkit.search.shortlist import Shortlist
from nmtkit.translation.results import Candidate, Part, Translation
from nmtkit.translation.shortlist import open_shortlist
from nmtkit.translation.splitting import (
    PREFIX_WITH_SPLITTING,
    SentenceSplitter,
    check_splitting,
    join_parts,
)
from nmtkit.translation.streaming import DEFAULT_FLUSH_MS, arrives_over_time, read_chunks

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True, slots=True)
class _Found:
    """What the search found for one text: the source pieces it read (fewer than the text's
    when ``--max-source-len`` cut it), all its pieces, and its hypotheses, best first."""

    pieces: list[str]
    full_pieces: list[str]
    hypotheses: list[Hypothesis]


class Translator:
    """Translate raw text with a loaded model.

    Args:
        loaded: the model and its text pipelines (:func:`nmtkit.checkpoint.load_model`).
        strategy: the search; the checkpoint's configured one when None.
        nbest: hypotheses kept per sentence (at most the beam size).
        with_alignment: compute each hypothesis's word alignment from its attention.
        precision: of the matrix products, ``fp32``, ``bf16`` or ``auto``
            (:func:`nmtkit.runtime.resolve_precision`); the model's ``search.precision`` when
            None. ``int8`` gives the loaded model's decoder int8 weights in place
            (:func:`nmtkit.models.quantization.quantize_int8`, which needs torchao).
        lengths: how long lines are cut and batched; the defaults of :class:`LengthPolicy`
            when None.
        split_sentences: cut each line into sentences (sentencex, for the model's source
            language), translate them and join their translations (:class:`Translation`).
        shortlist: restrict each batch's output words to its candidates
            (:mod:`nmtkit.search.shortlist`, which says what that changes in the scores).
        ensemble_with: more models to translate with ``loaded`` as one ensemble: every
            step's log-probabilities are those of the mean of the models' probabilities and the
            attention is their mean (:mod:`nmtkit.search.ensemble`). The text pipelines and
            the search settings are ``loaded``'s; the precision applies to every model. With
            none, ``loaded``'s model is searched as it is.

    Raises:
        ConfigError: a batch size below 1 or a negative output cap (:func:`check_options`),
            ``nbest`` above 1 with ``split_sentences`` (:func:`check_splitting`), an unknown
            precision, ``int8`` without torchao, or an ensemble model whose vocabulary is not
            ``loaded``'s.
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
        precision: str | None = None,
        lengths: LengthPolicy | None = None,
        split_sentences: bool = False,
        shortlist: Shortlist | None = None,
        ensemble_with: Sequence[LoadedModel] = (),
    ) -> None:
        check_options(batch_size=batch_size, max_len_a=max_len_a, max_len_b=max_len_b)
        check_splitting(split_sentences=split_sentences, nbest=nbest)
        self.members = (loaded, *ensemble_with)
        # One model is searched unwrapped: an ensemble of one would only cost time.
        self.model: Seq2Seq | Ensemble = loaded.model
        if ensemble_with:
            check_vocabularies(
                [member.vocab.fingerprint for member in self.members],
                names=[str(member.path) for member in self.members],
            )
            self.model = Ensemble([member.model for member in self.members])
        search = loaded.config.search
        self.loaded = loaded
        self.strategy = strategy or build_strategy(search.strategy)
        self.batch_size = batch_size or search.batch_size
        self.max_len_a = search.max_len_a if max_len_a is None else max_len_a
        self.max_len_b = search.max_len_b if max_len_b is None else max_len_b
        self.nbest = nbest
        attentions = [member.config.model.attention.name for member in self.members]
        unaligned = [name for name in attentions if not registry.get("attention", name).aligns]
        if with_alignment and unaligned:
            log.warning(
                "the model's attention %r is not an alignment: no word alignments (null in jsonl)",
                unaligned[0],
            )
        self.with_alignment = with_alignment and not unaligned
        self.lengths = lengths or LengthPolicy()
        device = next(loaded.model.parameters()).device
        self.precision = resolve_precision(precision or search.precision, device)
        if self.precision == "int8":
            for member in self.members:
                quantize_int8(member.model)
        self.splitter = SentenceSplitter(loaded.vocab.src_lang) if split_sentences else None
        self.shortlist = shortlist

    def translate_stream(
        self,
        path: str | Path,
        *,
        chunk_size: int | None = None,
        flush_ms: float | None = None,
        prefix_path: str | Path | None = None,
    ) -> Iterator[Translation]:
        """Translate a file or stdin ('-') in chunks of up to ``chunk_size`` lines (1000 when
        None). From a pipe, FIFO or terminal a chunk is translated as soon as no new line has
        come for ``flush_ms`` milliseconds (:data:`~nmtkit.translation.streaming.
        DEFAULT_FLUSH_MS` when None), so each line is answered when the input pauses
        (:func:`~nmtkit.translation.streaming.read_chunks`); a regular file is read in full
        chunks.

        Args:
            prefix_path: a file of target prefixes, one per input line (raw text; an empty line
                means none); every translation starts with its line's prefix. With stdin or
                another pipe, the whole input is read before translating, to check that the
                line counts match.

        Raises:
            ConfigError: a chunk size below 1, a negative ``flush_ms``, or a prefix file with
                sentence splitting.
            DataError: the input or prefix file is missing or not valid UTF-8 (naming the line),
                or the prefix file's line count is not the input's.
        """
        check_options(chunk_size=chunk_size, flush_ms=flush_ms)
        check_splitting(split_sentences=self.splitter is not None, prefix_path=prefix_path)
        chunk_size = chunk_size or 1000
        if prefix_path is None:
            offset = 0
            pause = DEFAULT_FLUSH_MS if flush_ms is None else flush_ms
            for chunk in read_chunks(path, chunk_size=chunk_size, flush_ms=pause):
                yield from self.translate_chunk(chunk, offset=offset)
                offset += len(chunk)
            return
        prefixes = [line or "" for line in read_lines(prefix_path)]
        lines: Iterable[str] = (line or "" for line in read_lines(path))
        if str(path) == "-" or arrives_over_time(path):
            lines = list(lines)  # a pipe is read once: hold it, to count it before translating
            num_lines = len(lines)
        else:
            num_lines = sum(1 for _ in read_lines(path))
        check_line_counts(
            prefix_path,
            len(prefixes),
            path,
            num_lines,
            hint="give one prefix per input line; an empty line means no prefix",
        )
        yield from self.translate(lines, chunk_size=chunk_size, prefixes=prefixes)

    def translate(
        self,
        lines: Iterable[str],
        *,
        chunk_size: int = 1000,
        prefixes: Iterable[str] | None = None,
    ) -> Iterator[Translation]:
        """Translate ``lines`` in chunks of ``chunk_size``, yielding results in input order.

        ``prefixes`` gives each line's target prefix as raw text ('' for none), line for line.

        Raises:
            ConfigError: a chunk size below 1.
        """
        check_options(chunk_size=chunk_size)
        pairs: Iterable[tuple[str, str]] = (
            ((line, "") for line in lines)
            if prefixes is None
            else zip(lines, prefixes, strict=True)
        )
        chunk: list[tuple[str, str]] = []
        offset = 0
        for pair in pairs:
            chunk.append(pair)
            if len(chunk) >= chunk_size:
                yield from self._translate_pairs(chunk, offset=offset)
                offset += len(chunk)
                chunk = []
        if chunk:
            yield from self._translate_pairs(chunk, offset=offset)

    def _translate_pairs(self, chunk: list[tuple[str, str]], *, offset: int) -> list[Translation]:
        lines, prefixes = zip(*chunk, strict=True)
        return self.translate_chunk(lines, offset=offset, prefixes=prefixes)

    def translate_chunk(
        self, lines: Sequence[str], *, offset: int = 0, prefixes: Sequence[str] | None = None
    ) -> list[Translation]:
        """Translate one chunk of lines numbered from ``offset``, each starting with its
        ``prefixes`` entry (raw target text, '' for none); an empty line stays empty.

        With sentence splitting, the sentences of all the chunk's lines are translated as one
        batch, and each line gets one translation that joins its sentences' (see
        :class:`Translation`).

        Raises:
            ConfigError: a prefix with sentence splitting.
        """
        if self.splitter is not None:
            if prefixes is not None and any(p.strip() for p in prefixes):
                raise ConfigError(PREFIX_WITH_SPLITTING)
            return self._translate_split(lines, offset=offset)
        labels = [f"input line {number}" for number in range(offset + 1, offset + len(lines) + 1)]
        found = self._search(lines, labels=labels, prefixes=prefixes)
        return [
            Translation(
                index=offset + i,
                source=line,
                candidates=tuple(self._candidate(h, sentence.pieces) for h in sentence.hypotheses)
                or (self._no_candidate(),),
            )
            for i, (line, sentence) in enumerate(zip(lines, found, strict=True))
        ]

    def _translate_split(self, lines: Sequence[str], *, offset: int) -> list[Translation]:
        assert self.splitter is not None
        splits = [self.splitter.split(line) for line in lines]
        texts = [sentence for split in splits for sentence in split.sentences]
        labels = [
            f"sentence {k} of input line {number}"
            for number, split in enumerate(splits, start=offset + 1)
            for k in range(1, len(split.sentences) + 1)
        ]
        found = iter(self._search(texts, labels=labels))
        translations = []
        for i, (line, split) in enumerate(zip(lines, splits, strict=True)):
            sentences = [next(found) for _ in split.sentences]
            best = [
                sentence.hypotheses[0] if sentence.hypotheses else None for sentence in sentences
            ]
            parts = tuple(
                Part(source=text, candidate=self._best(hyp, sentence.pieces))
                for text, hyp, sentence in zip(split.sentences, best, sentences, strict=True)
            )
            joined = (
                join_parts(
                    split,
                    parts,
                    num_src_words=[len(words(sentence.full_pieces)) for sentence in sentences],
                    num_tgt_words=[self._num_tgt_words(hyp) for hyp in best],
                )
                if parts
                else self._no_candidate()
            )
            translations.append(
                Translation(index=offset + i, source=line, candidates=(joined,), parts=parts)
            )
        return translations

    def _search(
        self,
        texts: Sequence[str],
        *,
        labels: Sequence[str],
        prefixes: Sequence[str] | None = None,
    ) -> list[_Found]:
        """Search every text (an empty one gets no hypotheses); ``labels`` name them in the
        warning of a cut (e.g. "input line 12")."""
        src_text = self.loaded.src_text
        full = [src_text.encode(text) if text.strip() else [] for text in texts]
        ids = [self.lengths.cut(seq, what=label) for seq, label in zip(full, labels, strict=True)]
        busy = [i for i, seq in enumerate(ids) if seq]
        prefix_ids = self._encode_prefixes(prefixes)
        hypotheses = decode_sequences(
            self.model,
            [ids[i] for i in busy],
            self.strategy,
            batch_size=self.batch_size,
            max_len_a=self.max_len_a,
            max_len_b=self.max_len_b,
            max_tokens=self.lengths.max_tokens,
            with_weights=self.with_alignment,
            prefixes=None if prefix_ids is None else [prefix_ids[i] for i in busy],
            precision=self.precision,
            shortlist=self.shortlist,
        )
        by_text: list[list[Hypothesis]] = [[] for _ in texts]
        for i, hyps in zip(busy, hypotheses, strict=True):
            by_text[i] = hyps[: self.nbest]
        found = []
        for seq, read, hyps in zip(full, ids, by_text, strict=True):
            pieces = src_text.id_to_piece(seq)
            found.append(_Found(pieces=pieces[: len(read)], full_pieces=pieces, hypotheses=hyps))
        return found

    def _best(self, hyp: Hypothesis | None, src_pieces: list[str]) -> Candidate:
        return self._no_candidate() if hyp is None else self._candidate(hyp, src_pieces)

    def _num_tgt_words(self, hyp: Hypothesis | None) -> int:
        return 0 if hyp is None else len(words(self.loaded.tgt_text.id_to_piece(hyp.tokens)))

    def _no_candidate(self) -> Candidate:
        """What an empty line translates to."""
        return Candidate(text="", score=0.0, links=() if self.with_alignment else None)

    def _encode_prefixes(self, prefixes: Sequence[str] | None) -> list[list[int]] | None:
        if prefixes is None or not any(p.strip() for p in prefixes):
            return None
        tgt_text = self.loaded.tgt_text
        return [tgt_text.encode(p) if p.strip() else [] for p in prefixes]

    def _candidate(self, hyp: Hypothesis, src_pieces: list[str]) -> Candidate:
        text = self.loaded.tgt_text.decode(hyp.tokens)
        links = None
        if self.with_alignment and hyp.weights is not None:
            tgt_pieces = self.loaded.tgt_text.id_to_piece(hyp.tokens)
            links = word_links(hyp.weights, src_pieces, tgt_pieces)
        return Candidate(text=text, score=hyp.score, links=links)


def open_translator(
    model_path: str | Path | Sequence[str | Path],
    *,
    search: SearchOverrides | None = None,
    batch_size: int | None = None,
    max_len_a: float | None = None,
    max_len_b: int | None = None,
    nbest: int = 1,
    with_alignment: bool = False,
    device: str = "cpu",
    threads: int | None = None,
    precision: str | None = None,
    lengths: LengthPolicy | None = None,
    split_sentences: bool = False,
    shortlist: bool = False,
) -> Translator:
    """Load a model and set up its translator; None keeps the model's own search settings.

    ``model_path`` is one model (a directory or a checkpoint file) or a sequence of them, which
    translate as an ensemble (``ensemble_with`` of :class:`Translator`): the first model's
    text pipelines, search settings and shortlist serve them all.

    ``shortlist`` restricts the output words to the vocabulary shortlist in the (first) model's
    directory (:func:`nmtkit.translation.shortlist.open_shortlist`).

    Raises:
        CheckpointError: a path holds no usable checkpoint.
        DataError: ``shortlist`` and the model's directory has no usable shortlist for it.
        ConfigError: no model path, models of different vocabularies, ``nbest`` above the
            beam size or number of samples (or above 1 with ``split_sentences``), a batch size
            below 1, a negative output cap, or search overrides that conflict or are out of
            range (:func:`resolve_search`).
    """
    paths = [model_path] if isinstance(model_path, str | Path) else list(model_path)
    if not paths:
        raise ConfigError("no model to translate with", hint="give one with --model")
    check_options(batch_size=batch_size, max_len_a=max_len_a, max_len_b=max_len_b)
    check_splitting(split_sentences=split_sentences, nbest=nbest)  # before the model loads
    if threads:
        torch.set_num_threads(threads)
    tune_allocator()
    loaded, *others = [load_model(path, device=device) for path in paths]
    if others:  # before the shortlist is opened: a mismatch is the first thing to report
        check_vocabularies(
            [member.vocab.fingerprint for member in (loaded, *others)],
            names=[str(member.path) for member in (loaded, *others)],
        )
    spec = resolve_search(loaded.config.search.strategy, search or SearchOverrides(), nbest=nbest)
    width = max_hypotheses(spec)
    if nbest < 1 or nbest > width:
        raise ConfigError(
            f"--nbest must be between 1 and the beam size or number of samples ({width}), "
            f"got {nbest}"
        )
    translator = Translator(
        loaded,
        strategy=build_strategy(spec),
        batch_size=batch_size,
        max_len_a=max_len_a,
        max_len_b=max_len_b,
        nbest=nbest,
        with_alignment=with_alignment,
        precision=precision,
        lengths=lengths,
        split_sentences=split_sentences,
        shortlist=open_shortlist(loaded, ensemble_with=others) if shortlist else None,
        ensemble_with=others,
    )
    if others:
        names = ", ".join(str(member.path) for member in translator.members)
        log.info("ensemble of %d models: %s", len(translator.members), names)
    log.info("search: %s", describe_search(spec, precision=translator.precision))
    return translator


def check_options(
    *,
    batch_size: int | None = None,
    max_len_a: float | None = None,
    max_len_b: int | None = None,
    chunk_size: int | None = None,
    flush_ms: float | None = None,
) -> None:
    """Reject translation options out of range (None: not given), naming their flags.

    Raises:
        ConfigError: a batch or chunk size below 1, or a negative ``max_len_a``, ``max_len_b``
            or ``flush_ms``.
    """
    for flag, value in (("--batch-size", batch_size), ("--chunk-size", chunk_size)):
        if value is not None and value < 1:
            raise ConfigError(f"{flag} must be at least 1, got {value}")
    for flag, bound in (
        ("--max-len-a", max_len_a),
        ("--max-len-b", max_len_b),
        ("--flush-ms", flush_ms),
    ):
        if bound is not None and bound < 0:
            raise ConfigError(f"{flag} must be 0 or more, got {bound}")


def word_links(
    weights: torch.Tensor, src_pieces: list[str], tgt_pieces: list[str]
) -> tuple[Link, ...]:
    """Word links from attention over pieces [T+1, S+1] (EOS step and position included)."""
    if not src_pieces or not tgt_pieces:
        return ()
    return tuple(argmax_links(piece_weights_to_words(weights, src_pieces, tgt_pieces)))
