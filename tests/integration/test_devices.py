"""Training on a device, as far as a machine without a GPU can show it: ``--device`` flows from the
command line through the config to the model's parameters and every batch; a device that is not
here is one line before anything is read or written; fp16 with its loss scaler (the path a GPU
without bf16 takes) trains and resumes exactly; gradient accumulation refuses what cannot make
one update."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from nmtkit.config import load_config
from nmtkit.errors import DataError
from nmtkit.training import trainer
from nmtkit.training.trainer import train
from tests.cli.runs import invoke
from tests.reliability.checks import assert_one_error_line
from tests.toy_corpora import preprocess_toy, reverse_pairs

TINY = ["train.log_every=1", "train.validate_every=3", "search.strategy=greedy"]


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("toy")
    return preprocess_toy(folder, reverse_pairs(300, seed=1), reverse_pairs(20, seed=2))


def test_the_device_flag_sets_train_device(toy: Path, tmp_path: Path) -> None:
    args = ["train", str(toy), "-o", str(tmp_path / "m"), "--print-config"]
    assert "  device: cpu\n" in invoke(args).stdout
    assert "  device: cuda:1\n" in invoke([*args, "--device", "cuda:1"]).stdout
    assert "  device: cuda\n" in invoke([*args, "--set", "train.device=cuda"]).stdout


def test_a_device_that_is_not_here_is_one_line_before_anything_happens(
    toy: Path, tmp_path: Path
) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    result = invoke(["train", str(toy), "-o", str(tmp_path / "m"), "--device", "cuda", "-q"])
    assert_one_error_line(result.exit_code, result.stdout, result.stderr, 2, "--device cuda: ")
    assert not (tmp_path / "m").exists()


def test_the_model_and_every_batch_live_on_the_configured_device(
    toy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[torch.device, ...]] = []
    forward = trainer.LossForward.forward

    def spy(self: trainer.LossForward, batch: trainer.Batch) -> tuple[torch.Tensor, torch.Tensor]:
        param = next(self.model.parameters()).device
        seen.append((param, batch.src.device, batch.tgt_in.device, batch.tgt_out.device))
        return forward(self, batch)

    monkeypatch.setattr(trainer.LossForward, "forward", spy)
    config = load_config(preset="tiny", overrides=[*TINY, "train.max_updates=2"])
    assert config.train.device == "cpu"
    train(toy, tmp_path / "m", config)
    assert len(seen) == 2
    assert {d for devices in seen for d in devices} == {torch.device("cpu")}


def test_fp16_trains_with_a_loss_scaler_and_resumes_exactly(toy: Path, tmp_path: Path) -> None:
    """The GradScaler path of a GPU without bf16, run on the CPU (torch.amp.GradScaler("cpu"))."""
    updates = ["train.max_updates=6"]
    train(toy, tmp_path / "whole", load_config(preset="tiny", overrides=[*TINY, *updates]))
    fp16 = [*TINY, "train.precision=fp16"]
    train(toy, tmp_path / "whole16", load_config(preset="tiny", overrides=[*fp16, *updates]))
    train(
        toy,
        tmp_path / "split",
        load_config(preset="tiny", overrides=[*fp16, "train.max_updates=3"]),
    )
    state = torch.load(tmp_path / "split" / "train_state.pt", weights_only=True)
    assert state["scaler"]["scale"] > 1  # scaled, and saved for the resume
    train(
        toy,
        tmp_path / "split",
        load_config(preset="tiny", overrides=[*fp16, *updates]),
        resume=True,
    )

    def weights(name: str) -> dict[str, torch.Tensor]:
        return torch.load(tmp_path / name / "last.pt", weights_only=True)["model"]

    for key, value in weights("split").items():
        assert torch.equal(value, weights("whole16")[key]), key
        assert torch.isfinite(value).all()
    differs = any(not torch.equal(v, weights("whole")[k]) for k, v in weights("whole16").items())
    assert differs  # fp16 really ran


def test_an_update_needs_as_many_batches_as_it_takes(toy: Path, tmp_path: Path) -> None:
    config = load_config(preset="tiny", overrides=[*TINY, "train.update_freq=50"])
    with pytest.raises(
        DataError,
        match=r"fewer than one update takes: 50 \(train.update_freq=50 on each of 1 rank\)",
    ):
        train(toy, tmp_path / "m", config)
