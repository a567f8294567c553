"""The model directory: ``config.yaml``, ``best.pt``, ``last.pt``, ``train_state.pt`` and, with
``train.keep_last``, the last checkpoints by update, ``checkpoint_<update>.pt``.

A checkpoint (``best.pt``/``last.pt``) holds everything translation needs and nothing but tensors
and builtin containers, so ``torch.load(..., weights_only=True)`` reads it: the resolved config,
the weights, both SentencePiece models (as uint8 tensors) and the text settings. Every file
written here carries a SHA-256 of its own contents, checked on load, so a damaged file is an
error instead of a model with wrong weights; ``train_state.prev.pt`` keeps the state before the
newest for a resume when the newest is damaged. ``shortlist.npz``, once ``nmtkit shortlist``
has built it, is the vocabulary shortlist of ``translate --shortlist``.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from nmtkit import __version__, registry
from nmtkit.config import Config, components, config_from_dict
from nmtkit.data.text import PAD_ID, TextPipeline, TextSettings
from nmtkit.errors import CheckpointError, ConfigError, NmtkitError, PluginError
from nmtkit.models import Seq2Seq
from nmtkit.outputs import atomic_write
from nmtkit.runtime import resolve_device

log = logging.getLogger(__name__)

FORMAT = "nmtkit-checkpoint"
FORMAT_VERSION = 1
BEST = "best.pt"
LAST = "last.pt"
TRAIN_STATE = "train_state.pt"
TRAIN_STATE_PREV = "train_state.prev.pt"  # the train state before the newest (see save_train_state)
MODEL_FILES = (BEST, LAST, TRAIN_STATE, TRAIN_STATE_PREV)  # what --overwrite alone may replace
DIGEST = "sha256"  # the payload key of a file's checksum (see payload_digest)
CONFIG = "config.yaml"
METRICS = "metrics.jsonl"
LOG = "train.log"
SHORTLIST = "shortlist.npz"  # the vocabulary shortlist of ``translate --shortlist``
KEPT_NAME = re.compile(r"checkpoint_(\d+)\.pt")  # checkpoint_<update>.pt (train.keep_last)
# Parameters renamed since checkpoints were first written, by decoder: old prefix -> new. Every
# model state read from a file goes through :func:`renamed_parameters`, so old files still load.
RENAMED_PARAMETERS: dict[str, dict[str, str]] = {
    "gru": {"decoder.readout_state.": "decoder.readout_hidden."},  # U_o
}
# The decoder of a saved config that names none: `gru`, the default when such files were
# written (the default is `cgru` since 2026-12-07, and every config since names its decoder).
UNNAMED_DECODER = "gru"


@dataclass(frozen=True, kw_only=True, slots=True)
class Vocabulary:
    """The text side of a model: languages, text settings and SentencePiece models."""

    src_lang: str
    tgt_lang: str
    settings: TextSettings
    src_spm: bytes
    tgt_spm: bytes
    max_src_len: int  # longest source (pieces) seen in training (informative: nothing is cut)

    def pipelines(self) -> tuple[TextPipeline, TextPipeline]:
        return (
            TextPipeline(self.settings, self.src_lang, self.src_spm),
            TextPipeline(self.settings, self.tgt_lang, self.tgt_spm),
        )

    @property
    def fingerprint(self) -> str:
        """What the ids mean: :func:`vocabulary_fingerprint` of both SentencePiece models."""
        return vocabulary_fingerprint(self.src_spm, self.tgt_spm)

    def to_dict(self) -> dict[str, Any]:
        return {
            "src_lang": self.src_lang,
            "tgt_lang": self.tgt_lang,
            "settings": self.settings.to_dict(),
            "src_spm": torch.frombuffer(bytearray(self.src_spm), dtype=torch.uint8),
            "tgt_spm": torch.frombuffer(bytearray(self.tgt_spm), dtype=torch.uint8),
            "max_src_len": self.max_src_len,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Vocabulary:
        return cls(
            src_lang=data["src_lang"],
            tgt_lang=data["tgt_lang"],
            settings=TextSettings.from_dict(data["settings"], where="vocab.settings"),
            src_spm=data["src_spm"].numpy().tobytes(),
            tgt_spm=data["tgt_spm"].numpy().tobytes(),
            max_src_len=int(data["max_src_len"]),
        )


def vocabulary_fingerprint(src_spm: bytes, tgt_spm: bytes) -> str:
    """SHA-256 (hex) of a source and a target SentencePiece model: equal fingerprints mean that
    every piece id means the same piece (what a vocabulary shortlist is keyed by)."""
    sha = hashlib.sha256()
    for model in (src_spm, tgt_spm):
        sha.update(len(model).to_bytes(8, "little"))
        sha.update(model)
    return sha.hexdigest()


@dataclass(frozen=True, kw_only=True)
class LoadedModel:
    """A model ready to translate, with its config and text pipelines."""

    model: Seq2Seq
    config: Config
    vocab: Vocabulary
    src_text: TextPipeline
    tgt_text: TextPipeline
    path: Path
    step: int


def save_checkpoint(
    path: Path,
    *,
    model: Seq2Seq,
    config: Config,
    vocab: Vocabulary,
    step: int,
    bleu: float | None,
    averaged_from: list[dict[str, Any]] | None = None,
) -> None:
    """Write a translation checkpoint atomically; ``averaged_from`` records the checkpoints
    whose parameters it averages (``nmtkit average``), each as ``{"path": ..., "step": ...}``."""
    payload: dict[str, Any] = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "nmtkit_version": __version__,
        "config": config.to_dict(),
        "providers": providers(config),
        "vocab": vocab.to_dict(),
        "model": model.state_dict(),
        "step": step,
        "bleu": bleu,
        **({"averaged_from": averaged_from} if averaged_from is not None else {}),
    }
    _save(path, payload)


def kept_checkpoint_path(model_dir: Path, step: int) -> Path:
    """Where training keeps the checkpoint of update ``step`` (``train.keep_last``)."""
    return model_dir / f"checkpoint_{step}.pt"


def kept_checkpoints(model_dir: Path) -> list[tuple[int, Path]]:
    """The kept checkpoints ``checkpoint_<update>.pt`` in ``model_dir`` with their updates,
    oldest first."""
    found = []
    for path in model_dir.glob("checkpoint_*.pt"):
        match = KEPT_NAME.fullmatch(path.name)
        if match is not None and path.is_file():
            found.append((int(match[1]), path))
    return sorted(found)


def held_model_files(model_dir: Path) -> list[str]:
    """The names of the model files in ``model_dir`` (what ``train --overwrite`` replaces):
    those of :data:`MODEL_FILES` that exist, then the kept checkpoints, oldest first."""
    held = [name for name in MODEL_FILES if (model_dir / name).is_file()]
    return held + [path.name for _, path in kept_checkpoints(model_dir)]


def kept_temporaries(model_dir: Path) -> list[str]:
    """The kept checkpoints whose temporary ``NAME.tmp`` a killed run left in ``model_dir``."""
    names = (path.name.removesuffix(".tmp") for path in model_dir.glob("checkpoint_*.pt.tmp"))
    return sorted(name for name in names if KEPT_NAME.fullmatch(name))


def payload_digest(payload: dict[str, Any]) -> str:
    """SHA-256 (hex) of a checkpoint payload: every tensor's name, dtype, shape and bytes, and
    every number and string, visited in sorted key order (the ``sha256`` key left out)."""
    sha = hashlib.sha256()
    for name, value in _leaves({k: v for k, v in payload.items() if k != DIGEST}, ""):
        if isinstance(value, torch.Tensor):
            tensor = value.detach().cpu().contiguous().reshape(-1)
            sha.update(f"{name}\0tensor\0{tensor.dtype}\0{tuple(value.shape)}\0".encode())
            sha.update(tensor.view(torch.uint8).numpy().data)
        elif value is None or isinstance(value, bool | int | float | str | bytes):
            sha.update(f"{name}\0{type(value).__name__}\0{value!r}\0".encode())
        else:
            sha.update(f"{name}\0{type(value).__name__}\0".encode())
    return sha.hexdigest()


def _leaves(value: Any, name: str) -> Any:
    if isinstance(value, dict):
        for key in sorted(value, key=lambda k: (type(k).__name__, repr(k))):
            yield from _leaves(value[key], f"{name}/{key!r}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{name}[{index}]")
    else:
        yield name, value


def _save(path: Path, payload: dict[str, Any], *, previous: Path | None = None) -> None:
    """Write ``payload`` with its checksum atomically (a full disk: DataError naming ``path``)."""
    payload = {**payload, DIGEST: payload_digest(payload)}
    with atomic_write(path, "wb", previous=previous) as stream:
        try:
            torch.save(payload, stream)
        except RuntimeError as exc:  # torch's writer wraps the OSError of a full disk
            if isinstance(exc.__context__, OSError):
                raise exc.__context__ from None
            raise


def providers(config: Config) -> dict[str, dict[str, str]]:
    """Each component's kind, name, module and distribution, so a missing plugin can be named."""
    return {
        key: {"kind": kind, "name": spec.name, **registry.provider(kind, spec.name)}
        for key, kind, spec in components(config)
    }


def check_providers(recorded: dict[str, dict[str, str]], *, where: str) -> None:
    """Raise CheckpointError naming the plugin of the first component that is not registered."""
    for key, info in recorded.items():
        kind, name = info.get("kind", ""), info.get("name", "")
        if kind not in registry.CONTRACTS or name in registry.names(kind):
            continue
        source = info.get("distribution") or ""
        origin = (
            f"package {source!r}, module {info.get('module')!r}"
            if source
            else (f"module {info.get('module')!r}")
        )
        raise CheckpointError(
            f"{key} is {kind} {name!r} from plugin {origin}, which is not loaded",
            where=where,
            hint=f"install {source or 'the plugin'} or pass --user-dir with the folder defining it",
        )


def save_train_state(path: Path, state: dict[str, Any]) -> None:
    """Write the resumable training state atomically; the state it replaces becomes
    ``train_state.prev.pt`` (``path``'s name with ``.prev`` before its suffix)."""
    _save(path, state, previous=path.with_suffix(".prev" + path.suffix))


def load_train_state(path: Path) -> dict[str, Any]:
    """Read and check a ``train_state.pt``.

    Raises:
        CheckpointError: unreadable, damaged (its checksum does not match) or not a train state.
    """
    state = _load(path)
    if not isinstance(state.get("run"), dict):
        raise CheckpointError("not a train state (nmtkit train writes one)", where=str(path))
    if isinstance(state.get("model"), dict) and isinstance(state.get("config"), dict):
        state["model"] = renamed_parameters(state["model"], config=state["config"])
    return state


def with_decoder_named(config: dict[str, Any]) -> dict[str, Any]:
    """A saved config (as a dict) whose decoder names itself: :data:`UNNAMED_DECODER` where it
    names none, so that a file written before the default changed rebuilds the model it holds."""
    model = config.get("model", {})
    decoder = model.get("decoder", {}) if isinstance(model, dict) else None
    if not isinstance(decoder, dict) or "name" in decoder:
        return config
    return {**config, "model": {**model, "decoder": {**decoder, "name": UNNAMED_DECODER}}}


def renamed_parameters(weights: dict[str, Any], *, config: dict[str, Any]) -> dict[str, Any]:
    """A saved model state with its parameters under today's names (:data:`RENAMED_PARAMETERS`
    for the decoder that ``config``, the saved config as a dict, names); in order."""
    decoder = with_decoder_named(config).get("model", {}).get("decoder", {})
    name = decoder.get("name", "") if isinstance(decoder, dict) else ""
    renames = RENAMED_PARAMETERS.get(name)
    if not renames:
        return weights
    renamed = {}
    for name, tensor in weights.items():
        for old, new in renames.items():
            if name.startswith(old):
                name = new + name[len(old) :]
        renamed[name] = tensor
    return renamed


def load_latest_train_state(model_dir: Path) -> tuple[dict[str, Any], Path]:
    """The newest train state in ``model_dir`` that passes its check, and its path:
    ``train_state.pt``, else (with a warning) ``train_state.prev.pt``.

    Raises:
        CheckpointError: neither loads; the error names the newest.
    """
    newest, previous = model_dir / TRAIN_STATE, model_dir / TRAIN_STATE_PREV
    problem: CheckpointError | None = None
    if newest.is_file():
        try:
            return load_train_state(newest), newest
        except CheckpointError as exc:
            if not previous.is_file():
                raise
            problem = exc
    try:
        state = load_train_state(previous)
    except CheckpointError:
        if problem is not None:
            raise problem from None
        raise
    why = problem or f"{newest}: missing (a run killed while saving it)"
    log.warning(
        "%s; resuming from the state saved before it, %s (step %s)",
        why,
        previous.name,
        state["run"].get("step"),
    )
    return state, previous


def recorded_score(path: Path) -> tuple[int, float | None] | None:
    """The step and validation BLEU that checkpoint ``path`` records, read without loading its
    tensors (nor checking them); None if it cannot be read."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception:  # torch raises many kinds for a file that is not a checkpoint
        return None
    if not isinstance(payload, dict):
        return None
    bleu = payload.get("bleu")
    return int(payload.get("step", 0)), None if bleu is None else float(bleu)


def resolve_checkpoint(path: str | Path) -> Path:
    """A model directory means its ``best.pt``; a file is taken as it is.

    Raises:
        CheckpointError: nothing to load there.
    """
    path = Path(path)
    if path.is_dir():
        for name in (BEST, LAST):
            if (path / name).is_file():
                return path / name
        raise CheckpointError(
            "no checkpoint in this directory", where=str(path), hint="train one with nmtkit train"
        )
    if not path.is_file():
        raise CheckpointError("no such model file or directory", where=str(path))
    return path


def save_checked(path: str | Path, payload: dict[str, Any]) -> None:
    """Write ``payload`` (tensors and builtin containers) atomically with its SHA-256, as the
    model directory's files are written; :func:`load_checked` reads it back.

    Raises:
        DataError: ``path`` cannot be written (naming it and the reason, e.g. a full disk).
    """
    _save(Path(path), payload)


def load_checked(path: str | Path, *, what: str = "nmtkit checkpoint") -> dict[str, Any]:
    """Read a file written by :func:`save_checked` and check its checksum.

    Raises:
        CheckpointError: not a ``what``, or a damaged one.
    """
    return _load(Path(path), what=what)


def _load(path: Path, *, what: str = "nmtkit checkpoint") -> dict[str, Any]:
    """Read a file written by :func:`_save` and check its checksum (a file written before
    nmtkit stored one loads unchecked)."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds for a file that is not a checkpoint
        raise CheckpointError(
            f"not an {what}, or a damaged one ({type(exc).__name__})", where=str(path)
        ) from None
    if not isinstance(payload, dict):
        raise CheckpointError(f"not an {what}", where=str(path))
    recorded = payload.pop(DIGEST, None)
    if recorded is None:
        log.debug("%s: no checksum (written by an older nmtkit), loaded unchecked", path)
    elif recorded != payload_digest(payload):
        raise CheckpointError(
            "damaged: its contents do not match the checksum written with them", where=str(path)
        )
    return payload


def load_model(path: str | Path, *, device: str | torch.device = "cpu") -> LoadedModel:
    """Rebuild a model from a checkpoint file or a model directory (its best checkpoint).

    Raises:
        ConfigError: ``device`` is unknown or not on this machine (:func:`resolve_device`).
        CheckpointError: not an nmtkit checkpoint, a damaged one, a newer format, or a
            component whose plugin is not installed.
    """
    device = resolve_device(device)
    path = resolve_checkpoint(path)
    payload = _load(path)
    if payload.get("format") != FORMAT:
        raise CheckpointError("not an nmtkit checkpoint", where=str(path))
    if payload.get("format_version", 0) > FORMAT_VERSION:
        raise CheckpointError(
            f"written by a newer nmtkit ({payload.get('nmtkit_version')})",
            where=str(path),
            hint="upgrade nmtkit",
        )
    check_providers(payload.get("providers", {}), where=str(path))
    try:
        config = config_from_dict(with_decoder_named(payload["config"]))
    except (PluginError, ConfigError) as exc:
        raise CheckpointError(
            f"cannot rebuild the model: {exc}",
            where=str(path),
            hint="if it names an unknown component, install the plugin package that provides it",
        ) from None
    except NmtkitError as exc:
        raise CheckpointError(f"its config is invalid: {exc}", where=str(path)) from None
    vocab = Vocabulary.from_dict(payload["vocab"])
    src_text, tgt_text = vocab.pipelines()
    model = Seq2Seq(
        config.model,
        src_vocab_size=src_text.vocab_size,
        tgt_vocab_size=tgt_text.vocab_size,
        pad_id=PAD_ID,
    )
    model.load_state_dict(renamed_parameters(payload["model"], config=payload["config"]))
    model.to(device).eval()
    return LoadedModel(
        model=model,
        config=config,
        vocab=vocab,
        src_text=src_text,
        tgt_text=tgt_text,
        path=path,
        step=int(payload.get("step", 0)),
    )
