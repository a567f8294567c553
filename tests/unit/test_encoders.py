"""The encoder contract, checked for every registered encoder: shapes, padding invariance,
gradients, and that a full model built on it learns."""

from __future__ import annotations

import pytest
import torch

from nmtkit.data.batching import collate
from nmtkit.models import Seq2Seq
from nmtkit.registry import EncoderOutput, names
from tests.unit.test_models import random_ids, tiny_model

# Small widths keep the tests fast; an encoder missing here is tested with its defaults.
SMALL = {
    "birnn": [],
    "rnn": [],
    "transformer": ["model.encoder.model_size=32", "model.encoder.ffn_size=64"],
    "cnn": ["model.encoder.channels=32"],
}
SPECS = [(name, tuple(SMALL.get(name, []))) for name in names("encoder")] + [
    (
        "birnn",
        (
            "model.encoder.cell=lstm",
            "model.encoder.num_layers=2",
            "model.encoder.dropout=0.3",
            "model.encoder.hidden_size=16",
        ),
    ),
    ("transformer", ("model.encoder.model_size=32", "model.encoder.num_heads=2")),  # no W_in
    ("cnn", ("model.encoder.channels=16", "model.encoder.kernel_size=4")),  # even kernel
]
IDS = [
    " ".join([name, *(o.removeprefix("model.encoder.") for o in options)])
    for name, options in SPECS
]


def encoder_model(name: str, options: tuple[str, ...], *, seed: int = 0) -> Seq2Seq:
    return tiny_model(f"model.encoder={name}", *options, "model.attention=additive", seed=seed)


def encode(model: Seq2Seq, src: list[list[int]]) -> EncoderOutput:
    batch = collate(src, [[4]] * len(src), list(range(len(src))))
    return model.encode(batch.src, batch.src_lengths)


@pytest.mark.parametrize(("name", "options"), SPECS, ids=IDS)
def test_output_shapes_match_the_declared_sizes(name: str, options: tuple[str, ...]) -> None:
    model = encoder_model(name, options)
    out = encode(model, random_ids([3, 7, 5]))
    assert out.annotations.shape == (3, 8, model.encoder.output_size)
    assert out.summary.shape == (3, model.encoder.summary_size)
    assert torch.equal(out.pad_mask, torch.arange(8)[None] >= torch.tensor([[4], [8], [6]]))
    assert bool(torch.isfinite(out.annotations).all() and torch.isfinite(out.summary).all())


@pytest.mark.parametrize("grad", [True, False], ids=["autograd", "no_grad"])
@pytest.mark.parametrize(("name", "options"), SPECS, ids=IDS)
def test_more_padding_changes_nothing(name: str, options: tuple[str, ...], grad: bool) -> None:
    model = encoder_model(name, options)
    src = random_ids([4])
    with torch.set_grad_enabled(grad):  # no_grad takes torch's inference fast paths
        alone = encode(model, src)
        padded = encode(model, src + random_ids([11], seed=3))
    n = alone.annotations.size(1)
    assert torch.allclose(alone.annotations[0], padded.annotations[0, :n], atol=1e-5)
    assert torch.allclose(alone.summary[0], padded.summary[0], atol=1e-5)


@pytest.mark.parametrize(("name", "options"), SPECS, ids=IDS)
def test_gradients_reach_every_encoder_parameter(name: str, options: tuple[str, ...]) -> None:
    model = encoder_model(name, options).train()
    out = encode(model, random_ids([3, 6]))
    (out.annotations.sum() + out.summary.sum()).backward()
    for param_name, param in model.encoder.named_parameters():
        assert param.grad is not None and bool(param.grad.abs().sum() > 0), param_name
    assert model.src_embed.weight.grad is not None


@pytest.mark.parametrize(("name", "options"), SPECS, ids=IDS)
def test_a_model_with_the_encoder_learns_to_copy_a_few_sentences(
    name: str, options: tuple[str, ...]
) -> None:
    model = encoder_model(name, options, seed=1).train()
    src = random_ids([5, 7, 4, 6, 3, 6], seed=5)
    batch = collate(src, src, list(range(len(src))))  # copying needs the encoder
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(50):
        loss, _ = model.loss(batch)
        loss = loss / batch.num_tgt_tokens
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0]
