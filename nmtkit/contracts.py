"""The contracts each kind of component meets: small base classes for encoders, attention
scorers, decoders and search strategies, each with a ``Config`` dataclass of its options.

Shapes use the letters of :mod:`nmtkit.models`: B batch, S source length, T target length,
E embedding, H encoder width per direction, C annotation (context) width
(``Encoder.output_size``, 2H for ``birnn``), D decoder state, A attention hidden size,
V target vocabulary.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import torch
from torch import Tensor, nn

from nmtkit.values import (
    Attended,
    Constraints,
    DecoderOutput,
    DecoderState,
    EncoderOutput,
    Hypothesis,
    ShortlistRows,
    StepOutput,
)


class Component:
    """Base of every registered class: ``Config`` is a frozen dataclass of its options."""

    @dataclass(frozen=True, kw_only=True, slots=True)
    class Config:
        pass

    description: ClassVar[str] = ""

    def init_parameters(self) -> None:
        """Re-initialize what the model-wide draw should not set (a no-op here).

        ``Seq2Seq.reset_parameters`` draws every parameter (``model.init``: ``uniform`` or
        ``paper``), then calls this on every component, e.g. to set a norm's gain to 1 or a
        learned temperature.
        """

    def init_paper_parameters(self, generator: torch.Generator | None = None) -> None:
        """Set the parts that Bahdanau et al. (2015, B.1) initialize specially (a no-op here).

        Under ``model.init: paper``, ``Seq2Seq.reset_parameters`` first draws every matrix from
        N(0, 0.01^2) and sets every vector (biases) to 0, then calls this on every component and
        :meth:`init_parameters` after it. A recurrent component makes each gate's recurrent
        matrix orthogonal; the additive attention draws W_a and U_a from N(0, 0.001^2) and
        sets v_a to 0.
        """


class Encoder(nn.Module, Component):
    """Reads embedded source words and returns per-position annotations and a summary."""

    output_size: int
    summary_size: int

    def __init__(self, config: Any, *, input_size: int) -> None:
        super().__init__()

    def forward(self, embedded: Tensor, lengths: Tensor, pad_mask: Tensor) -> EncoderOutput:
        """Encode ``embedded`` [B, S, E] whose real lengths are ``lengths`` [B]."""
        raise NotImplementedError


class AttentionScorer(nn.Module, Component):
    """Scores every annotation against the decoder's query; returns weights and the context.

    Contract: ``weights`` [B, S] are non-negative, sum to 1 over real positions and are exactly
    0 on padding; neither output changes with the amount of padding; ``context`` [B, C] has the
    annotations' width C (= ``key_size``). Most scorers subclass :class:`SoftmaxAttention` and
    write only ``energies``.

    ``aligns`` says whether the weights are a soft alignment of target to source words, which
    ``nmtkit align`` reads; a scorer whose weights do not depend on the words (a fixed context)
    sets it to False.
    """

    aligns: ClassVar[bool] = True

    def __init__(self, config: Any, *, query_size: int, key_size: int) -> None:
        super().__init__()

    def project_keys(self, annotations: Tensor, pad_mask: Tensor) -> Tensor:
        """Precompute what depends on the annotations only, once per sentence: [B, S, ...]."""
        raise NotImplementedError

    def forward(self, query: Tensor, state: DecoderState) -> Attended:
        """Attend from ``query`` [B, D] (s_{i-1}) over ``state``'s annotations and keys."""
        raise NotImplementedError

    def query_layers(self) -> tuple[nn.Linear, ...]:
        """The linear layers that :meth:`forward` applies to the [B, D] query, once a call: a
        decoder's training pass may take their weight gradients once for all its steps
        (:mod:`nmtkit.models.deferred_grads`). None by default; a scorer that lists a layer
        must not call it on anything else."""
        return ()


class SoftmaxAttention(AttentionScorer):
    """A scorer whose weights are a softmax of energies e_ij over real positions and whose
    context is c_i = sum_j alpha_ij h_j (Bahdanau et al., 2015, eq. 5-6)."""

    def energies(self, query: Tensor, state: DecoderState) -> Tensor:
        """Energies e_ij [B, S] (before the softmax); padding is masked afterwards."""
        raise NotImplementedError

    def forward(self, query: Tensor, state: DecoderState) -> Attended:
        energies = self.energies(query, state)  # [B, S]
        weights = energies.masked_fill(state.pad_mask, float("-inf")).softmax(dim=-1)
        context = torch.bmm(weights[:, None], state.annotations).squeeze(1)  # [B, C]
        return Attended(context=context, weights=weights)


class Decoder(nn.Module, Component):
    """Generates target words from the annotations through an attention scorer.

    A decoder writes :meth:`init_state`, :meth:`forward`, :meth:`logits` and :meth:`step`, the
    model's equations; :meth:`output_layer` and :meth:`shortlist_step` have defaults that work
    for any decoder and are overridden only to save time.
    """

    def __init__(
        self,
        config: Any,
        *,
        vocab_size: int,
        embed_size: int,
        annotation_size: int,
        summary_size: int,
        attention: AttentionScorer,
        dropout: float,
    ) -> None:
        super().__init__()

    def init_state(self, encoder_out: EncoderOutput) -> DecoderState:
        """Return s_0 and the precomputed keys for ``encoder_out``."""
        raise NotImplementedError

    def forward(self, tgt_in: Tensor, encoder_out: EncoderOutput) -> DecoderOutput:
        """Teacher forcing over ``tgt_in`` [B, T] (BOS + y_1..y_{T-1})."""
        raise NotImplementedError

    def logits(self, readout: Tensor) -> Tensor:
        """Project readout vectors [..., M] to logits [..., V]."""
        raise NotImplementedError

    def step(self, prev_tokens: Tensor, state: DecoderState) -> StepOutput:
        """Advance one step from y_{i-1} [B] and s_{i-1}: log p over the whole vocabulary
        [B, V], the new state ``state.advance(s_i, alpha_i)`` and alpha_i [B, S]."""
        raise NotImplementedError

    # Optional: the defaults below are right for any decoder; a decoder may override them to
    # be faster (the built-in ``gru`` does).

    def target_embedding(self) -> nn.Embedding | None:
        """The embedding of the previous target word, if the decoder has one: with
        ``model.share_embeddings`` the source side reads the same table (a joint vocabulary).
        None (the default): the decoder cannot share it."""
        return None

    def output_layer(self) -> nn.Linear | None:
        """The linear layer that :meth:`logits` is, if it is one: training then computes it
        together with the loss, a block of rows at a time, without the [N, V] logits
        (:func:`nmtkit.models.loss.linear_cross_entropy`), and a shortlist cuts its rows. None
        (the default) calls :meth:`logits`."""
        return None

    def shortlist_step(
        self, prev_tokens: Tensor, state: DecoderState, *, rows: ShortlistRows
    ) -> StepOutput:
        """:meth:`step` over a vocabulary shortlist (``translate --shortlist``): log p over the
        candidates ``rows.ids`` alone, [B, V'], normalized over them.

        The default takes the full step and renormalizes its candidates' log-probabilities. A
        decoder may instead project onto ``rows.weight`` and ``rows.bias`` (their rows of the
        output layer, when it has one) and skip the other V - V' rows.
        """
        out = self.step(prev_tokens, state)
        log_probs = out.log_probs.index_select(-1, rows.ids).log_softmax(dim=-1)  # [B, V']
        return dataclasses.replace(out, log_probs=log_probs)

    def attention_blocks(
        self, tgt_in: Tensor, encoder_out: EncoderOutput, *, block: int
    ) -> Iterator[Tensor]:
        """:meth:`forward`'s attention weights, ``block`` target steps at a time:
        [B, <=block, S] each (``nmtkit align`` on a very long pair).

        The default cuts them from the whole teacher-forced matrix. A decoder may instead run
        its steps a block at a time, so that a long line's [B, T, S] matrix is never whole.
        """
        yield from self(tgt_in, encoder_out).weights.split(block, dim=1)


class Translatable(Protocol):
    """What a search strategy needs from a model."""

    def encode(self, src: Tensor, lengths: Tensor) -> EncoderOutput: ...

    def init_state(self, encoder_out: EncoderOutput) -> DecoderState: ...

    def decode_step(self, prev_tokens: Tensor, state: DecoderState) -> StepOutput: ...


class SearchStrategy(Component):
    """Finds translations for a batch of source sentences, batched over sentences and beams."""

    def __init__(self, config: Any) -> None:
        self.config = config

    def search(
        self,
        model: Translatable,
        src: Tensor,
        lengths: Tensor,
        *,
        max_lengths: Tensor,
        pad_id: int,
        bos_id: int,
        eos_id: int,
        with_weights: bool = False,
        prefix: Tensor | None = None,
        constraints: Constraints | None = None,
    ) -> list[list[Hypothesis]]:
        """Return the hypotheses of each sentence of ``src`` [B, S], best first.

        ``max_lengths`` [B] caps each output's length, EOS excluded; PAD and BOS are never
        generated. ``with_weights`` keeps each hypothesis's attention weights.

        ``prefix`` holds forced target ids, PAD-padded, [B, P]: every hypothesis of sentence b
        starts with ``prefix[b]``'s real ids (none for an all-PAD row), whose log-probabilities
        count in ``log_prob`` and ``score`` like any other word's. The cap still applies: a
        prefix longer than ``max_lengths[b]`` is cut there and EOS follows.

        ``constraints`` holds target phrases every hypothesis must contain (lexically
        constrained search); a strategy that cannot search under them raises ConfigError.
        """
        raise NotImplementedError

    def score(
        self, log_prob: Tensor, *, lengths: Tensor, coverage: Tensor, pad_mask: Tensor
    ) -> Tensor:
        """The ``score`` this search gives a finished hypothesis (:attr:`Hypothesis.score`), from
        its log p [N], its length |Y| with EOS [N], the attention each source position got over
        all its steps, EOS step included [N, S], and the source padding [N, S]: [N].

        Forced decoding (``nmtkit score-pairs``) scores given translations with it. The default
        is greedy search's and sampling's, log p / |Y|.
        """
        return log_prob / lengths
