"""model.dropout_annotations: in training each annotation unit h_j is dropped out (zeroed, the
rest scaled by 1 / (1 - p)) with model.dropout's probability, which the run-length rule sets
along with the others; in evaluation the model is the one without it, weights unchanged."""

from __future__ import annotations

import torch
from torch import nn

from nmtkit.config import load_config
from nmtkit.models import Seq2Seq


def model(*overrides: str) -> Seq2Seq:
    config = load_config(preset="tiny", overrides=["model.dropout=0.5", *overrides])
    torch.manual_seed(0)
    return Seq2Seq(config.model, src_vocab_size=30, tgt_vocab_size=30, pad_id=0)


SRC = torch.tensor([[5, 6, 7, 8, 2], [9, 10, 2, 0, 0]])  # [B, S], EOS = 2, padding 0
LENGTHS = torch.tensor([5, 3])


def test_training_drops_out_annotation_units_and_scales_the_rest() -> None:
    dropped = model("model.dropout_annotations=true")
    assert dropped.annotation_dropout in dropped.model_dropouts()
    dropped.dropout.p = 0.0  # the source embeddings' dropout off: the annotations' alone
    dropped.eval()
    plain = dropped.encode(SRC, LENGTHS).annotations  # [B, S, C]
    dropped.train()
    torch.manual_seed(1)
    noisy = dropped.encode(SRC, LENGTHS).annotations
    zeroed = noisy == 0
    assert 0.3 < zeroed[plain != 0].float().mean() < 0.7
    torch.testing.assert_close(noisy[~zeroed], 2 * plain[~zeroed])


def test_evaluation_is_the_model_without_it_on_the_same_weights() -> None:
    dropped, without = model("model.dropout_annotations=true"), model()
    assert without.annotation_dropout is None
    assert without.annotation_dropout not in without.model_dropouts()
    without.load_state_dict(dropped.state_dict())  # no new parameters: checkpoints load both ways
    dropped.eval()
    without.eval()
    torch.testing.assert_close(
        dropped.encode(SRC, LENGTHS).annotations, without.encode(SRC, LENGTHS).annotations
    )
    found = dropped.model_dropouts()
    everything = [m for m in dropped.modules() if isinstance(m, nn.Dropout)]
    assert {id(m) for m in found} == {id(m) for m in everything}
