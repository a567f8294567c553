"""Stop signals during training: the first one is noted, a second one aborts at once."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest

from nmtkit.errors import Interrupted
from nmtkit.training.stopping import STOP_SIGNALS, StopSignals


@pytest.fixture
def stop_signals_unblocked() -> Iterator[None]:
    """The stop signals deliverable to this process for the test: a signal mask survives exec,
    so pytest may have inherited them blocked from whatever started it. (An inherited "ignore"
    does not matter: StopSignals installs its own handlers.)"""
    previous = signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    yield
    signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def deliver(signum: int) -> None:
    """Send ``signum`` to this process and give Python the moment it needs to run the handler."""
    os.kill(os.getpid(), signum)
    time.sleep(0.05)


@pytest.mark.parametrize(
    ("first", "second", "exit_code"),
    [
        (signal.SIGTERM, signal.SIGTERM, 143),
        (signal.SIGINT, signal.SIGINT, 130),
        (signal.SIGTERM, signal.SIGINT, 130),
    ],
)
@pytest.mark.usefixtures("stop_signals_unblocked")
def test_the_first_stop_signal_is_noted_and_a_second_aborts(
    first: int, second: int, exit_code: int
) -> None:
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with StopSignals() as stop:
        assert not stop.received
        deliver(first)
        assert stop.received and stop.signum == first
        with pytest.raises(Interrupted) as caught:
            deliver(second)
    assert caught.value.exit_code == exit_code
    assert {s: signal.getsignal(s) for s in before} == before
