"""The data-parallel plumbing on its own: the launcher's environment, the device of a rank, the
timeout setting, a process group of one, and the one line a lost rank becomes."""

from __future__ import annotations

import socket

import pytest
import torch

from nmtkit.errors import ConfigError, DistributedError
from nmtkit.training.distributed import (
    DEFAULT_TIMEOUT_S,
    is_comm_error,
    rank_device,
    session,
    timeout_seconds,
)

GLOO_RESET = (
    "[/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error [127.0.0.1]:36518: "
    "Connection reset by peer. This is typically caused by a remote worker hanging"
)


def test_without_torchrun_a_group_of_one_that_never_communicates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    with session(torch.device("cpu")) as group:
        assert (group.rank, group.world_size, group.is_main, group.active) == (0, 1, True, False)
        assert group.all_reduce([1.0, 2.0]) == [1.0, 2.0]
        assert group.broadcast([3.0]) == [3.0]
        group.barrier()
        module = torch.nn.Linear(2, 2)
        assert group.wrap(module) is module


def test_the_timeout_comes_from_the_environment() -> None:
    assert timeout_seconds({}) == DEFAULT_TIMEOUT_S == 600
    assert timeout_seconds({"NMTKIT_DIST_TIMEOUT": "2.5"}) == 2.5
    for bad in ("0", "-1", "soon"):
        with pytest.raises(ConfigError, match=f"NMTKIT_DIST_TIMEOUT='{bad}' must be a positive"):
            timeout_seconds({"NMTKIT_DIST_TIMEOUT": bad})


def test_a_rank_trains_on_the_cpu_or_on_the_gpu_of_its_local_rank() -> None:
    assert rank_device(torch.device("cpu"), 3) == torch.device("cpu")
    with pytest.raises(ConfigError, match="--device cuda:1: under torchrun rank 0 of this"):
        rank_device(torch.device("cuda:1"), 0)


def test_gloo_and_nccl_failures_are_told_from_bugs() -> None:
    assert is_comm_error(RuntimeError(GLOO_RESET))
    assert is_comm_error(RuntimeError("Timed out waiting 3000ms for recv operation to complete"))
    assert not is_comm_error(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))
    assert not is_comm_error(ValueError("connection"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def launcher(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """What torchrun would set for the only rank of a run."""
    env = {
        "RANK": "0",
        "LOCAL_RANK": "0",
        "WORLD_SIZE": "1",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return monkeypatch


def test_a_gloo_group_of_one_runs_the_collectives_and_wraps_in_ddp(
    launcher: pytest.MonkeyPatch,
) -> None:
    launcher.setenv("TORCHELASTIC_RESTART_COUNT", "2")
    with session(torch.device("cpu")) as g:
        assert g.active and g.is_main and g.restarts == 2
        assert g.all_reduce([1.0, 2.5]) == [1.0, 2.5]
        assert g.all_reduce([4.0], op="max") == [4.0]
        assert g.broadcast([0.25]) == [0.25]
        g.barrier()
        wrapped = g.wrap(torch.nn.Linear(2, 2))
        assert type(wrapped).__name__ == "DistributedDataParallel"
        with g.no_sync(wrapped, sync=False):
            wrapped(torch.ones(1, 2)).sum().backward()
        assert next(wrapped.parameters()).grad is not None


def test_a_lost_peer_becomes_one_line_naming_the_rank(launcher: pytest.MonkeyPatch) -> None:
    launcher.setenv("NMTKIT_DIST_TIMEOUT", "7")
    with pytest.raises(DistributedError) as caught, session(torch.device("cpu")):
        raise RuntimeError(GLOO_RESET)
    assert str(caught.value) == (
        "rank 0 of 1: lost contact with the other ranks: Read error [127.0.0.1]:36518: "
        "Connection reset by peer (another rank died or stopped answering, see that rank's "
        "log; ranks wait NMTKIT_DIST_TIMEOUT=7 seconds for each other)"
    )


def test_other_errors_pass_through_the_session(launcher: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="a bug"), session(torch.device("cpu")):
        raise ValueError("a bug")
