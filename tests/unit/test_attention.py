"""Invariants every registered attention scorer keeps: the weights are a distribution over the
real positions, padding changes nothing, the context is C wide, and gradients reach every
parameter. Scorers registered later are covered by the same tests."""

from __future__ import annotations

import pytest
import torch
from torch import Tensor

from nmtkit import registry
from nmtkit.config import load_config
from nmtkit.data.batching import collate
from nmtkit.errors import ConfigError
from nmtkit.models.attention.sigmoid_tanh import v_tanh
from nmtkit.registry import Attended, AttentionScorer, DecoderState
from tests.unit.test_models import random_ids, tiny_model

NAMES = registry.names("attention")
QUERY_SIZE, KEY_SIZE = 10, 12
NUM_STEPS = 3

# Pinned so that the decoder state (64) matches the birnn annotations (2 x 32), as `dot` needs.
EQUAL_SIZES = ("model.encoder.hidden_size=32", "model.decoder.hidden_size=64")


def build_scorer(name: str) -> tuple[AttentionScorer, int]:
    """The scorer with its default options and the query size it takes (C where D = C is needed)."""
    cls = registry.get("attention", name)
    torch.manual_seed(0)
    try:
        return cls(cls.Config(), query_size=QUERY_SIZE, key_size=KEY_SIZE), QUERY_SIZE
    except ConfigError:  # a scorer without projections, such as dot
        return cls(cls.Config(), query_size=KEY_SIZE, key_size=KEY_SIZE), KEY_SIZE


def padded_annotations(lengths: list[int], seed: int = 0) -> tuple[Tensor, Tensor]:
    """Random annotations [B, S, C] whose padding holds large garbage, and their pad mask [B, S]."""
    gen = torch.Generator().manual_seed(seed)
    s = max(lengths)
    annotations = torch.randn(len(lengths), s, KEY_SIZE, generator=gen)  # [B, S, C]
    pad_mask = torch.arange(s)[None] >= torch.tensor(lengths)[:, None]  # [B, S]
    garbage = 100 * torch.randn(annotations.shape, generator=gen)
    return torch.where(pad_mask[..., None], garbage, annotations), pad_mask


def attend(
    scorer: AttentionScorer, annotations: Tensor, pad_mask: Tensor, queries: Tensor
) -> list[Attended]:
    """Attend once per query in ``queries`` [T, B, D], feeding each step's weights to the next."""
    keys = scorer.project_keys(annotations, pad_mask)
    state = DecoderState.start(queries[0], annotations, keys, pad_mask)
    steps = []
    for query in queries:
        attended = scorer(query, state)
        state = state.advance(query, attended.weights)
        steps.append(attended)
    return steps


def random_queries(batch_size: int, query_size: int, seed: int = 1) -> Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(NUM_STEPS, batch_size, query_size, generator=gen)  # [T, B, D]


@pytest.mark.parametrize("name", NAMES)
def test_weights_are_a_distribution_over_real_positions(name: str) -> None:
    scorer, query_size = build_scorer(name)
    annotations, pad_mask = padded_annotations([3, 7, 5])
    for attended in attend(scorer, annotations, pad_mask, random_queries(3, query_size)):
        weights = attended.weights  # [B, S]
        assert attended.context.shape == (3, KEY_SIZE)
        assert bool((weights >= 0).all())
        assert torch.allclose(weights.sum(-1), torch.ones(3), atol=1e-5)
        assert bool((weights[pad_mask] == 0).all())


@pytest.mark.parametrize("name", NAMES)
def test_padding_changes_neither_weights_nor_context(name: str) -> None:
    scorer, query_size = build_scorer(name)
    annotations, pad_mask = padded_annotations([4, 15])
    queries = random_queries(2, query_size)
    alone = attend(scorer, annotations[:1, :4], pad_mask[:1, :4], queries[:, :1])
    beside = attend(scorer, annotations, pad_mask, queries)
    for step_alone, step_beside in zip(alone, beside, strict=True):
        assert torch.allclose(step_alone.weights[0], step_beside.weights[0, :4], atol=1e-5)
        assert torch.allclose(step_alone.context[0], step_beside.context[0], atol=1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_gradients_reach_every_parameter_and_the_annotations(name: str) -> None:
    scorer, query_size = build_scorer(name)
    annotations, pad_mask = padded_annotations([3, 6])
    annotations.requires_grad_(True)
    gen = torch.Generator().manual_seed(2)
    loss = torch.zeros(())
    # Two steps at least, so that scorers reading alpha_{i-1} see non-zero weights.
    for attended in attend(scorer, annotations, pad_mask, random_queries(2, query_size)):
        loss = loss + (attended.context * torch.randn(attended.context.shape, generator=gen)).sum()
        loss = loss + (attended.weights * torch.randn(attended.weights.shape, generator=gen)).sum()
    loss.backward()
    for param_name, param in scorer.named_parameters():
        assert param.grad is not None and bool(param.grad.abs().sum() > 0), param_name
    assert annotations.grad is not None and bool(annotations.grad.abs().sum() > 0)


@pytest.mark.parametrize("name", NAMES)
def test_decoder_weights_sum_to_one_and_are_zero_on_padding(name: str) -> None:
    model = tiny_model(f"model.attention={name}", *EQUAL_SIZES)
    batch = collate(random_ids([3, 7, 5]), random_ids([4, 2, 6], seed=1), [0, 1, 2])
    weights = model.force_decode(batch)  # [B, T, S]
    pad = batch.src == 0
    assert torch.allclose(weights.sum(-1), torch.ones(weights.shape[:2]), atol=1e-5)
    assert bool((weights.masked_select(pad[:, None, :].expand_as(weights)) == 0).all())


@pytest.mark.parametrize("name", NAMES)
def test_decoding_beside_a_longer_sentence_changes_nothing(name: str) -> None:
    model = tiny_model(f"model.attention={name}", *EQUAL_SIZES)
    src, tgt = random_ids([4]), random_ids([5], seed=1)
    alone = collate(src, tgt, [0])
    padded = collate(src + random_ids([12], seed=3), tgt + random_ids([9], seed=4), [0, 1])
    w_alone = model.force_decode(alone)[0]  # [T, S], every step after the first reads alpha_{i-1}
    w_padded = model.force_decode(padded)[0, : w_alone.size(0), : w_alone.size(1)]
    assert torch.allclose(w_alone, w_padded, atol=1e-5)
    logits_alone, _ = model(alone)
    logits_padded, _ = model(padded)
    assert torch.allclose(logits_alone, logits_padded[: logits_alone.size(0)], atol=1e-4)


def test_dot_rejects_a_decoder_state_narrower_than_the_annotations() -> None:
    with pytest.raises(ConfigError, match=r"\(48\).*\(64\)") as error:
        tiny_model(
            "model.attention=dot", "model.encoder.hidden_size=32", "model.decoder.hidden_size=48"
        )
    assert "general" in str(error.value) and "scaled-dot" in str(error.value)
    assert "\n" not in str(error.value)


def test_multihead_rejects_a_hidden_size_the_heads_do_not_divide() -> None:
    overrides = ["model.attention=multihead", "model.attention.num_heads=3"]
    with pytest.raises(ConfigError, match="not divisible by num_heads 3"):
        load_config(preset="tiny", overrides=overrides)


def test_location_rejects_an_even_kernel() -> None:
    overrides = ["model.attention=location", "model.attention.kernel_size=8"]
    with pytest.raises(ConfigError, match="kernel_size must be odd"):
        load_config(preset="tiny", overrides=overrides)


def test_location_attention_reads_the_previous_weights() -> None:
    scorer, query_size = build_scorer("location")
    annotations, pad_mask = padded_annotations([6])
    query = random_queries(1, query_size)[0]  # [1, D]
    state = DecoderState.start(
        query, annotations, scorer.project_keys(annotations, pad_mask), pad_mask
    )
    first = scorer(query, state).weights
    moved = scorer(query, state.advance(query, torch.eye(6)[:1])).weights
    assert not torch.allclose(first, moved, atol=1e-4)


def test_multihead_context_is_key_wide_for_any_head_count() -> None:
    cls = registry.get("attention", "multihead")
    annotations, pad_mask = padded_annotations([2, 5])
    for num_heads in (1, 2, 8):
        scorer = cls(
            cls.Config(hidden_size=16, num_heads=num_heads),
            query_size=QUERY_SIZE,
            key_size=KEY_SIZE,
        )
        steps = attend(scorer, annotations, pad_mask, random_queries(2, QUERY_SIZE))
        assert steps[-1].context.shape == (2, KEY_SIZE)
        assert torch.allclose(steps[-1].weights.sum(-1), torch.ones(2), atol=1e-5)


def test_multihead_weights_are_the_mean_of_per_head_scaled_dot_weights() -> None:
    """Each head is scaled-dot attention over its slice of W_q and W_k (Vaswani et al., §3.2.2)."""
    multihead_cls = registry.get("attention", "multihead")
    single_cls = registry.get("attention", "scaled-dot")
    torch.manual_seed(0)
    multihead = multihead_cls(
        multihead_cls.Config(hidden_size=16, num_heads=2), query_size=QUERY_SIZE, key_size=KEY_SIZE
    )
    annotations, pad_mask = padded_annotations([3, 6])
    queries = random_queries(2, QUERY_SIZE)[:1]  # one step: [1, B, D]
    expected = []
    for head in range(2):
        single = single_cls(
            single_cls.Config(hidden_size=8), query_size=QUERY_SIZE, key_size=KEY_SIZE
        )
        rows = slice(8 * head, 8 * (head + 1))
        with torch.no_grad():
            single.query_proj.weight.copy_(multihead.query_proj.weight[rows])
            single.key_proj.weight.copy_(multihead.key_value_proj.weight[rows])  # W_k comes first
        expected.append(attend(single, annotations, pad_mask, queries)[0].weights)
    weights = attend(multihead, annotations, pad_mask, queries)[0].weights  # [B, S]
    assert torch.allclose(weights, torch.stack(expected).mean(dim=0), atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_v_tanh_equals_v_transpose_tanh(dtype: torch.dtype) -> None:
    gen = torch.Generator().manual_seed(3)
    v = torch.nn.Linear(16, 1, bias=False).to(dtype)
    with torch.no_grad():
        v.weight.copy_(torch.randn(1, 16, generator=gen))
    queries = torch.randn(2, 16, generator=gen).to(dtype)  # [B, A]
    keys = torch.randn(2, 5, 16, generator=gen).to(dtype)  # [B, S, A]
    expected = torch.tanh(queries[:, None].float() + keys.float()) @ v.weight[0].float()
    tolerance = 1e-5 if dtype == torch.float32 else 5e-2
    assert torch.allclose(v_tanh(v, queries, keys).float(), expected, atol=tolerance)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_additive_energies_are_bit_for_bit_those_of_the_doubled_keys(dtype: torch.dtype) -> None:
    """Keys U_a h_j with the doubling inside v_tanh give exactly the numbers of the former
    layout, which stored 2 U_a h_j and scored 2 v^T sigmoid(2 W_a s + 2 U_a h) - sum(v)."""
    scorer, query_size = build_scorer("additive")
    scorer = scorer.to(dtype)
    annotations, pad_mask = padded_annotations([4, 9])
    query = random_queries(2, query_size)[0].to(dtype)  # [B, D]
    keys = scorer.project_keys(annotations.to(dtype), pad_mask)  # [B, S, A]
    state = DecoderState.start(query, annotations.to(dtype), keys, pad_mask)
    v = scorer.v
    gates = torch.sigmoid(
        2 * scorer.query_proj(query)[:, None] + 2 * scorer.key_proj(annotations.to(dtype))
    )
    former = 2 * v(gates).squeeze(-1) - v.weight.sum()  # [B, S]
    assert torch.equal(scorer.energies(query, state), former)
    assert torch.equal(keys, scorer.key_proj(annotations.to(dtype)))  # keys = U_a h_j
