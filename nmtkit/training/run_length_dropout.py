"""Dropout that suits the run's length. A run that sees its data only a few times has little to
overfit and learns faster with less dropout; a long one needs more. With
``train.short_run_dropout`` set and a run whose length is known (a time budget, max updates or
max epochs), the dropouts that ``model.dropout`` sets (source and target embeddings, the
readout) follow the epochs the run is on course to see: ``short_run_dropout`` up to
:data:`SHORT_EPOCHS`, ``model.dropout`` from :data:`LONG_EPOCHS`, a straight line between.

Under a time budget the epochs are projected from the run so far (epochs done / share of the
budget spent), re-estimated before every update, so a slower machine, which makes fewer passes
in the same minutes, trains with less dropout than a faster one; nothing of it is saved, since
a resumed run projects the same from where it stands. Measured in docs/quality.md."""

from __future__ import annotations

from torch import nn

from nmtkit.config import Config
from nmtkit.training.schedule import run_length_known

# Multi30k en->de, the default model, beam 5 validation BLEU: at 3.5 epochs (15 minutes on an
# AVX-512 machine, two seeds) dropout 0.2 beat 0.3 by 0.65, at 2.3-2.5 (15 minutes on an AVX2
# one, one seed) they were level; at 7 epochs (30 minutes, AVX-512) 0.3 beat 0.2 by 0.79
# (docs/quality.md).
SHORT_EPOCHS = 3.5
LONG_EPOCHS = 7.0


def dropout_for_epochs(epochs: float, *, short: float, full: float) -> float:
    """The dropout of a run that will see ``epochs`` epochs of its data: ``short`` up to
    :data:`SHORT_EPOCHS`, ``full`` from :data:`LONG_EPOCHS`, on the line between them between."""
    share = (epochs - SHORT_EPOCHS) / (LONG_EPOCHS - SHORT_EPOCHS)
    return short + min(1.0, max(0.0, share)) * (full - short)


class RunLengthDropout:
    """Sets the probability of ``model``'s dropouts (``dropouts``, those ``model.dropout``
    configures) from the run's projected length, before every update. Inactive, leaving them
    at ``model.dropout``, when ``train.short_run_dropout`` is None or not below it, or when the
    run has no known end."""

    def __init__(self, dropouts: list[nn.Dropout], config: Config) -> None:
        full, short = config.model.dropout, config.train.short_run_dropout
        self.active = short is not None and short < full and run_length_known(config.train)
        self.full = full
        self.short = full if short is None else short
        self.dropouts = dropouts if self.active else []
        self.p = full
        if self.active:
            self._set(self.short)  # until the run's length can be projected

    def follow(self, *, epochs_done: float, progress: float | None) -> float:
        """Set the dropout for a run that has done ``epochs_done`` epochs and ``progress`` (0
        to 1) of its length; return it. Before any progress the last value stays."""
        if self.active and progress:
            projected = epochs_done / progress
            self._set(dropout_for_epochs(projected, short=self.short, full=self.full))
        return self.p

    def _set(self, p: float) -> None:
        self.p = p
        for dropout in self.dropouts:
            dropout.p = p
