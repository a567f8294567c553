"""The GPU check's training checks: bf16 and fp16, pinned batches, resume, and speed."""

from __future__ import annotations

import json
import math
import re
import statistics
import time
from pathlib import Path
from typing import Any

from gpu_check_run import DETERMINISTIC, PIN_SPY, Failed, Run, Skipped


def records(model_dir: Path, kind: str) -> list[dict[str, Any]]:
    lines = (model_dir / "metrics.jsonl").read_text("utf-8").splitlines()
    return [r for r in map(json.loads, lines) if r.get("kind") == kind]


def train_args(run: Run, model_dir: Path, *, device: str, updates: int) -> list[str]:
    sizes = run.sizes
    args = [
        "train",
        str(run.data),
        "-o",
        str(model_dir),
        "--preset",
        sizes.preset,
        "--device",
        device,
        "--max-updates",
        str(updates),
        "--overwrite",
        *run.threads(),
    ]
    for item in sizes.sets:
        args += ["--set", item]
    return args


def check_train(run: Run, precision: str) -> str:
    """Training on the device in ``precision``: loss falls, nothing is NaN, BLEU rises."""
    import torch

    sizes, name = run.sizes, f"train-{precision}"
    model_dir = run.out / name
    args = train_args(run, model_dir, device=run.device, updates=sizes.updates)
    args += [
        "--set",
        f"train.precision={precision}",
        "--set",
        f"train.log_every={sizes.log_every}",
        "--set",
        f"train.validate_every={sizes.validate_every}",
    ]
    started = time.monotonic()
    result = run.nmtkit(name, args)
    seconds = time.monotonic() - started
    scaling = " with loss scaling" if precision == "fp16" else ""
    if f"precision: train {precision}{scaling}," not in result.stderr:
        raise Failed(f"its log does not say 'precision: train {precision}{scaling}'")
    train, valid = records(model_dir, "train"), records(model_dir, "valid")
    losses = [r["loss"] for r in train]
    if not all(math.isfinite(x) for x in losses + [r["val_loss"] for r in valid]):
        raise Failed(f"a loss is not finite: {losses}")
    if len(losses) < 2 or losses[-1] >= losses[0]:
        raise Failed(f"the training loss did not fall: {losses}")
    bleus = [(r["step"], r["val_bleu"]) for r in valid]
    if len(bleus) < 2 or bleus[-1][1] <= bleus[0][1]:
        raise Failed(f"validation BLEU did not rise: {bleus}")
    weights = torch.load(model_dir / "last.pt", map_location="cpu", weights_only=True)["model"]
    if not all(torch.isfinite(w).all() for w in weights.values() if w.is_floating_point()):
        raise Failed("last.pt holds a weight that is not finite")
    detail = ""
    if precision == "fp16":
        state = torch.load(model_dir / "train_state.pt", map_location="cpu", weights_only=True)
        scale = state.get("scaler", {}).get("scale")
        if not scale or not math.isfinite(scale):
            raise Failed(f"train_state.pt holds no usable loss scale: {state.get('scaler')}")
        detail = f", loss scale {scale:g} saved"
    run.models[name] = model_dir
    run.speeds[precision] = statistics.median([r["tok_s"] for r in train[1:]])  # after warm-up
    return (
        f"{sizes.updates} updates in {seconds:.0f} s, loss {losses[0]:.2f} -> {losses[-1]:.2f}, "
        f"val BLEU {bleus[0][1]:.2f} -> {bleus[-1][1]:.2f} (steps {bleus[0][0]} -> "
        f"{bleus[-1][0]}){detail}"
    )


def check_pinned(run: Run) -> str:
    """Every training batch goes to the GPU from pinned memory, copied asynchronously."""
    spy, updates = run.out / "pin-spy.json", 3
    args = train_args(run, run.out / "pinned", device=run.device, updates=updates)
    run.nmtkit("pinned-batches", args, prelude=PIN_SPY, env={"GPU_CHECK_SPY": str(spy)})
    seen = json.loads(spy.read_text("utf-8"))
    pinned_copies = [to for to in seen["to"] if to[1] and to[2]]
    other = len(seen["to"]) - len(pinned_copies)
    if run.dry:  # the spy's plumbing, proved where nothing is pinned
        if seen["pinned"] or pinned_copies:
            raise Failed(f"{seen['pinned']} batches pinned on the CPU")
        raise Skipped(
            f"pinning needs CUDA (dry run: the spy saw {seen['pinned']} batches pinned and "
            f"{other} copies from ordinary memory in {updates} updates on the CPU)"
        )
    if seen["pinned"] < updates or len(pinned_copies) != seen["pinned"]:
        raise Failed(
            f"{seen['pinned']} batches pinned, {len(pinned_copies)} copied from pinned memory "
            f"with non_blocking=True, for {updates} updates"
        )
    if any(not device.startswith("cuda") for device, _, _ in pinned_copies):
        raise Failed(f"a pinned batch went elsewhere than the GPU: {pinned_copies}")
    return (
        f"{len(pinned_copies)} training batches pinned and copied non-blocking for {updates} "
        f"updates; {other} other copies (validation) from ordinary memory"
    )


def final_weights(model_dir: Path) -> dict[str, Any]:
    import torch

    return torch.load(model_dir / "last.pt", map_location="cpu", weights_only=True)["model"]


def max_difference(a: dict[str, Any], b: dict[str, Any]) -> float:
    return max(float((a[k].double() - b[k].double()).abs().max()) for k in a if a[k].numel())


def train_resumable(
    run: Run, name: str, precision: str, *, deterministic: bool, split: bool
) -> Path:
    """2 x resume_half updates on the device, at once or stopped halfway and resumed."""
    half = run.sizes.resume_half
    model_dir = run.out / "resume" / name
    sets = [
        "--set",
        f"train.precision={precision}",
        "--set",
        "train.log_every=1",
        "--set",
        f"train.validate_every={half}",
    ]
    prelude = DETERMINISTIC if deterministic else ""
    env = {"CUBLAS_WORKSPACE_CONFIG": ":4096:8"} if deterministic else None
    steps = [half, 2 * half] if split else [2 * half]
    for i, updates in enumerate(steps):
        args = train_args(run, model_dir, device=run.device, updates=updates) + sets
        if i:
            args = [a for a in args if a != "--overwrite"] + ["--resume"]
        run.nmtkit(f"resume-{name}-{i}", args, prelude=prelude, env=env)
    return model_dir


def check_resume_exact(run: Run, precision: str) -> str:
    """Stopped and resumed equals uninterrupted, bit for bit, with deterministic algorithms."""
    whole = train_resumable(run, f"whole-{precision}", precision, deterministic=True, split=False)
    split = train_resumable(run, f"split-{precision}", precision, deterministic=True, split=True)
    a, b = final_weights(whole), final_weights(split)
    differ = [k for k in a if not (a[k] == b[k]).all()]
    losses = [{r["step"]: r["loss"] for r in records(d, "train")} for d in (whole, split)]
    if differ:
        raise Failed(
            f"{len(differ)} of {len(a)} tensors differ (max {max_difference(a, b):.3g}), e.g. "
            f"{differ[0]}; nondeterministic ops: {nondeterministic_ops(run)}"
        )
    if losses[0] != losses[1]:
        raise Failed(f"the logged losses differ: {losses[0]} against {losses[1]}")
    half = run.sizes.resume_half
    return (
        f"{half} + {half} updates equal {2 * half} bit for bit (weights and losses), under "
        "torch.use_deterministic_algorithms and CUBLAS_WORKSPACE_CONFIG=:4096:8"
    )


def nondeterministic_ops(run: Run) -> str:
    found = set()
    for log in (run.out / "logs").glob("resume-*.log"):
        found |= set(re.findall(r"(\w+) does not have a deterministic", log.read_text("utf-8")))
    return ", ".join(sorted(found)) or "none reported"


def check_resume_default(run: Run) -> str:
    """Without deterministic algorithms a resume differs no more than two whole runs do."""
    runs = [
        train_resumable(run, name, "bf16", deterministic=False, split=split)
        for name, split in (("whole-a", False), ("whole-b", False), ("split", True))
    ]
    a, b, split = (final_weights(d) for d in runs)
    noise, resumed = max_difference(a, b), max_difference(a, split)
    if resumed > 10 * noise:  # no noise: bit for bit
        raise Failed(
            f"the resumed run ends {resumed:.3g} from the whole run (max over the weights), "
            f"two whole runs only {noise:.3g} apart"
        )
    kind = "bit for bit" if noise == 0 else "within run-to-run noise"
    return (
        f"bf16, default algorithms: resumed run {resumed:.3g} from the whole run, two whole runs "
        f"{noise:.3g} apart (max weight difference): {kind}"
    )


def check_speed(run: Run) -> str:
    """Training tok/s and beam-5 sent/s on the device beside the CPU's, same model."""
    from nmtkit.runtime import resolve_precision

    if not run.speeds:
        raise Failed("needs the training speed of train-bf16 or train-fp16, which both failed")
    sizes, model_dir = run.sizes, run.out / "speed-cpu"
    args = train_args(run, model_dir, device="cpu", updates=sizes.cpu_updates)
    args += [
        "--set",
        f"train.log_every={sizes.cpu_log_every}",
        "--set",
        "train.validate_every=1000000",
    ]
    run.nmtkit("speed-cpu", args)
    tok_s = [r["tok_s"] for r in records(model_dir, "train")][1:]  # the first holds the warm-up
    if not tok_s:
        raise Failed(f"the CPU run logged one window or none in {sizes.cpu_updates} updates")
    cpu_train = f"{statistics.median(tok_s):,.0f} ({resolve_precision('auto', 'cpu')})"
    dev_train = ", ".join(f"{rate:,.0f} ({precision})" for precision, rate in run.speeds.items())
    dev_beam = beam_speed(run, run.device, run.texts["test.en"][: sizes.gpu_lines])
    cpu_beam = beam_speed(run, "cpu", run.texts["test.en"][: sizes.cpu_lines])
    return (
        f"training tok/s {run.device} {dev_train} vs cpu {cpu_train} "
        f"({sizes.cpu_updates} updates); beam-5 sent/s {run.device} {dev_beam} vs cpu {cpu_beam}"
    )


def beam_speed(run: Run, device: str, lines: list[str]) -> str:
    """Sentences a second of beam-5 search of ``lines`` (model loaded and warmed up first)."""
    from nmtkit import open_translator
    from nmtkit.search.overrides import SearchOverrides

    translator = open_translator(
        run.model(),
        search=SearchOverrides(beam=5),
        device=device,
        precision="auto",
        threads=run.sizes.threads,
    )
    list(translator.translate(lines[:16]))
    start = time.perf_counter()
    done = len(list(translator.translate(lines)))
    rate = done / (time.perf_counter() - start)
    return f"{rate:,.1f} ({done} sentences, {translator.precision})"
