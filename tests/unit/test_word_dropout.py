"""Word dropout (model.source_word_dropout, model.decoder.word_dropout): in training whole words
are dropped (a position's embedding zeroed, the rest scaled by 1 / (1 - p)); in evaluation the
model is the one without it, and the run-length rule, which sets model.dropout's modules, leaves
it alone."""

from __future__ import annotations

import pytest
import torch

from nmtkit.config import load_config
from nmtkit.errors import ConfigError
from nmtkit.models import Seq2Seq
from nmtkit.models.word_dropout import WordDropout

SRC = torch.tensor([[5, 6, 7, 8, 2], [9, 10, 2, 0, 0]])  # [B, S], EOS = 2, padding 0
LENGTHS = torch.tensor([5, 3])
TGT_IN = torch.tensor([[1, 11, 12, 13], [1, 14, 15, 0]])  # [B, T], BOS = 1


def model(*overrides: str) -> Seq2Seq:
    config = load_config(preset="tiny", overrides=["model.dropout=0.0", *overrides])
    torch.manual_seed(0)
    return Seq2Seq(config.model, src_vocab_size=30, tgt_vocab_size=30, pad_id=0)


def test_training_zeroes_whole_positions_and_scales_the_rest() -> None:
    drop = WordDropout(0.25)
    embedded = torch.randn(64, 20, 8) + 3.0  # [B, S, E], no zero units of its own
    torch.manual_seed(1)
    noisy = drop(embedded)
    zeroed = (noisy == 0).all(dim=-1)  # [B, S]: whole vectors, never single units
    assert ((noisy == 0).any(dim=-1) == zeroed).all()
    assert 0.2 < zeroed.float().mean() < 0.3
    torch.testing.assert_close(noisy[~zeroed], embedded[~zeroed] / 0.75)


def test_evaluation_and_zero_are_the_identity() -> None:
    embedded = torch.randn(2, 3, 4)
    drop = WordDropout(0.5).eval()
    assert drop(embedded) is embedded
    assert WordDropout(0.0)(embedded) is embedded


def test_the_encoder_reads_dropped_words_in_training_only() -> None:
    dropped, without = model("model.source_word_dropout=0.5"), model()
    assert without.word_dropout.p == 0
    without.load_state_dict(dropped.state_dict())  # no new parameters: checkpoints load both ways
    dropped.eval()
    without.eval()
    plain = without.encode(SRC, LENGTHS).annotations  # [B, S, C]
    torch.testing.assert_close(dropped.encode(SRC, LENGTHS).annotations, plain)
    dropped.train()
    torch.manual_seed(3)
    assert not torch.allclose(dropped.encode(SRC, LENGTHS).annotations, plain)


@pytest.mark.parametrize("decoder", ["gru", "cgru"])
def test_the_decoder_reads_dropped_target_words_in_training_only(decoder: str) -> None:
    dropped = model(f"model.decoder.name={decoder}", "model.decoder.word_dropout=0.5")
    without = model(f"model.decoder.name={decoder}")
    assert without.decoder.word_dropout.p == 0
    without.load_state_dict(dropped.state_dict())
    for m in (dropped, without):
        m.eval()
    plain = without.decoder._embed_targets(TGT_IN)  # [B, T, E]
    torch.testing.assert_close(dropped.decoder._embed_targets(TGT_IN), plain)
    batch_out = without.decoder(TGT_IN, without.encode(SRC, LENGTHS)).readout
    torch.testing.assert_close(
        dropped.decoder(TGT_IN, dropped.encode(SRC, LENGTHS)).readout, batch_out
    )
    dropped.train()
    torch.manual_seed(5)
    noisy = dropped.decoder._embed_targets(TGT_IN)
    zeroed = (noisy == 0).all(dim=-1)  # [B, T]
    assert zeroed.any() and not zeroed.all()
    torch.testing.assert_close(noisy[~zeroed], 2 * plain[~zeroed])


def test_the_run_length_rule_leaves_them_alone() -> None:
    dropped = model("model.source_word_dropout=0.1", "model.decoder.word_dropout=0.1")
    found = {id(m) for m in dropped.model_dropouts()}
    assert id(dropped.word_dropout) not in found
    assert id(dropped.decoder.word_dropout) not in found


@pytest.mark.parametrize("key", ["model.source_word_dropout", "model.decoder.word_dropout"])
@pytest.mark.parametrize("value", ["-0.1", "1.0"])
def test_out_of_range_is_a_config_error(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_config(preset="tiny", overrides=[f"{key}={value}"])
