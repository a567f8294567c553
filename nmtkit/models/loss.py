"""Label-smoothed cross-entropy with a hand-written backward.

The autograd graph of ``log_softmax -> gather -> mean`` writes five or six full [N, V] tensors
per batch in its backward (zeros for the gather, the mean's expansion, their sum, the softmax
backward), and at N ~ 2000 target tokens and V = 8000 those passes over memory cost more than
the output layer's matrix product. The gradient has a closed form,

    d loss_n / d z_n = softmax(z_n) - (1 - eps) onehot(y_n) - eps / V,

which the backward below computes in place in the saved probabilities: two passes in all.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.nn import functional as F

from nmtkit.runtime import active_autocast_dtype


class _SmoothedCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: Any, logits: Tensor, targets: Tensor, smoothing: float
    ) -> tuple[Tensor, Tensor]:
        log_probs = torch.log_softmax(logits, dim=-1, dtype=torch.float32)  # [N, V]
        nll = -log_probs.gather(1, targets[:, None]).squeeze(1)  # [N]
        loss = (1 - smoothing) * nll - smoothing * log_probs.mean(dim=-1) if smoothing else nll
        ctx.save_for_backward(log_probs.exp_(), targets)  # probabilities, in place
        ctx.smoothing, ctx.logits_dtype = smoothing, logits.dtype
        nll_sum = nll.sum()
        ctx.mark_non_differentiable(nll_sum)
        return loss.sum(), nll_sum

    @staticmethod
    def backward(ctx: Any, grad_loss: Tensor, _grad_nll: Tensor) -> tuple[Tensor, None, None]:
        probs, targets = ctx.saved_tensors  # [N, V], [N]
        eps = ctx.smoothing
        grad = probs.sub_(eps / probs.size(1)) if eps else probs  # in place: probs is ours
        rows = torch.arange(grad.size(0), device=grad.device)
        grad[rows, targets] -= 1 - eps
        return grad.mul_(grad_loss).to(ctx.logits_dtype), None, None


def smoothed_cross_entropy(
    logits: Tensor, targets: Tensor, smoothing: float = 0.0
) -> tuple[Tensor, Tensor]:
    """Summed label-smoothed loss and summed NLL of ``targets`` [N] under ``logits`` [N, V].

    The loss per token is (1 - eps) * NLL + eps * (mean over the vocabulary of -log p), as in
    ``nn.CrossEntropyLoss(label_smoothing=eps)``; the NLL carries no gradient.
    """
    loss, nll = _SmoothedCrossEntropy.apply(logits, targets, float(smoothing))
    return loss, nll


class _LinearCrossEntropy(torch.autograd.Function):
    """The output layer and the loss as one function, a block of rows at a time: each block's
    logits, probabilities and gradient stay in cache and are gone before the next block."""

    @staticmethod
    def forward(
        ctx: Any,
        hidden: Tensor,
        weight: Tensor,
        bias: Tensor | None,
        targets: Tensor,
        smoothing: float,
        compute_dtype: torch.dtype,
        block_rows: int,
        want_grad: bool,
    ) -> tuple[Tensor, Tensor]:
        with torch.autocast(hidden.device.type, enabled=False):
            h = hidden.to(compute_dtype)  # [N, M]
            w = weight.to(compute_dtype)  # [V, M]
            b = None if bias is None else bias.to(compute_dtype)  # [V]
            num_rows, vocab = h.size(0), w.size(0)
            loss = torch.zeros((), dtype=torch.float32, device=h.device)
            nll_sum = torch.zeros((), dtype=torch.float32, device=h.device)
            if want_grad:
                grad_h = torch.empty(num_rows, h.size(1), dtype=torch.float32, device=h.device)
                grad_w = torch.zeros(w.shape, dtype=torch.float32, device=h.device)
                grad_b = None if b is None else torch.zeros(vocab, device=h.device)
            for start in range(0, num_rows, block_rows):
                rows = h[start : start + block_rows]  # [n, M]
                gold = targets[start : start + block_rows]  # [n]
                log_probs = F.linear(rows, w, b).float().log_softmax(dim=-1)  # [n, V]
                block_nll = -log_probs.gather(1, gold[:, None]).sum()
                nll_sum += block_nll
                loss += (1 - smoothing) * block_nll - smoothing * log_probs.mean(dim=-1).sum()
                if not want_grad:
                    continue
                # d loss / d z = softmax(z) - (1 - eps) onehot(y) - eps / V, in place
                grad = log_probs.exp_()
                if smoothing:
                    grad.sub_(smoothing / vocab)
                grad[torch.arange(gold.size(0), device=grad.device), gold] -= 1 - smoothing
                if grad_b is not None:
                    grad_b += grad.sum(dim=0)
                grad_z = grad.to(compute_dtype)
                grad_h[start : start + block_rows] = grad_z @ w  # [n, M]
                if compute_dtype == torch.float32:
                    grad_w.addmm_(grad_z.t(), rows)
                else:  # a bf16/fp16 product, summed over the blocks in fp32
                    grad_w += (grad_z.t() @ rows).float()  # [V, M]
        if want_grad:
            ctx.save_for_backward(grad_h, grad_w, grad_b)
            ctx.dtypes = hidden.dtype, weight.dtype, None if bias is None else bias.dtype
        ctx.mark_non_differentiable(nll_sum)
        return loss, nll_sum

    @staticmethod
    def backward(ctx: Any, grad_loss: Tensor, _grad_nll: Tensor) -> tuple[Tensor | None, ...]:
        grad_h, grad_w, grad_b = ctx.saved_tensors
        h_dtype, w_dtype, b_dtype = ctx.dtypes
        return (
            (grad_h * grad_loss).to(h_dtype),
            (grad_w * grad_loss).to(w_dtype),
            None if grad_b is None else (grad_b * grad_loss).to(b_dtype),
            None,
            None,
            None,
            None,
            None,
        )


def linear_cross_entropy(
    hidden: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    targets: Tensor,
    smoothing: float = 0.0,
    *,
    block_rows: int = 512,
) -> tuple[Tensor, Tensor]:
    """:func:`smoothed_cross_entropy` of ``F.linear(hidden, weight, bias)`` without the
    [N, V] logits: summed loss and summed NLL of ``targets`` [N] from ``hidden`` [N, M] and an
    output layer ``weight`` [V, M], ``bias`` [V].

    ``block_rows`` rows at a time are projected, normalized and differentiated while they are
    in cache (the gradients of ``hidden``, ``weight`` and ``bias`` are computed in the forward
    pass and scaled in the backward), so the V-wide tensors never reach main memory. Under
    autocast the products run in the autocast dtype, as ``F.linear`` would, and the softmax and
    the sums in fp32.
    """
    device_type = hidden.device.type
    compute_dtype = active_autocast_dtype(device_type) or torch.promote_types(
        hidden.dtype, weight.dtype
    )
    want_grad = torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (hidden, weight, bias)
    )
    loss, nll = _LinearCrossEntropy.apply(
        hidden, weight, bias, targets, float(smoothing), compute_dtype, block_rows, want_grad
    )
    return loss, nll
