"""Learning-rate schedules: the straight line to the end of a run that has one, ``auto``'s
choice, and the share of the run the loop hands them (time, updates or epochs, the nearest)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from nmtkit.config import TrainConfig
from nmtkit.errors import ConfigError
from nmtkit.training.distributed import Distributed
from nmtkit.training.schedule import (
    Linear,
    Plateau,
    WarmupStableDecay,
    build_schedule,
    schedule_name,
)
from nmtkit.training.stopping import StopRules
from nmtkit.training.train_state import RunState


def config(**options: Any) -> TrainConfig:
    return TrainConfig(**{"lr": 0.002, "min_lr": 1e-5, **options})


def test_auto_decays_to_the_end_of_a_run_with_an_end_and_waits_for_plateaus_otherwise() -> None:
    for limit in ({"time_budget": 30.0}, {"max_updates": 500}, {"max_epochs": 3}):
        assert schedule_name(config(**limit)) == "wsd"
        assert isinstance(build_schedule(config(**limit)), WarmupStableDecay)
    assert schedule_name(config()) == "plateau"
    assert isinstance(build_schedule(config()), Plateau)
    assert schedule_name(config(lr_schedule="constant", time_budget=30.0)) == "constant"


def test_linear_falls_from_lr_to_min_lr_along_the_run() -> None:
    schedule = build_schedule(config(lr_schedule="linear", time_budget=30.0))
    assert schedule.lr_at(1, 0.0) == pytest.approx(0.002)
    assert schedule.lr_at(500, 0.5) == pytest.approx(0.001005)
    assert schedule.lr_at(999, 1.0) == pytest.approx(1e-5)
    assert schedule.lr_at(999, 1.7) == pytest.approx(1e-5)  # past the end (the last update)
    lrs = [schedule.lr_at(k, k / 100) for k in range(1, 101)]
    assert lrs == sorted(lrs, reverse=True)


def test_linear_warms_up_first() -> None:
    schedule = build_schedule(config(lr_schedule="linear", max_updates=100, warmup_updates=10))
    assert schedule.lr_at(1, 0.0) == pytest.approx(0.0002)
    assert schedule.lr_at(10, 0.09) == pytest.approx(1e-5 + (0.002 - 1e-5) * 0.91)


def test_linear_without_an_end_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="has no end") as caught:
        build_schedule(config(lr_schedule="linear"))
    assert "--time-budget" in str(caught.value.hint)


def test_an_unknown_schedule_lists_auto_among_the_choices() -> None:
    with pytest.raises(ConfigError, match="auto"):
        build_schedule(config(lr_schedule="cosine-ish"))


def test_progress_is_the_share_of_the_nearest_limit() -> None:
    one = Distributed(device=torch.device("cpu"))
    state = RunState(updates=100, epoch=2, batch_in_epoch=50, seconds=600.0)
    progress = StopRules(config(time_budget=20.0), one).progress
    assert progress(state, epoch_batches=100) == pytest.approx(0.5)
    both = StopRules(config(time_budget=20.0, max_updates=125), one).progress
    assert both(state, epoch_batches=100) == pytest.approx(0.8)
    epochs = StopRules(config(max_epochs=3), one).progress
    assert epochs(state, epoch_batches=100) == pytest.approx(0.5)
    assert StopRules(config(), one).progress(state, epoch_batches=100) is None
    late = RunState(updates=100, seconds=1300.0)
    assert progress(late, epoch_batches=100) == 1.0


def test_wsd_holds_lr_then_falls_to_min_lr_over_the_last_share() -> None:
    schedule = build_schedule(config(lr_schedule="wsd", time_budget=30.0, decay_share=0.25))
    assert isinstance(schedule, Linear)  # refuses a run without an end as the line does
    assert schedule.lr_at(1, 0.0) == pytest.approx(0.002)
    assert schedule.lr_at(700, 0.75) == pytest.approx(0.002)
    assert schedule.lr_at(875, 0.875) == pytest.approx(1e-5 + (0.002 - 1e-5) * 0.5)
    assert schedule.lr_at(999, 1.0) == pytest.approx(1e-5)
    lrs = [schedule.lr_at(k, k / 100) for k in range(1, 101)]
    assert lrs == sorted(lrs, reverse=True)
    with pytest.raises(ConfigError, match="has no end"):
        build_schedule(config(lr_schedule="wsd"))
    with pytest.raises(ConfigError, match="decay_share"):
        config(decay_share=0.0)
