"""One optimizer update: the learning rate from the schedule, the loss of every micro-batch of
the global batch (gradients accumulated, averaged over the ranks), clipping and the step, in the
training precision (bf16, or fp16 with a loss scaler)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from nmtkit.config import TrainConfig
from nmtkit.errors import DataError, unknown_name
from nmtkit.models import Seq2Seq
from nmtkit.registry import Batch
from nmtkit.runtime import autocast, resolve_precision
from nmtkit.training.data import EpochExamples
from nmtkit.training.distributed import Distributed
from nmtkit.training.schedule import Schedule, build_schedule


class LossForward(torch.nn.Module):
    """The training forward, the one module DistributedDataParallel wraps: a batch's summed
    loss and NLL. Validation and search use the model itself."""

    def __init__(self, model: Seq2Seq, label_smoothing: float) -> None:
        super().__init__()
        self.model, self.label_smoothing = model, label_smoothing

    def forward(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        return self.model.loss(batch, label_smoothing=self.label_smoothing)


def build_optimizer(config: TrainConfig, model: Seq2Seq) -> torch.optim.Optimizer:
    """The optimizer named by ``config.optimizer``.

    Raises:
        ConfigError: unknown name.
    """
    factories = {
        # fused: one kernel for all parameters instead of a dozen passes per tensor
        "adam": lambda p: torch.optim.Adam(p, lr=config.lr, betas=config.adam_betas, fused=True),
        "adadelta": lambda p: torch.optim.Adadelta(
            p, lr=config.lr, rho=config.adadelta_rho, eps=config.adadelta_eps
        ),
    }
    if config.optimizer not in factories:
        raise unknown_name("optimizer", config.optimizer, factories, where="train.optimizer")
    return factories[config.optimizer](model.parameters())


def rank_seed(seed: int, rank: int, update: int) -> int:
    """The dropout seed of rank ``rank`` > 0 for the update after ``update`` updates: a pure
    function, so that a resumed run re-derives it (rank 0 keeps one stream, saved in the train
    state)."""
    return ((seed * 1_000_003 + rank) * 1_000_003 + update) % (1 << 63)


@dataclass(frozen=True, slots=True)
class UpdateSums:
    """What one update saw: this rank's summed loss and NLL over its ``tokens`` target tokens,
    and the whole global batch's target tokens and sentences (all ranks)."""

    loss_sum: float
    nll_sum: float
    tokens: int
    global_tokens: int
    sentences: int


class Updater:
    """Makes optimizer updates on global batches of ``ranks x update_freq`` batches: rank r
    takes the r-th of every ``ranks``, so that N ranks train as one process with N times the
    ``update_freq``."""

    def __init__(self, model: Seq2Seq, config: TrainConfig, dist: Distributed) -> None:
        self.model, self.config, self.dist = model, config, dist
        self.device = next(model.parameters()).device
        # Base batches (of max_tokens) per update, over all ranks: the global batch.
        self.per_update = dist.world_size * config.update_freq
        self.optimizer = build_optimizer(config, model)
        self.schedule: Schedule = build_schedule(config)
        self.precision = resolve_precision(config.precision, self.device)
        # fp16 needs the loss scaled so that small gradients survive; elsewhere a no-op.
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=self.precision == "fp16")
        self.forward: torch.nn.Module = LossForward(model, config.label_smoothing)

    def wrap(self) -> None:
        """Wrap the training forward for the ranks (DistributedDataParallel, which copies rank
        0's weights to the others): once, after any restore."""
        self.forward = self.dist.wrap(LossForward(self.model, self.config.label_smoothing))

    def check_enough(self, num_batches: int) -> None:
        """Refuse an epoch of ``num_batches`` batches, fewer than one update takes.

        Raises:
            DataError: naming the batches, the token budget and the update's share.
        """
        if num_batches >= self.per_update:
            return
        ranks = self.dist.world_size
        raise DataError(
            f"the training set makes {num_batches} batches of train.max_tokens="
            f"{self.config.max_tokens}, fewer than one update takes: {self.per_update} "
            f"(train.update_freq={self.config.update_freq} on each of {ranks} "
            f"rank{'s' if ranks > 1 else ''})",
            hint="lower train.max_tokens, train.update_freq or the number of ranks",
        )

    @property
    def lr(self) -> float:
        """The learning rate of the last update."""
        return float(self.optimizer.param_groups[0]["lr"])

    def update(
        self,
        group: list[np.ndarray],
        examples: EpochExamples,
        *,
        done: int,
        progress: float | None = None,
    ) -> UpdateSums:
        """Update on the global batch ``group`` of ``examples``, after ``done`` updates and
        ``progress`` of the run (:meth:`nmtkit.training.stopping.StopRules.progress`): this
        rank takes every ``world_size``-th batch from its rank on, accumulating their gradients
        locally (``no_sync``) until the last, whose backward averages them over the ranks."""
        rank, world = self.dist.rank, self.dist.world_size
        self.forward.train()
        if rank:  # rank 0 keeps its generator's stream (saved); the others re-derive theirs
            torch.manual_seed(rank_seed(self.config.seed, rank, done))
        # The global batch's target tokens (EOS included) and sentences: every rank knows the
        # whole group, so this needs no communication.
        tokens = sum(examples.target_tokens(indices) for indices in group)
        sentences = sum(len(indices) for indices in group)
        lr = self.schedule.lr_at(done + 1, progress)
        for param_group in self.optimizer.param_groups:
            param_group["lr"] = lr
        self.optimizer.zero_grad(set_to_none=True)
        # DDP averages gradients over the ranks: x world_size makes the sum over every rank's
        # micro-batches of loss / tokens, as one process with the whole group would compute.
        scale = world / tokens
        mine = group[rank::world]
        loss_sum = nll_sum = 0.0
        my_tokens = 0
        for k, indices in enumerate(mine):
            batch = self._on_device(examples.batch(indices))
            with self.dist.no_sync(self.forward, sync=k == len(mine) - 1):
                with autocast(self.precision, self.device):
                    loss, nll = self.forward(batch)
                self.scaler.scale(loss * scale).backward()
            loss_sum += float(loss.detach())
            nll_sum += float(nll)
            my_tokens += batch.num_tgt_tokens
        self._step()
        return UpdateSums(
            loss_sum=loss_sum,
            nll_sum=nll_sum,
            tokens=my_tokens,
            global_tokens=tokens,
            sentences=sentences,
        )

    def _step(self) -> None:
        """Clip the (unscaled) gradient norm and step the optimizer through the scaler."""
        if self.config.clip_norm > 0:
            self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.clip_norm)
        self.scaler.step(self.optimizer)
        self.scaler.update()

    def _on_device(self, batch: Batch) -> Batch:
        if self.device.type == "cpu":
            return batch
        if self.device.type == "cuda":  # page-locked, so that the copy overlaps the GPU's work
            return batch.pin_memory().to(self.device, non_blocking=True)
        return batch.to(self.device)
