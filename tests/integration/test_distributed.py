"""Data-parallel training under the real torchrun (``python -m torch.distributed.run``), two
processes on gloo, one thread each: two ranks train as one process with twice the update_freq,
resume exactly (also on another number of ranks with the same global batch), rank 0 alone writes,
a SIGTERM saves once, and a dead or silent rank ends the run with one readable line instead of a
hang.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from nmtkit.config import load_config
from nmtkit.training.trainer import train
from tests.processes import child_env, send, spawn
from tests.toy_corpora import preprocess_toy, reverse_pairs

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("distributed")]

UPDATES = 8
COMMON = [
    *("--preset", "tiny", "--threads", "1", "-q"),
    *("--set", "train.log_every=1", "--set", "train.validate_every=4"),
    *("--set", "train.label_smoothing=0.1"),  # the smoothed loss is summed over ranks too
    *("--set", "search.strategy=greedy"),
]
DEADLINE_S = 120

# Loaded into every process of a run (PYTHONPATH): logs each file the process opens for writing,
# renames or deletes, one line per event, into $WRITES_LOG_DIR/<its RANK, or "launcher">.
SITECUSTOMIZE = textwrap.dedent(
    """
    import os, sys
    _log = os.path.join(os.environ["WRITES_LOG_DIR"], os.environ.get("RANK", "launcher"))
    _busy = []

    def _hook(event, args):
        if _busy:
            return
        if event == "open":
            path, mode, flags = args
            writing = (mode is not None and any(c in mode for c in "wax+")) or (
                mode is None and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
            )
            paths = [path] if writing else []
        elif event in ("os.rename", "os.remove", "os.mkdir", "os.rmdir", "shutil.rmtree"):
            paths = [args[0]]
        else:
            return
        for path in paths:
            if isinstance(path, (str, bytes, os.PathLike)) and not isinstance(path, int):
                _busy.append(1)
                try:
                    with open(_log, "a") as stream:
                        stream.write(f"{event} {os.path.abspath(os.fsdecode(path))}\\n")
                finally:
                    _busy.pop()

    sys.addaudithook(_hook)
    """
)


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("toy")
    return preprocess_toy(folder, reverse_pairs(300, seed=1), reverse_pairs(20, seed=2))


def torchrun(
    nproc: int, data: Path, model_dir: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """Start ``torchrun --standalone --nproc-per-node N -m nmtkit train`` (a free port of its
    own, so that runs never collide)."""
    command = [
        *(sys.executable, "-m", "torch.distributed.run", "--standalone"),
        *("--nproc-per-node", str(nproc), "--monitor-interval", "0.1"),
        *("-m", "nmtkit", "train", str(data), "-o", str(model_dir), *COMMON, *args),
    ]
    return spawn(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(NMTKIT_DEBUG="0", **(env or {})),
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    stdout, stderr = process.communicate(timeout=DEADLINE_S)
    return process.returncode, stdout + stderr


def run_ok(nproc: int, data: Path, model_dir: Path, *args: str, **kw: dict[str, str]) -> str:
    code, output = finish(torchrun(nproc, data, model_dir, *args, **kw))
    assert code == 0, output
    return output


def one_process(updates: int) -> list[str]:
    """The overrides of a one-process run taking the global batch of two ranks."""
    return [
        *(o for o in COMMON if "=" in o),
        f"train.max_updates={updates}",
        "train.update_freq=2",
    ]


def weights(model_dir: Path) -> dict[str, torch.Tensor]:
    return torch.load(model_dir / "last.pt", weights_only=True)["model"]


def assert_close_weights(a: Path, b: Path, atol: float = 1e-6) -> None:
    wa, wb = weights(a), weights(b)
    assert wa.keys() == wb.keys()
    for name in wa:
        torch.testing.assert_close(wa[name], wb[name], atol=atol, rtol=0, msg=name)


def train_records(model_dir: Path) -> list[dict[str, float]]:
    lines = (model_dir / "metrics.jsonl").read_text("utf-8").splitlines()
    return [r for r in map(json.loads, lines) if r["kind"] == "train"]


@pytest.fixture(scope="module")
def two_ranks(toy: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A 2-rank run of UPDATES updates, and the folder of the logs of what each process wrote."""
    root = tmp_path_factory.mktemp("two-ranks")
    hooks, writes = root / "hooks", root / "writes"
    hooks.mkdir()
    writes.mkdir()
    (hooks / "sitecustomize.py").write_text(SITECUSTOMIZE)
    path = os.pathsep.join([str(hooks), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env = {"PYTHONPATH": path, "WRITES_LOG_DIR": str(writes)}
    tensorboard = ("--tensorboard", str(root / "tensorboard"))
    run_ok(2, toy, root / "model", "--max-updates", str(UPDATES), *tensorboard, env=env)
    return root / "model", writes


def test_two_ranks_train_as_one_process_with_twice_the_update_freq(
    toy: Path, two_ranks: tuple[Path, Path], tmp_path: Path
) -> None:
    """Same global batches, same loss normalisation: the same parameters and logged losses."""
    model_dir, _ = two_ranks
    config = load_config(preset="tiny", overrides=one_process(UPDATES))
    train(toy, tmp_path / "one", config)
    assert_close_weights(model_dir, tmp_path / "one")
    ranks, one = train_records(model_dir), train_records(tmp_path / "one")
    assert [r["step"] for r in ranks] == list(range(1, UPDATES + 1))
    for key in ("loss", "nll", "tokens_per_update", "sentences_per_update"):
        assert [r[key] for r in ranks] == pytest.approx([r[key] for r in one], rel=1e-6), key


def test_only_rank_0_writes(two_ranks: tuple[Path, Path]) -> None:
    model_dir, writes = two_ranks
    assert sorted(p.name for p in model_dir.iterdir()) == [
        "best.pt",
        "config.yaml",
        "last.pt",
        "metrics.jsonl",
        "shortlist.npz",
        "train.log",
        "train_state.prev.pt",
        "train_state.pt",
    ]
    inside = str(model_dir.parent.resolve())

    def written(rank: str) -> list[str]:
        log = writes / rank
        lines = log.read_text().splitlines() if log.is_file() else []
        return [line for line in lines if line.split(" ", 1)[1].startswith(inside)]

    assert any(line.endswith("/model/last.pt.tmp") for line in written("0")), written("0")
    assert any("/tensorboard/events.out.tfevents." in line for line in written("0"))
    assert len(list((model_dir.parent / "tensorboard").iterdir())) == 1  # one writer, rank 0's
    assert written("1") == []
    assert written("launcher") == []


def test_a_resumed_two_rank_run_continues_the_same_run(
    toy: Path, two_ranks: tuple[Path, Path], tmp_path: Path
) -> None:
    """Stopped at half its updates and resumed with --resume, on 2 ranks and on 1 process with
    update_freq 2 (the same global batch): both end where the uninterrupted run did."""
    model_dir, _ = two_ranks
    half = tmp_path / "half"
    run_ok(2, toy, half, "--max-updates", str(UPDATES // 2))
    shutil.copytree(half, tmp_path / "half-copy")
    run_ok(2, toy, half, "--max-updates", str(UPDATES), "--resume")
    assert_close_weights(model_dir, half)
    assert [r["loss"] for r in train_records(half)] == [r["loss"] for r in train_records(model_dir)]

    config = load_config(preset="tiny", overrides=one_process(UPDATES))
    train(toy, tmp_path / "half-copy", config, resume=True)
    assert_close_weights(model_dir, tmp_path / "half-copy")


def test_a_resume_with_another_global_batch_warns_and_goes_on(
    toy: Path, two_ranks: tuple[Path, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model_dir, _ = two_ranks
    shutil.copytree(model_dir, tmp_path / "model")
    config = load_config(
        preset="tiny",
        overrides=[*(o for o in COMMON if "=" in o), f"train.max_updates={UPDATES + 2}"],
    )
    with caplog.at_level("WARNING", logger="nmtkit"):
        result = train(toy, tmp_path / "model", config, resume=True)
    assert result.steps == UPDATES + 2
    assert "the saved run took 2 batches per update (ranks x update_freq), this one takes 1" in (
        caplog.text
    )


def workers(launcher: subprocess.Popen[str]) -> dict[int, int]:
    """The RANK of each worker process torchrun started, and its pid (Linux /proc)."""
    found: dict[int, int] = {}
    for task in Path(f"/proc/{launcher.pid}/task").iterdir():
        for pid in (task / "children").read_text().split():
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            ranks = [e[5:] for e in environ if e.startswith(b"RANK=")]
            if ranks:
                found[int(ranks[0])] = int(pid)
    return found


def wait_for_updates(launcher: subprocess.Popen[str], model_dir: Path, count: int) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        metrics = model_dir / "metrics.jsonl"
        if metrics.is_file() and len(metrics.read_text().splitlines()) > count:
            return
        assert launcher.poll() is None, finish(launcher)[1]
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_sigterm_to_torchrun_saves_once_and_resume_continues(toy: Path, tmp_path: Path) -> None:
    """What scancel or Kubernetes does: SIGTERM to torchrun, which forwards it to every worker.
    All ranks stop after the same update, rank 0 saves once, each rank takes the exit-143 path,
    and --resume carries on."""
    model_dir = tmp_path / "model"
    launcher = torchrun(2, toy, model_dir, "--set", "train.validate_every=100000")
    wait_for_updates(launcher, model_dir, 2)
    send(launcher, signal.SIGTERM)
    code, output = finish(launcher)
    assert code != 0
    assert output.count("nmtkit: interrupted by SIGTERM") == 2, output  # each rank: exit 143
    assert output.count("saved") == 1, output  # rank 0's log line
    state = torch.load(model_dir / "train_state.pt", weights_only=True)
    steps = [r["step"] for r in train_records(model_dir)]
    assert steps == list(range(1, state["run"]["step"] + 1))  # one writer, up to the save
    config = load_config(  # resumed by one process taking both ranks' batches, to be quick
        preset="tiny",
        overrides=[*one_process(steps[-1] + 2), "train.validate_every=100000"],
    )
    train(toy, model_dir, config, resume=True)
    assert train_records(model_dir)[-1]["step"] == steps[-1] + 2


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (not exited, nor a zombie waiting for its parent)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


@pytest.mark.parametrize("fault", ["killed", "stopped"])
def test_a_dead_or_silent_rank_fails_the_run_with_one_line(
    toy: Path, tmp_path: Path, fault: str
) -> None:
    """Rank 1 killed (rank 0 hears the connection drop) or stopped (rank 0 hears nothing and
    gives up after NMTKIT_DIST_TIMEOUT): the run fails in seconds with a line naming the rank."""
    model_dir = tmp_path / "model"
    launcher = torchrun(
        2,
        toy,
        model_dir,
        *("--set", "train.validate_every=100000"),
        env={"NMTKIT_DIST_TIMEOUT": "5"} if fault == "stopped" else None,
    )
    wait_for_updates(launcher, model_dir, 2)
    pids = workers(launcher)
    started = time.monotonic()
    os.kill(pids[1], signal.SIGKILL if fault == "killed" else signal.SIGSTOP)
    if fault == "stopped":  # once rank 0 has given up, let rank 1 see torchrun's SIGTERM
        while alive(pids[0]) and time.monotonic() - started < 30:
            time.sleep(0.1)
        os.kill(pids[1], signal.SIGCONT)
    code, output = finish(launcher)
    assert code != 0
    assert time.monotonic() - started < 30
    errors = [line for line in output.splitlines() if line.startswith("nmtkit: error:")]
    cause = "Connection" if fault == "killed" else "Timed out"
    nmtkit_frames = [line for line in output.splitlines() if "/nmtkit/" in line]
    assert nmtkit_frames == [], output  # no traceback from nmtkit, only torchrun's own report
    if fault == "killed" and not errors:
        # torchrun saw its worker die before rank 0 missed it, and tore the group down itself
        # (on a loaded machine it often does): its own report then names the dead rank.
        root_cause = output[output.index("Root Cause") :]
        assert "rank      : 1" in root_cause and "SIGKILL" in root_cause, output
        return
    assert any(
        line.startswith("nmtkit: error: rank 0 of 2: lost contact with the other ranks: ")
        and cause in line
        and "(another rank died or stopped answering" in line
        and "NMTKIT_DIST_TIMEOUT=" in line
        for line in errors
    ), output
