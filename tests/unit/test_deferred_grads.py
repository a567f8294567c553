"""Deferred weight gradients (nmtkit.models.deferred_grads): teacher forcing's step layers take
their weight gradients in one product at the end of the backward pass, and every gradient is the
one that autograd takes step by step."""

from __future__ import annotations

import contextlib

import pytest
import torch
from torch import nn

from nmtkit.data.batching import collate
from nmtkit.models import decoders
from nmtkit.models.deferred_grads import deferred_weight_grads
from tests.unit.test_models import TINY_DECODERS, random_ids, tiny_model


def _grads(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("decoder", ["gru", "cgru"])
def test_teacher_forcing_gives_every_gradient_that_autograd_gives(
    decoder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = collate(random_ids([7, 5, 6]), random_ids([6, 8, 3], seed=1), [0, 1, 2])
    grads = []
    for deferred in (True, False):
        if not deferred:  # the plain layers: autograd's own step-by-step weight gradients
            monkeypatch.setattr(
                decoders, "deferred_weight_grads", lambda *_: contextlib.nullcontext()
            )
        model = tiny_model("model.init_scale=0.5", *TINY_DECODERS[decoder]).train()
        torch.manual_seed(3)  # the same dropout masks
        loss, _ = model.loss(batch, label_smoothing=0.1)
        loss.backward()
        grads.append(_grads(model))
    deferred_grads, plain_grads = grads
    assert deferred_grads.keys() == plain_grads.keys()
    assert {f"decoder.{n}.weight" for n in ("hidden_to_gates", "input_from_context")} <= set(
        deferred_grads
    )
    for name, grad in plain_grads.items():
        torch.testing.assert_close(deferred_grads[name], grad, rtol=1e-5, atol=1e-6, msg=name)


def test_a_layer_used_outside_the_steps_adds_both_gradients() -> None:
    layer = nn.Linear(4, 6)
    x = torch.randn(2, 4, generator=torch.Generator().manual_seed(0))

    def loss(deferred: bool) -> list[torch.Tensor]:
        layer.zero_grad(set_to_none=True)
        h = x
        with deferred_weight_grads(layer) if deferred else contextlib.nullcontext():
            for _ in range(3):
                h = torch.tanh(layer(h))[:, :4]
        (h.square().sum() + layer(x).sum()).backward()  # the last call: after the block
        return [layer.weight.grad.clone(), layer.bias.grad.clone()]

    for deferred, plain in zip(loss(True), loss(False), strict=True):
        torch.testing.assert_close(deferred, plain)
    assert "forward" not in vars(layer)  # the block restored the layer


def test_nothing_is_deferred_without_gradients_or_under_autocast() -> None:
    layer = nn.Linear(4, 4)
    with torch.no_grad(), deferred_weight_grads(layer):
        assert "forward" not in vars(layer)
    with torch.autocast("cpu", dtype=torch.bfloat16), deferred_weight_grads(layer):
        assert "forward" not in vars(layer)
