"""The GPU check's comparisons: translate, align, score-pairs and serve on the device give
what they give on the CPU; a device index past the last GPU is one error line."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpu_check_run import ROOT, Failed, Run, last_line


def side(run: Run, name: str) -> tuple[str, int]:
    """The device and number of test lines of side ``dev`` (--device) or ``cpu``."""
    return (run.device, run.sizes.gpu_lines) if name == "dev" else ("cpu", run.sizes.cpu_lines)


def source_file(run: Run, lines: int) -> Path:
    path = run.out / "text" / f"test.{lines}.en"
    if not path.exists():
        path.parent.mkdir(exist_ok=True)
        path.write_text("\n".join(run.texts["test.en"][:lines]) + "\n", "utf-8")
    return path


def translate(run: Run, name: str, precision: str) -> list[str]:
    """Beam-5 translations of the test lines on side ``name``, once per precision."""
    key = f"hyp.{name}.{precision}"
    if key not in run.texts:
        device, lines = side(run, name)
        out = run.out / "text" / f"{key}.de"
        run.nmtkit(
            key,
            [
                "translate",
                "-m",
                str(run.model()),
                "-i",
                str(source_file(run, lines)),
                "--output",
                str(out),
                "--beam",
                "5",
                "--device",
                device,
                "--precision",
                precision,
                "-q",
                *run.threads(),
            ],
        )
        run.texts[key] = out.read_text("utf-8").splitlines()
        if len(run.texts[key]) != lines:
            raise Failed(f"{len(run.texts[key])} translations of {lines} lines")
    return run.texts[key]


def same_share(a: Sequence[str], b: Sequence[str]) -> float:
    pairs = list(zip(a, b, strict=False))
    return sum(x == y for x, y in pairs) / len(pairs)


def check_translate_fp32(run: Run) -> str:
    """fp32 translations on the device: at least 98% of lines as on the CPU."""
    dev, cpu = translate(run, "dev", "fp32"), translate(run, "cpu", "fp32")
    share = same_share(dev, cpu)
    if share < 0.98:
        raise Failed(f"{share:.1%} of {len(cpu)} lines as on the CPU, under 98%")
    return f"{share:.1%} of {len(cpu)} lines as on the CPU (at least 98%)"


def check_translate_bf16(run: Run) -> str:
    """bf16 translations on the device: BLEU within 0.5 of the CPU's bf16, same lines."""
    from nmtkit.scoring.metrics import corpus_bleu

    dev, cpu = translate(run, "dev", "bf16"), translate(run, "cpu", "bf16")
    refs = run.texts["test.de"][: len(cpu)]
    bleu_dev, bleu_cpu = corpus_bleu(dev[: len(cpu)], refs).score, corpus_bleu(cpu, refs).score
    if abs(bleu_dev - bleu_cpu) > 0.5:
        raise Failed(f"BLEU {bleu_dev:.2f} against the CPU's {bleu_cpu:.2f}, over 0.5 apart")
    return (
        f"BLEU {bleu_dev:.2f} against the CPU's {bleu_cpu:.2f} on {len(cpu)} lines (within "
        f"0.5); {same_share(dev, cpu):.1%} of lines the same"
    )


def forced_target(run: Run) -> Path:
    """The CPU's fp32 translations of the CPU's test lines, as the target that align and
    score-pairs force-decode on both sides."""
    target = run.out / "text" / "forced.de"
    if not target.exists():
        target.write_text("\n".join(translate(run, "cpu", "fp32")) + "\n", "utf-8")
    return target


def on_both_sides(run: Run, command: str, suffix: str, options: Sequence[str] = ()) -> list[str]:
    """``nmtkit COMMAND`` over the CPU's test lines and :func:`forced_target`, on the device
    and then on the CPU: the lines each side wrote, device first."""
    outputs = []
    for name in ("dev", "cpu"):
        out = run.out / "text" / f"{command}.{name}.{suffix}"
        run.nmtkit(
            f"{command}.{name}",
            [
                command,
                "-m",
                str(run.model()),
                "--source",
                str(source_file(run, run.sizes.cpu_lines)),
                "--target",
                str(forced_target(run)),
                "--output",
                str(out),
                "--device",
                side(run, name)[0],
                *options,
                "-q",
                *run.threads(),
            ],
        )
        outputs.append(out.read_text("utf-8").splitlines())
    return outputs


def check_align(run: Run) -> str:
    """fp32 alignments (Pharaoh) on the device: at least 98% of lines as on the CPU."""
    dev, cpu = on_both_sides(run, "align", "pharaoh")
    share = same_share(dev, cpu)
    if share < 0.98 or len(dev) != run.sizes.cpu_lines:
        raise Failed(f"{share:.1%} of {len(dev)} alignments as on the CPU, under 98%")
    return f"{share:.1%} of {len(cpu)} pairs aligned as on the CPU (at least 98%)"


def check_score_pairs(run: Run) -> str:
    """fp32 forced-decoding log p on the device: within 1e-3 relative of the CPU's."""
    dev, cpu = (
        [float(line.split("\t")[0]) for line in lines]
        for lines in on_both_sides(run, "score-pairs", "tsv", ["--precision", "fp32"])
    )
    worst = max(abs(a - b) / max(abs(b), 1.0) for a, b in zip(dev, cpu, strict=True))
    if worst > 1e-3:
        raise Failed(f"log p differs by up to {worst:.2g} relative, over 1e-3")
    return f"log p of {len(cpu)} pairs within {worst:.2g} relative of the CPU's (at most 1e-3)"


def check_serve(run: Run) -> str:
    """``nmtkit serve`` on the device (fp32) answers as ``translate`` does on the CPU."""
    lines = run.texts["test.en"][: run.sizes.cpu_lines]
    expected = translate(run, "cpu", "fp32")
    log_path = run.out / "logs" / "serve.log"
    args = [
        "serve",
        "-m",
        str(run.model()),
        "--port",
        "0",
        "--device",
        run.device,
        "--precision",
        "fp32",
        *run.threads(),
    ]
    with open(log_path, "w", encoding="utf-8") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "nmtkit", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            cwd=ROOT,
            env={**os.environ, "COLUMNS": "1000"},
        )
        try:
            url = wait_for_url(server, log_path, timeout_s=run.sizes.timeout_s)
            got = []
            for i in range(0, len(lines), 64):  # --max-sentences 64 a request
                answer = post(f"{url}/translate", {"text": lines[i : i + 64], "beam_size": 5})
                got += [item["text"] for item in answer["translations"]]
        finally:
            server.send_signal(signal.SIGTERM)
            code = server.wait(timeout=60)
    share = same_share(got, expected)
    if share < 0.98 or len(got) != len(lines):
        raise Failed(f"{share:.1%} of {len(got)} answers as translate's on the CPU, under 98%")
    if code != 0:
        raise Failed(f"exited {code} after SIGTERM: {last_line(log_path.read_text('utf-8'))}")
    return f"{share:.1%} of {len(got)} answers as translate's on the CPU; SIGTERM: exit 0"


def wait_for_url(server: subprocess.Popen[bytes], log_path: Path, *, timeout_s: int) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = re.search(r" on (http://\S+) \(API docs", log_path.read_text("utf-8"))
        if found:
            return found.group(1)
        if server.poll() is not None:
            raise Failed(f"exited {server.returncode}: {last_line(log_path.read_text('utf-8'))}")
        time.sleep(0.2)
    raise Failed(f"not listening after {timeout_s} s (log: {log_path})")


def post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=300) as response:
        answer: dict[str, Any] = json.load(response)
    return answer


def check_device_index(run: Run) -> str:
    """``--device cuda:7`` with one GPU visible: one error line, exit 2, nothing written."""
    import torch

    env = {}
    if torch.cuda.is_available():
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        ids = visible.split(",") if visible else [str(i) for i in range(torch.cuda.device_count())]
        env["CUDA_VISIBLE_DEVICES"] = ids[torch.device(run.device).index or 0]
        expected = "--device cuda:7: only 1 GPU here (cuda:0)"
    elif torch.backends.cuda.is_built():  # the dry run on a machine without a GPU
        expected = "--device cuda:7: no CUDA GPU is visible"
    else:
        expected = "--device cuda:7: this torch build has no CUDA"
    model_dir = run.out / "cuda7"
    commands = {
        "train": ["train", str(run.data), "-o", str(model_dir), "--device", "cuda:7"],
        "translate": [
            "translate",
            "-m",
            str(run.model()),
            "-i",
            str(source_file(run, run.sizes.cpu_lines)),
            "--device",
            "cuda:7",
        ],
    }
    for name, args in commands.items():
        result = run.command(f"cuda7.{name}", args, env=env)
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        if result.returncode != 2 or len(lines) != 1 or "Traceback" in result.stderr:
            raise Failed(
                f"{name}: exit {result.returncode}, {len(lines)} lines: {last_line(result.stderr)}"
            )
        if not lines[0].startswith(f"nmtkit: error: {expected}") or result.stdout:
            raise Failed(f"{name}: {lines[0]!r} does not start with 'nmtkit: error: {expected}'")
    if model_dir.exists():
        raise Failed(f"train wrote {model_dir} before refusing the device")
    visible = f" (CUDA_VISIBLE_DEVICES={env['CUDA_VISIBLE_DEVICES']})" if env else ""
    return f"train and translate{visible}: exit 2, one line: {lines[0]}"
