"""train.keep_last keeps the newest checkpoints by update, and nmtkit average turns them (or any
checkpoints of one model) into one that every command loads: one checkpoint averages to itself,
two to their mean, and checkpoints of different models are refused naming the file."""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
from pathlib import Path

import pytest
import torch

from nmtkit import checkpoint as ckpt
from nmtkit.config import load_config
from nmtkit.errors import CheckpointError, ConfigError
from nmtkit.models import build_model
from nmtkit.training.averaging import average_checkpoints, last_checkpoints
from nmtkit.training.data import TrainingData
from nmtkit.training.validation import validation_nll
from tests.cli.runs import invoke
from tests.toy_corpora import preprocess_toy, reverse_pairs


@pytest.fixture(scope="module")
def toy_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small preprocessed reverse corpus: 300 training and 20 validation pairs."""
    folder = tmp_path_factory.mktemp("toy")
    return preprocess_toy(folder, reverse_pairs(300, seed=1), reverse_pairs(20, seed=2))


def train(data: Path, model_dir: Path, *extra: str) -> None:
    args = ["train", str(data), "-o", str(model_dir), "--preset", "tiny", "--threads", "1"]
    result = invoke([*args, "--set", "train.validate_every=2", "--set", "train.patience=0", *extra])
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def kept_run(toy_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """11 updates validated every 2 (and at the end), keeping the last 3 checkpoints."""
    model_dir = tmp_path_factory.mktemp("kept") / "model"
    train(toy_data, model_dir, "--max-updates", "11", "--set", "train.keep_last=3")
    return model_dir


def kept(model_dir: Path) -> list[str]:
    return [path.name for _, path in ckpt.kept_checkpoints(model_dir)]


def weights(path: Path) -> dict[str, torch.Tensor]:
    return ckpt.load_model(path).model.state_dict()


def test_keep_last_leaves_exactly_the_newest_checkpoints(kept_run: Path) -> None:
    assert kept(kept_run) == ["checkpoint_8.pt", "checkpoint_10.pt", "checkpoint_11.pt"]
    assert ckpt.load_model(kept_run / "checkpoint_10.pt").step == 10
    last = weights(kept_run / "last.pt")
    newest = weights(kept_run / "checkpoint_11.pt")
    assert all(torch.equal(last[name], newest[name]) for name in last)
    assert not list(kept_run.glob("*.tmp"))


def test_the_averaged_last_checkpoints_load_everywhere_a_model_does(
    kept_run: Path, toy_data: Path, tmp_path: Path
) -> None:
    result = invoke(["average", str(kept_run), "--last", "3", "-o", str(tmp_path / "avg")])
    assert result.exit_code == 0, result.output
    # the training run's shortlist comes along: it belongs to the data and vocabulary
    assert (kept_run / "shortlist.npz").is_file()
    assert sorted(p.name for p in (tmp_path / "avg").iterdir()) == [
        "best.pt",
        "config.yaml",
        "shortlist.npz",
    ]
    payload = torch.load(tmp_path / "avg" / "best.pt", weights_only=True)
    assert [(s["step"], Path(s["path"]).name) for s in payload["averaged_from"]] == [
        (8, "checkpoint_8.pt"),
        (10, "checkpoint_10.pt"),
        (11, "checkpoint_11.pt"),
    ]
    assert payload["step"] == 11
    lines = (toy_data / "valid.raw.src").read_text().splitlines()
    for extra in ([], ["--shortlist"]):
        translated = invoke(
            ["translate", "-m", str(tmp_path / "avg"), *extra], input="\n".join(lines) + "\n"
        )
        assert translated.exit_code == 0, translated.output
        assert len(translated.stdout.splitlines()) == len(lines)
    (tmp_path / "hyp").write_text(translated.stdout)
    pairs = ["--source", str(toy_data / "valid.raw.src"), "--target", str(tmp_path / "hyp")]
    for command in (["align"], ["score-pairs"]):
        done = invoke([*command, "-m", str(tmp_path / "avg" / "best.pt"), *pairs])
        assert done.exit_code == 0, done.output
        assert len(done.stdout.splitlines()) == len(lines)


def test_one_checkpoint_averages_to_itself(kept_run: Path, tmp_path: Path) -> None:
    result = average_checkpoints([kept_run / "checkpoint_10.pt"], tmp_path / "one.pt")
    assert result.steps == (10,)
    assert result.shortlist is None and not (tmp_path / "shortlist.npz").exists()  # a file
    original, averaged = weights(kept_run / "checkpoint_10.pt"), weights(tmp_path / "one.pt")
    assert original.keys() == averaged.keys()
    assert all(torch.equal(original[name], averaged[name]) for name in original)


def test_a_damaged_shortlist_is_left_behind_with_a_warning(
    kept_run: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source = tmp_path / "run"
    source.mkdir()
    shutil.copy(kept_run / "checkpoint_11.pt", source)
    (source / "shortlist.npz").write_bytes(b"not a shortlist")
    with caplog.at_level(logging.WARNING, logger="nmtkit"):
        result = average_checkpoints([source / "checkpoint_11.pt"], tmp_path / "avg")
    assert result.shortlist is None
    assert sorted(p.name for p in (tmp_path / "avg").iterdir()) == ["best.pt", "config.yaml"]
    assert "shortlist.npz not carried into" in caplog.text


def test_two_checkpoints_average_to_their_mean(kept_run: Path, tmp_path: Path) -> None:
    paths = [kept_run / "checkpoint_8.pt", kept_run / "checkpoint_11.pt"]
    average_checkpoints(paths, tmp_path / "two.pt")
    a, b = weights(paths[0]), weights(paths[1])
    averaged = weights(tmp_path / "two.pt")
    for name, tensor in averaged.items():
        expected = ((a[name].double() + b[name].double()) / 2).to(tensor.dtype)
        assert torch.equal(tensor, expected), name
    assert not torch.equal(a["src_embed.weight"], b["src_embed.weight"])


def test_last_n_picks_the_newest_by_update_number(kept_run: Path, tmp_path: Path) -> None:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    for step in (9, 10, 100):  # 100 sorts before 9 as text
        shutil.copy(kept_run / "checkpoint_8.pt", model_dir / f"checkpoint_{step}.pt")
    (model_dir / "checkpoint_x.pt").write_bytes(b"not kept")
    assert [p.name for p in last_checkpoints(model_dir, 2)] == [
        "checkpoint_10.pt",
        "checkpoint_100.pt",
    ]
    with pytest.raises(
        CheckpointError, match="keeps 3 checkpoint_<update>.pt, fewer than --last 4"
    ):
        last_checkpoints(model_dir, 4)
    with pytest.raises(ConfigError):
        last_checkpoints(model_dir, 0)


def save_variant(
    kept_run: Path,
    path: Path,
    *,
    vocab_change: dict[str, str] | None = None,
    model_override: str | None = None,
) -> None:
    """A checkpoint like ``checkpoint_10.pt`` with another vocabulary or model config."""
    loaded = ckpt.load_model(kept_run / "checkpoint_10.pt")
    config, model = loaded.config, loaded.model
    if model_override is not None:
        config = load_config(preset="tiny", overrides=[model_override])
        model = build_model(
            config.model,
            src_vocab_size=loaded.src_text.vocab_size,
            tgt_vocab_size=loaded.tgt_text.vocab_size,
            pad_id=0,
        )
    vocab = dataclasses.replace(loaded.vocab, **(vocab_change or {}))
    ckpt.save_checkpoint(path, model=model, config=config, vocab=vocab, step=3, bleu=None)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"model_override": "model.embed_size=16"}, "another model than .*model.embed_size is 16"),
        ({"vocab_change": {"tgt_lang": "xx"}}, "another vocabulary than"),
    ],
    ids=["architecture", "vocabulary"],
)
def test_checkpoints_of_another_model_are_refused_naming_the_file(
    kept_run: Path, tmp_path: Path, change: dict, message: str
) -> None:
    other = tmp_path / "other.pt"
    save_variant(kept_run, other, **change)
    with pytest.raises(CheckpointError, match=message) as info:
        average_checkpoints([kept_run / "checkpoint_10.pt", other], tmp_path / "out.pt")
    assert str(info.value).startswith(f"{other}: ")
    assert not list(tmp_path.glob("out.pt*"))
    result = invoke(["average", str(kept_run / "checkpoint_10.pt"), str(other), "-o", "x.pt"])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"nmtkit: error: {other}: another ")
    assert "Traceback" not in result.output


def test_an_existing_output_or_model_directory_needs_overwrite(
    kept_run: Path, tmp_path: Path
) -> None:
    source = [kept_run / "checkpoint_10.pt"]
    with pytest.raises(CheckpointError, match="holds a model: best.pt, last.pt"):
        average_checkpoints(source, kept_run)
    average_checkpoints(source, tmp_path / "avg.pt")
    with pytest.raises(CheckpointError, match="already exists"):
        average_checkpoints(source, tmp_path / "avg.pt")
    average_checkpoints(source, tmp_path / "avg.pt", overwrite=True)
    with pytest.raises(ConfigError, match="given twice"):
        average_checkpoints([*source, kept_run / "checkpoint_10.pt"], tmp_path / "b.pt")


def test_resume_drops_kept_checkpoints_newer_than_the_run_and_overwrite_all(
    toy_data: Path, tmp_path: Path
) -> None:
    model_dir = tmp_path / "model"
    train(toy_data, model_dir, "--max-updates", "4", "--set", "train.keep_last=5")
    assert kept(model_dir) == ["checkpoint_2.pt", "checkpoint_4.pt"]
    shutil.copy(model_dir / "checkpoint_4.pt", model_dir / "checkpoint_9.pt")  # a killed run's
    (model_dir / "checkpoint_6.pt.tmp").write_bytes(b"half")
    train(toy_data, model_dir, "--max-updates", "6", "--set", "train.keep_last=2", "--resume")
    assert kept(model_dir) == ["checkpoint_4.pt", "checkpoint_6.pt"]
    assert not list(model_dir.glob("*.tmp"))
    train(toy_data, model_dir, "--max-updates", "1", "--overwrite")  # keep_last 0: none kept
    assert kept(model_dir) == []


def test_each_validation_scores_the_weights_of_its_own_update(
    toy_data: Path, kept_run: Path
) -> None:
    """The val_loss logged at update N is that of checkpoint_N.pt scored afresh: nothing the
    model caches between steps (a fused optimizer changes parameters in place without bumping
    their versions) can make a validation score older weights."""
    logged = {
        record["step"]: record["val_loss"]
        for record in map(json.loads, (kept_run / "metrics.jsonl").read_text().splitlines())
        if record["kind"] == "valid"
    }
    valid = TrainingData.load(toy_data).valid
    assert valid is not None
    for step, path in ckpt.kept_checkpoints(kept_run):
        loaded = ckpt.load_model(path)
        train = loaded.config.train
        fresh = validation_nll(
            loaded.model,
            valid,
            max_tokens=train.max_tokens,
            max_sentences=train.max_sentences,
            precision=train.precision,
        )
        assert fresh == pytest.approx(logged[step], rel=1e-4, abs=1e-5), step
