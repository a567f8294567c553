"""GPU check: what docs/scale.md, docs/cli.md and docs/speed.md claim about CUDA, in one run.

Run through ``benchmarks/gpu_check.sh`` (``make gpu-check``). Prints one line per check,
``ok NAME: ...``, ``FAIL NAME: reason`` or ``skip NAME: reason``, then a summary line; exits 1
on any FAIL or skip (a skip is allowed only with ``--allow-skip``) and 2 on bad arguments.
``--device cpu`` is a dry run of the same checks on the CPU with tiny sizes, for developers:
it proves the checks themselves, not the GPU. Tolerances and sizes: docs/scale.md#gpu-check.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from gpu_check_outputs import (
    check_align,
    check_device_index,
    check_score_pairs,
    check_serve,
    check_translate_bf16,
    check_translate_fp32,
)
from gpu_check_run import (
    DRY,
    FULL,
    QUICK,
    ROOT,
    Failed,
    Run,
    Skipped,
    check_cuda,
    check_data,
    find_multi30k,
    last_line,
)
from gpu_check_training import (
    check_pinned,
    check_resume_default,
    check_resume_exact,
    check_speed,
    check_train,
)

MARKER = ".gpu-check"  # marks --out folders this script may empty
WALL_LIMIT_S = 480  # the full run on one GPU must take under 8 minutes


# ------------------------------------------------------------------------------- arguments


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """A usage error is one line and exit 2 (argparse prints the usage too)."""
        self.exit(2, f"gpu_check: error: {message} (see --help)\n")


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = Parser(prog="benchmarks/gpu_check.sh", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--device",
        default="cuda",
        help="cuda or cuda:N (default cuda); cpu is a dry run with tiny sizes",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "bench-out" / "gpu-check",
        help="working folder, emptied first (default bench-out/gpu-check)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="smaller sizes (aimed at about 3 minutes on one GPU)"
    )
    parser.add_argument(
        "--data",
        type=Path,
        help="raw Multi30k folder (default $NMTKIT_DATA, ../shared/data/multi30k "
        "or nmtkit download)",
    )
    parser.add_argument(
        "--allow-skip",
        action="store_true",
        help="a skipped check does not make the exit status non-zero",
    )
    args = parser.parse_args(argv)
    if not re.fullmatch(r"cpu|cuda(:\d+)?", args.device):
        parser.error(f"--device {args.device}: choose cuda, cuda:N or cpu (a dry run)")
    if args.data is not None and not (args.data / "train.en.gz").is_file():
        parser.error(f"--data {args.data}: no train.en.gz there (a raw Multi30k folder)")
    if args.out.exists() and not args.out.is_dir():
        parser.error(f"--out {args.out}: not a folder")
    if args.out.is_dir() and any(args.out.iterdir()) and not (args.out / MARKER).exists():
        parser.error(f"--out {args.out}: holds files this script did not write; choose another")
    return args


# ------------------------------------------------------------------------------ reporting


@dataclass
class Report:
    """One line per check on stdout; counts for the summary and the exit status."""

    logs: Path
    counts: dict[str, int] = field(default_factory=lambda: {"ok": 0, "FAIL": 0, "skip": 0})

    def line(self, status: str, name: str, text: str) -> None:
        self.counts[status] += 1
        print(f"{status} {name}: {' '.join(text.split())}", flush=True)

    def check(self, name: str, fn: Callable[..., str], *args: Any) -> bool:
        try:
            self.line("ok", name, fn(*args))
            return True
        except Failed as failed:
            self.line("FAIL", name, str(failed))
        except Skipped as skipped:
            self.line("skip", name, str(skipped))
        except Exception as error:  # a bug or an unforeseen failure: one line, trace kept
            trace = self.logs / f"{name}.traceback"
            trace.write_text(traceback.format_exc(), "utf-8")
            message = last_line(str(error))
            self.line("FAIL", name, f"{type(error).__name__}: {message} (traceback: {trace})")
        return False

    def exit_status(self, *, allow_skip: bool) -> int:
        """1 on any FAIL, or on any skip unless ``allow_skip``; else 0."""
        return 1 if self.counts["FAIL"] or (self.counts["skip"] and not allow_skip) else 0


def prepare_out(out: Path) -> None:
    import shutil

    if (out / MARKER).exists():
        shutil.rmtree(out)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("written by benchmarks/gpu_check.py; emptied by its next run\n")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    sizes = DRY if args.device == "cpu" else QUICK if args.quick else FULL
    started = time.monotonic()
    out = args.out.resolve()
    prepare_out(out)
    run, report = Run(device=args.device, sizes=sizes, out=out), Report(out / "logs")
    if run.dry:
        report.line("skip", "cuda", "--device cpu is a dry run of the checks on the CPU")
    elif not report.check("cuda", check_cuda, run):
        return 1  # nothing else can run
    if report.check("data", lambda: check_data(run, find_multi30k(args.data))):
        report.check("train-bf16", check_train, run, "bf16")
        report.check("train-fp16", check_train, run, "fp16")
        report.check("pinned-batches", check_pinned, run)
        report.check("resume-bf16", check_resume_exact, run, "bf16")
        report.check("resume-fp16", check_resume_exact, run, "fp16")
        report.check("resume-default", check_resume_default, run)
        report.check("translate-fp32", check_translate_fp32, run)
        report.check("translate-bf16", check_translate_bf16, run)
        report.check("align", check_align, run)
        report.check("score-pairs", check_score_pairs, run)
        report.check("serve", check_serve, run)
        report.check("device-index", check_device_index, run)
        report.check("speed", check_speed, run)
    seconds = time.monotonic() - started
    if sizes is FULL:
        report.check("wall-time", check_wall_time, seconds)
    counts = report.counts
    print(
        f"gpu_check: {counts['ok']} ok, {counts['FAIL']} FAIL, {counts['skip']} skip in "
        f"{seconds:.0f} s on {args.device} (logs: {out / 'logs'})",
        flush=True,
    )
    return report.exit_status(allow_skip=args.allow_skip)


def check_wall_time(seconds: float) -> str:
    if seconds > WALL_LIMIT_S:
        raise Failed(f"the checks took {seconds:.0f} s, over the {WALL_LIMIT_S} s planned")
    return f"{seconds:.0f} s, under the {WALL_LIMIT_S} s planned"


def interrupt(signum: int, frame: object) -> None:
    """SIGTERM as Ctrl-C: the running command is killed with the script (subprocess.run)."""
    raise KeyboardInterrupt


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, interrupt)
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("gpu_check: interrupted", file=sys.stderr)
        sys.exit(130)
