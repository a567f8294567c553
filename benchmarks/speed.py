"""Speed benchmark: training throughput, peak memory, translation speed and the roofline.

Run through ``benchmarks/speed.sh`` (``make bench-speed``), which finds Multi30k and
preprocesses it. Every figure is measured in this run, one thing at a time:

* roofline: this machine's matrix-multiply peak, 2048 x 2048 x 2048 in fp32 and in bf16;
* training: ``nmtkit train`` of the default RNNsearch for ``--updates`` updates (validation
  off); target tokens per second (real target pieces with EOS, as the peers count them) is the
  median of the 50-update log windows after ``--warmup`` updates; peak resident memory is
  ``/usr/bin/time -v``'s maximum RSS of the whole command;
* FLOPs: torch's FlopCounterMode over forward and backward of real training batches, per
  target token, so achieved FLOP/s = FLOPs per token x tokens per second;
* translation: the 1000 sentences of test_2016_flickr, beam 5 and greedy, the whole
  ``nmtkit translate`` command (Python start and model load included) and the decode alone
  (``decode_sequences`` over pre-encoded ids, in this process), median of ``--runs`` runs,
  with the BLEU of the output; the decode alone prepares the model as ``translate`` does
  (its linear weights cast once to bf16 when it translates in bf16);
* latency: one 10-word test sentence at a time in this warm process, as ``serve`` decodes for a
  single client, raw text to text: p50 and p90 milliseconds, beam 5 and greedy;
* streaming: peak RSS of ``nmtkit translate --greedy`` over N and 8N input lines.

``--shortlist on|off`` measures translation and latency with or without the model directory's
vocabulary shortlist (``translate --shortlist/--no-shortlist``); by default without it, as
``translate``.

Output: a table on stderr and everything in ``OUT/speed.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import inspect
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

from nmtkit.checkpoint import load_model
from nmtkit.config import load_config
from nmtkit.data.text import PAD_ID
from nmtkit.models import build_model
from nmtkit.scoring.metrics import corpus_bleu
from nmtkit.search.decode import build_strategy, decode_sequences
from nmtkit.search.overrides import SearchOverrides, resolve_search
from nmtkit.training.data import TrainingData


def log(message: str) -> None:
    print(f"[speed] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------- roofline


def matmul_peak(dtype: torch.dtype, size: int = 2048, reps: int = 10) -> float:
    """GFLOP/s of a size^3 matrix multiply in ``dtype``: the best of ``reps`` timed calls."""
    a = torch.randn(size, size).to(dtype)
    b = torch.randn(size, size).to(dtype)
    for _ in range(3):
        a @ b
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best / 1e9


def roofline() -> dict[str, float]:
    return {
        "threads": torch.get_num_threads(),
        "fp32_gflops": round(matmul_peak(torch.float32), 1),
        "bf16_gflops": round(matmul_peak(torch.bfloat16), 1),
    }


# ------------------------------------------------------------------------------------ FLOPs


def flops_per_target_token(data_dir: Path, overrides: list[str], num_batches: int = 8) -> float:
    """Forward + backward FLOPs of the default model per real target token."""
    from torch.utils.flop_counter import FlopCounterMode

    data = TrainingData.load(data_dir)
    config = load_config(overrides=overrides)
    model = build_model(
        config.model,
        src_vocab_size=data.src_text.vocab_size,
        tgt_vocab_size=data.tgt_text.vocab_size,
        pad_id=PAD_ID,
    ).train()
    batches = data.train.batches(max_tokens=config.train.max_tokens)
    step = max(1, len(batches) // num_batches)
    flops = tokens = 0
    for indices in batches[::step][:num_batches]:
        batch = data.train.batch(indices)
        with FlopCounterMode(display=False) as counter:
            loss, _ = model.loss(batch, label_smoothing=config.train.label_smoothing)
            (loss / batch.num_tgt_tokens).backward()
        model.zero_grad(set_to_none=True)
        flops += counter.get_total_flops()
        tokens += batch.num_tgt_tokens
    return flops / tokens


# --------------------------------------------------------------------------------- training


def timed(command: list[str], *, stdin: Path | None = None, stdout: Path | None = None) -> dict:
    """Run ``command`` under /usr/bin/time -v: wall seconds and peak RSS in MiB."""
    start = time.perf_counter()
    with open(stdin or os.devnull, "rb") as inp, open(stdout or os.devnull, "wb") as out:
        proc = subprocess.run(
            ["/usr/bin/time", "-v", *command], stdin=inp, stdout=out, stderr=subprocess.PIPE
        )
    wall = time.perf_counter() - start
    report = proc.stderr.decode("utf-8", "replace")
    if proc.returncode != 0:
        raise SystemExit(f"[speed] failed ({proc.returncode}): {' '.join(command)}\n{report}")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", report)
    return {"wall_s": wall, "peak_rss_mib": int(rss.group(1)) / 1024 if rss else None}


def train(
    data_dir: Path,
    model_dir: Path,
    *,
    updates: int,
    minutes: float | None,
    warmup: int,
    sets: list[str],
) -> dict:
    """``minutes`` trains for that wall-clock budget instead of ``updates`` updates."""
    budget = ["--time-budget", str(minutes)] if minutes else ["--max-updates", str(updates)]
    command = [
        "nmtkit", "train", str(data_dir), "-o", str(model_dir), "--overwrite", "-q", *budget,
        "--set", "train.validate_every=1000000", "--set", "train.log_every=50",
    ]  # fmt: skip
    for item in sets:
        command += ["--set", item]
    run = timed(command)
    records = [
        json.loads(line) for line in (model_dir / "metrics.jsonl").read_text("utf-8").splitlines()
    ]
    windows = [r["tok_s"] for r in records if r.get("kind") == "train" and r["step"] > warmup]
    if not windows:
        raise SystemExit(f"[speed] no log windows after update {warmup}: raise --updates")
    return {
        "last_logged_update": max(r["step"] for r in records if r.get("kind") == "train"),
        "minutes": minutes,
        "tok_per_s": statistics.median(windows),
        "tok_per_s_windows": [round(w) for w in windows],
        "peak_rss_mib": run["peak_rss_mib"],
        "wall_s": run["wall_s"],
    }


# ------------------------------------------------------------------------------ translation


def bleu(hyp_path: Path, ref_path: Path) -> float:
    hyps = hyp_path.read_text("utf-8").splitlines()
    refs = ref_path.read_text("utf-8").splitlines()
    return round(corpus_bleu(hyps, refs).score, 2)


def decode_only(
    model_dir: Path,
    lines: list[str],
    *,
    beam: int,
    runs: int,
    precision: str | None,
    shortlist: bool = False,
    workers: int | None = None,
) -> list[float]:
    """Seconds of ``decode_sequences`` over the pre-encoded lines, one per run; ``shortlist``
    searches each sentence over its shortlist candidates, as ``translate --shortlist`` does,
    and ``workers`` batches side by side, as ``translate --workers``."""
    loaded = load_model(model_dir)
    overrides = SearchOverrides(beam=beam)
    strategy = build_strategy(resolve_search(loaded.config.search.strategy, overrides, nbest=1))
    if shortlist:
        from nmtkit.shortlist.builder import open_shortlist
        from nmtkit.shortlist.restricted import ShortlistSearch

        strategy = ShortlistSearch(strategy, open_shortlist(loaded))
    search = loaded.config.search
    options = {}
    if "precision" in inspect.signature(decode_sequences).parameters:  # nmtkit after 731c3c2
        from nmtkit.runtime import resolve_precision, tune_allocator

        tune_allocator()
        options["precision"] = resolve_precision(precision or search.precision)
        try:  # nmtkit with packed16: the search's auto and weights, as Translator
            from nmtkit.models.inference_weights import prepare_weights
            from nmtkit.runtime import resolve_search_precision

            options["precision"] = resolve_search_precision(precision or search.precision)
            prepare_weights(loaded.model, options["precision"])
        except ImportError:
            with contextlib.suppress(ImportError):  # nmtkit since 2026-12-05
                from nmtkit.models.autocast_weights import cast_linear_weights
                from nmtkit.runtime import DTYPES

                if options["precision"] in DTYPES:
                    cast_linear_weights(loaded.model, DTYPES[options["precision"]])
    if "workers" in inspect.signature(decode_sequences).parameters:  # nmtkit since 2026-12-06
        from nmtkit.search.side_by_side import default_workers

        # None: translate's default, so that decode-only measures what the whole command runs.
        options["workers"] = default_workers(torch.device("cpu")) if workers is None else workers
    ids = [loaded.src_text.encode(line) for line in lines]
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        decode_sequences(
            loaded.model,
            ids,
            strategy,
            batch_size=search.batch_size,
            max_len_a=search.max_len_a,
            max_len_b=search.max_len_b,
            **options,
        )
        seconds.append(time.perf_counter() - start)
    return seconds


def shortlist_flags(shortlist: str | None) -> list[str]:
    """``translate``'s flag for ``--shortlist on|off``; none leaves its default."""
    return {"on": ["--shortlist"], "off": ["--no-shortlist"]}.get(shortlist or "", [])


def translate(
    model_dir: Path,
    src: Path,
    ref: Path,
    out: Path,
    *,
    runs: int,
    precision: str | None,
    shortlist: str | None = None,
    workers: int | None = None,
) -> dict:
    lines = src.read_text("utf-8").splitlines()
    results: dict[str, Any] = {"sentences": len(lines)}
    for mode, flags in (("beam5", ["--beam", "5"]), ("greedy", ["--greedy"])):
        hyp = out / f"test.{mode}.hyp"
        command = ["nmtkit", "translate", "-m", str(model_dir), "-i", str(src), "-q", *flags]
        if precision:
            command += ["--precision", precision]
        command += shortlist_flags(shortlist)
        if workers is not None:
            command += ["--workers", str(workers)]
        walls = [timed(command, stdout=hyp)["wall_s"] for _ in range(runs)]
        beam = 5 if mode == "beam5" else 1
        decode = decode_only(
            model_dir,
            lines,
            beam=beam,
            runs=runs,
            precision=precision,
            shortlist=shortlist == "on",
            workers=workers,
        )
        wall, dec = statistics.median(walls), statistics.median(decode)
        results[mode] = {
            "whole_s": round(wall, 2),
            "whole_sent_per_s": round(len(lines) / wall, 1),
            "whole_runs_s": [round(w, 2) for w in walls],
            "decode_s": round(dec, 2),
            "decode_sent_per_s": round(len(lines) / dec, 1),
            "decode_runs_s": [round(d, 2) for d in decode],
            "bleu": bleu(hyp, ref),
        }
        log(f"translate {mode}: {results[mode]}")
    return results


def streaming(model_dir: Path, src: Path, out: Path, lines: int) -> dict:
    """Peak RSS of greedy translation of ``lines`` and 8 x ``lines`` input lines."""
    text = src.read_text("utf-8").splitlines()
    peaks = {}
    for n in (lines, 8 * lines):
        big = out / f"stream.{n}.txt"
        with open(big, "w", encoding="utf-8") as stream:
            for i in range(n):
                stream.write(text[i % len(text)] + "\n")
        run = timed(["nmtkit", "translate", "-m", str(model_dir), "-i", str(big), "-q",
                     "--greedy"], stdout=out / "stream.hyp")  # fmt: skip
        peaks[str(n)] = {"peak_rss_mib": round(run["peak_rss_mib"]), "wall_s": round(run["wall_s"])}
        big.unlink()
    return peaks


def latency(
    model_dir: Path,
    lines: list[str],
    *,
    precision: str | None,
    words: int = 10,
    shortlist: str | None = None,
) -> dict:
    """One sentence at a time, as ``serve`` decodes for one client, in this (warm) process:
    milliseconds per ``words``-word test sentence, ``translate_chunk`` from raw text to text
    (p50, p90), beam 5 and greedy; ten sentences first to warm up, then 50."""
    from nmtkit.search.overrides import SearchOverrides
    from nmtkit.translation.loading import open_translator

    chosen = [line for line in lines if len(line.split()) == words][:60]
    found: dict[str, Any] = {"words": words, "sentences": len(chosen) - 10}
    for mode, search in (
        ("beam5", SearchOverrides(beam=5)),
        ("greedy", SearchOverrides(greedy=True)),
    ):
        options = {} if shortlist is None else {"shortlist": shortlist == "on"}
        translator = open_translator(model_dir, search=search, precision=precision, **options)
        for line in chosen[:10]:
            translator.translate_chunk([line])
        times = []
        for line in chosen[10:]:
            start = time.perf_counter()
            translator.translate_chunk([line])
            times.append(1000 * (time.perf_counter() - start))
        times.sort()
        found[mode] = {
            "p50_ms": round(statistics.median(times), 1),
            "p90_ms": round(times[int(0.9 * len(times))], 1),
        }
    log(f"latency ({words}-word sentences, one at a time): {found}")
    return found


# ---------------------------------------------------------------------------------- report


def report(result: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="nmtkit speed, this machine")
    table.add_column("measure")
    table.add_column("value", justify="right")
    roof = result.get("roofline")
    if roof:
        table.add_row("matmul peak fp32 / bf16 (GFLOP/s)",
                      f"{roof['fp32_gflops']} / {roof['bf16_gflops']}")  # fmt: skip
    tr = result.get("train")
    if tr:
        table.add_row("train target tok/s (median window)", f"{tr['tok_per_s']:.0f}")
        table.add_row("train peak RSS (MiB)", f"{tr['peak_rss_mib']:.0f}")
    if tr and roof and "flops_per_token" in result:
        achieved = result["flops_per_token"] * tr["tok_per_s"] / 1e9
        table.add_row("train GFLOP/token (fwd+bwd)", f"{result['flops_per_token'] / 1e9:.3f}")
        # Without a bf16 fast path (an AVX2 CPU) bf16 products are emulated, far below fp32,
        # and training runs in fp32: a share of that peak would mean nothing.
        native_bf16 = roof["bf16_gflops"] >= roof["fp32_gflops"]
        bf16_share = "– (emulated)"
        if native_bf16:
            bf16_share = f"{100 * achieved / roof['bf16_gflops']:.0f} %"
        table.add_row(
            "train achieved GFLOP/s; % of fp32, bf16 peak",
            f"{achieved:.1f}; {100 * achieved / roof['fp32_gflops']:.0f} %, {bf16_share}",
        )
    for mode in ("beam5", "greedy"):
        tl = result.get("translate", {}).get(mode)
        if tl:
            table.add_row(f"translate {mode}: whole command sent/s", f"{tl['whole_sent_per_s']}")
            table.add_row(f"translate {mode}: decode only sent/s", f"{tl['decode_sent_per_s']}")
            table.add_row(f"translate {mode}: BLEU", f"{tl['bleu']}")
    lat = result.get("latency")
    if lat:
        for mode in ("beam5", "greedy"):
            table.add_row(f"one {lat['words']}-word sentence, {mode}: p50 / p90 ms",
                          f"{lat[mode]['p50_ms']} / {lat[mode]['p90_ms']}")  # fmt: skip
    for n, peak in result.get("streaming", {}).items():
        table.add_row(f"translate --greedy, {n} lines: peak RSS (MiB)", f"{peak['peak_rss_mib']}")
    Console(stderr=True).print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="preprocessed en-de data dir")
    parser.add_argument("--test", type=Path, required=True, help="raw test source (.gz ok)")
    parser.add_argument("--ref", type=Path, required=True, help="raw test reference (.gz ok)")
    parser.add_argument("--out", type=Path, default=Path("bench-out/speed"))
    parser.add_argument("--model", type=Path, help="trained model dir for translation "
                        "(default: the one this run trains, which is barely trained)")  # fmt: skip
    parser.add_argument("--updates", type=int, default=400)
    parser.add_argument("--minutes", type=float, help="train for this long instead of --updates")
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--stream-lines", type=int, default=1000, help="0 skips streaming")
    parser.add_argument("--set", dest="sets", action="append", default=[],
                        help="config override for training, e.g. train.threads=1")  # fmt: skip
    parser.add_argument("--precision", help="translate --precision (default: the model's)")
    parser.add_argument("--shortlist", choices=("on", "off"),
                        help="translate with or without the model's shortlist "
                        "(default: off, as translate)")  # fmt: skip
    parser.add_argument("--workers", type=int,
                        help="translate --workers (default: translate's)")  # fmt: skip
    parser.add_argument("--parts", default="roofline,train,translate,latency,stream")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    args.out.mkdir(parents=True, exist_ok=True)
    src, ref = args.out / "test.src", args.out / "test.ref"
    for raw, plain in ((args.test, src), (args.ref, ref)):
        opener = gzip.open if raw.suffix == ".gz" else open
        with opener(raw, "rt", encoding="utf-8") as stream:
            plain.write_text(stream.read(), "utf-8")

    result: dict[str, Any] = {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "overrides": args.sets,
        "precision": args.precision,
        "shortlist": args.shortlist,
        "workers": args.workers,
    }
    if "roofline" in parts:
        result["roofline"] = roofline()
        log(f"roofline: {result['roofline']}")
    if "train" in parts:
        result["flops_per_token"] = flops_per_target_token(args.data, args.sets)
        log(f"FLOPs per target token: {result['flops_per_token'] / 1e9:.3f} G")
        result["train"] = train(
            args.data,
            args.out / "model",
            updates=args.updates,
            minutes=args.minutes,
            warmup=args.warmup,
            sets=args.sets,
        )
        log(f"train: {result['train']}")
    model = args.model or args.out / "model"
    if "translate" in parts:
        result["model"] = str(model)
        result["translate"] = translate(model, src, ref, args.out, runs=args.runs,
                                        precision=args.precision,
                                        shortlist=args.shortlist,
                                        workers=args.workers)  # fmt: skip
    if "latency" in parts:
        lines = src.read_text("utf-8").splitlines()
        result["latency"] = latency(model, lines, precision=args.precision,
                                    shortlist=args.shortlist)  # fmt: skip
    if "stream" in parts and args.stream_lines > 0:
        result["streaming"] = streaming(model, src, args.out, args.stream_lines)
        log(f"streaming: {result['streaming']}")
    (args.out / "speed.json").write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    report(result)
    log(f"wrote {args.out / 'speed.json'}")


if __name__ == "__main__":
    main()
