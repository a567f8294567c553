"""What ``train_state.pt`` holds: where a run stands (:class:`RunState`), and the snapshot of the
model, optimizer, schedule and random generators that a resumed run restores to continue the
very same run."""

from __future__ import annotations

import logging
import random
from dataclasses import asdict, dataclass
from typing import Any

import torch

from nmtkit.checkpoint import with_decoder_named
from nmtkit.config import Config, config_from_dict
from nmtkit.errors import CheckpointError
from nmtkit.models import Seq2Seq
from nmtkit.training.distributed import Distributed
from nmtkit.training.schedule import Schedule

log = logging.getLogger(__name__)

# The names the run's fields have in train_state.pt, a file format older than the word "update".
_SAVED_AS = {"updates": "step", "best_update": "best_step", "validated_update": "validated_step"}


@dataclass(kw_only=True)
class RunState:
    """Where a run stands; saved in ``train_state.pt`` so that a resumed run continues it."""

    updates: int = 0  # optimizer updates done
    epoch: int = 1
    batch_in_epoch: int = 0  # batches of this epoch already consumed, over all ranks
    batches_per_update: int = 1  # ranks x update_freq of the run that saved this state
    best_bleu: float | None = None
    best_update: int | None = None
    bad_validations: int = 0
    validated_update: int = -1  # the update of the last validation
    seconds: float = 0.0  # training wall time so far, across resumes
    stop_reason: str | None = None  # why the run ended; None while it runs or when interrupted

    def to_saved(self) -> dict[str, Any]:
        """The ``run`` entry of ``train_state.pt``."""
        return {_SAVED_AS.get(name, name): value for name, value in asdict(self).items()}

    @classmethod
    def from_saved(cls, run: dict[str, Any]) -> RunState:
        """The state that :meth:`to_saved` wrote."""
        names = {saved: name for name, saved in _SAVED_AS.items()}
        return cls(**{names.get(key, key): value for key, value in run.items()})

    def epochs_done(self, epoch_batches: int) -> float:
        """The epochs done, a fraction of the current one included, which has ``epoch_batches``
        batches."""
        return self.epoch - 1 + self.batch_in_epoch / max(1, epoch_batches)

    def record_validation(self, bleu: float, *, counts: bool) -> bool:
        """Note a validation BLEU of this update; return whether it is the best so far. Unless
        it ``counts`` (the closing validation does not), one that is not the best brings early
        stopping a validation nearer."""
        self.validated_update = self.updates
        improved = self.best_bleu is None or bleu > self.best_bleu
        if improved:
            self.best_bleu, self.best_update = bleu, self.updates
            self.bad_validations = 0
        elif counts:
            self.bad_validations += 1
        return improved


def snapshot(
    *,
    model: Seq2Seq,
    optimizer: torch.optim.Optimizer,
    schedule: Schedule,
    scaler: torch.amp.GradScaler,
    state: RunState,
    config: Config,
) -> dict[str, Any]:
    """Everything a resumed run needs, this process's random generators included."""
    device = next(model.parameters()).device
    on_cuda = device.type == "cuda"
    return {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "schedule": schedule.state_dict(),
        "run": state.to_saved(),
        "rng": torch.get_rng_state(),
        "py_rng": list(random.getstate()[1]),
        "config": config.to_dict(),
        **({"cuda_rng": torch.cuda.get_rng_state(device)} if on_cuda else {}),
        **({"scaler": scaler.state_dict()} if scaler.is_enabled() else {}),
    }


def restore(
    saved: dict[str, Any],
    *,
    model: Seq2Seq,
    optimizer: torch.optim.Optimizer,
    schedule: Schedule,
    scaler: torch.amp.GradScaler,
    config: Config,
    dist: Distributed,
) -> RunState:
    """Put back the run saved in ``saved`` (a ``train_state.pt``); return where it stands.

    Raises:
        CheckpointError: the saved run trained a different model, or on other data.
    """
    _check_same_model(saved, model, config)
    _warn_of_changed_training(saved, config, dist)
    optimizer.load_state_dict(saved["optimizer"])
    schedule.load_state_dict(saved["schedule"])
    state = RunState.from_saved(saved["run"])
    per_update = dist.world_size * config.train.update_freq
    if state.batches_per_update != per_update and dist.is_main:
        log.warning(
            "the saved run took %d batches per update (ranks x update_freq), this one takes "
            "%d (%d ranks x update_freq %d): continuing at the same place in the data with "
            "the new global batch, learning rate unchanged; keep ranks x update_freq to "
            "continue the very same run",
            state.batches_per_update,
            per_update,
            dist.world_size,
            config.train.update_freq,
        )
    state.batches_per_update = per_update
    torch.set_rng_state(saved["rng"])
    random.setstate((3, tuple(saved["py_rng"]), None))
    device = next(model.parameters()).device
    if "cuda_rng" in saved and device.type == "cuda":
        torch.cuda.set_rng_state(saved["cuda_rng"], device)
    if "scaler" in saved and scaler.is_enabled():
        scaler.load_state_dict(saved["scaler"])
    return state


def _check_same_model(saved: dict[str, Any], model: Seq2Seq, config: Config) -> None:
    """Load the saved weights into ``model``, refusing another model config or vocabulary."""
    # Through the config loader, so that options added since the run was saved take their
    # defaults (the model they describe is the one the run trained), the decoder's name aside.
    saved_model = config_from_dict(with_decoder_named(saved["config"])).to_dict()["model"]
    if saved_model != config.to_dict()["model"]:
        raise CheckpointError(
            "the saved run has another model config",
            hint="resume with the same --config and --set",
        )
    try:
        model.load_state_dict(saved["model"])
    except RuntimeError:
        raise CheckpointError(
            "the saved run's weights do not fit this data's vocabulary",
            hint="resume with the data directory the run started with",
        ) from None


def _warn_of_changed_training(saved: dict[str, Any], config: Config, dist: Distributed) -> None:
    """Say when this config trains differently from the saved run's in a way it cannot see."""
    saved_train = saved["config"].get("train", {})
    if "concat_rate" not in saved_train and config.train.concat_rate and dist.is_main:
        log.warning(
            "the saved run predates concatenation augmentation and trained without it; "
            "this one joins pairs (train.concat_rate=%g, the default since): --set "
            "train.concat_rate=0 continues the very same run",
            config.train.concat_rate,
        )
