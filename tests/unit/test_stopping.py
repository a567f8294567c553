"""The stopping rules: a resumed run that ended goes on only past a raised limit, and names the
rule it stopped by first; a run of one process polls without communicating."""

from __future__ import annotations

import signal
from typing import Any

import torch

from nmtkit.config import TrainConfig
from nmtkit.training.distributed import Distributed
from nmtkit.training.stopping import StopRules, StopSignals
from nmtkit.training.train_state import RunState

ONE = Distributed(device=torch.device("cpu"))


def rules(**options: Any) -> StopRules:
    return StopRules(TrainConfig(**options), ONE)


def test_a_run_that_is_not_over_has_no_limit_reached() -> None:
    running = RunState(updates=100, stop_reason=None)
    assert rules(max_updates=10).limit_reached(running, validates=True) is None


def test_an_ended_run_goes_on_only_past_a_raised_limit() -> None:
    ended = RunState(updates=10, stop_reason="max_updates")
    assert rules(max_updates=10).limit_reached(ended, validates=True) == "max_updates"
    assert rules(max_updates=20).limit_reached(ended, validates=True) is None


def test_the_rule_a_run_stopped_by_comes_first_among_those_it_still_meets() -> None:
    ended = RunState(updates=10, epoch=3, bad_validations=2, stop_reason="max_epochs")
    both = rules(max_updates=10, max_epochs=2, patience=2)
    assert both.limit_reached(ended, validates=True) == "max_epochs"
    patience_only = rules(max_updates=50, patience=2)
    assert patience_only.limit_reached(ended, validates=True) == "early_stopping"
    assert patience_only.limit_reached(ended, validates=False) is None  # nothing to validate on


def test_patience_zero_never_stops_early() -> None:
    assert not rules(patience=0).patience_ran_out(RunState(bad_validations=99))
    assert rules(patience=3).patience_ran_out(RunState(bad_validations=3))


def test_one_process_polls_its_own_signal_and_clock() -> None:
    signals = StopSignals()
    quiet = rules(time_budget=1.0).poll(signals, seconds=59.0)
    assert (quiet.signum, quiet.out_of_time) == (0, False)
    signals.signum = signal.SIGTERM
    late = rules(time_budget=1.0).poll(signals, seconds=60.0)
    assert (late.signum, late.out_of_time) == (signal.SIGTERM, True)
    assert not rules().poll(signals, seconds=1e9).out_of_time  # no budget
