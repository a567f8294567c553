"""The decoder contract's optional methods: a plugin decoder that writes only the required
ones (init_state, forward, logits, step) trains through ``logits``, translates, and takes a
vocabulary shortlist through the default ``shortlist_step``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from torch import Tensor, nn

from nmtkit import registry
from nmtkit.config import load_config
from nmtkit.data.batching import collate, collate_source
from nmtkit.data.text import BOS_ID
from nmtkit.errors import ConfigError
from nmtkit.models import Seq2Seq, build_model
from nmtkit.registry import (
    AttentionScorer,
    Decoder,
    DecoderOutput,
    DecoderState,
    EncoderOutput,
    StepOutput,
)
from nmtkit.search.decode import decode_sequences
from nmtkit.shortlist.restricted import ShortlistSearch
from nmtkit.shortlist.table import Shortlist
from tests.unit.test_search import beam, greedy

VOCAB = 16
COPIES = [[5, 6, 7, 8], [9, 10, 11], [12, 13, 14, 15, 4], [6, 9, 12]]


class MinimalDecoder(Decoder):
    """A plain attentional GRU decoder with only the required methods, as a plugin author
    would write it from the paper."""

    @dataclass(frozen=True, kw_only=True, slots=True)
    class Config:
        hidden_size: int = 32

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
        self.embed = nn.Embedding(vocab_size, embed_size)
        self.attention = attention
        self.init_proj = nn.Linear(summary_size, config.hidden_size)
        self.cell = nn.GRUCell(embed_size + annotation_size, config.hidden_size)
        self.out = nn.Linear(config.hidden_size + annotation_size, vocab_size)

    def init_state(self, encoder_out: EncoderOutput) -> DecoderState:
        keys = self.attention.project_keys(encoder_out.annotations, encoder_out.pad_mask)
        return DecoderState.start(
            hidden=torch.tanh(self.init_proj(encoder_out.summary)),
            annotations=encoder_out.annotations,
            keys=keys,
            pad_mask=encoder_out.pad_mask,
        )

    def _advance(self, prev_tokens: Tensor, state: DecoderState) -> tuple[Tensor, DecoderState]:
        attended = self.attention(state.hidden, state)
        inputs = torch.cat([self.embed(prev_tokens), attended.context], dim=-1)
        hidden = self.cell(inputs, state.hidden)
        readout = torch.cat([hidden, attended.context], dim=-1)
        return readout, state.advance(hidden, attended.weights)

    def forward(self, tgt_in: Tensor, encoder_out: EncoderOutput) -> DecoderOutput:
        state = self.init_state(encoder_out)
        readouts, weights = [], []
        for prev in tgt_in.unbind(dim=1):
            readout, state = self._advance(prev, state)
            readouts.append(readout)
            weights.append(state.prev_weights)
        return DecoderOutput(
            readout=torch.stack(readouts, dim=1), weights=torch.stack(weights, dim=1)
        )

    def logits(self, readout: Tensor) -> Tensor:
        return self.out(readout)

    def step(self, prev_tokens: Tensor, state: DecoderState) -> StepOutput:
        readout, state = self._advance(prev_tokens, state)
        log_probs = self.logits(readout).log_softmax(dim=-1)
        return StepOutput(log_probs=log_probs, state=state, weights=state.prev_weights)


@pytest.fixture(scope="module")
def minimal() -> Iterator[str]:
    """``MinimalDecoder`` registered as ``minimal`` for this module, the registry restored after."""
    registry.names("decoder")  # the built-ins and plugins, before the copy
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(registry, "_registry", {k: dict(v) for k, v in registry._registry.items()})
        patch.setattr(registry, "_owners", dict(registry._owners))
        registry.register("decoder", "minimal")(MinimalDecoder)
        yield "minimal"


@pytest.fixture(scope="module")
def copier(minimal: str) -> Seq2Seq:
    """A tiny model with the minimal decoder, trained until it copies :data:`COPIES`."""
    torch.manual_seed(0)
    config = load_config(preset="tiny", overrides=[f"model.decoder={minimal}"])
    model = build_model(config.model, src_vocab_size=VOCAB, tgt_vocab_size=VOCAB, pad_id=0)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    batch = collate([[*s, 3] for s in COPIES], COPIES, list(range(len(COPIES))))
    model.train()
    for _ in range(40):
        optimizer.zero_grad()
        loss, _ = model.loss(batch)  # through logits: the decoder has no output_layer
        (loss / batch.num_tgt_tokens).backward()
        optimizer.step()
    return model.eval()


def test_a_decoder_without_the_optional_methods_has_their_defaults(minimal: str) -> None:
    assert MinimalDecoder.output_layer is Decoder.output_layer
    assert MinimalDecoder.shortlist_step is Decoder.shortlist_step
    assert MinimalDecoder.attention_blocks is Decoder.attention_blocks
    torch.manual_seed(0)
    config = load_config(preset="tiny", overrides=[f"model.decoder={minimal}"])
    model = build_model(config.model, src_vocab_size=VOCAB, tgt_vocab_size=VOCAB, pad_id=0)
    assert model.output_layer() is None
    rows = model.shortlist_rows(torch.tensor([0, 1, 2, 3, 5, 9]))
    assert rows.weight is None and rows.bias is None


def test_a_minimal_plugin_decoder_trains_and_translates(copier: Seq2Seq) -> None:
    model = copier
    for strategy in (greedy(), beam(3)):
        found = decode_sequences(
            model, [[*s, 3] for s in COPIES], strategy, batch_size=4, max_len_a=1.0, max_len_b=2
        )
        assert [hyps[0].tokens for hyps in found] == COPIES


def test_the_default_shortlist_step_renormalizes_the_full_step(copier: Seq2Seq) -> None:
    model = copier
    ids = torch.tensor([0, 1, 2, 3, 5, 6, 9, 12])
    src, lengths = collate_source([[*s, 3] for s in COPIES])
    prev = torch.full((len(COPIES),), BOS_ID)
    with torch.no_grad():
        state = model.init_state(model.encode(src, lengths))
        full = model.decode_step(prev, state)
        listed = model.decode_step(prev, state, shortlist=model.shortlist_rows(ids))
    assert listed.log_probs.shape == (len(COPIES), ids.numel())
    assert torch.allclose(listed.log_probs, full.log_probs[:, ids].log_softmax(dim=-1))
    assert torch.equal(listed.weights, full.weights)


def test_a_minimal_plugin_decoder_translates_under_a_shortlist(copier: Seq2Seq) -> None:
    model = copier
    lists = [[w] for w in range(VOCAB)]  # each source piece may only be copied
    shortlist = Shortlist(
        offsets=np.cumsum([0, *map(len, lists)]).astype(np.int64),
        targets=np.array([w for words in lists for w in words], dtype=np.int64),
        frequent=np.array([], dtype=np.int64),
        tgt_vocab_size=VOCAB,
        fingerprint="vocab",
        top_k=1,
        num_pairs=1,
    )
    for strategy in (greedy(), beam(3)):
        found = decode_sequences(
            model,
            [[*s, 3] for s in COPIES],
            ShortlistSearch(strategy, shortlist),
            batch_size=4,
            max_len_a=1.0,
            max_len_b=2,
        )
        assert [hyps[0].tokens for hyps in found] == COPIES


def test_the_default_attention_blocks_are_the_rows_of_force_decode(copier: Seq2Seq) -> None:
    model = copier
    batch = collate(COPIES, COPIES, range(len(COPIES)))
    with torch.no_grad():
        whole = model.force_decode(batch)  # [B, T, S]
        blocks = list(model.force_decode_blocks(batch, block=2))
    assert [b.size(1) for b in blocks[:-1]] == [2] * (len(blocks) - 1)
    assert torch.equal(torch.cat(blocks, dim=1), whole)


def test_a_decoder_without_a_target_embedding_refuses_to_share_it(minimal: str) -> None:
    assert MinimalDecoder.target_embedding is Decoder.target_embedding
    overrides = [f"model.decoder={minimal}", "model.share_embeddings=true"]
    config = load_config(preset="tiny", overrides=overrides)
    with pytest.raises(ConfigError, match="has no target embedding to share"):
        build_model(config.model, src_vocab_size=VOCAB, tgt_vocab_size=VOCAB, pad_id=0)
