"""The GPU check's plumbing: sizes, the shared run state, nmtkit as a subprocess, and the
first two checks (a CUDA torch, the data)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Sizes:
    """How much each check does: the full run, --quick, and the CPU dry run."""

    preset: str
    sets: tuple[str, ...]  # extra config overrides of every training
    updates: int  # train-bf16 and train-fp16
    validate_every: int
    log_every: int
    resume_half: int  # resume checks: 2 x this many updates, split in the middle
    gpu_lines: int  # test sentences translated on the device
    cpu_lines: int  # of them, translated on the CPU too (comparisons, CPU speed)
    cpu_updates: int  # CPU training-speed run
    cpu_log_every: int
    train_pairs: int | None  # None: all of Multi30k's 29,000
    valid_lines: int
    vocab_size: int
    threads: int | None  # CPU threads of every command; None: torch's choice
    timeout_s: int  # longest any one command may take


FULL = Sizes(
    preset="demo",
    sets=(),
    updates=300,
    validate_every=100,
    log_every=25,
    resume_half=20,
    gpu_lines=1000,
    cpu_lines=500,
    cpu_updates=40,
    cpu_log_every=10,
    train_pairs=None,
    valid_lines=500,
    vocab_size=8000,
    threads=None,
    timeout_s=300,
)
QUICK = Sizes(
    preset="demo",
    sets=(),
    updates=150,
    validate_every=50,
    log_every=25,
    resume_half=10,
    gpu_lines=300,
    cpu_lines=100,
    cpu_updates=20,
    cpu_log_every=5,
    train_pairs=None,
    valid_lines=300,
    vocab_size=8000,
    threads=None,
    timeout_s=300,
)
DRY = Sizes(
    preset="tiny",
    sets=("train.max_tokens=1000", "train.lr=0.01"),
    updates=60,
    validate_every=30,
    log_every=10,
    resume_half=3,
    gpu_lines=40,
    cpu_lines=40,
    cpu_updates=10,
    cpu_log_every=5,
    train_pairs=10000,
    valid_lines=100,
    vocab_size=2000,
    threads=1,
    timeout_s=1800,
)


class Failed(Exception):
    """A check failed; the message is its one-line reason."""


class Skipped(Exception):
    """A check cannot run here; the message says why."""


# ------------------------------------------------------------------------------ the run


@dataclass
class Run:
    """What the checks share: options, folders, and what earlier checks produced."""

    device: str
    sizes: Sizes
    out: Path
    raw: Path = field(init=False)
    data: Path = field(init=False)
    models: dict[str, Path] = field(default_factory=dict)
    texts: dict[str, list[str]] = field(default_factory=dict)
    speeds: dict[str, float] = field(default_factory=dict)  # training tok/s by precision

    def __post_init__(self) -> None:
        self.raw, self.data = self.out / "raw", self.out / "data"

    @property
    def dry(self) -> bool:
        return self.device == "cpu"

    def model(self) -> Path:
        """The model the comparisons and speeds use: train-bf16's, else train-fp16's."""
        for name in ("train-bf16", "train-fp16"):
            if name in self.models:
                return self.models[name]
        raise Failed("needs a model from train-bf16 or train-fp16, which both failed")

    def threads(self) -> list[str]:
        return ["--threads", str(self.sizes.threads)] if self.sizes.threads else []

    def nmtkit(
        self,
        name: str,
        args: Sequence[str],
        *,
        prelude: str = "",
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``nmtkit ARGS`` (after the Python ``prelude``, if any); its stderr goes to
        ``logs/NAME.log``; a non-zero exit fails the check with the last line of stderr."""
        result = self.command(name, args, prelude=prelude, env=env)
        if result.returncode != 0:
            raise Failed(f"nmtkit {args[0]} exited {result.returncode}: {last_line(result.stderr)}")
        return result

    def command(
        self,
        name: str,
        args: Sequence[str],
        *,
        prelude: str = "",
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``nmtkit ARGS`` whatever its exit status (log lines unwrapped: COLUMNS)."""
        start = ["-c", PRELUDE_RUN.format(prelude=prelude)] if prelude else ["-m", "nmtkit"]
        log = self.out / "logs" / f"{name}.log"
        try:
            result = subprocess.run(
                [sys.executable, *start, *args],
                capture_output=True,
                text=True,
                stdin=subprocess.DEVNULL,
                timeout=self.sizes.timeout_s,
                cwd=ROOT,
                env={**os.environ, "COLUMNS": "1000", **(env or {})},
            )
        except subprocess.TimeoutExpired as timeout:
            stderr = timeout.stderr or b""
            stderr = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
            log.write_text(f"$ nmtkit {' '.join(args)}\n{stderr}", "utf-8")
            seconds = self.sizes.timeout_s
            raise Failed(f"nmtkit {args[0]} took over {seconds} s (log: {log})") from None
        log.write_text(f"$ nmtkit {' '.join(args)}\n{result.stderr}", "utf-8")
        return result


# A prelude runs before the real command line (python -c CODE ARGS...).
PRELUDE_RUN = (
    "import runpy, sys\n{prelude}\nrunpy.run_module('nmtkit', run_name='__main__', alter_sys=True)"
)
DETERMINISTIC = "import torch\ntorch.use_deterministic_algorithms(True, warn_only=True)"
# Counts every Batch.pin_memory() and every Batch.to() by whether its source is pinned and the
# copy non-blocking, and writes them to $GPU_CHECK_SPY at exit.
PIN_SPY = """import atexit, json, os
from nmtkit.registry import Batch
seen = {"pinned": 0, "to": []}
pin, to = Batch.pin_memory, Batch.to
def spy_pin(self):
    seen["pinned"] += 1
    return pin(self)
def spy_to(self, device, *, non_blocking=False):
    seen["to"].append([str(device), bool(self.src.is_pinned()), non_blocking])
    return to(self, device, non_blocking=non_blocking)
Batch.pin_memory, Batch.to = spy_pin, spy_to
atexit.register(lambda: open(os.environ["GPU_CHECK_SPY"], "w").write(json.dumps(seen)))"""


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


# ----------------------------------------------------------------------------- the checks


def check_cuda(run: Run) -> str:
    """A CUDA torch that sees the GPU named by --device."""
    import torch

    version = torch.__version__
    if not torch.backends.cuda.is_built():
        raise Failed(
            f"no CUDA device: torch {version} is a CPU-only build (install a CUDA torch: "
            "make clean && make gpu-check TORCH=torch; see docs/scale.md#gpu-check)"
        )
    if not torch.cuda.is_available():
        raise Failed(
            f"no CUDA device: torch {version} (CUDA {torch.version.cuda}) sees no GPU "
            "(check the driver and CUDA_VISIBLE_DEVICES)"
        )
    index = torch.device(run.device).index or 0
    if index >= torch.cuda.device_count():
        raise Failed(f"no CUDA device {run.device}: {torch.cuda.device_count()} GPU(s) here")
    props = torch.cuda.get_device_properties(index)
    bf16 = "native bf16" if torch.cuda.is_bf16_supported() else "no native bf16"
    # nmtkit's encoder is cuDNN's GRU, whose fp32 runs in TF32 when cuDNN's flag allows it
    tf32 = [
        f"{name} {'on' if flag else 'off'}"
        for name, flag in (
            ("cuBLAS", torch.backends.cuda.matmul.allow_tf32),
            ("cuDNN", torch.backends.cudnn.allow_tf32),
        )
    ]
    return (
        f"{props.name}, {props.total_memory / 2**30:.0f} GiB, compute capability "
        f"{props.major}.{props.minor}, {bf16}, TF32 {' '.join(tf32)}; torch {version}, "
        f"CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}"
    )


def find_multi30k(data: Path | None) -> Path:
    if data is not None:
        return data
    if os.environ.get("NMTKIT_DATA"):
        return Path(os.environ["NMTKIT_DATA"])
    shared = ROOT.parent / "shared" / "data" / "multi30k"
    if shared.is_dir():
        return shared
    fetched = subprocess.run(
        [sys.executable, "-m", "nmtkit", "download"], capture_output=True, text=True, timeout=600
    )
    if fetched.returncode != 0:
        raise Failed(f"no Multi30k here and nmtkit download failed: {last_line(fetched.stderr)}")
    return Path(fetched.stdout.strip())


def read_gz(path: Path, limit: int | None) -> list[str]:
    import gzip

    with gzip.open(path, "rt", encoding="utf-8") as stream:
        lines = stream.read().splitlines()
    return lines[:limit] if limit is not None else lines


def check_data(run: Run, multi30k: Path) -> str:
    """Multi30k en-de, preprocessed: the training data of every check."""
    sizes = run.sizes
    run.raw.mkdir(parents=True)
    parts = {
        "train": ("train", sizes.train_pairs),
        "val": ("val", sizes.valid_lines),
        "test": ("test_2016_flickr", sizes.gpu_lines),
    }
    for part, (name, limit) in parts.items():
        for lang in ("en", "de"):
            lines = read_gz(multi30k / f"{name}.{lang}.gz", limit)
            (run.raw / f"{part}.{lang}").write_text("\n".join(lines) + "\n", "utf-8")
            if part == "test":
                run.texts[f"test.{lang}"] = lines
    workers = "1" if run.dry else "0"
    run.nmtkit(
        "preprocess",
        [
            "preprocess",
            "-s",
            "en",
            "-t",
            "de",
            "--trainpref",
            str(run.raw / "train"),
            "--validpref",
            str(run.raw / "val"),
            "--destdir",
            str(run.data),
            "--vocab-size",
            str(sizes.vocab_size),
            "--workers",
            workers,
            "-q",
        ],
    )
    splits = json.loads((run.data / "manifest.json").read_text("utf-8"))["splits"]
    counts = ", ".join(f"{name} {split['num_sentences']:,}" for name, split in splits.items())
    test = len(run.texts["test.en"])
    return f"{multi30k} en-de, vocabulary {sizes.vocab_size}: {counts} pairs, {test} test lines"
