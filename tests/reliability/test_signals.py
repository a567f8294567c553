"""Stopping a command from outside. In training, SIGINT and SIGTERM save and kill -9 loses at
most the updates since the last save; either way ``--resume`` reaches the very parameters of a run
that was never stopped, and the model dir always loads. A stopped ``translate`` leaves the earlier
output file as it was and no temporary file.

The runs are real processes (``python -m nmtkit train``) on one thread, so that a run is a pure
function of its seed and the resumed run can be compared bit for bit with the uninterrupted one.
They start with SIGINT and SIGTERM at their defaults (tests/processes.py), whatever the shell that
started pytest left them at: a background job's children inherit SIGINT ignored, and nmtkit keeps
an inherited "ignore", as the last test here checks.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli.runs import invoke
from tests.processes import send, spawn, undeliverable
from tests.reliability.checks import NMTKIT, assert_same_weights

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("reliability-signals")]

UPDATES = 40
TRAIN_ARGS = [
    *("--preset", "tiny", "--max-updates", str(UPDATES), "--threads", "1", "-q"),
    *("--set", "train.validate_every=5", "--set", "train.log_every=1"),
    *("--set", "search.strategy=greedy"),  # validation: quicker, and as good a test
]
# Where kill -9 strikes: after this many logged updates (drawn once, so that failures reproduce).
KILL_AFTER = sorted(random.Random(2015).sample(range(2, UPDATES - 5), 2))
DEADLINE_S = 120


@pytest.fixture(scope="module")
def uninterrupted(toy_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The last checkpoint of the run trained in one go."""
    model_dir = tmp_path_factory.mktemp("uninterrupted") / "model"
    result = invoke(["train", str(toy_data), "-o", str(model_dir), *TRAIN_ARGS])
    assert result.exit_code == 0, result.output
    return model_dir / "last.pt"


def start(data: Path, model_dir: Path) -> subprocess.Popen[str]:
    return spawn(
        [*NMTKIT, "train", str(data), "-o", str(model_dir), *TRAIN_ARGS],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def logged_updates(model_dir: Path) -> int:
    """The training records in ``metrics.jsonl`` so far (a line still being written not counted)."""
    try:
        text = (model_dir / "metrics.jsonl").read_text("utf-8")
    except FileNotFoundError:
        return 0
    return sum('"kind": "train"' in line for line in text.split("\n")[:-1])


def wait_for_updates(process: subprocess.Popen[str], model_dir: Path, count: int) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while logged_updates(model_dir) < count:
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, "training made no progress"
        time.sleep(0.01)


def kill_during_a_save(process: subprocess.Popen[str], model_dir: Path) -> Path:
    """Kill the run while a checkpoint is half-written (a ``*.tmp`` in the model dir), after its
    first save; return the temporary file. The run is stopped (SIGSTOP) before the file is
    looked at again, so that the kill surely comes before the save ends."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline and process.poll() is None:
        try:
            names = [name for name in os.listdir(model_dir) if name.endswith(".tmp")]
        except FileNotFoundError:
            continue
        if names and logged_updates(model_dir) >= 6:
            process.send_signal(signal.SIGSTOP)
            os.waitpid(process.pid, os.WUNTRACED)  # until it is stopped
            caught = [model_dir / name for name in names if (model_dir / name).exists()]
            if caught:
                process.kill()
                return caught[0]
            process.send_signal(signal.SIGCONT)  # the save ended meanwhile: the next one
    pytest.fail("no save was caught in progress")


def assert_loads(model_dir: Path) -> None:
    """Whatever checkpoints the model dir holds load."""
    from nmtkit.checkpoint import load_model

    for name in ("best.pt", "last.pt"):
        if (model_dir / name).is_file():
            load_model(model_dir / name)


def finish(data: Path, model_dir: Path) -> None:
    """Carry the stopped run on to UPDATES: ``--resume`` if it saved a train state, else afresh
    (``--overwrite`` where it saved checkpoints but no train state)."""
    states = list(model_dir.glob("train_state*.pt")) if model_dir.is_dir() else []
    checkpoints = list(model_dir.glob("*.pt")) if model_dir.is_dir() else []
    how = ["--resume"] if states else ["--overwrite"] if checkpoints else []
    result = invoke(["train", str(data), "-o", str(model_dir), *TRAIN_ARGS, *how])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output


# Both signals stop a run the same way, so each strikes at another moment: SIGINT before the
# first validation (its save is the run's first), SIGTERM after one.
@pytest.mark.parametrize(
    ("signum", "status", "after"),
    [(signal.SIGINT, 130, 3), (signal.SIGTERM, 143, 7)],
    ids=["SIGINT-before-any-save", "SIGTERM-after-a-save"],
)
def test_a_stop_signal_saves_and_resume_reaches_the_uninterrupted_run(
    toy_data: Path, uninterrupted: Path, tmp_path: Path, signum: int, status: int, after: int
) -> None:
    model_dir = tmp_path / "model"
    process = start(toy_data, model_dir)
    wait_for_updates(process, model_dir, after)
    process.send_signal(signal.SIGSTOP)  # held while the model dir is looked at
    os.waitpid(process.pid, os.WUNTRACED)
    assert (model_dir / "last.pt").is_file() == (after > 5)  # validate_every=5 saves
    send(process, signum)  # pending until the run goes on
    process.send_signal(signal.SIGCONT)
    _, stderr = process.communicate(timeout=DEADLINE_S)
    assert process.returncode == status, stderr
    assert "Traceback" not in stderr
    name = signal.Signals(signum).name
    assert stderr.splitlines()[-1].startswith(f"nmtkit: interrupted by {name}"), stderr
    state = json.loads((model_dir / "metrics.jsonl").read_text("utf-8").splitlines()[-1])
    assert state["step"] < UPDATES, "the run ended before the signal: nothing was tested"
    assert (model_dir / "train_state.pt").is_file() and (model_dir / "last.pt").is_file()
    assert list(model_dir.glob("*.tmp")) == []
    assert_loads(model_dir)
    finish(toy_data, model_dir)
    assert_same_weights(model_dir / "last.pt", uninterrupted)


@pytest.mark.parametrize("when", [*(f"after-{n}-updates" for n in KILL_AFTER), "during-a-save"])
def test_kill_9_then_resume_reaches_the_uninterrupted_run(
    toy_data: Path, uninterrupted: Path, tmp_path: Path, when: str
) -> None:
    model_dir = tmp_path / "model"
    process = start(toy_data, model_dir)
    if when == "during-a-save":
        half_written = kill_during_a_save(process, model_dir)
    else:
        wait_for_updates(process, model_dir, int(when.split("-")[1]))
        process.kill()
    process.communicate(timeout=DEADLINE_S)
    assert process.returncode == -signal.SIGKILL
    if when == "during-a-save":
        assert half_written.exists()  # what a power cut leaves: the resumed run must cope
    assert_loads(model_dir)
    finish(toy_data, model_dir)
    assert list(model_dir.glob("*.tmp")) == []
    assert_loads(model_dir)
    assert_same_weights(model_dir / "last.pt", uninterrupted)


@pytest.mark.parametrize(
    ("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"]
)
def test_a_stop_signal_during_translate_keeps_the_earlier_output(
    toy_model: Path, tmp_path: Path, signum: int, status: int
) -> None:
    source, output = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("a b c d e f\n" * 5000, "utf-8")
    output.write_text("an earlier translation\n", "utf-8")
    process = translating(toy_model, source, output)
    send(process, signum)
    _, stderr = process.communicate(timeout=DEADLINE_S)
    assert process.returncode == status, stderr
    assert "Traceback" not in stderr
    assert stderr.splitlines()[-1].startswith("nmtkit: interrupted"), stderr
    assert output.read_text("utf-8") == "an earlier translation\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.txt"]


def translating(
    model: Path, source: Path, output: Path, *, ignore: tuple[int, ...] = ()
) -> subprocess.Popen[str]:
    """``nmtkit translate -i SOURCE --output OUTPUT``, returned once it writes the output's
    temporary file; ``ignore``: signals it starts with ignored, as a background job's child."""
    command = [*NMTKIT, "translate", "-m", str(model), "-i", str(source), "--output", str(output)]
    process = spawn(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, ignore=ignore
    )
    deadline = time.monotonic() + DEADLINE_S
    while not output.with_name(output.name + ".tmp").exists():  # translating into it
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return process


def test_translate_keeps_an_inherited_ignore_of_sigint(toy_model: Path, tmp_path: Path) -> None:
    """As a shell's background job (``nmtkit translate ... &`` in a script) is started: with
    SIGINT ignored, translate keeps ignoring it and finishes its output."""
    source, output = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("a b c d e f\n" * 5000, "utf-8")
    process = translating(toy_model, source, output, ignore=(signal.SIGINT,))
    assert undeliverable(process.pid) == ["SIGINT ignored"]
    assert process.poll() is None  # still translating
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=DEADLINE_S)
    assert process.returncode == 0, stderr
    assert len(output.read_text("utf-8").splitlines()) == 5000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.txt"]
