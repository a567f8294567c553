"""The linear weights that autocast casts at every batch, cast once: the same translations, bit
for bit, with the thin and the tied layers left in fp32."""

from __future__ import annotations

import pytest
import torch

from nmtkit.models import Seq2Seq
from nmtkit.models.autocast_weights import cast_linear_weights
from nmtkit.registry import Hypothesis
from nmtkit.search.beam import BeamSearch
from nmtkit.search.decode import decode_sequences
from nmtkit.search.greedy import GreedySearch
from tests.unit.test_models import random_ids, tiny_model

SOURCES = random_ids([3, 7, 12, 5, 9], seed=3)


def search(model: Seq2Seq, strategy: object) -> list[list[Hypothesis]]:
    return decode_sequences(
        model,
        [[*s, 3] for s in SOURCES],
        strategy,  # type: ignore[arg-type]
        batch_size=2,
        max_len_a=1.5,
        max_len_b=3,
        with_weights=True,
        precision="bf16",
    )


@pytest.mark.parametrize(
    "overrides",
    [(), ("model.decoder.tie_embeddings=true", "model.decoder.readout_size=32")],
    ids=["default", "tied"],
)
def test_translations_under_bf16_autocast_are_bit_identical(overrides: tuple[str, ...]) -> None:
    strategies = [BeamSearch(BeamSearch.Config(beam_size=3)), GreedySearch(GreedySearch.Config())]
    model = tiny_model(*overrides)
    before = [search(model, strategy) for strategy in strategies]
    cast = cast_linear_weights(model, torch.bfloat16)
    assert ("decoder.output" in cast) == (not overrides)  # tied: the output is the embedding
    assert "decoder.hidden_to_gates" in cast
    after = [search(model, strategy) for strategy in strategies]
    for found_before, found_after in zip(before, after, strict=True):
        for hyps_before, hyps_after in zip(found_before, found_after, strict=True):
            for one, other in zip(hyps_before, hyps_after, strict=True):
                assert one.tokens == other.tokens
                assert one.score == other.score and one.log_prob == other.log_prob
                assert one.weights is not None and other.weights is not None
                assert torch.equal(one.weights, other.weights)


def test_thin_and_tied_layers_stay_fp32_and_a_second_call_casts_nothing() -> None:
    model = tiny_model("model.decoder.tie_embeddings=true", "model.decoder.readout_size=32")
    cast = cast_linear_weights(model, torch.bfloat16)
    layers = dict(model.named_modules())
    for name in cast:
        assert layers[name].weight.dtype == torch.bfloat16
    thin = [n for n, m in layers.items() if isinstance(m, torch.nn.Linear) and n not in cast]
    assert "decoder.output" in thin  # its weight is the target embedding table
    assert any(layers[n].out_features == 1 for n in thin)  # v_a, whose weight attention sums
    for name in thin:
        assert layers[name].weight.dtype == torch.float32
    assert model.decoder.embed.weight.dtype == torch.float32
    assert cast_linear_weights(model, torch.bfloat16) == []
