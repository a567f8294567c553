"""The RNNsearch decoder (Bahdanau et al., 2015, A.2.2): a GRU that attends from s_{i-1},
reads c_i together with y_{i-1}, and predicts y_i through a maxout deep output."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from nmtkit.errors import ConfigError, check_probability, unknown_name
from nmtkit.models.deferred_grads import deferred_weight_grads
from nmtkit.models.initialization import orthogonal_gates
from nmtkit.models.word_dropout import WordDropout
from nmtkit.registry import (
    AttentionScorer,
    Decoder,
    DecoderOutput,
    DecoderState,
    EncoderOutput,
    ShortlistRows,
    StepOutput,
    register,
)
from nmtkit.runtime import active_autocast_dtype

READOUT_STATES = ("current", "previous")


def gru_transition(gates_in: Tensor, gates_h: Tensor, hidden: Tensor) -> Tensor:
    """One GRU update in torch's gate order r, z, n from the input's and the state's gate
    pre-activations ([B, 3D] each) and the state [B, D]: the new state [B, D], in fp32.

    Under bf16 autocast the matrix products run in bf16, but the gates and the state are fp32:
    the state carries the whole sentence, and rounding it at every step would compound."""
    in_r, in_z, in_n = gates_in.float().chunk(3, dim=-1)
    h_r, h_z, h_n = gates_h.float().chunk(3, dim=-1)
    reset = torch.sigmoid(in_r + h_r)
    update = torch.sigmoid(in_z + h_z)
    candidate = torch.tanh(in_n + reset * h_n)
    return candidate + update * (hidden - candidate)  # (1-z) n + z s


@register("decoder", "gru")
class GRUDecoder(Decoder):
    """s_i = GRU(s_{i-1}, [E y_{i-1}; c_i]) with c_i = sum_j alpha_ij h_j and alpha_i from s_{i-1};
    p(y_i) = softmax(W_o maxout(U_o s + V_o E y_{i-1} + C_o c_i)); s_0 = tanh(W_s summary).

    The paper contradicts itself on the readout's state s: its eq. (4) reads s_i, appendix
    A.2.2 (t~_i = U_o s_{i-1} + ...) reads s_{i-1}. ``readout_state`` picks one: ``current``
    (s_i, the default) or ``previous`` (s_{i-1}).

    The embedding's share of the GRU input gates (and of the readout) is computed for all steps
    at once under teacher forcing, so the time loop holds only what truly recurs.
    """

    description = (
        "RNNsearch GRU decoder: attend from s_{i-1}, GRU on [y_{i-1}; c_i], maxout readout"
    )

    @dataclass(frozen=True, kw_only=True, slots=True)
    class Config:
        # D (paper: 1000). 384 rather than 512: 30 % more updates in a time budget and +1.58 val
        # BLEU (beam 5, 2 seeds) after 15 minutes on 2 cores (docs/quality.md).
        hidden_size: int = 384
        readout_size: int = 256  # M, after maxout over pairs (paper: 500)
        tie_embeddings: bool = False  # share the target embedding with the output projection
        readout_state: str = "current"  # the readout reads s_i (current) or s_{i-1} (previous)
        # Word dropout on the target words y_{i-1} the decoder reads in training: each
        # position's whole embedding zeroed with this probability (Marian's --dropout-trg;
        # nmtkit.models.word_dropout). Fixed, not set by the run-length rule. Off, as
        # model.source_word_dropout (docs/quality.md).
        word_dropout: float = 0.0

        def __post_init__(self) -> None:
            if self.readout_state not in READOUT_STATES:
                raise unknown_name(
                    "readout_state",
                    self.readout_state,
                    READOUT_STATES,
                    where="model.decoder.readout_state",
                )
            check_probability(self.word_dropout, "model.decoder.word_dropout")

    def __init__(
        self,
        config: Config,
        *,
        vocab_size: int,
        embed_size: int,
        annotation_size: int,
        summary_size: int,
        attention: AttentionScorer,
        dropout: float,
    ) -> None:
        super().__init__(
            config,
            vocab_size=vocab_size,
            embed_size=embed_size,
            annotation_size=annotation_size,
            summary_size=summary_size,
            attention=attention,
            dropout=dropout,
        )
        d, m = config.hidden_size, config.readout_size
        self.hidden_size = d
        self.readout_from_previous = config.readout_state == "previous"
        self.embed = nn.Embedding(vocab_size, embed_size)
        self.attention = attention
        self.init_proj = nn.Linear(summary_size, d)  # W_s
        self.input_from_embed = nn.Linear(embed_size, 3 * d)  # GRU input gates, y part
        self.input_from_context = nn.Linear(annotation_size, 3 * d, bias=False)  # c part
        self.hidden_to_gates = nn.Linear(d, 3 * d)  # GRU recurrent gates
        self.readout_hidden = nn.Linear(d, 2 * m)  # U_o
        self.readout_embed = nn.Linear(embed_size, 2 * m, bias=False)  # V_o
        self.readout_context = nn.Linear(annotation_size, 2 * m, bias=False)  # C_o
        self.output = nn.Linear(m, vocab_size)  # W_o
        if config.tie_embeddings:
            if m != embed_size:
                raise ConfigError("tie_embeddings needs readout_size == embed_size")
            self.output.weight = self.embed.weight
        self.dropout = nn.Dropout(dropout)
        self.word_dropout = WordDropout(config.word_dropout)  # whole target words

    def _embed_targets(self, tgt_in: Tensor) -> Tensor:
        """Teacher forcing's inputs E y_{i-1} [B, T, E], word dropout and dropout applied."""
        return self.dropout(self.word_dropout(self.embed(tgt_in)))

    def init_paper_parameters(self, generator: torch.Generator | None = None) -> None:
        """U_r, U_z and U, the recurrent matrices of the three gates: orthogonal each (B.1)."""
        orthogonal_gates(self.hidden_to_gates.weight, self.hidden_size, generator=generator)

    def init_state(self, encoder_out: EncoderOutput) -> DecoderState:
        annotations = encoder_out.annotations  # [B, S, C]
        keys = self.attention.project_keys(annotations, encoder_out.pad_mask)
        dtype = active_autocast_dtype(annotations.device.type)
        if dtype is not None:
            # Cast once per batch: autocast would cast them again at every step's context
            # product (it caches casts of parameters only), in the search for every hypothesis.
            annotations = annotations.to(dtype)
        return DecoderState.start(
            hidden=torch.tanh(self.init_proj(encoder_out.summary)).float(),  # s_0 [B, D], fp32
            annotations=annotations,
            keys=keys,
            pad_mask=encoder_out.pad_mask,
        )

    def _recur(self, embed_gates: Tensor, state: DecoderState) -> tuple[Tensor, Tensor, Tensor]:
        """One GRU step from s_{i-1}: return s_i [B, D], c_i [B, C], alpha_i [B, S]."""
        hidden = state.hidden
        attended = self.attention(hidden, state)
        context, weights = attended.context, attended.weights  # [B, C], [B, S]
        gates_in = embed_gates + self.input_from_context(context)  # [B, 3D]
        hidden = gru_transition(gates_in, self.hidden_to_gates(hidden), hidden)  # s_i [B, D]
        return hidden, context, weights

    def step_layers(self) -> tuple[nn.Linear, ...]:
        """The linear layers that :meth:`_recur` calls on [B, ...] inputs at every step, the
        attention's query layers among them."""
        return (self.input_from_context, self.hidden_to_gates, *self.attention.query_layers())

    def _readout(self, hidden: Tensor, embedded: Tensor, context: Tensor) -> Tensor:
        """Maxout deep output t_i over (s, E y_{i-1}, c_i), s = s_i or s_{i-1}: [..., M]."""
        pre = (
            self.readout_hidden(hidden)
            + self.readout_embed(embedded)
            + self.readout_context(context)
        )
        pre = pre.unflatten(-1, (-1, 2)).amax(dim=-1)  # [..., M]
        return self.dropout(pre)

    def forward(self, tgt_in: Tensor, encoder_out: EncoderOutput) -> DecoderOutput:
        embedded = self._embed_targets(tgt_in)  # [B, T, E]
        embed_gates = self.input_from_embed(embedded)  # [B, T, 3D]
        state = self.init_state(encoder_out)
        if not torch.is_grad_enabled():
            return self._force_into_buffers(embedded, embed_gates, state)
        # The readout's states: s_1..s_T, or s_0..s_{T-1} when it reads the previous state.
        hiddens = [state.hidden] if self.readout_from_previous else []
        contexts, weights = [], []
        # unbind, not embed_gates[:, i]: the backward of T slices would zero-fill T full-size
        # gradients; unbind's backward stacks them once. The step layers' weight gradients are
        # taken once for all steps (nmtkit.models.deferred_grads).
        with deferred_weight_grads(*self.step_layers()):
            for gates in embed_gates.unbind(dim=1):
                hidden, context, alpha = self._recur(gates, state)
                state = state.advance(hidden, alpha)
                hiddens.append(hidden)
                contexts.append(context)
                weights.append(alpha)
        states = torch.stack(hiddens[: len(contexts)], dim=1)  # [B, T, D]
        readout = self._readout(states, embedded, torch.stack(contexts, dim=1))  # [B, T, M]
        return DecoderOutput(readout=readout, weights=torch.stack(weights, dim=1))  # [B, T, S]

    def _force_into_buffers(
        self, embedded: Tensor, embed_gates: Tensor, state: DecoderState
    ) -> DecoderOutput:
        """:meth:`forward` without gradients: each step's s_i, c_i and alpha_i are written into
        tensors made once, not kept as T small tensors. Those, outliving every step, split the
        freed [B, S, A] attention blocks, so that each step took a fresh one and a long line's
        memory grew with T x S x A (measured: 7.8 GB at 5000 words)."""
        b, t = embed_gates.shape[:2]
        first = int(self.readout_from_previous)  # the readout reads s_{i-1}: s_0 comes first
        hiddens = state.hidden.new_empty(b, t + first, self.hidden_size)  # [B, T(+1), D]
        hiddens[:, 0] = state.hidden
        contexts = weights = None
        for i, gates in enumerate(embed_gates.unbind(dim=1)):
            hidden, context, alpha = self._recur(gates, state)
            state = state.advance(hidden, alpha)
            if contexts is None or weights is None:  # in the dtypes that the step gives
                contexts = context.new_empty(b, t, context.size(-1))  # [B, T, C]
                weights = alpha.new_empty(b, t, alpha.size(-1))  # [B, T, S]
            hiddens[:, i + first] = hidden
            contexts[:, i] = context
            weights[:, i] = alpha
        assert contexts is not None and weights is not None, "tgt_in holds BOS at least"
        readout = self._readout(hiddens[:, :t], embedded, contexts)  # [B, T, M]
        return DecoderOutput(readout=readout, weights=weights)  # [B, T, S]

    def attention_blocks(
        self, tgt_in: Tensor, encoder_out: EncoderOutput, *, block: int
    ) -> Iterator[Tensor]:
        """:meth:`forward`'s weights without gradients, ``block`` target steps at a time: the
        [B, T, S] matrix of a long line is never whole. Each step is the one ``forward`` takes,
        so the rows equal its rows."""
        embedded = self._embed_targets(tgt_in)  # [B, T, E]
        embed_gates = self.input_from_embed(embedded)  # [B, T, 3D]
        state = self.init_state(encoder_out)
        t = embed_gates.size(1)
        for start in range(0, t, block):
            # Written into a tensor made once a block, not kept as small tensors: those,
            # outliving the steps, split the freed [B, S, A] attention blocks (see
            # _force_into_buffers).
            weights = None
            for i in range(start, min(start + block, t)):
                hidden, _, alpha = self._recur(embed_gates[:, i], state)  # alpha [B, S]
                state = state.advance(hidden, alpha)
                if weights is None:  # in the dtype that the step gives
                    weights = alpha.new_empty(alpha.size(0), min(block, t - start), alpha.size(1))
                weights[:, i - start] = alpha
            assert weights is not None, "a block holds one step at least"
            yield weights  # [B, <=block, S]

    def logits(self, readout: Tensor) -> Tensor:
        return self.output(readout)  # [..., V]

    def output_layer(self) -> nn.Linear:
        return self.output  # W_o

    def target_embedding(self) -> nn.Embedding:
        return self.embed  # E

    def step(self, prev_tokens: Tensor, state: DecoderState) -> StepOutput:
        readout, state, weights = self._step_readout(prev_tokens, state)  # [B, M]
        log_probs = self.logits(readout).log_softmax(dim=-1)  # [B, V]
        return StepOutput(log_probs=log_probs, state=state, weights=weights)

    def shortlist_step(
        self, prev_tokens: Tensor, state: DecoderState, *, rows: ShortlistRows
    ) -> StepOutput:
        """:meth:`step` with the logits of the candidates alone: from their rows of W_o when the
        search cut them, else projected onto all V and kept: [B, V']."""
        readout, state, weights = self._step_readout(prev_tokens, state)  # [B, M]
        if rows.weight is None:
            logits = self.logits(readout).index_select(-1, rows.ids)  # [B, V']
        else:
            logits = F.linear(readout, rows.weight, rows.bias)  # [B, V']
        return StepOutput(log_probs=logits.log_softmax(dim=-1), state=state, weights=weights)

    def _step_readout(
        self, prev_tokens: Tensor, state: DecoderState
    ) -> tuple[Tensor, DecoderState, Tensor]:
        """One step from y_{i-1} [B] and s_{i-1}: t_i [B, M], the new state, alpha_i [B, S]."""
        embedded = self.embed(prev_tokens)  # [B, E]
        hidden, context, weights = self._recur(self.input_from_embed(embedded), state)
        readout_hidden = state.hidden if self.readout_from_previous else hidden  # s_{i-1} or s_i
        readout = self._readout(readout_hidden, embedded, context)  # [B, M]
        return readout, state.advance(hidden, weights), weights
