"""Vocabulary shortlists, as Marian's lexical shortlists: a decoding batch's output layer only
over the target pieces that its source pieces can produce, searched in that subset's numbering.

A :class:`Shortlist` holds each source piece's ``top_k`` most probable target pieces under IBM
Model 1 (:mod:`nmtkit.alignment.ibm1`) and the ``frequent`` most frequent target pieces. A
batch's candidates are the union of its source pieces' lists, the frequent pieces, the special
ids and the batch's forced prefix words (:meth:`Shortlist.candidates`); the decoder projects onto
those rows of W_o alone, and the search sees candidate i as word i.

Fallback: a sentence holding a source piece that the table has no entry for (one never seen in
the pairs it was learned from) is searched apart from the others of its batch, over the whole
vocabulary, exactly as without a shortlist.

What a shortlist changes besides speed:

* log-probabilities are normalized over the candidates, not the whole vocabulary, so a word's
  log p is at least its full-softmax log p, and a hypothesis's ``log_prob`` and ``score`` are
  those of the restricted model: comparable within a batch, not across batches nor with scores
  found without a shortlist;
* the candidates are a whole batch's, so a sentence's translation may depend on the sentences
  that share its batch (``--batch-size``, ``--max-tokens`` and the input order decide them).
"""

from __future__ import annotations

import dataclasses
import logging
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from nmtkit.data.text import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from nmtkit.errors import DataError
from nmtkit.files import atomic_write
from nmtkit.models import Seq2Seq
from nmtkit.registry import DecoderState, EncoderOutput, Hypothesis, SearchStrategy, StepOutput
from nmtkit.search.ensemble import Ensemble

log = logging.getLogger(__name__)

FORMAT = "nmtkit-shortlist"
FORMAT_VERSION = 1
SPECIAL_IDS = (PAD_ID, UNK_ID, BOS_ID, EOS_ID)  # always candidates
REBUILD_HINT = "build it with: nmtkit shortlist DATA_DIR -m MODEL_DIR, DATA_DIR the model's data"


@dataclass(frozen=True, kw_only=True)
class Shortlist:
    """The target pieces each source piece may produce, and those every batch may.

    Attributes:
        offsets: CSR offsets into ``targets`` of each source piece, [V_src + 1]; a piece with
            none was never seen, and a sentence holding it uses the whole vocabulary.
        targets: each source piece's ``top_k`` target pieces, most probable first, [n].
        frequent: the most frequent target pieces, every batch's candidates, [F].
        tgt_vocab_size: V, the target vocabulary's size.
        fingerprint: the vocabulary it was built for (a SHA-256 of both SentencePiece models).
        top_k: target pieces kept per source piece.
        num_pairs: the training pairs the table was learned from.
    """

    offsets: np.ndarray
    targets: np.ndarray
    frequent: np.ndarray
    tgt_vocab_size: int
    fingerprint: str
    top_k: int
    num_pairs: int

    def save(self, path: Path) -> None:
        """Write the shortlist to ``path`` (an ``.npz``) atomically.

        Raises:
            DataError: ``path`` cannot be written.
        """
        with atomic_write(path, "wb") as stream:
            np.savez(
                stream,
                format=np.array(FORMAT),
                format_version=np.array(FORMAT_VERSION),
                fingerprint=np.array(self.fingerprint),
                tgt_vocab_size=np.array(self.tgt_vocab_size),
                top_k=np.array(self.top_k),
                num_pairs=np.array(self.num_pairs),
                offsets=self.offsets.astype(np.int64),
                targets=self.targets.astype(np.int32),
                frequent=self.frequent.astype(np.int32),
            )

    @classmethod
    def load(cls, path: Path, *, fingerprint: str) -> Shortlist:
        """Read a shortlist written by :meth:`save` for the vocabulary ``fingerprint``.

        Raises:
            DataError: no such file, not a shortlist, a damaged one, or one built for another
                vocabulary.
        """
        if not path.is_file():
            raise DataError("no shortlist for this model", where=str(path), hint=REBUILD_HINT)
        try:
            with np.load(path, allow_pickle=False) as stored:
                fields = {name: stored[name] for name in stored.files}
            if str(fields["format"]) != FORMAT:
                raise KeyError("format")
            if int(fields["format_version"]) > FORMAT_VERSION:
                raise DataError("written by a newer nmtkit", where=str(path), hint="upgrade nmtkit")
            shortlist = cls(
                offsets=fields["offsets"].astype(np.int64),
                targets=fields["targets"].astype(np.int64),
                frequent=fields["frequent"].astype(np.int64),
                tgt_vocab_size=int(fields["tgt_vocab_size"]),
                fingerprint=str(fields["fingerprint"]),
                top_k=int(fields["top_k"]),
                num_pairs=int(fields["num_pairs"]),
            )
        except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError):
            raise DataError("not an nmtkit shortlist, or a damaged one", where=str(path)) from None
        if shortlist.fingerprint != fingerprint:
            raise DataError(
                "built for another vocabulary than this model's", where=str(path), hint=REBUILD_HINT
            )
        shortlist._check(path)
        return shortlist

    def _check(self, path: Path) -> None:
        offsets, size = self.offsets, self.tgt_vocab_size
        ids = np.concatenate([self.targets, self.frequent])
        if (
            offsets.ndim != 1
            or offsets.size == 0
            or offsets[0] != 0
            or np.any(np.diff(offsets) < 0)
            or offsets[-1] != self.targets.size
            or (ids.size and (ids.min() < 0 or ids.max() >= size))
        ):
            raise DataError("damaged shortlist: its tables do not agree", where=str(path))

    def covers(self, src: Tensor, *, special: tuple[int, ...] = SPECIAL_IDS) -> Tensor:
        """Which sentences of ``src`` [B, S] have an entry for every source piece (special ids
        aside): [B] bool, on ``src``'s device."""
        ids = src.cpu().numpy()
        seen = np.zeros(max(self.offsets.size - 1, int(ids.max()) + 1), dtype=bool)
        seen[: self.offsets.size - 1] = self.offsets[1:] > self.offsets[:-1]
        seen[list(special)] = True
        return torch.from_numpy(seen[ids].all(axis=1)).to(src.device)

    def candidates(
        self, src: Tensor, *, prefix: Tensor | None = None, special: tuple[int, ...] = SPECIAL_IDS
    ) -> Tensor:
        """The target pieces sentences ``src`` [B, S] may produce, ascending, [V'] (on
        ``src``'s device): their source pieces' entries (special ids ignored; a piece with none
        adds none), the frequent pieces, ``special``, and the words of ``prefix`` [B, P]."""
        ids = torch.unique(src).cpu().numpy()
        ids = ids[(ids < self.offsets.size - 1) & ~np.isin(ids, special)]
        starts = self.offsets[ids]
        lengths = self.offsets[ids + 1] - starts
        # The entries of every source piece, back to back: its start plus its rank in it.
        firsts = np.cumsum(lengths) - lengths
        entries = np.repeat(starts - firsts, lengths) + np.arange(int(lengths.sum()))
        keep = np.zeros(self.tgt_vocab_size, dtype=bool)
        keep[self.targets[entries]] = True
        keep[self.frequent] = True
        keep[list(special)] = True
        if prefix is not None:
            keep[prefix.cpu().numpy().reshape(-1)] = True
        return torch.from_numpy(np.flatnonzero(keep)).to(src.device)

    def search(
        self,
        strategy: SearchStrategy,
        model: Seq2Seq | Ensemble,
        src: Tensor,
        lengths: Tensor,
        *,
        max_lengths: Tensor,
        pad_id: int,
        bos_id: int,
        eos_id: int,
        with_weights: bool = False,
        prefix: Tensor | None = None,
    ) -> list[list[Hypothesis]]:
        """``strategy.search`` with the same arguments, the sentences the table covers over
        their candidates alone, the others (if any) apart, over the whole vocabulary."""
        special = (*SPECIAL_IDS, pad_id, bos_id, eos_id)
        covered = self.covers(src, special=special)  # [B]
        found: list[list[Hypothesis]] = [[] for _ in range(src.size(0))]
        for rows, restrict in (
            (covered.nonzero()[:, 0], True),
            ((~covered).nonzero()[:, 0], False),
        ):
            if rows.numel() == 0:
                continue
            part = _Part(
                src=src[rows],
                lengths=lengths[rows],
                max_lengths=max_lengths[rows],
                prefix=None if prefix is None else prefix[rows],
            )
            if restrict:
                vocab = self.candidates(part.src, prefix=part.prefix, special=special)
                log.debug(
                    "shortlist: %d of %d target pieces for %d sentences",
                    vocab.numel(),
                    self.tgt_vocab_size,
                    rows.numel(),
                )
            else:
                vocab = None
                log.debug("shortlist: %d sentences not covered: whole vocabulary", rows.numel())
            hyps = part.search(
                strategy,
                model,
                vocab,
                pad_id=pad_id,
                bos_id=bos_id,
                eos_id=eos_id,
                with_weights=with_weights,
            )
            for row, sentence in zip(rows.tolist(), hyps, strict=True):
                found[row] = sentence
        return found


@dataclass(frozen=True, slots=True)
class _Part:
    """Some sentences of a batch: source ids [b, S], lengths and caps [b], prefixes [b, P]."""

    src: Tensor
    lengths: Tensor
    max_lengths: Tensor
    prefix: Tensor | None

    def search(
        self,
        strategy: SearchStrategy,
        model: Seq2Seq | Ensemble,
        vocab: Tensor | None,
        *,
        pad_id: int,
        bos_id: int,
        eos_id: int,
        with_weights: bool,
    ) -> list[list[Hypothesis]]:
        """Search over the candidates ``vocab`` [V'] (ascending) in their own numbering, the
        tokens mapped back to ids, or over the whole vocabulary when ``vocab`` is None."""
        if vocab is None:
            return strategy.search(
                model,
                self.src,
                self.lengths,
                max_lengths=self.max_lengths,
                pad_id=pad_id,
                bos_id=bos_id,
                eos_id=eos_id,
                with_weights=with_weights,
                prefix=self.prefix,
            )

        def number(ids: Tensor) -> Tensor:  # id -> its place among the candidates
            return torch.searchsorted(vocab, ids)

        found = strategy.search(
            _Restricted(model, vocab),
            self.src,
            self.lengths,
            max_lengths=self.max_lengths,
            pad_id=int(number(torch.tensor(pad_id, device=vocab.device))),
            bos_id=int(number(torch.tensor(bos_id, device=vocab.device))),
            eos_id=int(number(torch.tensor(eos_id, device=vocab.device))),
            with_weights=with_weights,
            prefix=None if self.prefix is None else number(self.prefix),
        )
        ids = vocab.tolist()
        return [
            [dataclasses.replace(hyp, tokens=[ids[i] for i in hyp.tokens]) for hyp in hyps]
            for hyps in found
        ]


@dataclass(frozen=True, slots=True)
class _Restricted:
    """``model`` as a search sees it under a shortlist: its words are the candidates ``vocab``
    [V'], word i being ``vocab[i]``."""

    model: Seq2Seq | Ensemble
    vocab: Tensor

    def encode(self, src: Tensor, lengths: Tensor) -> EncoderOutput:
        return self.model.encode(src, lengths)

    def init_state(self, encoder_out: EncoderOutput) -> DecoderState:
        return self.model.init_state(encoder_out)

    def decode_step(self, prev_tokens: Tensor, state: DecoderState) -> StepOutput:
        """One step from candidate numbers [N]: log p over the candidates, [N, V']."""
        return self.model.decode_step(self.vocab[prev_tokens], state, vocab=self.vocab)
