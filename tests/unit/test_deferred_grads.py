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
from nmtkit.models.encoders import recurrent
from tests.unit.test_models import TINY_DECODERS, random_ids, tiny_model


def _grads(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize(
    ("decoder", "attention"),
    [
        ("gru", "additive"),
        ("cgru", "additive"),
        ("gru", "location"),
        ("gru", "scaled-dot"),
        ("cgru", "multihead"),
    ],
)
def test_teacher_forcing_gives_every_gradient_that_autograd_gives(
    decoder: str, attention: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = collate(random_ids([7, 5, 6]), random_ids([6, 8, 3], seed=1), [0, 1, 2])
    overrides = ("model.init_scale=0.5", f"model.attention={attention}", *TINY_DECODERS[decoder])
    grads = []
    for deferred in (True, False):
        if not deferred:  # the plain layers: autograd's own step-by-step weight gradients
            monkeypatch.setattr(
                decoders, "deferred_weight_grads", lambda *_: contextlib.nullcontext()
            )
        model = tiny_model(*overrides).train()
        assert model.decoder.attention.query_proj in model.decoder.step_layers()
        torch.manual_seed(3)  # the same dropout masks
        loss, _ = model.loss(batch, label_smoothing=0.1)
        loss.backward()
        grads.append(_grads(model))
    deferred_grads, plain_grads = grads
    assert deferred_grads.keys() == plain_grads.keys()
    step_weights = ("hidden_to_gates", "input_from_context", "attention.query_proj")
    assert {f"decoder.{n}.weight" for n in step_weights} <= set(deferred_grads)
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


def test_nothing_is_deferred_without_gradients_or_under_fp16() -> None:
    layer = nn.Linear(4, 4)
    with torch.no_grad(), deferred_weight_grads(layer):
        assert "forward" not in vars(layer)
    with torch.autocast("cpu", dtype=torch.float16), deferred_weight_grads(layer):
        assert "forward" not in vars(layer)
    with torch.autocast("cpu", dtype=torch.bfloat16), deferred_weight_grads(layer):
        assert "forward" in vars(layer)


def test_under_autocast_the_steps_run_in_bf16_and_the_gradients_come_back_fp32() -> None:
    layer = nn.Linear(8, 8)
    x = torch.randn(3, 8, generator=torch.Generator().manual_seed(0))

    def grads(deferred: bool) -> list[torch.Tensor]:
        layer.zero_grad(set_to_none=True)
        h = x
        steps = deferred_weight_grads(layer) if deferred else contextlib.nullcontext()
        with torch.autocast("cpu", dtype=torch.bfloat16), steps:
            for _ in range(4):
                out = layer(h)
                assert out.dtype == torch.bfloat16
                h = torch.tanh(out.float())  # an fp32 state, as the decoder keeps it
        h.square().sum().backward()
        return [layer.weight.grad, layer.bias.grad]

    for deferred, plain in zip(grads(True), grads(False), strict=True):
        assert deferred.dtype == torch.float32
        torch.testing.assert_close(deferred, plain, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("decoder", ["gru", "cgru"])
def test_under_bf16_autocast_the_gradients_are_as_near_fp32_as_autograds(
    decoder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bf16 rounds differently in one product than in T: judged by the distance to the fp32
    gradients, the deferred ones must be about as near as autograd's step-by-step ones."""
    batch = collate(random_ids([7, 5, 6]), random_ids([6, 8, 3], seed=1), [0, 1, 2])

    def grads(deferred: bool, bf16: bool) -> dict[str, torch.Tensor]:
        with monkeypatch.context() as patch:
            if not deferred:  # autograd's own steps, in the decoder and the encoder alike
                patch.setattr(
                    decoders, "deferred_weight_grads", lambda *_: contextlib.nullcontext()
                )
                patch.setattr(recurrent, "runs_in_steps", lambda *_: False)
            model = tiny_model("model.init_scale=0.5", *TINY_DECODERS[decoder]).train()
            torch.manual_seed(3)  # the same dropout masks
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss, _ = model.loss(batch, label_smoothing=0.1)
            loss.backward()
            return _grads(model)

    exact, deferred, plain = grads(False, False), grads(True, True), grads(False, True)
    assert deferred.keys() == plain.keys() == exact.keys()
    for name, grad in exact.items():
        assert deferred[name].dtype == torch.float32, name
        ours = (deferred[name] - grad).norm()
        theirs = (plain[name] - grad).norm()
        assert ours <= 2 * theirs + 1e-2 * grad.norm(), (name, float(ours), float(theirs))
