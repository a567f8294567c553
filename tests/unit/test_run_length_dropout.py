"""train.short_run_dropout: a run on course to see few epochs trains with less dropout than
model.dropout, a long one with model.dropout, one between on the line; it only ever lowers the
model's dropout, and a run without a known end keeps it."""

from __future__ import annotations

import pytest
from torch import nn

from nmtkit.config import load_config
from nmtkit.errors import ConfigError
from nmtkit.models import Seq2Seq
from nmtkit.training.run_length_dropout import (
    LONG_EPOCHS,
    SHORT_EPOCHS,
    RunLengthDropout,
    dropout_for_epochs,
)


@pytest.mark.parametrize(
    ("epochs", "expected"),
    [
        (0.5, 0.2),
        (SHORT_EPOCHS, 0.2),
        ((SHORT_EPOCHS + LONG_EPOCHS) / 2, 0.25),
        (LONG_EPOCHS, 0.3),
        (40.0, 0.3),
    ],
)
def test_the_dropout_follows_the_epochs_on_a_line(epochs: float, expected: float) -> None:
    assert dropout_for_epochs(epochs, short=0.2, full=0.3) == pytest.approx(expected)


def dropouts(p: float) -> list[nn.Dropout]:
    return [nn.Dropout(p), nn.Dropout(p)]


def test_a_budgeted_run_projects_its_epochs_and_sets_every_dropout() -> None:
    config = load_config(overrides=["train.time_budget=15", "model.dropout=0.3"])  # short 0.2
    modules = dropouts(config.model.dropout)
    dropout = RunLengthDropout(modules, config)
    assert dropout.active
    assert [m.p for m in modules] == [0.2, 0.2]  # until the run's length is known
    assert dropout.follow(epochs_done=0.0, progress=0.0) == 0.2
    # 1 epoch in a tenth of the budget: 10 epochs ahead, a long run
    assert dropout.follow(epochs_done=1.0, progress=0.1) == pytest.approx(0.3)
    assert [m.p for m in modules] == [pytest.approx(0.3)] * 2
    # 1 epoch in half of it: 2 epochs in all, a short run
    assert dropout.follow(epochs_done=1.0, progress=0.5) == pytest.approx(0.2)
    assert [m.p for m in modules] == [pytest.approx(0.2)] * 2


@pytest.mark.parametrize(
    "overrides",
    [
        ["train.time_budget=15", "train.short_run_dropout=null"],  # turned off
        ["train.time_budget=15", "model.dropout=0.1"],  # already below: never raised
        # not below model.dropout
        ["train.time_budget=15", "model.dropout=0.3", "train.short_run_dropout=0.3"],
        [],  # no known end: the plateau schedule's run, as long as validation says
    ],
)
def test_the_model_dropout_stays_when_the_rule_does_not_apply(overrides: list[str]) -> None:
    config = load_config(overrides=overrides)
    modules = dropouts(config.model.dropout)
    dropout = RunLengthDropout(modules, config)
    assert not dropout.active
    assert dropout.follow(epochs_done=1.0, progress=0.5) == config.model.dropout
    assert [m.p for m in modules] == [config.model.dropout] * 2


def test_the_paper_preset_keeps_no_dropout() -> None:
    config = load_config(preset="rnnsearch-paper", overrides=["train.max_epochs=2"])
    assert not RunLengthDropout(dropouts(0.0), config).active


def test_the_models_dropouts_are_those_model_dropout_sets() -> None:
    config = load_config(overrides=["model.dropout=0.35"])
    model = Seq2Seq(config.model, src_vocab_size=20, tgt_vocab_size=20, pad_id=0)
    found = model.model_dropouts()
    assert len(found) >= 2  # the source embeddings', and the decoder's
    assert {m.p for m in found} == {0.35}
    everything = [m for m in model.modules() if isinstance(m, nn.Dropout) and m.p == 0.35]
    assert {id(m) for m in found} == {id(m) for m in everything}


@pytest.mark.parametrize("value", [-0.1, 1.0, 1.5])
def test_a_short_run_dropout_outside_0_to_1_is_a_config_error(value: float) -> None:
    with pytest.raises(ConfigError, match="short_run_dropout"):
        load_config(overrides=[f"train.short_run_dropout={value}"])
