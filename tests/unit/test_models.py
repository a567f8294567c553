"""Invariants of the RNNsearch model: the paper's step order and the loss (attention masking and
padding, for every registered scorer, are in test_attention.py)."""

from __future__ import annotations

import pytest
import torch

from nmtkit.config import load_config
from nmtkit.data.batching import collate
from nmtkit.errors import ConfigError
from nmtkit.models import Seq2Seq, build_model

VOCAB = 20


# The tiny preset's decoder as `cgru`: naming another component resets its options to that
# component's defaults (384 wide), so the sizes are named again.
TINY_CGRU = (
    "model.decoder.name=cgru",
    "model.decoder.hidden_size=64",
    "model.decoder.readout_size=32",
)
TINY_DECODERS: dict[str, tuple[str, ...]] = {"gru": (), "cgru": TINY_CGRU}


def tiny_model(*overrides: str, seed: int = 0) -> Seq2Seq:
    torch.manual_seed(seed)
    config = load_config(preset="tiny", overrides=list(overrides))
    model = build_model(config.model, src_vocab_size=VOCAB, tgt_vocab_size=VOCAB, pad_id=0)
    return model.eval()


def random_ids(lengths: list[int], seed: int = 0) -> list[list[int]]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randint(4, VOCAB, (n,), generator=gen).tolist() for n in lengths]


def test_attention_at_step_i_ignores_the_previous_word() -> None:
    """RNNsearch attends from s_{i-1}, which has not yet read y_{i-1} (Bahdanau et al., A.2.2)."""
    model = tiny_model("model.init_scale=1.0")
    src = random_ids([6])
    tgt = random_ids([5], seed=1)
    i = 3  # the step that reads y_{i-1} (0-based step i reads tgt_in[i] = y_i in 1-based words)
    changed = [list(tgt[0])]
    changed[0][i - 1] = (changed[0][i - 1] - 4 + 1) % (VOCAB - 4) + 4
    w = model.force_decode(collate(src, tgt, [0]))[0]  # [T, S]
    w_changed = model.force_decode(collate(src, changed, [0]))[0]
    assert torch.equal(w[: i + 1], w_changed[: i + 1])  # steps up to the one reading the change
    assert not torch.allclose(w[i + 1], w_changed[i + 1], atol=1e-6)  # the next step sees it


def test_loss_ignores_padding_and_counts_real_tokens() -> None:
    model = tiny_model()
    batch = collate(random_ids([3, 8]), random_ids([2, 7], seed=1), [0, 1])
    logits, _ = model(batch)
    assert logits.shape == (batch.num_tgt_tokens, VOCAB) == (2 + 1 + 7 + 1, VOCAB)


def test_rnnencdec_reads_one_fixed_context_the_last_source_state_at_every_step() -> None:
    """RNNencdec (Cho et al., 2014): every step attends only to the last real source position,
    so c_i = →h_{Tx}, the summary the decoder starts from, whatever s_{i-1} and y_{i-1} are."""
    torch.manual_seed(0)
    config = load_config(preset="rnnencdec", overrides=["model.init_scale=1.0"])
    model = build_model(config.model, src_vocab_size=VOCAB, tgt_vocab_size=VOCAB, pad_id=0).eval()
    batch = collate(random_ids([3, 8, 5]), random_ids([4, 2, 6], seed=1), [0, 1, 2])
    last = batch.src_lengths - 1  # EOS, the last real position
    one_hot = torch.nn.functional.one_hot(last, batch.src.size(1)).float()  # [B, S]
    weights = model.force_decode(batch)  # [B, T, S]
    assert torch.equal(weights, one_hot[:, None].expand_as(weights))

    with torch.no_grad():
        encoded = model.encode(batch.src, batch.src_lengths)
        fixed = encoded.annotations[torch.arange(3), last]  # [B, C]
        assert torch.allclose(encoded.summary, fixed)
        state = model.init_state(encoded)
        contexts = []
        for i in range(batch.tgt_in.size(1)):
            contexts.append(model.decoder.attention(state.hidden, state).context)
            step = model.decode_step(batch.tgt_in[:, i], state)
            assert torch.equal(step.weights, one_hot)
            assert not torch.allclose(step.state.hidden, state.hidden)  # s_i moves on
            state = step.state
    for context in contexts:
        assert torch.allclose(context, fixed)


def test_loss_through_the_output_layer_equals_the_loss_of_the_logits() -> None:
    """Training computes W_o with the loss, a block of rows at a time (linear_cross_entropy):
    the same loss and gradients as the logits of model(batch) through the loss."""
    batch = collate(random_ids([3, 8, 5]), random_ids([2, 7, 4], seed=1), [0, 1, 2])
    fused, plain = tiny_model("model.init_scale=0.5"), tiny_model("model.init_scale=0.5")
    plain.decoder.output_layer = lambda: None  # type: ignore[method-assign]
    losses = [model.loss(batch, label_smoothing=0.1) for model in (fused, plain)]
    for loss, _ in losses:
        loss.backward()
    torch.testing.assert_close(losses[0], losses[1])
    for (name, mine), theirs in zip(fused.named_parameters(), plain.parameters(), strict=True):
        torch.testing.assert_close(mine.grad, theirs.grad, msg=name)


def test_shared_embeddings_are_one_table_for_source_target_and_output() -> None:
    model = tiny_model(
        "model.share_embeddings=true",
        "model.decoder.tie_embeddings=true",
        "model.decoder.readout_size=32",
    )
    table = model.decoder.target_embedding()
    assert model.src_embed is table and model.decoder.output.weight is table.weight
    assert (
        sum(p.numel() for p in model.parameters())
        == sum(p.numel() for p in tiny_model().parameters()) - 2 * VOCAB * 32
    )  # two tables of V x E fewer (the output layer's bias stays)
    src, tgt = random_ids([4, 6]), random_ids([5, 3], seed=1)
    loss, _ = model.loss(collate(src, tgt, [0, 1]))
    loss.backward()  # one gradient for the one table, from all three uses
    assert table.weight.grad is not None and table.weight.grad[src[0][0]].abs().sum() > 0


def test_sharing_embeddings_needs_one_vocabulary() -> None:
    config = load_config(preset="tiny", overrides=["model.share_embeddings=true"])
    with pytest.raises(ConfigError, match="one vocabulary for both sides"):
        build_model(config.model, src_vocab_size=VOCAB, tgt_vocab_size=VOCAB + 1, pad_id=0)
