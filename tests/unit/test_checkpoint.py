"""Checkpoint files: a checksum written with them and checked on load, the previous train state
kept beside the newest, and a full disk reported as one error naming the file."""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest
import torch

from nmtkit import checkpoint as ckpt
from nmtkit.errors import CheckpointError, DataError


def a_state(step: int) -> dict[str, object]:
    """A payload shaped like a train state: nested tensors of several dtypes, numbers, text."""
    with torch.random.fork_rng():
        torch.manual_seed(step)
        model = torch.nn.GRU(8, 16)
        optimizer = torch.optim.Adam(model.parameters(), betas=(0.9, 0.98))
        model(torch.randn(3, 2, 8))[0].sum().backward()
        optimizer.step()
        rng = torch.get_rng_state()
    return {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "run": {"step": step, "best_bleu": None, "seconds": 1.5, "stop_reason": None},
        "rng": rng,
        "py_rng": list(random.Random(step).getstate()[1]),
        "extra": {"flag": torch.tensor([True, False]), "half": torch.ones(3, dtype=torch.bfloat16)},
        "config": {"model": {"name": "rnnsearch"}, "betas": (0.9, 0.98)},
    }


def flip_byte_of(path: Path, tensor: torch.Tensor, at: int = 5) -> None:
    """Flip one bit inside ``tensor``'s bytes in the file, as a failing disk would."""
    data = bytearray(path.read_bytes())
    offset = bytes(data).find(tensor.numpy().tobytes())
    assert offset > 0
    data[offset + at] ^= 0x40
    path.write_bytes(bytes(data))


@pytest.fixture
def nmtkit_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """caplog for nmtkit's loggers, which do not propagate once the CLI set logging up."""
    logger = logging.getLogger("nmtkit")
    level, propagate = logger.level, logger.propagate
    logger.addHandler(caplog.handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False  # one record each, whether or not the CLI set logging up
    yield caplog
    logger.removeHandler(caplog.handler)
    logger.setLevel(level)
    logger.propagate = propagate


def test_a_saved_state_loads_back_equal_and_checked(tmp_path: Path) -> None:
    state = a_state(1)
    ckpt.save_train_state(tmp_path / "train_state.pt", state)
    raw = torch.load(tmp_path / "train_state.pt", weights_only=True)
    assert raw["sha256"] == ckpt.payload_digest(state)
    loaded = ckpt.load_train_state(tmp_path / "train_state.pt")
    assert "sha256" not in loaded
    assert ckpt.payload_digest(loaded) == ckpt.payload_digest(state)
    assert torch.equal(loaded["model"]["weight_hh_l0"], state["model"]["weight_hh_l0"])  # type: ignore[index]


def test_the_digest_sees_every_value_and_every_name() -> None:
    state = a_state(1)
    digest = ckpt.payload_digest(state)
    assert ckpt.payload_digest(a_state(1)) == digest
    changed = a_state(1)
    changed["model"]["bias_ih_l0"][3] += 1e-6  # type: ignore[index]
    assert ckpt.payload_digest(changed) != digest
    renamed = a_state(1)
    renamed["model"]["other"] = renamed["model"].pop("bias_ih_l0")  # type: ignore[attr-defined]
    assert ckpt.payload_digest(renamed) != digest
    stepped = a_state(1)
    stepped["run"]["step"] = 2  # type: ignore[index]
    assert ckpt.payload_digest(stepped) != digest
    reshaped = a_state(1)
    reshaped["extra"]["half"] = torch.ones(1, 3, dtype=torch.bfloat16)  # type: ignore[index]
    assert ckpt.payload_digest(reshaped) != digest


def test_a_flipped_byte_in_a_weight_is_one_error_naming_the_file(tmp_path: Path) -> None:
    state = a_state(1)
    path = tmp_path / "train_state.pt"
    ckpt.save_train_state(path, state)
    flip_byte_of(path, state["model"]["weight_ih_l0"])  # type: ignore[index]
    with pytest.raises(CheckpointError) as caught:
        ckpt.load_train_state(path)
    assert str(caught.value) == (
        f"{path}: damaged: its contents do not match the checksum written with them"
    )


def test_a_file_without_a_checksum_loads_unchecked_with_a_debug_line(
    tmp_path: Path, nmtkit_logs: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "train_state.pt"
    torch.save(a_state(1), path)  # as nmtkit wrote it before checksums
    assert ckpt.load_train_state(path)["run"]["step"] == 1  # type: ignore[index]
    records = [r for r in nmtkit_logs.records if "no checksum" in r.getMessage()]
    assert len(records) == 1 and records[0].levelno == logging.DEBUG


def test_each_save_keeps_the_state_it_replaces(tmp_path: Path) -> None:
    path = tmp_path / "train_state.pt"
    ckpt.save_train_state(path, a_state(1))
    assert not (tmp_path / "train_state.prev.pt").exists()
    ckpt.save_train_state(path, a_state(2))
    ckpt.save_train_state(path, a_state(3))
    assert ckpt.load_train_state(path)["run"]["step"] == 3
    assert ckpt.load_train_state(tmp_path / "train_state.prev.pt")["run"]["step"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train_state.prev.pt", "train_state.pt"]


@pytest.mark.parametrize("newest", ["damaged", "missing"])
def test_the_latest_state_falls_back_to_the_previous_one_with_a_warning(
    tmp_path: Path, nmtkit_logs: pytest.LogCaptureFixture, newest: str
) -> None:
    path = tmp_path / "train_state.pt"
    ckpt.save_train_state(path, a_state(1))
    state = a_state(2)
    ckpt.save_train_state(path, state)
    if newest == "damaged":
        flip_byte_of(path, state["rng"])  # type: ignore[arg-type]
    else:
        path.unlink()  # killed between the two renames of a save
    loaded, source = ckpt.load_latest_train_state(tmp_path)
    assert source == tmp_path / "train_state.prev.pt" and loaded["run"]["step"] == 1
    warnings = [r.getMessage() for r in nmtkit_logs.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"{path}: {newest}")
    assert warnings[0].endswith(
        "resuming from the state saved before it, train_state.prev.pt (step 1)"
    )


def test_the_latest_state_is_the_newest_when_it_is_sound(tmp_path: Path) -> None:
    path = tmp_path / "train_state.pt"
    ckpt.save_train_state(path, a_state(1))
    ckpt.save_train_state(path, a_state(2))
    loaded, source = ckpt.load_latest_train_state(tmp_path)
    assert (source, loaded["run"]["step"]) == (path, 2)


def test_both_states_damaged_is_the_newest_ones_error(tmp_path: Path) -> None:
    path = tmp_path / "train_state.pt"
    for step in (1, 2):
        ckpt.save_train_state(path, a_state(step))
    for name in ("train_state.pt", "train_state.prev.pt"):
        (tmp_path / name).write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match=r"train_state\.pt: not an nmtkit checkpoint"):
        ckpt.load_latest_train_state(tmp_path)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_is_one_error_naming_the_file_and_keeps_the_old_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "train_state.pt"
    ckpt.save_train_state(path, a_state(1))
    before = path.read_bytes()

    def full_disk(file: object, mode: str = "r", *args: object, **kwargs: object) -> IO[bytes]:
        return open("/dev/full", "wb")  # noqa: SIM115 (atomic_write closes it)

    monkeypatch.setattr("nmtkit.outputs.open", full_disk, raising=False)
    with pytest.raises(DataError) as caught:
        ckpt.save_train_state(path, a_state(2))
    assert str(caught.value) == f"{path}: cannot write: No space left on device"
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train_state.pt"]


def a_model_checkpoint(path: Path, *, decoder_keys: dict[str, str]) -> dict[str, torch.Tensor]:
    """Save a tiny model to ``path`` with its parameter names changed by ``decoder_keys`` (new
    prefix -> the prefix written), as an older nmtkit wrote them; return its weights."""
    from nmtkit.config import load_config
    from nmtkit.data.text import TextSettings, train_sentencepiece
    from nmtkit.models import build_model

    lines = [f"{word} {number}" for word in ("a dog", "the cat", "one bird") for number in range(9)]
    spm = train_sentencepiece(lines, model_type="bpe", vocab_size=40)
    vocab = ckpt.Vocabulary(
        src_lang="en",
        tgt_lang="de",
        settings=TextSettings(normalize=False),
        src_spm=spm,
        tgt_spm=spm,
        max_src_len=9,
    )
    config = load_config(preset="tiny")
    size = vocab.pipelines()[0].vocab_size
    torch.manual_seed(0)
    model = build_model(config.model, src_vocab_size=size, tgt_vocab_size=size, pad_id=0)
    ckpt.save_checkpoint(path, model=model, config=config, vocab=vocab, step=1, bleu=None)
    payload = torch.load(path, weights_only=True)
    payload.pop("sha256")
    renamed = {}
    for name, tensor in payload["model"].items():
        for new, old in decoder_keys.items():
            name = name.replace(new, old) if name.startswith(new) else name
        renamed[name] = tensor
    payload["model"] = renamed
    ckpt._save(path, payload)
    return model.state_dict()


def test_a_checkpoint_with_the_old_name_of_u_o_loads_under_the_new_one(tmp_path: Path) -> None:
    """Checkpoints written before the readout's U_o was renamed (``readout_state`` ->
    ``readout_hidden``) load with the same weights."""
    path = tmp_path / "best.pt"
    weights = a_model_checkpoint(
        path, decoder_keys={"decoder.readout_hidden.": "decoder.readout_state."}
    )
    saved = torch.load(path, weights_only=True)["model"]
    assert "decoder.readout_state.weight" in saved and "decoder.readout_hidden.weight" not in saved
    loaded = ckpt.load_model(path).model.state_dict()
    assert list(loaded) == list(weights)
    assert all(torch.equal(loaded[name], weights[name]) for name in weights)


def test_a_checkpoint_whose_config_names_no_decoder_loads_the_gru_it_was_written_with(
    tmp_path: Path,
) -> None:
    """Files written while ``gru`` was the default decoder rebuild a ``gru``, not today's
    default (``cgru``), whatever their config leaves out."""
    path = tmp_path / "best.pt"
    weights = a_model_checkpoint(path, decoder_keys={})
    payload = torch.load(path, weights_only=True)
    payload.pop("sha256")
    del payload["config"]["model"]["decoder"]["name"]
    ckpt._save(path, payload)
    loaded = ckpt.load_model(path).model
    assert type(loaded.decoder).__name__ == "GRUDecoder"
    assert all(torch.equal(loaded.state_dict()[name], weights[name]) for name in weights)


def test_a_train_state_with_the_old_name_of_u_o_loads_under_the_new_one(tmp_path: Path) -> None:
    state = a_state(1)
    weight = torch.ones(4, 2)
    state["model"] = {"decoder.readout_state.weight": weight, "decoder.output.bias": weight[0]}
    state["config"] = {"model": {"decoder": {"name": "gru"}}}
    ckpt.save_train_state(tmp_path / "train_state.pt", state)
    loaded = ckpt.load_train_state(tmp_path / "train_state.pt")["model"]
    assert list(loaded) == ["decoder.readout_hidden.weight", "decoder.output.bias"]
    assert torch.equal(loaded["decoder.readout_hidden.weight"], weight)


def test_renaming_touches_only_the_decoder_that_renamed_its_parameters() -> None:
    weights = {"decoder.readout_state.weight": torch.zeros(1), "encoder.rnn.weight": torch.ones(1)}
    plugin = {"model": {"decoder": {"name": "my-plugin"}}}
    assert ckpt.renamed_parameters(weights, config=plugin) is weights
    default = ckpt.renamed_parameters(weights, config={"model": {}})  # names none: gru's file
    assert list(default) == ["decoder.readout_hidden.weight", "encoder.rnn.weight"]
