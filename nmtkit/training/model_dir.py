"""The model directory's rules for a training run: a model is never replaced without
``overwrite`` and never resumed without a train state; what a killed run left is cleaned up;
rank 0 alone writes ``last.pt``, ``best.pt``, the kept ``checkpoint_<update>.pt`` and
``train_state.pt``, and a resumed run never lets a worse model replace a newer ``best.pt``."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from nmtkit import checkpoint as ckpt
from nmtkit.checkpoint import Vocabulary
from nmtkit.config import Config, dump_yaml
from nmtkit.errors import CheckpointError
from nmtkit.models import Seq2Seq
from nmtkit.outputs import atomic_write, check_writable_dir, remove_stale_temporaries
from nmtkit.training.train_state import RunState

log = logging.getLogger(__name__)


def holds_train_state(model_dir: Path) -> bool:
    """Whether ``model_dir`` holds a saved run to resume (the newest state or the one before)."""
    return any((model_dir / name).is_file() for name in (ckpt.TRAIN_STATE, ckpt.TRAIN_STATE_PREV))


def check_model_dir(model_dir: Path, *, resume: bool, overwrite: bool) -> None:
    """Refuse to replace a model without ``overwrite``, and to resume without a train state.

    Raises:
        CheckpointError: naming the directory, what it holds and what to do.
    """
    held = ckpt.held_model_files(model_dir)
    if resume:
        if ckpt.TRAIN_STATE in held or ckpt.TRAIN_STATE_PREV in held:
            return
        if held:
            raise CheckpointError(
                f"holds {', '.join(held)} but no {ckpt.TRAIN_STATE}, so the run cannot be resumed",
                where=str(model_dir),
                hint="its checkpoints still translate; --overwrite instead trains afresh",
            )
        raise CheckpointError("nothing to resume here", where=str(model_dir), hint="drop --resume")
    if held and not overwrite:
        raise CheckpointError(
            f"already holds a training run ({', '.join(held)})",
            where=str(model_dir),
            hint="--resume to continue it, --overwrite to replace it",
        )


def clean_model_dir(model_dir: Path) -> None:
    """Make ``model_dir`` (it must be writable) and delete the temporary files that a killed
    run left in it.

    Raises:
        DataError: ``model_dir`` cannot be made or written.
    """
    check_writable_dir(model_dir)
    stale = [*ckpt.MODEL_FILES, ckpt.CONFIG, *ckpt.kept_temporaries(model_dir)]
    remove_stale_temporaries(model_dir, stale)


def start_afresh(model_dir: Path) -> None:
    """Delete the logs and models of the run that a new one replaces (``overwrite``)."""
    for name in (ckpt.METRICS, ckpt.LOG, *ckpt.held_model_files(model_dir)):
        (model_dir / name).unlink(missing_ok=True)


def write_config(model_dir: Path, config: Config) -> None:
    """Write the run's resolved config as ``config.yaml``."""
    with atomic_write(model_dir / ckpt.CONFIG) as stream:
        stream.write(dump_yaml(config))


class Checkpoints:
    """The run's checkpoints in ``model_dir``: each write atomic, a new one before any deletion."""

    def __init__(
        self, model_dir: Path, *, config: Config, vocab: Vocabulary, is_main: bool = True
    ) -> None:
        self.model_dir, self.config, self.vocab, self.is_main = model_dir, config, vocab, is_main
        self._kept_update = -1  # the update of the newest checkpoint_<update>.pt this run wrote

    def save(
        self, model: Seq2Seq, state: RunState, *, best: bool = False, keep: bool = False
    ) -> None:
        """Write ``last.pt`` (and ``best.pt``, recording the best BLEU). ``keep`` (at a
        validation and at the end) also keeps this update's ``checkpoint_<update>.pt``, the
        newest ``train.keep_last`` of them."""
        paths = [self.model_dir / ckpt.LAST] + ([self.model_dir / ckpt.BEST] if best else [])
        for path in paths:
            self._write(path, model, state, bleu=state.best_bleu if best else None)
        keep_last = self.config.train.keep_last
        if keep and keep_last and self._kept_update != state.updates:
            self._write(ckpt.kept_checkpoint_path(self.model_dir, state.updates), model, state)
            self._kept_update = state.updates
            for _, old in ckpt.kept_checkpoints(self.model_dir)[:-keep_last]:
                old.unlink(missing_ok=True)

    def save_train_state(self, snapshot: dict[str, Any]) -> None:
        """Write ``train_state.pt`` (the one it replaces becomes ``train_state.prev.pt``)."""
        ckpt.save_train_state(self.model_dir / ckpt.TRAIN_STATE, snapshot)

    def _write(
        self, path: Path, model: Seq2Seq, state: RunState, *, bleu: float | None = None
    ) -> None:
        ckpt.save_checkpoint(
            path, model=model, config=self.config, vocab=self.vocab, step=state.updates, bleu=bleu
        )

    def reconcile(self, state: RunState) -> None:
        """After a restore: keep a newer ``best.pt`` as the best so far (every rank), and
        delete kept checkpoints of updates after the restored state (rank 0)."""
        self._keep_newer_best(state)
        if self.is_main:
            self._drop_newer_kept(state)

    def _keep_newer_best(self, state: RunState) -> None:
        """Make sure a worse model never replaces ``best.pt``: a run killed while saving, or
        resumed from ``train_state.prev.pt``, can have a ``best.pt`` newer than its state."""
        recorded = ckpt.recorded_score(self.model_dir / ckpt.BEST)
        if recorded is None:
            return
        update, bleu = recorded
        if bleu is None or update <= state.updates:
            return
        if state.best_bleu is None or bleu > state.best_bleu:
            log.warning(
                "%s (step=%d, BLEU %.2f) is newer than the saved run (step=%d); keeping it as "
                "the best so far",
                ckpt.BEST,
                update,
                bleu,
                state.updates,
            )
            state.best_bleu, state.best_update = bleu, update

    def _drop_newer_kept(self, state: RunState) -> None:
        """Delete kept checkpoints of updates after the restored state (a run killed between
        saving one and its train state): the resumed run writes its own."""
        for update, path in ckpt.kept_checkpoints(self.model_dir):
            if update > state.updates:
                log.info("removing %s, newer than the saved run (step=%d)", path, state.updates)
                path.unlink(missing_ok=True)
