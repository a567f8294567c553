"""The GRU encoder's training pass in steps (nmtkit.models.encoders.gru_steps) computes what
torch's nn.GRU computes on the packed batch: annotations, final states and every gradient."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from nmtkit.models.encoders.gru_steps import gru_in_steps, runs_in_steps


def _packed(rnn: nn.GRU, embedded: torch.Tensor, lengths: torch.Tensor) -> tuple:
    packed = pack_padded_sequence(embedded, lengths, batch_first=True, enforce_sorted=False)
    outputs, final = rnn(packed)
    outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=embedded.size(1))
    return outputs, final


@pytest.mark.parametrize("bidirectional", [True, False])
def test_steps_give_the_outputs_states_and_gradients_of_nn_gru(bidirectional: bool) -> None:
    torch.manual_seed(0)
    rnn = nn.GRU(6, 5, batch_first=True, bidirectional=bidirectional)
    embedded = torch.randn(4, 7, 6)
    lengths = torch.tensor([7, 3, 5, 1])
    results = []
    for run in (_packed, gru_in_steps):
        rnn.zero_grad(set_to_none=True)
        source = embedded.clone().requires_grad_()
        outputs, final = run(rnn, source, lengths)
        weights = torch.randn(outputs.shape, generator=torch.Generator().manual_seed(1))
        ((outputs * weights).sum() + final.square().sum()).backward()
        grads = [source.grad] + [p.grad for p in rnn.parameters()]
        results.append((outputs.detach(), final.detach(), grads))
    (outputs, final, grads), (steps_out, steps_final, steps_grads) = results
    torch.testing.assert_close(steps_out, outputs)
    assert (steps_out[1, 3:] == 0).all()  # past the length: zero, as packing leaves it
    torch.testing.assert_close(steps_final, final)
    for ours, theirs in zip(steps_grads, grads, strict=True):
        torch.testing.assert_close(ours, theirs)


def test_under_bf16_autocast_the_steps_stay_near_nn_gru() -> None:
    """Both take the gate products in bf16; the steps keep the gates and the state fp32. (The
    encoder runs nn.GRU under autocast, where the steps gave no speed; they work there too.)"""
    torch.manual_seed(0)
    rnn = nn.GRU(16, 12, batch_first=True, bidirectional=True)
    embedded, lengths = torch.randn(4, 9, 16), torch.tensor([9, 4, 6, 1])
    exact, _ = _packed(rnn, embedded, lengths)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        steps_out, steps_final = gru_in_steps(rnn, embedded.requires_grad_(), lengths)
        plain_out, _ = _packed(rnn, embedded, lengths)
    assert steps_out.dtype == steps_final.dtype == torch.float32
    assert (steps_out[3, 1:] == 0).all()
    ours, theirs = (steps_out - exact).abs().max(), (plain_out.float() - exact).abs().max()
    assert ours <= 2 * theirs + 1e-3, (float(ours), float(theirs))
    steps_out.sum().backward()
    assert all(p.grad is not None and p.grad.dtype == torch.float32 for p in rnn.parameters())


def test_the_steps_serve_training_alone() -> None:
    gru, embedded = nn.GRU(4, 3, batch_first=True), torch.zeros(2, 3, 4)
    assert runs_in_steps(gru, embedded)
    with torch.autocast("cpu", dtype=torch.bfloat16):  # no faster there: nn.GRU runs
        assert not runs_in_steps(gru, embedded)
    with torch.no_grad():
        assert not runs_in_steps(gru, embedded)
    assert not runs_in_steps(nn.LSTM(4, 3, batch_first=True), embedded)
    assert not runs_in_steps(nn.GRU(4, 3, num_layers=2, batch_first=True), embedded)
