"""`nmtkit shortlist` and `nmtkit translate --shortlist` on the tiny trained model: the shortlist is
built into the model directory and used; a missing or mismatched one is a one-line error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from nmtkit.checkpoint import SHORTLIST, load_model
from nmtkit.data.batching import collate_source
from nmtkit.shortlist.table import Shortlist
from tests.cli.runs import Invoke, Run, translate_jsonl
from tests.cli.test_cli import out_lines, stdin_of
from tests.cli.test_cli_errors import assert_user_error


def fresh_model_dir(model_dir: Path, folder: Path) -> Path:
    """A model directory of its own (best.pt only), so that a shortlist built in it stays there."""
    folder.mkdir()
    shutil.copy(model_dir / "best.pt", folder / "best.pt")
    return folder


def _fingerprint(model_dir: Path) -> str:
    return load_model(model_dir).vocab.fingerprint


@pytest.fixture(scope="module")
def listed(cli: Invoke, preprocessed: Run, model_dir: Path, tmp_path_factory) -> Run:
    """``nmtkit shortlist`` run once, into a copy of the trained model's directory."""
    folder = fresh_model_dir(model_dir, tmp_path_factory.mktemp("listed") / "model")
    result = cli(["shortlist", str(preprocessed.path), "-m", str(folder), "--top-k", "20"])
    return Run(folder, result)


def test_shortlist_writes_the_file_into_the_model_directory(listed: Run) -> None:
    assert listed.result.exit_code == 0, listed.result.output
    assert (listed.path / SHORTLIST).is_file()
    assert listed.result.stdout == ""
    assert "wrote" in listed.result.stderr and "training pairs" in listed.result.stderr


def test_training_leaves_the_shortlist_that_nmtkit_shortlist_builds(
    cli: Invoke, preprocessed: Run, model_dir: Path, tmp_path: Path
) -> None:
    """``nmtkit train`` ends by writing shortlist.npz (train.shortlist, on by default): the
    same table as ``nmtkit shortlist`` with its defaults builds from the same data dir."""
    folder = fresh_model_dir(model_dir, tmp_path / "model")
    result = cli(["shortlist", str(preprocessed.path), "-m", str(folder)])
    assert result.exit_code == 0, result.output
    fingerprint = _fingerprint(model_dir)
    trained, built = (
        Shortlist.load(d / SHORTLIST, fingerprint=fingerprint) for d in (model_dir, folder)
    )
    for field in ("offsets", "targets", "frequent"):
        np.testing.assert_array_equal(getattr(trained, field), getattr(built, field))
    assert (trained.top_k, trained.num_pairs) == (built.top_k, built.num_pairs)


def test_a_line_translates_the_same_under_the_shortlist_alone_and_in_a_batch(
    cli: Invoke, listed: Run, val_pairs: tuple[list[str], list[str]]
) -> None:
    """Each sentence is searched over its own candidates, so what shares its batch changes
    neither its words nor its score (as ``serve`` needs, whose batches are its clients'). In
    fp32: bf16 products round differently as the batch's candidates change the output layer's
    shape, as batch sizes do without a shortlist."""
    lines = val_pairs[0][:12]
    flags = ("--beam", "3", "--shortlist", "--precision", "fp32")
    together = translate_jsonl(cli, listed.path, lines, *flags)
    for index in (0, 5, 11):
        (alone,) = translate_jsonl(cli, listed.path, [lines[index]], *flags)
        assert alone["hyp"] == together[index]["hyp"]
        assert alone["score"] == pytest.approx(together[index]["score"], abs=1e-4)


def test_translate_with_the_shortlist_writes_one_line_per_input_line(
    cli: Invoke, listed: Run, val_pairs: tuple[list[str], list[str]]
) -> None:
    lines = val_pairs[0][:12]
    result = cli(
        ["translate", "-m", str(listed.path), "--shortlist", "--beam", "3"], input=stdin_of(lines)
    )
    assert result.exit_code == 0, result.output
    assert len(out_lines(result.stdout)) == len(lines)


def test_translate_shortlist_without_one_names_the_command_that_builds_it(
    cli: Invoke, model_dir: Path, tmp_path: Path
) -> None:
    folder = fresh_model_dir(model_dir, tmp_path / "model")
    result = cli(["translate", "-m", str(folder), "--shortlist"], input="A dog.\n")
    assert_user_error(result, 1, str(folder), "no shortlist.npz", "nmtkit shortlist DATA_DIR -m")
    assert result.stdout == ""


def test_translate_refuses_a_shortlist_of_another_vocabulary(
    cli: Invoke, listed: Run, tmp_path: Path
) -> None:
    folder = fresh_model_dir(listed.path, tmp_path / "model")
    built = Shortlist.load(listed.path / SHORTLIST, fingerprint=_fingerprint(listed.path))
    Shortlist(
        offsets=built.offsets,
        targets=built.targets,
        frequent=built.frequent,
        tgt_vocab_size=built.tgt_vocab_size,
        fingerprint="0" * 64,
        top_k=built.top_k,
        num_pairs=built.num_pairs,
    ).save(folder / SHORTLIST)
    result = cli(["translate", "-m", str(folder), "--shortlist"], input="A dog.\n")
    assert_user_error(result, 1, SHORTLIST, "another vocabulary", "nmtkit shortlist")


def test_shortlist_refuses_a_data_dir_of_another_vocabulary(
    cli: Invoke, preprocessed: Run, model_dir: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    shutil.copytree(preprocessed.path, data)
    manifest = json.loads((data / "manifest.json").read_text("utf-8"))
    manifest["src_lang"], manifest["tgt_lang"] = manifest["tgt_lang"], manifest["src_lang"]
    (data / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    folder = fresh_model_dir(model_dir, tmp_path / "model")
    result = cli(["shortlist", str(data), "-m", str(folder)])
    assert_user_error(result, 1, str(data), "vocabulary", "the data dir the model was trained on")
    assert not (folder / SHORTLIST).exists()


@pytest.mark.parametrize(("flag", "value"), [("--top-k", "0"), ("--frequent", "-1")])
def test_shortlist_refuses_options_out_of_range(
    cli: Invoke, preprocessed: Run, model_dir: Path, flag: str, value: str
) -> None:
    result = cli(["shortlist", str(preprocessed.path), "-m", str(model_dir), flag, value])
    assert_user_error(result, 2, flag)


def test_the_built_shortlist_keeps_at_most_top_k_targets_per_source_piece(listed: Run) -> None:
    built = Shortlist.load(listed.path / SHORTLIST, fingerprint=_fingerprint(listed.path))
    assert built.top_k == 20
    assert np.diff(built.offsets).max() <= 20


def test_constraint_pieces_are_always_candidates_of_the_shortlist(
    cli: Invoke, listed: Run, val_pairs: tuple[list[str], list[str]], tmp_path: Path
) -> None:
    """A constraint's pieces join its sentence's candidates, even where no source piece of the
    batch lists them."""
    table = Shortlist.load(listed.path / SHORTLIST, fingerprint=_fingerprint(listed.path))
    loaded = load_model(listed.path)
    tgt_text, src_text = loaded.tgt_text, loaded.src_text
    lines = val_pairs[0][:2]
    src, _ = collate_source([src_text.encode(line) for line in lines])
    candidates = set(table.candidates(src).tolist())
    term = next(
        word
        for word in ("Zeppelin", "Quarz", "Xylophon", "Fjord")
        if not set(tgt_text.encode(word)) <= candidates
    )
    constraints = tmp_path / "c.txt"
    constraints.write_text(f"{term}\n\n", "utf-8")
    args = ["translate", "-m", str(listed.path), "--shortlist", "--constraints", str(constraints)]
    result = cli(args, input=stdin_of(lines))
    assert result.exit_code == 0, result.output
    first, _ = out_lines(result.stdout)
    assert term in first
