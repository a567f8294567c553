"""The hand-written label-smoothed cross-entropy equals autograd's, value and gradient."""

from __future__ import annotations

import pytest
import torch

from nmtkit.models.loss import linear_cross_entropy, smoothed_cross_entropy


def reference(logits: torch.Tensor, targets: torch.Tensor, eps: float):
    log_probs = logits.float().log_softmax(dim=-1)
    nll = -log_probs.gather(1, targets[:, None]).squeeze(1)
    loss = (1 - eps) * nll - eps * log_probs.mean(dim=-1)
    return loss.sum(), nll.sum()


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.3])
def test_value_and_gradient_match_autograd(eps: float) -> None:
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(37, 50, generator=gen) * 3  # the loss works in fp32
    targets = torch.randint(0, 50, (37,), generator=gen)
    mine = logits.clone().requires_grad_()
    theirs = logits.clone().requires_grad_()
    loss, nll = smoothed_cross_entropy(mine, targets, eps)
    ref_loss, ref_nll = reference(theirs, targets, eps)
    (2.5 * loss).backward()
    (2.5 * ref_loss).backward()
    torch.testing.assert_close(loss, ref_loss)
    torch.testing.assert_close(nll, ref_nll)
    torch.testing.assert_close(mine.grad, theirs.grad)


def test_matches_torch_cross_entropy_with_label_smoothing() -> None:
    logits = torch.randn(8, 11)
    targets = torch.randint(0, 11, (8,))
    loss, _ = smoothed_cross_entropy(logits, targets, 0.1)
    expected = torch.nn.functional.cross_entropy(
        logits, targets, label_smoothing=0.1, reduction="sum"
    )
    torch.testing.assert_close(loss, expected)


def test_nll_carries_no_gradient_and_bf16_logits_get_bf16_gradients() -> None:
    logits = torch.randn(5, 7).to(torch.bfloat16).requires_grad_()
    loss, nll = smoothed_cross_entropy(logits, torch.tensor([0, 1, 2, 3, 4]), 0.1)
    assert loss.dtype == torch.float32 and not nll.requires_grad
    loss.backward()
    assert logits.grad is not None and logits.grad.dtype == torch.bfloat16


@pytest.mark.parametrize("eps", [0.0, 0.1])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_cross_entropy_equals_the_layer_then_the_loss(eps: float, with_bias: bool) -> None:
    gen = torch.Generator().manual_seed(1)
    hidden = torch.randn(23, 6, generator=gen)
    weight = torch.randn(40, 6, generator=gen)
    bias = torch.randn(40, generator=gen) if with_bias else None
    targets = torch.randint(0, 40, (23,), generator=gen)
    leaves = [t.clone().requires_grad_() for t in (hidden, weight)]
    ref_leaves = [t.clone().requires_grad_() for t in (hidden, weight)]
    b = bias.clone().requires_grad_() if with_bias else None
    ref_b = bias.clone().requires_grad_() if with_bias else None
    # blocks of 5 rows: the last block is short
    loss, nll = linear_cross_entropy(*leaves, b, targets, eps, block_rows=5)
    ref_loss, ref_nll = smoothed_cross_entropy(
        torch.nn.functional.linear(*ref_leaves, ref_b), targets, eps
    )
    (0.5 * loss).backward()
    (0.5 * ref_loss).backward()
    torch.testing.assert_close(loss, ref_loss)
    torch.testing.assert_close(nll, ref_nll)
    for mine, theirs in zip([*leaves, b], [*ref_leaves, ref_b], strict=True):
        if mine is not None:
            torch.testing.assert_close(mine.grad, theirs.grad)


def test_linear_cross_entropy_under_autocast_and_without_grad() -> None:
    gen = torch.Generator().manual_seed(2)
    hidden = torch.randn(30, 8, generator=gen)
    layer = torch.nn.Linear(8, 50)
    targets = torch.randint(0, 50, (30,), generator=gen)
    with torch.no_grad():
        loss, nll = linear_cross_entropy(hidden, layer.weight, layer.bias, targets, 0.1)
        ref_loss, ref_nll = smoothed_cross_entropy(layer(hidden), targets, 0.1)
    torch.testing.assert_close(loss, ref_loss)
    torch.testing.assert_close(nll, ref_nll)
    leaf = hidden.to(torch.bfloat16).requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss, _ = linear_cross_entropy(leaf, layer.weight, layer.bias, targets, 0.1)
    loss.backward()
    # products in bf16, sums in fp32; each gradient in its input's dtype
    assert loss.dtype == torch.float32
    torch.testing.assert_close(loss, ref_loss, rtol=2e-2, atol=0.5)
    assert leaf.grad is not None and leaf.grad.dtype == torch.bfloat16
    assert layer.weight.grad is not None and layer.weight.grad.dtype == torch.float32
