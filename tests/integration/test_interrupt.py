"""Ctrl-C or a scheduler's SIGTERM during training saves the run, and --resume carries on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

NMTKIT = [sys.executable, "-m", "nmtkit"]


@pytest.mark.parametrize(
    ("signum", "exit_code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["INT", "TERM"]
)
def test_a_stop_signal_saves_the_last_checkpoint_and_resume_continues(
    reverse_data: Path, tmp_path: Path, signum: int, exit_code: int
) -> None:
    model_dir = tmp_path / "model"
    command = [
        *NMTKIT,
        "train",
        str(reverse_data),
        "-o",
        str(model_dir),
        "--preset",
        "tiny",
        "--set",
        "train.log_every=1",
        "--set",
        "train.validate_every=100000",
        "-q",
    ]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    metrics = model_dir / "metrics.jsonl"
    deadline = time.monotonic() + 120
    while not (metrics.is_file() and len(metrics.read_text().splitlines()) >= 3):
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.2)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == exit_code, stderr
    assert "Traceback" not in stderr and f"interrupted by {signal.Signals(signum).name}" in stderr
    assert (model_dir / "last.pt").is_file() and (model_dir / "train_state.pt").is_file()

    steps = [json.loads(line)["step"] for line in metrics.read_text().splitlines()]
    resumed = subprocess.run(
        [*command[:-1], "--resume", "--max-updates", str(max(steps) + 5), "-q"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NMTKIT_DEBUG": "0"},
    )
    assert resumed.returncode == 0, resumed.stderr
    train_steps = [
        r["step"] for r in map(json.loads, metrics.read_text().splitlines()) if r["kind"] == "train"
    ]
    assert train_steps[-1] == max(steps) + 5
