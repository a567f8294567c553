"""Checkpoint averaging (``nmtkit average``): the mean of the parameters of checkpoints of one
model, as fairseq's ``scripts/average_checkpoints.py`` computes it.

Floating-point tensors are summed in float64 and cast back to their own dtype; any other tensor
(an integer buffer) is taken from the last checkpoint. Every checkpoint must have the model
config, the vocabulary and the tensor shapes of the first.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from nmtkit import checkpoint as ckpt
from nmtkit.config import dump_yaml
from nmtkit.errors import CheckpointError, ConfigError, DataError
from nmtkit.outputs import atomic_write, check_writable, check_writable_dir
from nmtkit.shortlist.table import Shortlist

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True, slots=True)
class AverageResult:
    """What :func:`average_checkpoints` wrote: the checkpoint file, the updates of the
    checkpoints it averages, in the order given, and the shortlist it carried into the output
    model directory (None when it wrote none)."""

    path: Path
    steps: tuple[int, ...]
    shortlist: Path | None = None


def last_checkpoints(model_dir: Path, num: int) -> list[Path]:
    """The ``num`` kept checkpoints of ``model_dir`` with the highest updates, oldest first
    (``checkpoint_<update>.pt``, written by training with ``train.keep_last``).

    Raises:
        ConfigError: ``num`` below 1.
        CheckpointError: ``model_dir`` is not a folder or keeps fewer than ``num``.
    """
    if num < 1:
        raise ConfigError(f"--last must be at least 1, got {num}")
    if not model_dir.is_dir():
        raise CheckpointError(
            "--last takes a model directory, and this is not a folder", where=str(model_dir)
        )
    kept = ckpt.kept_checkpoints(model_dir)
    if len(kept) < num:
        raise CheckpointError(
            f"keeps {len(kept)} checkpoint_<update>.pt, fewer than --last {num}",
            where=str(model_dir),
            hint=f"train with --set train.keep_last={num} or more",
        )
    return [path for _, path in kept[-num:]]


def output_checkpoint(output: Path) -> Path:
    """The file that ``-o OUTPUT`` means, as ``-m`` reads it back: a ``.pt`` path or an
    existing file is that file; anything else is a model directory and means its ``best.pt``."""
    if output.is_file() or (output.suffix == ".pt" and not output.is_dir()):
        return output
    return output / ckpt.BEST


def _check_output(output: Path, target: Path, *, overwrite: bool) -> None:
    """Refuse to replace a checkpoint, or to write into a training run's directory, without
    ``overwrite``; check that ``output`` can be written.

    Raises:
        CheckpointError: ``target`` exists, or the directory ``output`` holds model files.
        DataError: ``output`` cannot be written.
    """
    in_dir = target != output
    held = ckpt.held_model_files(output) if in_dir and output.is_dir() else []
    if not overwrite and (target.exists() or held):
        if held:
            raise CheckpointError(
                f"holds a model: {', '.join(held)}",
                where=str(output),
                hint=f"write elsewhere, or --overwrite to replace its {ckpt.BEST}",
            )
        raise CheckpointError("already exists", where=str(target), hint="--overwrite to replace it")
    check_writable(target if not in_dir or output.is_dir() else output)


def average_checkpoints(
    paths: Sequence[str | Path], output: str | Path, *, overwrite: bool = False
) -> AverageResult:
    """Average the parameters of the checkpoints ``paths`` (a model directory means its
    ``best.pt``) into ``output``: a checkpoint file, or a model directory that gets ``best.pt``
    and ``config.yaml`` (:func:`output_checkpoint`). The result has the last checkpoint's config
    and update, and records the checkpoints it averages (``averaged_from``).

    Raises:
        ConfigError: no checkpoint, or one given twice.
        CheckpointError: a checkpoint that does not load, or whose model config, vocabulary or
            tensor shapes differ from the first's (naming it); ``output`` exists and
            ``overwrite`` is not set.
        DataError: ``output`` cannot be written.
    """
    files = _resolve_inputs(paths)
    output = Path(output)
    target = output_checkpoint(output)
    _check_output(output, target, overwrite=overwrite)  # before the checkpoints load
    first = ckpt.load_model(files[0])
    sums = {name: _zero_sum(tensor) for name, tensor in first.model.state_dict().items()}
    last, steps = first, []
    for path in files:
        loaded = first if path == files[0] else ckpt.load_model(path)
        _check_same_model(loaded, first)
        for name, tensor in loaded.model.state_dict().items():
            sums[name] = _add(sums[name], tensor)
        steps.append(loaded.step)
        last = loaded
    state = last.model.state_dict()
    averaged = {name: _mean(sums[name], state[name], len(files)) for name in state}
    last.model.load_state_dict(averaged)
    if target != output:
        check_writable_dir(output)  # makes the model directory
    ckpt.save_checkpoint(
        target,
        model=last.model,
        config=last.config,
        vocab=last.vocab,
        step=last.step,
        bleu=None,
        averaged_from=[
            {"path": str(path), "step": step} for path, step in zip(files, steps, strict=True)
        ],
    )
    shortlist = None
    if target != output:
        with atomic_write(output / ckpt.CONFIG) as stream:
            stream.write(dump_yaml(last.config))
        shortlist = _carry_shortlist(files, output, fingerprint=last.vocab.fingerprint)
    log.info("averaged %d checkpoints (updates %s) into %s", len(files), _steps(steps), target)
    return AverageResult(path=target, steps=tuple(steps), shortlist=shortlist)


def _carry_shortlist(files: Sequence[Path], output: Path, *, fingerprint: str) -> Path | None:
    """Write the vocabulary shortlist of the averaged checkpoints' model directory (the last
    one's first) into ``output``, checked against the vocabulary ``fingerprint``, and return
    where it is (``output`` that is their directory keeps its own); None when none of their
    directories holds a usable one (a warning says why for a damaged or foreign one)."""
    destination = output / ckpt.SHORTLIST
    for folder in dict.fromkeys(path.parent for path in reversed(files)):
        source = folder / ckpt.SHORTLIST
        if not source.is_file():
            continue
        if source.resolve() == destination.resolve():
            return destination
        try:
            Shortlist.load(source, fingerprint=fingerprint).save(destination)
        except DataError as exc:
            log.warning("%s not carried into %s: %s", ckpt.SHORTLIST, output, exc)
            continue
        log.info("carried %s into %s (for translate --shortlist)", source, output)
        return destination
    return None


def _resolve_inputs(paths: Sequence[str | Path]) -> list[Path]:
    if not paths:
        raise ConfigError(
            "no checkpoint to average", hint="give checkpoints, or MODEL_DIR --last N"
        )
    files: list[Path] = []
    for path in paths:
        resolved = ckpt.resolve_checkpoint(path)
        if any(resolved.resolve() == seen.resolve() for seen in files):
            raise ConfigError(f"{resolved} is given twice", hint="give each checkpoint once")
        files.append(resolved)
    return files


def _check_same_model(loaded: ckpt.LoadedModel, first: ckpt.LoadedModel) -> None:
    """Raise CheckpointError naming ``loaded`` unless it is a checkpoint of ``first``'s model."""
    where, other = str(loaded.path), first.path
    difference = _first_difference(
        first.config.to_dict()["model"], loaded.config.to_dict()["model"], "model"
    )
    if difference is not None:
        raise CheckpointError(
            f"another model than {other}: {difference}",
            where=where,
            hint="average checkpoints of one model",
        )
    if (loaded.vocab.src_lang, loaded.vocab.tgt_lang, loaded.vocab.fingerprint) != (
        first.vocab.src_lang,
        first.vocab.tgt_lang,
        first.vocab.fingerprint,
    ):
        raise CheckpointError(
            f"another vocabulary than {other}",
            where=where,
            hint="average checkpoints of models trained on one data directory",
        )
    mine, theirs = loaded.model.state_dict(), first.model.state_dict()
    for name, tensor in theirs.items():
        if mine[name].shape != tensor.shape or mine[name].dtype != tensor.dtype:
            raise CheckpointError(
                f"its {name} is {mine[name].dtype} {tuple(mine[name].shape)}, "
                f"{other}'s {tensor.dtype} {tuple(tensor.shape)}",
                where=where,
                hint="average checkpoints of one model",
            )


def _first_difference(a: Any, b: Any, key: str) -> str | None:
    """The first dotted key where plain configs ``a`` and ``b`` differ, with both values."""
    if isinstance(a, dict) and isinstance(b, dict):
        for name in sorted(set(a) | set(b)):
            found = _first_difference(a.get(name), b.get(name), f"{key}.{name}")
            if found is not None:
                return found
        return None
    return None if a == b else f"{key} is {b!r}, not {a!r}"


def _zero_sum(tensor: torch.Tensor) -> torch.Tensor | None:
    """The running sum of a floating-point tensor, in float64; None for any other tensor."""
    return torch.zeros_like(tensor, dtype=torch.float64) if tensor.is_floating_point() else None


def _add(total: torch.Tensor | None, tensor: torch.Tensor) -> torch.Tensor | None:
    return None if total is None else total.add_(tensor.to(torch.float64))


def _mean(total: torch.Tensor | None, last: torch.Tensor, count: int) -> torch.Tensor:
    """The mean, cast back to the tensor's dtype; the last checkpoint's for a non-float one."""
    return last.clone() if total is None else (total / count).to(last.dtype)


def _steps(steps: Sequence[int]) -> str:
    return ", ".join(str(step) for step in steps)
