"""The model directory: ``config.yaml``, ``best.pt``, ``last.pt`` and ``train_state.pt``.

A checkpoint (``best.pt``/``last.pt``) holds everything translation needs and nothing but tensors
and builtin containers, so ``torch.load(..., weights_only=True)`` reads it: the resolved config,
the weights, both SentencePiece models (as uint8 tensors) and the text settings.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from nmtkit import __version__, registry
from nmtkit.config import Config, components, config_from_dict
from nmtkit.data.text import PAD_ID, TextPipeline, TextSettings
from nmtkit.errors import CheckpointError, ConfigError, NmtkitError, PluginError
from nmtkit.files import atomic_path
from nmtkit.models import Seq2Seq

log = logging.getLogger(__name__)

FORMAT = "nmtkit-checkpoint"
FORMAT_VERSION = 1
BEST = "best.pt"
LAST = "last.pt"
TRAIN_STATE = "train_state.pt"
CONFIG = "config.yaml"
METRICS = "metrics.jsonl"
LOG = "train.log"


@dataclass(frozen=True, kw_only=True, slots=True)
class Vocabulary:
    """The text side of a model: languages, text settings and SentencePiece models."""

    src_lang: str
    tgt_lang: str
    settings: TextSettings
    src_spm: bytes
    tgt_spm: bytes
    max_src_len: int  # longest source (pieces) seen in training; longer input is truncated

    def pipelines(self) -> tuple[TextPipeline, TextPipeline]:
        return (
            TextPipeline(self.settings, self.src_lang, self.src_spm),
            TextPipeline(self.settings, self.tgt_lang, self.tgt_spm),
        )

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
    path: Path, *, model: Seq2Seq, config: Config, vocab: Vocabulary, step: int, bleu: float | None
) -> None:
    """Write a translation checkpoint atomically."""
    payload = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "nmtkit_version": __version__,
        "config": config.to_dict(),
        "providers": providers(config),
        "vocab": vocab.to_dict(),
        "model": model.state_dict(),
        "step": step,
        "bleu": bleu,
    }
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)


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
    """Write the resumable training state atomically."""
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


def load_train_state(path: Path) -> dict[str, Any]:
    return _load(path)


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


def _load(path: Path) -> dict[str, Any]:
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds for a file that is not a checkpoint
        raise CheckpointError(
            f"not an nmtkit checkpoint ({type(exc).__name__})", where=str(path)
        ) from None
    if not isinstance(payload, dict):
        raise CheckpointError("not an nmtkit checkpoint", where=str(path))
    return payload


def load_model(path: str | Path, *, device: str = "cpu") -> LoadedModel:
    """Rebuild a model from a checkpoint file or a model directory (its best checkpoint).

    Raises:
        CheckpointError: not an nmtkit checkpoint, a newer format, or a component whose plugin
            is not installed.
    """
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
        config = config_from_dict(payload["config"])
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
    model.load_state_dict(payload["model"])
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
