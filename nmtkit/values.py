"""The values that components exchange, frozen dataclasses: a batch, the encoder's output, the
decoder's state between steps, one attention step, one decoding step, teacher-forced decoding,
and a finished hypothesis.

Shapes use the letters of :mod:`nmtkit.models`: B batch, S source length, T target length,
C annotation (context) width (``Encoder.output_size``, 2H for ``birnn``), D decoder state,
A attention hidden size, M readout width, V target vocabulary.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True, slots=True)
class Batch:
    """Padded id tensors of one batch (PAD = 0).

    Attributes:
        src: source ids ending in EOS, [B, S]; src_lengths [B] (EOS included).
        tgt_in: BOS + target ids, [B, T]; tgt_out: target ids + EOS, [B, T].
        indices: the sentences' positions in their dataset or input, [B].
        num_tgt_tokens: real (non-pad) positions of ``tgt_out``.
    """

    src: Tensor
    src_lengths: Tensor
    tgt_in: Tensor
    tgt_out: Tensor
    indices: Tensor
    num_tgt_tokens: int

    def to(self, device: str | torch.device, *, non_blocking: bool = False) -> Batch:
        """The same batch on ``device`` (``non_blocking``: an asynchronous copy from pinned
        memory to a GPU)."""
        return dataclasses.replace(
            self,
            src=self.src.to(device, non_blocking=non_blocking),
            src_lengths=self.src_lengths.to(device, non_blocking=non_blocking),
            tgt_in=self.tgt_in.to(device, non_blocking=non_blocking),
            tgt_out=self.tgt_out.to(device, non_blocking=non_blocking),
        )

    def pin_memory(self) -> Batch:
        """The same batch in page-locked memory, from which a GPU copies asynchronously."""
        return dataclasses.replace(
            self,
            src=self.src.pin_memory(),
            src_lengths=self.src_lengths.pin_memory(),
            tgt_in=self.tgt_in.pin_memory(),
            tgt_out=self.tgt_out.pin_memory(),
        )


@dataclass(frozen=True, slots=True)
class EncoderOutput:
    """What an encoder hands to the decoder.

    Attributes:
        annotations: h_j for every source position, [B, S, C] (C = ``output_size``).
        pad_mask: True at padding, [B, S].
        summary: one vector per sentence from which the decoder's s_0 is made, [B, summary_size]
            (RNNsearch: the backward state at the first word, ←h_1).
    """

    annotations: Tensor
    pad_mask: Tensor
    summary: Tensor


@dataclass(frozen=True, slots=True)
class DecoderState:
    """The decoder's state between steps: :meth:`reorder` moves its per-hypothesis tensors to
    a beam's survivors, :meth:`select` keeps (and repeats) rows as sentences start and finish.

    Attributes:
        hidden: s_{i-1}, [B, D].
        annotations: h_j, [B, S, C] (C = the encoder's ``output_size``).
        keys: the attention's precomputed view of the annotations (e.g. U_a h_j), [B, S, ...].
        pad_mask: True at padding, [B, S].
        prev_weights: alpha_{i-1}, the previous step's attention weights (zeros at the start),
            [B, S]; location-aware scorers read it.
        coverage: sum of every earlier step's attention weights, [B, S]; coverage penalties
            and coverage-aware scorers read it.
    """

    hidden: Tensor
    annotations: Tensor
    keys: Tensor
    pad_mask: Tensor
    prev_weights: Tensor
    coverage: Tensor

    @classmethod
    def start(
        cls, hidden: Tensor, annotations: Tensor, keys: Tensor, pad_mask: Tensor
    ) -> DecoderState:
        """The state before the first step: no attention paid yet."""
        # fp32 (or wider) even where the annotations were cast to bf16 for the context's product
        dtype = torch.promote_types(hidden.dtype, annotations.dtype)
        zeros = pad_mask.new_zeros(pad_mask.shape, dtype=dtype)  # [B, S]
        return cls(hidden, annotations, keys, pad_mask, zeros, zeros)

    def advance(self, hidden: Tensor, weights: Tensor) -> DecoderState:
        """The same sentences one step on: s_i in place of s_{i-1}, alpha_i [B, S] recorded."""
        return DecoderState(
            hidden=hidden,
            annotations=self.annotations,
            keys=self.keys,
            pad_mask=self.pad_mask,
            prev_weights=weights,
            coverage=self.coverage + weights,
        )

    def reorder(self, rows: Tensor) -> DecoderState:
        """Re-order the hypotheses of each sentence: ``rows`` [B] picks, for every row, a row
        of the same sentence (a beam search's survivors). The annotations, keys and mask are
        the sentence's own, the same in all of its rows, so only the per-row tensors move."""
        return DecoderState(
            hidden=self.hidden.index_select(0, rows),
            annotations=self.annotations,
            keys=self.keys,
            pad_mask=self.pad_mask,
            prev_weights=self.prev_weights.index_select(0, rows),
            coverage=self.coverage.index_select(0, rows),
        )

    def select(self, index: Tensor) -> DecoderState:
        """Keep (and repeat) the rows in ``index`` [B'] of every tensor."""
        return DecoderState(
            hidden=self.hidden.index_select(0, index),
            annotations=self.annotations.index_select(0, index),
            keys=self.keys.index_select(0, index),
            pad_mask=self.pad_mask.index_select(0, index),
            prev_weights=self.prev_weights.index_select(0, index),
            coverage=self.coverage.index_select(0, index),
        )


@dataclass(frozen=True, slots=True)
class Attended:
    """One attention step: the context vector c_i [B, C] and the weights alpha_i [B, S]."""

    context: Tensor
    weights: Tensor


@dataclass(frozen=True, slots=True)
class StepOutput:
    """One decoding step: log p(y_i | y_<i, x) [B, V], the new state, and alpha_i [B, S]."""

    log_probs: Tensor
    state: DecoderState
    weights: Tensor


@dataclass(frozen=True, slots=True)
class ShortlistRows:
    """A batch's vocabulary shortlist as a decoding step reads it, cut once per batch by the
    search (:meth:`nmtkit.models.Seq2Seq.shortlist_rows`), never kept by the decoder.

    Attributes:
        ids: the candidate target ids, ascending, [V'].
        weight: their rows of the output layer's weight, [V', M]; None when the decoder's output
            is not one float linear layer (no :meth:`Decoder.output_layer`, or int8 weights).
        bias: their entries of the output layer's bias, [V']; None without rows or bias.
    """

    ids: Tensor
    weight: Tensor | None = None
    bias: Tensor | None = None


@dataclass(frozen=True, slots=True)
class DecoderOutput:
    """Teacher-forced decoding: readout vectors t_i [B, T, M] and attention weights [B, T, S]."""

    readout: Tensor
    weights: Tensor


@dataclass(frozen=True, slots=True)
class Hypothesis:
    """One finished translation of one sentence.

    Attributes:
        tokens: target ids without BOS and EOS.
        score: the score the search ranked it by: log p / length (EOS counted) for greedy
            search and sampling; for beam search log p / lp(Y) + cp(X; Y), which is the raw
            log p when both penalties are 0 (``nmtkit.search`` sums this up).
        log_prob: sum of the token log-probabilities, EOS included (not normalized).
        weights: attention weights per output step (EOS step included), [len(tokens)+1, S].
    """

    tokens: list[int]
    score: float
    log_prob: float
    weights: Tensor | None = None


@dataclass(frozen=True, slots=True)
class Constraints:
    """Target phrases every hypothesis of a sentence must contain (lexically constrained
    search), for a batch of B sentences with at most C phrases of at most L ids each.

    Attributes:
        tokens: each phrase's target ids, PAD after its end, [B, C, L].
        lengths: each phrase's length, 0 for a sentence with fewer than C phrases, [B, C].
        sources: the source positions each phrase's term translates, [B, C, S] (all False
            where unknown: a bare constraint); what placement by attention looks at.
        continues_word: the target pieces that would glue onto the word before them (no
            word-start mark, a letter, digit or hyphen first), [V]; none may follow a phrase
            just met, so that a term stays a whole word. None: no such rule.
    """

    tokens: Tensor
    lengths: Tensor
    sources: Tensor
    continues_word: Tensor | None = None

    def select(self, sentences: Tensor) -> Constraints:
        """The constraints of sentences ``sentences`` [b] of the batch."""
        return Constraints(
            tokens=self.tokens[sentences],
            lengths=self.lengths[sentences],
            sources=self.sources[sentences],
            continues_word=self.continues_word,
        )
