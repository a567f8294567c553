"""Serving benchmark: ``nmtkit serve`` under 1, 8 and 32 concurrent clients beside
``nmtkit translate`` on the same sentences.

Run through ``benchmarks/serve.sh`` (``make bench-serve``), which finds Multi30k and the model.
For each number of clients a fresh server starts on 127.0.0.1 (any free port), answers a few
warm-up requests, and then the clients send the test sentences one per request, each client
taking the next sentence as soon as its answer comes, until every sentence is sent or the time
limit passes. Measured per level:

* sentences/s: sentences answered / wall seconds from the first request to the last answer;
* p50 and p95 latency: of one request, from sending to the whole answer;
* mean batch: sentences per decoded batch (the server's /health counters);
* peak RSS: the server process's VmHWM (its peak resident memory since it started);
* same as translate: how many answers equal ``nmtkit translate``'s line for that sentence.

``nmtkit translate`` translates the same sentences as one file: the whole command, and the whole
command less the start-up (the same command on empty input), each with its peak RSS.

Output: ``OUT/serve.md`` (a markdown table) and ``OUT/serve.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

START_TIMEOUT = 180.0  # seconds for a server to load its model and answer /health
REQUEST_TIMEOUT = 120.0  # seconds for one answer
STOP_TIMEOUT = 120.0  # seconds for a server to drain and exit after SIGTERM
MIN_DECODE_S = 1.0  # translate's time beyond its start-up below which no speed is reported
URL = re.compile(r"serving .* on (http://[^\s]+) \(API docs")


def log(message: str) -> None:
    print(f"[serve] {message}", file=sys.stderr, flush=True)


def read_lines(path: Path, limit: int) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", newline="\n") as stream:
        lines = [line.rstrip("\n") for line in stream]
    return lines[:limit]


# ------------------------------------------------------------------------------- translate


def timed(command: list[str], *, stdin: Path, stdout: Path) -> dict[str, float]:
    """Run ``command`` under /usr/bin/time -v: wall seconds and peak RSS in MiB."""
    start = time.perf_counter()
    with open(stdin, "rb") as inp, open(stdout, "wb") as out:
        proc = subprocess.run(
            ["/usr/bin/time", "-v", *command], stdin=inp, stdout=out, stderr=subprocess.PIPE
        )
    wall = time.perf_counter() - start
    report = proc.stderr.decode("utf-8", "replace")
    if proc.returncode != 0:
        raise SystemExit(f"[serve] failed ({proc.returncode}): {' '.join(command)}\n{report}")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", report)
    return {"wall_s": wall, "peak_rss_mib": int(rss.group(1)) / 1024 if rss else float("nan")}


def translate(model: Path, src: Path, out: Path, threads: list[str]) -> dict[str, Any]:
    """The whole ``nmtkit translate`` command over ``src``, and its start-up alone."""
    command = ["nmtkit", "translate", "-m", str(model), "-q", *threads]
    empty = out / "empty.txt"
    empty.write_text("", "utf-8")
    startup = timed(command, stdin=empty, stdout=out / "empty.hyp")
    whole = timed(command, stdin=src, stdout=out / "translate.hyp")
    num = len(src.read_text("utf-8").splitlines())
    decode_s = whole["wall_s"] - startup["wall_s"]
    return {
        "sentences": num,
        "whole_s": round(whole["wall_s"], 2),
        "startup_s": round(startup["wall_s"], 2),
        "whole_sent_per_s": round(num / whole["wall_s"], 1),
        # None when the translation takes too little beside the start-up to tell them apart
        "sent_per_s": round(num / decode_s, 1) if decode_s > MIN_DECODE_S else None,
        "peak_rss_mib": round(whole["peak_rss_mib"]),
    }


# ---------------------------------------------------------------------------------- server


def start_server(model: Path, out: Path, flags: list[str]) -> tuple[subprocess.Popen, str]:
    err = out / "server.err"
    with open(err, "wb") as stream:
        proc = subprocess.Popen(
            ["nmtkit", "serve", "-m", str(model), "--port", "0", *flags],
            stdout=subprocess.DEVNULL,
            stderr=stream,
        )
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"[serve] the server exited:\n{err.read_text('utf-8')}")
        found = URL.findall(err.read_text("utf-8"))
        if found and answers(found[0]):
            return proc, found[0]
        time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"[serve] no server after {START_TIMEOUT} s:\n{err.read_text('utf-8')}")


def answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=5).status_code == 200
    except httpx.TransportError:
        return False


def peak_rss_mib(pid: int) -> float:
    """VmHWM of a live process: its peak resident memory since it started."""
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmHWM:\s+(\d+) kB", status)
    return int(found.group(1)) / 1024 if found else float("nan")


def stop_server(proc: subprocess.Popen) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(STOP_TIMEOUT)
        return -9


# ---------------------------------------------------------------------------------- clients


async def run_clients(
    url: str, lines: list[str], *, clients: int, time_limit: float
) -> tuple[dict[int, str], list[float], float]:
    """``clients`` concurrent clients, one sentence a request, until every line is sent or
    ``time_limit`` seconds pass: the answers by line, the latencies (s) and the wall seconds."""
    answers: dict[int, str] = {}
    latencies: list[float] = []
    next_line = iter(range(len(lines)))
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT, limits=limits) as http:
        start = time.perf_counter()
        deadline = start + time_limit

        async def client() -> None:
            for i in next_line:  # the shared iterator hands each line to one client
                if time.perf_counter() > deadline:
                    return
                sent = time.perf_counter()
                response = await http.post(f"{url}/translate", json={"text": lines[i]})
                response.raise_for_status()
                latencies.append(time.perf_counter() - sent)
                answers[i] = response.json()["translations"][0]["text"]

        await asyncio.gather(*(client() for _ in range(clients)))
        wall = time.perf_counter() - start
    return answers, latencies, wall


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def serve_level(
    model: Path,
    lines: list[str],
    reference: list[str],
    out: Path,
    *,
    clients: int,
    flags: list[str],
    warmup: int,
    time_limit: float,
) -> dict[str, Any]:
    """One fresh server under ``clients`` concurrent clients."""
    proc, url = start_server(model, out, flags)
    try:
        for line in lines[:warmup]:
            httpx.post(f"{url}/translate", json={"text": line}, timeout=REQUEST_TIMEOUT)
        before = httpx.get(f"{url}/health", timeout=REQUEST_TIMEOUT).json()
        found, latencies, wall = asyncio.run(
            run_clients(url, lines, clients=clients, time_limit=time_limit)
        )
        after = httpx.get(f"{url}/health", timeout=REQUEST_TIMEOUT).json()
        rss = peak_rss_mib(proc.pid)
    finally:
        exit_code = stop_server(proc)
    batches = after["batches"] - before["batches"]
    same = sum(found[i] == reference[i] for i in found)
    return {
        "clients": clients,
        "sentences": len(found),
        "wall_s": round(wall, 2),
        "sent_per_s": round(len(found) / wall, 1),
        "p50_ms": round(1000 * percentile(latencies, 0.50), 1),
        "p95_ms": round(1000 * percentile(latencies, 0.95), 1),
        "mean_batch": round((after["sentences"] - before["sentences"]) / max(batches, 1), 1),
        "peak_rss_mib": round(rss),
        "same_as_translate": same,
        "exit_code": exit_code,
    }


# ---------------------------------------------------------------------------------- report


def table(result: dict[str, Any]) -> str:
    rows = [
        "| run | sentences | sentences/s | p50 latency (ms) | p95 latency (ms) | mean batch "
        "| peak RSS (MiB) | same as translate |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    tr = result["translate"]
    rows.append(
        f"| translate, whole command | {tr['sentences']} | {tr['whole_sent_per_s']} | – | – "
        f"| – | {tr['peak_rss_mib']} | – |"
    )
    rows.append(
        f"| translate, less start-up ({tr['startup_s']} s) | {tr['sentences']} "
        f"| {tr['sent_per_s'] or '(too few sentences)'} | – | – | – | – | – |"
    )
    for level in result["serve"]:
        rows.append(
            f"| serve, {level['clients']} client(s) | {level['sentences']} "
            f"| {level['sent_per_s']} | {level['p50_ms']} | {level['p95_ms']} "
            f"| {level['mean_batch']} | {level['peak_rss_mib']} "
            f"| {level['same_as_translate']}/{level['sentences']} |"
        )
    return "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="trained model dir")
    parser.add_argument("--test", type=Path, required=True, help="raw source sentences (.gz ok)")
    parser.add_argument("--out", type=Path, default=Path("bench-out/serve"))
    parser.add_argument("--clients", default="1,8,32", help="concurrent clients per level")
    parser.add_argument("--sentences", type=int, default=1000, help="the first N sentences")
    parser.add_argument("--time-limit", type=float, default=300, help="seconds per level")
    parser.add_argument("--warmup", type=int, default=5, help="requests before measuring")
    parser.add_argument("--threads", type=int, help="torch threads of translate and serve")
    parser.add_argument(
        "--serve-flag",
        action="append",
        default=[],
        help="an extra serve option, e.g. --serve-flag=--batch-wait-ms=10",
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    args.threads = ["--threads", str(args.threads)] if args.threads else []
    lines = read_lines(args.test, args.sentences)
    src = args.out / "test.src"
    src.write_text("".join(f"{line}\n" for line in lines), "utf-8")

    result: dict[str, Any] = {"model": str(args.model), "serve_flags": args.serve_flag}
    result["translate"] = translate(args.model, src, args.out, args.threads)
    log(f"translate: {result['translate']}")
    reference = (args.out / "translate.hyp").read_text("utf-8").splitlines()
    result["serve"] = []
    for clients in (int(n) for n in args.clients.split(",")):
        found = serve_level(
            args.model,
            lines,
            reference,
            args.out,
            clients=clients,
            flags=[*args.threads, *args.serve_flag],
            warmup=args.warmup,
            time_limit=args.time_limit,
        )
        log(f"serve, {clients} clients: {found}")
        result["serve"].append(found)
    (args.out / "serve.json").write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    markdown = table(result)
    (args.out / "serve.md").write_text(markdown, "utf-8")
    sys.stdout.write(markdown)
    log(f"wrote {args.out / 'serve.md'} and {args.out / 'serve.json'} (cores: {os.cpu_count()})")


if __name__ == "__main__":
    main()
