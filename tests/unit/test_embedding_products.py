"""The target embedding's products folded into one table: a step, teacher forcing and search
compute what the products compute, every inference precision folds, and what cannot fold (or
should not: a table too large) keeps its products."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from nmtkit.models import embedding_products
from nmtkit.models.embedding_products import (
    FoldedEmbedding,
    TableColumns,
    fold_embedding_products,
    foldable,
)
from nmtkit.models.inference_weights import prepare_weights
from nmtkit.runtime import packed16_available
from nmtkit.search.beam import BeamSearch
from nmtkit.search.greedy import GreedySearch
from tests.unit.test_models import TINY_DECODERS, random_ids, tiny_model
from tests.unit.test_packed_weights import search

DECODERS = pytest.mark.parametrize("decoder", ["gru", "cgru"])


def a_step(model: torch.nn.Module, prev: torch.Tensor, src: torch.Tensor) -> tuple:
    """Two decoding steps from BOS-like ``prev``: log-probs, the state and the weights."""
    encoded = model.encode(src, torch.tensor([src.size(1)] * src.size(0)))
    state = model.decoder.init_state(encoded)
    first = model.decoder.step(prev, state)
    second = model.decoder.step(first.log_probs.argmax(-1), first.state)
    return first.log_probs, second.log_probs, second.state.hidden, second.weights


@DECODERS
@torch.no_grad()
def test_a_folded_step_computes_what_the_products_compute(decoder: str) -> None:
    model = tiny_model("model.init_scale=0.5", *TINY_DECODERS[decoder])
    src = torch.tensor(random_ids([6, 6, 6], seed=1))
    prev = torch.tensor([1, 5, 9])
    before = a_step(model, prev, src)
    assert fold_embedding_products(model.decoder) == ["input_from_embed", "readout_embed"]
    assert isinstance(model.decoder.embed, FoldedEmbedding)
    assert isinstance(model.decoder.input_from_embed, TableColumns)
    for expected, got in zip(before, a_step(model, prev, src), strict=True):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    assert fold_embedding_products(model.decoder) == []  # nothing left to fold


@DECODERS
@torch.no_grad()
def test_teacher_forcing_through_the_table_gives_the_same_readout(decoder: str) -> None:
    model = tiny_model("model.init_scale=0.5", *TINY_DECODERS[decoder])
    src = torch.tensor(random_ids([7, 7], seed=2))
    tgt_in = torch.tensor([[1, *ids] for ids in random_ids([5, 5], seed=3)])
    encoded = model.encode(src, torch.tensor([7, 7]))
    before = model.decoder(tgt_in, encoded)
    fold_embedding_products(model.decoder)
    after = model.decoder(tgt_in, encoded)
    torch.testing.assert_close(after.readout, before.readout, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(after.weights, before.weights, rtol=1e-5, atol=1e-5)


@DECODERS
def test_search_through_the_table_finds_what_the_products_find(decoder: str) -> None:
    model = tiny_model("model.init_scale=0.5", *TINY_DECODERS[decoder])
    strategies = [BeamSearch(BeamSearch.Config(beam_size=3)), GreedySearch(GreedySearch.Config())]
    before = [search(model, strategy, "fp32") for strategy in strategies]
    assert prepare_weights(model, "fp32") == ["decoder.input_from_embed", "decoder.readout_embed"]
    after = [search(model, strategy, "fp32") for strategy in strategies]
    for found_before, found_after in zip(before, after, strict=True):
        for hyps_before, hyps_after in zip(found_before, found_after, strict=True):
            assert [h.tokens for h in hyps_before] == [h.tokens for h in hyps_after]
            assert hyps_before[0].score == pytest.approx(hyps_after[0].score, abs=1e-4)


@pytest.mark.parametrize(
    ("precision", "dtype"),
    [
        ("bf16", torch.bfloat16),
        pytest.param(
            "packed16",
            torch.float32,
            marks=pytest.mark.skipif(not packed16_available(), reason="no fbgemm"),
        ),
    ],
)
def test_every_precision_folds_in_the_dtype_its_steps_run_in(
    precision: str, dtype: torch.dtype
) -> None:
    model = tiny_model(*TINY_DECODERS["cgru"])
    names = prepare_weights(model, precision)
    assert names[:2] == ["decoder.input_from_embed", "decoder.readout_embed"]
    assert "decoder.output" in names  # then the precision's own conversion
    assert model.decoder.embed.table.dtype == dtype


def test_tied_embeddings_keep_their_output_layer() -> None:
    model = tiny_model("model.decoder.tie_embeddings=true", "model.decoder.readout_size=32")
    weight = model.decoder.output.weight
    readout = torch.randn(4, 32)
    expected = model.decoder.logits(readout)
    fold_embedding_products(model.decoder)
    assert model.decoder.output.weight is weight
    torch.testing.assert_close(model.decoder.logits(readout), expected)


def test_shared_source_embedding_is_left_to_the_encoder() -> None:
    model = tiny_model("model.share_embeddings=true")
    src_embed = model.src_embed
    fold_embedding_products(model.decoder)
    assert model.src_embed is src_embed and isinstance(src_embed, nn.Embedding)


def test_a_table_larger_than_the_limit_keeps_its_products(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = tiny_model()
    decoder = model.decoder
    width = decoder.input_from_embed.out_features + decoder.readout_embed.out_features
    limit = decoder.embed.num_embeddings * width * 4 - 1  # a byte short of the fp32 table
    monkeypatch.setattr(embedding_products, "MAX_TABLE_BYTES", limit)
    assert not foldable(decoder) and fold_embedding_products(decoder) == []
    assert isinstance(decoder.embed, nn.Embedding)


def test_a_decoder_without_the_layers_is_not_folded() -> None:
    assert not foldable(nn.Module())
    other = nn.Module()
    other.embed = nn.Embedding(10, 4)
    other.input_from_embed = nn.Linear(4, 6)  # readout_embed missing
    assert fold_embedding_products(other) == []


def test_the_table_refuses_training() -> None:
    model = tiny_model()
    fold_embedding_products(model.decoder)
    model.train()
    with pytest.raises(RuntimeError, match="inference only"):
        model.decoder.embed(torch.tensor([1, 2]))

