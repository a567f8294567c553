"""Translator: raw lines in, detokenized translations out, streamed in chunks.

Each chunk is sorted by length, cut into batches under a token budget, searched, and written
back in input order, so that a pipe or an interactive session sees each chunk as soon as it is
done. Long lines follow the one
:class:`~nmtkit.search.length_policy.LengthPolicy`. With sentence
splitting, a chunk's lines are cut into sentences, translated as one batch and joined back.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import torch

from nmtkit import registry
from nmtkit.checkpoint import LoadedModel
from nmtkit.data.text import words
from nmtkit.errors import ConfigError
from nmtkit.models import Seq2Seq
from nmtkit.models.inference_weights import prepare_weights
from nmtkit.registry import Hypothesis, SearchStrategy
from nmtkit.runtime import check_line_memory, resolve_search_precision
from nmtkit.search.beam import BeamSearch
from nmtkit.search.decode import build_strategy, decode_sequences, output_cap
from nmtkit.search.ensemble import Ensemble, check_vocabularies
from nmtkit.search.length_policy import LengthPolicy
from nmtkit.search.side_by_side import default_workers
from nmtkit.shortlist.restricted import ShortlistSearch
from nmtkit.shortlist.table import Shortlist
from nmtkit.terminology.glossary import Glossary, Term, read_constraints
from nmtkit.translation.options import check_options
from nmtkit.translation.results import Candidate, Part, Translation, candidate_of
from nmtkit.translation.splitting import (
    PREFIX_WITH_SPLITTING,
    SentenceSplitter,
    check_splitting,
    join_parts,
)
from nmtkit.translation.streaming import (
    DEFAULT_FLUSH_MS,
    read_chunks,
    read_prefixes,
    read_with_line_files,
)
from nmtkit.translation.terms import (
    NO_TERMS,
    SentenceTerms,
    continues_word,
    plan_terms,
    term_uses,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True, slots=True)
class _Found:
    """What the search found for one text: the source pieces it read (fewer than the text's
    when ``--max-source-len`` cut it), all its pieces, its hypotheses, best first, and the
    terms they had to use."""

    pieces: list[str]
    full_pieces: list[str]
    hypotheses: list[Hypothesis]
    terms: SentenceTerms = NO_TERMS


class Translator:
    """Translate raw text with a loaded model.

    Args:
        loaded: the model and its text pipelines (:func:`nmtkit.checkpoint.load_model`).
        strategy: the search; the checkpoint's configured one when None.
        nbest: hypotheses kept per sentence (at most the beam size).
        with_alignment: compute each hypothesis's word alignment from its attention.
        precision: of the matrix products, ``fp32``, ``bf16``, ``packed16``, ``int8`` or
            ``auto`` (:func:`nmtkit.runtime.resolve_search_precision`); the model's
            ``search.precision`` when None. The loaded models' weights are converted in place
            to what it needs (:func:`nmtkit.models.inference_weights.prepare_weights`; int8
            needs torchao, packed16 fbgemm).
        lengths: how long lines are cut and batched; the defaults of :class:`LengthPolicy`
            when None.
        split_sentences: cut each line into sentences (sentencex, for the model's source
            language), translate them and join their translations (:class:`Translation`).
        shortlist: restrict each batch's output words to its candidates
            (:class:`~nmtkit.shortlist.restricted.ShortlistSearch`; :mod:`nmtkit.shortlist`
            says what that changes in the scores).
        ensemble_with: more models to translate with ``loaded`` as one ensemble: every
            step's log-probabilities are those of the mean of the models' probabilities and the
            attention is their mean (:mod:`nmtkit.search.ensemble`). The text pipelines and
            the search settings are ``loaded``'s; the precision applies to every model. With
            none, ``loaded``'s model is searched as it is.
        workers: batches searched side by side, each by its own thread with its share of
            torch's intra-op threads (:mod:`nmtkit.search.side_by_side`); the translations are
            the same for any number. None: :func:`~nmtkit.search.side_by_side.default_workers`
            (2 on a CPU, 1 with one thread or on a GPU), resolved at each search.
        terminology: glossary entries (:func:`~nmtkit.terminology.glossary.read_glossary`):
            every sentence whose source holds an entry's source term must use its target term
            (:mod:`nmtkit.terminology.glossary` says how terms match, and
            :mod:`nmtkit.translation.terms` what is kept when they do not all fit). They need
            beam search.

    Raises:
        ConfigError: a batch size or a number of workers below 1, a negative output cap
            (:func:`check_options`), ``nbest`` above 1 with ``split_sentences``
            (:func:`check_splitting`), an unknown precision, ``int8`` without torchao,
            ``packed16`` without fbgemm, or an ensemble model whose vocabulary is not
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
        terminology: Sequence[Term] = (),
        workers: int | None = None,
    ) -> None:
        check_options(
            batch_size=batch_size, max_len_a=max_len_a, max_len_b=max_len_b, workers=workers
        )
        self.workers = workers
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
        device = self.device = next(loaded.model.parameters()).device
        self.precision = resolve_search_precision(precision or search.precision, device)
        for member in self.members:
            prepare_weights(member.model, self.precision)
        self.splitter = SentenceSplitter(loaded.vocab.src_lang) if split_sentences else None
        self.shortlist = shortlist
        self.glossary = self.compile_glossary(terminology)
        self._glue: torch.Tensor | None = None

    def translate_stream(
        self,
        path: str | Path,
        *,
        chunk_size: int | None = None,
        flush_ms: float | None = None,
        prefix_path: str | Path | None = None,
        constraints_path: str | Path | None = None,
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
            constraints_path: a file of target phrases, one line per input line, the phrases
                tab-separated (an empty line: none); every translation contains its line's
                phrases (:func:`~nmtkit.terminology.glossary.read_constraints`). Read as
                ``prefix_path`` is.

        Raises:
            ConfigError: a chunk size below 1, a negative ``flush_ms``, or a prefix file with
                sentence splitting.
            DataError: the input, prefix or constraints file is missing or not valid UTF-8
                (naming the line), a constraints line has an empty phrase, or either file's
                line count is not the input's.
        """
        check_options(chunk_size=chunk_size, flush_ms=flush_ms)
        check_splitting(split_sentences=self.splitter is not None, prefix_path=prefix_path)
        chunk_size = chunk_size or 1000
        if prefix_path is None and constraints_path is None:
            offset = 0
            pause = DEFAULT_FLUSH_MS if flush_ms is None else flush_ms
            for chunk in read_chunks(path, chunk_size=chunk_size, flush_ms=pause):
                yield from self.translate_chunk(chunk, offset=offset)
                offset += len(chunk)
            return
        prefixes = None if prefix_path is None else read_prefixes(prefix_path)
        constraints = None if constraints_path is None else read_constraints(constraints_path)
        lines = read_with_line_files(
            path,
            [
                (line_file, len(per_line), f"give one line per input line; {hint}")
                for line_file, per_line, hint in (
                    (prefix_path, prefixes, "an empty line means no prefix"),
                    (constraints_path, constraints, "an empty line means no constraint"),
                )
                if line_file is not None and per_line is not None
            ],
        )
        yield from self.translate(
            lines, chunk_size=chunk_size, prefixes=prefixes, constraints=constraints
        )

    def translate(
        self,
        lines: Iterable[str],
        *,
        chunk_size: int = 1000,
        prefixes: Iterable[str] | None = None,
        constraints: Iterable[Sequence[Term]] | None = None,
    ) -> Iterator[Translation]:
        """Translate ``lines`` in chunks of ``chunk_size``, yielding results in input order.

        ``prefixes`` gives each line's target prefix as raw text ('' for none), and
        ``constraints`` each line's target phrases (none: no constraint), line for line.

        Raises:
            ConfigError: a chunk size below 1.
        """
        check_options(chunk_size=chunk_size)
        given = [column for column in (prefixes, constraints) if column is not None]
        rows: Iterable[tuple[object, ...]] = (
            zip(lines, *given, strict=True) if given else ((line,) for line in lines)
        )
        offset = 0
        while chunk := list(itertools.islice(rows, chunk_size)):
            columns = list(zip(*chunk, strict=True))
            texts = cast(tuple[str, ...], columns.pop(0))
            chunk_prefixes = None if prefixes is None else cast(tuple[str, ...], columns.pop(0))
            chunk_terms = (
                None if constraints is None else cast(tuple[Sequence[Term], ...], columns.pop(0))
            )
            yield from self.translate_chunk(
                texts, offset=offset, prefixes=chunk_prefixes, constraints=chunk_terms
            )
            offset += len(chunk)

    def translate_chunk(
        self,
        lines: Sequence[str],
        *,
        offset: int = 0,
        prefixes: Sequence[str] | None = None,
        constraints: Sequence[Sequence[Term]] | None = None,
        glossaries: Sequence[Glossary | None] | None = None,
    ) -> list[Translation]:
        """Translate one chunk of lines numbered from ``offset``, each starting with its
        ``prefixes`` entry (raw target text, '' for none) and containing its ``constraints``
        entry's target phrases; an empty line stays empty.

        ``glossaries`` gives each line a glossary instead of the translator's own
        (:meth:`compile_glossary`; None for a line: no glossary).

        With sentence splitting, the sentences of all the chunk's lines are translated as one
        batch, and each line gets one translation that joins its sentences' (see
        :class:`Translation`); a sentence gets the glossary entries its source holds, and a
        line's bare constraints go to its first sentence.

        Raises:
            ConfigError: a prefix with sentence splitting; constraints or a glossary with a
                search other than beam search of a beam of 2 or more.
            DataError: a constraint that reads as no target piece or is longer than its line's
                output cap, naming its file and line.
        """
        bare = [()] * len(lines) if constraints is None else list(constraints)
        if glossaries is None:
            glossaries = [self.glossary] * len(lines)
        if self.splitter is not None:
            if prefixes is not None and any(p.strip() for p in prefixes):
                raise ConfigError(PREFIX_WITH_SPLITTING)
            return self._translate_split(lines, offset=offset, bare=bare, glossaries=glossaries)
        labels = [f"input line {number}" for number in range(offset + 1, offset + len(lines) + 1)]
        found = self._search(
            lines, labels=labels, prefixes=prefixes, bare=bare, glossaries=glossaries
        )
        return [
            Translation(
                index=offset + i,
                source=line,
                candidates=tuple(self._candidates(sentence, what=label))
                or (self._candidate(None, []),),
            )
            for i, (line, sentence, label) in enumerate(zip(lines, found, labels, strict=True))
        ]

    def compile_glossary(self, terminology: Sequence[Term]) -> Glossary | None:
        """Glossary entries read as this model reads its source; None for no entries.

        Raises:
            ConfigError: entries with a search other than beam search of a beam of 2 or more.
            DataError: an entry whose source term reads as nothing.
        """
        if not terminology:
            return None
        self._check_constrainable()
        return Glossary(terminology, self.loaded.src_text)

    def _translate_split(
        self,
        lines: Sequence[str],
        *,
        offset: int,
        bare: Sequence[Sequence[Term]],
        glossaries: Sequence[Glossary | None],
    ) -> list[Translation]:
        assert self.splitter is not None
        splits = [self.splitter.split(line) for line in lines]
        texts = [sentence for split in splits for sentence in split.sentences]
        labels = [
            f"sentence {k} of input line {number}"
            for number, split in enumerate(splits, start=offset + 1)
            for k in range(1, len(split.sentences) + 1)
        ]
        sentence_bare = [
            terms if k == 0 else ()
            for split, terms in zip(splits, bare, strict=True)
            for k in range(len(split.sentences))
        ]
        sentence_glossaries = [
            glossary
            for split, glossary in zip(splits, glossaries, strict=True)
            for _ in split.sentences
        ]
        found = iter(
            self._search(texts, labels=labels, bare=sentence_bare, glossaries=sentence_glossaries)
        )
        translations = []
        for i, (line, split) in enumerate(zip(lines, splits, strict=True)):
            sentences = [next(found) for _ in split.sentences]
            best = [
                sentence.hypotheses[0] if sentence.hypotheses else None for sentence in sentences
            ]
            parts = tuple(
                Part(source=text, candidate=self._candidate(hyp, sentence.pieces, sentence.terms))
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
                else self._candidate(None, [])
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
        bare: Sequence[Sequence[Term]],
        glossaries: Sequence[Glossary | None],
    ) -> list[_Found]:
        """Search every text (an empty one gets no hypotheses) under its ``bare`` constraints
        and its glossary's terms; ``labels`` name them in warnings (e.g. "input line 12")."""
        src_text = self.loaded.src_text
        full = [src_text.encode(text) if text.strip() else [] for text in texts]
        ids = [self.lengths.cut(seq, what=label) for seq, label in zip(full, labels, strict=True)]
        busy = [i for i, seq in enumerate(ids) if seq]
        if self.with_alignment:
            for i in busy:
                self._check_alignment_memory(len(ids[i]), what=labels[i])
        prefix_ids = self._encode_prefixes(prefixes)
        planned = [NO_TERMS] * len(texts)
        if any(glossaries) or any(bare):
            self._check_constrainable()
            for i in busy:
                used = 0 if prefix_ids is None else len(prefix_ids[i])
                cap = output_cap(len(ids[i]), a=self.max_len_a, b=self.max_len_b)
                planned[i] = plan_terms(
                    bare[i],
                    glossaries[i],
                    src_text.id_to_piece(ids[i]),
                    tgt_text=self.loaded.tgt_text,
                    cap=max(cap, used),
                    used=used,
                    most=self._beam_size() - 1,
                    what=labels[i],
                )
        constraints = None
        if any(plan.phrases for plan in planned):
            constraints = [planned[i].phrases for i in busy]
        strategy = self.strategy
        if self.shortlist is not None:
            strategy = ShortlistSearch(strategy, self.shortlist)
        hypotheses = decode_sequences(
            self.model,
            [ids[i] for i in busy],
            strategy,
            batch_size=self.batch_size,
            max_len_a=self.max_len_a,
            max_len_b=self.max_len_b,
            max_tokens=self.lengths.max_tokens,
            with_weights=self.with_alignment,
            prefixes=None if prefix_ids is None else [prefix_ids[i] for i in busy],
            constraints=constraints,
            continues_word=None if constraints is None else self._continues_word(),
            precision=self.precision,
            workers=default_workers(self.device) if self.workers is None else self.workers,
        )
        by_text: list[list[Hypothesis]] = [[] for _ in texts]
        for i, hyps in zip(busy, hypotheses, strict=True):
            by_text[i] = hyps[: self.nbest]
        found = []
        for seq, read, hyps, plan in zip(full, ids, by_text, planned, strict=True):
            pieces = src_text.id_to_piece(seq)
            found.append(
                _Found(pieces=pieces[: len(read)], full_pieces=pieces, hypotheses=hyps, terms=plan)
            )
        return found

    def _continues_word(self) -> torch.Tensor:
        """The target pieces that would glue onto the word before them, [V]."""
        if self._glue is None:
            self._glue = continues_word(self.loaded.tgt_text)
        return self._glue

    def _beam_size(self) -> int:
        return int(getattr(self.strategy.config, "beam_size", 1))

    def _check_constrainable(self) -> None:
        """Constraints need beam search with room beside the hypotheses that meet them."""
        if not isinstance(self.strategy, BeamSearch) or self._beam_size() < 2:
            raise ConfigError(
                "constraints and terminology need beam search with a beam of 2 or more",
                hint="drop --greedy/--sampling, or give --beam 2 or more (5 or more is better)",
            )

    def _check_alignment_memory(self, src_len: int, *, what: str) -> None:
        """Refuse, before its search, a sentence whose attention history would not fit: each
        of K hypotheses keeps [steps, S] fp32 weights, held about 4 times over as the history
        grows, is re-ordered and is copied into finished hypotheses."""
        beam = getattr(self.strategy.config, "beam_size", 1)
        steps = int(self.max_len_a * src_len + self.max_len_b) + 1
        check_line_memory(
            16 * beam * steps * (src_len + 1),
            what=what,
            size=f"{src_len} source pieces, up to {steps} output steps",
            hint="bound it with --max-source-len, or the output with --max-len-a/--max-len-b",
        )

    def _candidates(self, found: _Found, *, what: str) -> list[Candidate]:
        """A text's hypotheses as candidates, best first; a warning names each term the best
        one misses (when the beam found no translation with them all)."""
        candidates = [self._candidate(hyp, found.pieces, found.terms) for hyp in found.hypotheses]
        missed = [use.target for use in (candidates[0].terms if candidates else ()) if not use.met]
        if missed:
            log.warning(
                "%s: constraints not met (no hypothesis with them all finished within the "
                "output cap; a wider --beam may find one): %s",
                what,
                ", ".join(map(repr, missed)),
            )
        return candidates

    def _candidate(
        self, hyp: Hypothesis | None, src_pieces: list[str], terms: SentenceTerms = NO_TERMS
    ) -> Candidate:
        """``hyp`` as text (:func:`candidate_of`), with how it uses ``terms``; None, an empty
        line, as the empty one."""
        candidate = candidate_of(
            hyp, src_pieces, tgt_text=self.loaded.tgt_text, with_alignment=self.with_alignment
        )
        if hyp is None or not terms.terms:
            return candidate
        uses = term_uses(
            terms,
            hyp.tokens,
            src_pieces=src_pieces,
            tgt_pieces=self.loaded.tgt_text.id_to_piece(hyp.tokens),
            links=candidate.links,
        )
        return dataclasses.replace(candidate, terms=uses)

    def _num_tgt_words(self, hyp: Hypothesis | None) -> int:
        return 0 if hyp is None else len(words(self.loaded.tgt_text.id_to_piece(hyp.tokens)))

    def _encode_prefixes(self, prefixes: Sequence[str] | None) -> list[list[int]] | None:
        if prefixes is None or not any(p.strip() for p in prefixes):
            return None
        tgt_text = self.loaded.tgt_text
        return [tgt_text.encode(p) if p.strip() else [] for p in prefixes]
