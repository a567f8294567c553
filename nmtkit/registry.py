"""The plugin registry: the contracts each kind of component meets, the values they exchange,
and name-based lookup with third-party discovery through the ``nmtkit.plugins`` entry points.

Shapes use the letters of :mod:`nmtkit.models`: B batch, S source length, T target length,
E embedding, H encoder width per direction, C annotation (context) width
(``Encoder.output_size``, 2H for ``birnn``), D decoder state, A attention hidden size,
V target vocabulary.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar

import torch
from torch import Tensor, nn

from nmtkit.errors import PluginError, unknown_name

log = logging.getLogger(__name__)

PLUGIN_GROUP = "nmtkit.plugins"


# ---------------------------------------------------------------------------- values


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


# ------------------------------------------------------------------------- contracts


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
    ) -> list[list[Hypothesis]]:
        """Return the hypotheses of each sentence of ``src`` [B, S], best first.

        ``max_lengths`` [B] caps each output's length, EOS excluded; PAD and BOS are never
        generated. ``with_weights`` keeps each hypothesis's attention weights.

        ``prefix`` holds forced target ids, PAD-padded, [B, P]: every hypothesis of sentence b
        starts with ``prefix[b]``'s real ids (none for an all-PAD row), whose log-probabilities
        count in ``log_prob`` and ``score`` like any other word's. The cap still applies: a
        prefix longer than ``max_lengths[b]`` is cut there and EOS follows.
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


# -------------------------------------------------------------------------- registry

CONTRACTS: dict[str, type] = {
    "encoder": Encoder,
    "attention": AttentionScorer,
    "decoder": Decoder,
    "search": SearchStrategy,
}
_registry: dict[str, dict[str, type]] = {kind: {} for kind in CONTRACTS}
_owners: dict[tuple[str, str], str] = {}
_discovered = False

C = TypeVar("C", bound=type)


def register(kind: str, name: str) -> Callable[[C], C]:
    """Class decorator: register a component of ``kind`` under ``name``.

    Raises:
        PluginError: unknown kind, a class that does not subclass the kind's contract or lacks a
            ``Config`` dataclass, or a name that is taken.
    """

    def decorate(cls: C) -> C:
        if kind not in CONTRACTS:
            raise unknown_name("component kind", kind, CONTRACTS, error=PluginError)
        if not issubclass(cls, CONTRACTS[kind]):
            raise PluginError(f"{cls.__qualname__} must subclass {CONTRACTS[kind].__name__}")
        if not dataclasses.is_dataclass(getattr(cls, "Config", None)):
            raise PluginError(f"{cls.__qualname__} needs a Config dataclass")
        owner = cls.__module__
        if name in _registry[kind]:
            raise PluginError(
                f"{kind} {name!r} is registered twice: by {_owners[(kind, name)]} and by {owner}"
            )
        _registry[kind][name] = cls
        _owners[(kind, name)] = owner
        return cls

    return decorate


def get(kind: str, name: str) -> type[Any]:
    """Return the class registered as ``name`` of ``kind``.

    Raises:
        PluginError: no such name; the message lists the registered ones and the closest match.
    """
    _load_builtins()
    if name not in _registry[kind]:
        discover_plugins()
    if name not in _registry[kind]:
        raise unknown_name(kind, name, sorted(_registry[kind]), error=PluginError)
    return _registry[kind][name]


def names(kind: str) -> list[str]:
    """Return every registered name of ``kind``, plugins included, sorted."""
    _load_builtins()
    discover_plugins()
    return sorted(_registry[kind])


def owner(kind: str, name: str) -> str:
    """Return the module that registered ``name``."""
    get(kind, name)
    return _owners[(kind, name)]


def provider(kind: str, name: str) -> dict[str, str]:
    """Where ``name`` comes from: its module and, when installed as a package, its distribution."""
    module = owner(kind, name)
    top = module.split(".")[0]
    dists = _distributions().get(top, [])
    return {"module": module, "distribution": dists[0] if dists else ""}


@functools.cache
def _distributions() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


def _load_builtins() -> None:
    # The built-in components register on import; importing here keeps registry.py at the bottom
    # of the import graph for everyone else.
    import nmtkit.models  # noqa: F401
    import nmtkit.search  # noqa: F401


def discover_plugins() -> None:
    """Import every module named in the ``nmtkit.plugins`` entry-point group, once.

    ``NMTKIT_DISABLE_PLUGINS=1`` skips discovery.

    Raises:
        PluginError: a plugin module fails to import (naming the entry point and distribution).
    """
    global _discovered
    if _discovered or os.environ.get("NMTKIT_DISABLE_PLUGINS") == "1":
        return
    _discovered = True
    for entry in sorted(importlib.metadata.entry_points(group=PLUGIN_GROUP), key=lambda e: e.name):
        dist = entry.dist.name if entry.dist else "unknown distribution"
        try:
            entry.load()
        except PluginError:
            raise
        except Exception as exc:
            raise PluginError(
                f"plugin {entry.name!r} from {dist} failed to load: {exc}", where=entry.value
            ) from exc
        log.debug("loaded plugin %s from %s", entry.name, dist)
