"""The run's state keeps the train_state.pt format (its update counts saved under "step"), and a
validation moves the best score and early stopping's count as the rules say."""

from __future__ import annotations

from nmtkit.training.train_state import RunState


def test_the_saved_run_keeps_the_file_formats_keys_and_reads_back_equal() -> None:
    state = RunState(updates=12, best_bleu=3.5, best_update=9, validated_update=12, epoch=2)
    saved = state.to_saved()
    assert (saved["step"], saved["best_step"], saved["validated_step"]) == (12, 9, 12)
    assert not {"updates", "best_update", "validated_update"} & set(saved)
    assert RunState.from_saved(saved) == state


def test_a_run_saved_by_nmtkit_0_1_reads_back() -> None:
    run = {
        "step": 4,
        "epoch": 1,
        "batch_in_epoch": 6,
        "batches_per_update": 2,
        "best_bleu": None,
        "best_step": None,
        "bad_validations": 0,
        "validated_step": -1,
        "seconds": 1.5,
        "stop_reason": None,
    }
    state = RunState.from_saved(run)
    assert (state.updates, state.batch_in_epoch, state.validated_update) == (4, 6, -1)
    assert state.to_saved() == run


def test_only_a_counted_validation_without_improvement_brings_early_stopping_nearer() -> None:
    state = RunState(updates=3)
    assert state.record_validation(10.0, counts=True)
    assert (state.best_bleu, state.best_update, state.bad_validations) == (10.0, 3, 0)
    state.updates = 6
    assert not state.record_validation(9.0, counts=False)  # the closing validation
    assert (state.bad_validations, state.validated_update) == (0, 6)
    assert not state.record_validation(10.0, counts=True)  # equal is no improvement
    assert state.bad_validations == 1
    state.updates = 9
    assert state.record_validation(11.0, counts=True)
    assert (state.best_bleu, state.best_update, state.bad_validations) == (11.0, 9, 0)
