"""Bad input and bad usage: one 'nmtkit: error:' line, exit 1 or 2, no traceback, nothing half-made.

Exit 1 is bad input (files, corpora, checkpoints), exit 2 bad usage (options, config keys).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from typer.testing import Result

from tests.cli.runs import NUM_TRAIN, Invoke, Run


def assert_user_error(result: Result, exit_code: int, *fragments: str) -> str:
    """Check for one clean error line holding ``fragments``, and return it."""
    assert "Traceback" not in result.output, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)  # not a crash
    assert result.exit_code == exit_code, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("nmtkit: error:")]
    assert len(errors) == 1, result.stderr
    for fragment in fragments:
        assert fragment in errors[0], (fragment, errors[0])
    assert "nmtkit: error:" not in result.stdout
    return errors[0]


def assert_usage_error(result: Result, *fragments: str) -> None:
    """Click's own usage errors: exit 2 with its message, and no traceback."""
    assert "Traceback" not in result.output, result.output
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    for fragment in fragments:
        assert fragment in result.stderr, (fragment, result.stderr)


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines), "utf-8")
    return path


def preprocess_args(trainpref: Path, destdir: Path, *extra: str) -> list[str]:
    return [
        "preprocess",
        *("-s", "en", "-t", "de"),
        *("--trainpref", str(trainpref), "--destdir", str(destdir)),
        *("--vocab-size", "300", *extra),
    ]


def copy_corpus(corpus_dir: Path, folder: Path, split: str = "train") -> Path:
    """Copy ``split.{en,de}`` into ``folder`` as ``corpus.{en,de}``; return the prefix."""
    for lang in ("en", "de"):
        shutil.copy(corpus_dir / f"{split}.{lang}", folder / f"corpus.{lang}")
    return folder / "corpus"


def break_utf8(path: Path, line_number: int) -> None:
    lines = path.read_bytes().split(b"\n")
    lines[line_number - 1] = b"Ein \xff\xfe Hund"
    path.write_bytes(b"\n".join(lines))


def nothing_beside(destdir: Path) -> list[Path]:
    """Whatever preprocess left at ``destdir`` or in a staging folder beside it."""
    return sorted(destdir.parent.glob(f"{destdir.name}*"))


# ------------------------------------------------------------------------------ line counts


@pytest.mark.parametrize("split", ["train", "valid"])
def test_preprocess_names_both_files_and_counts_when_line_counts_differ(
    cli: Invoke, corpus_dir: Path, tmp_path: Path, split: str
) -> None:
    prefix = copy_corpus(corpus_dir, tmp_path, split)
    lines = (tmp_path / "corpus.de").read_text("utf-8").splitlines()
    write_lines(tmp_path / "corpus.de", lines[:-1])
    destdir = tmp_path / "data"
    if split == "train":
        args = preprocess_args(prefix, destdir)
    else:
        args = preprocess_args(corpus_dir / "train", destdir, "--validpref", str(prefix))
    result = cli(args)
    n = len(lines)
    assert_user_error(result, 1, "corpus.en", f"{n} lines", "corpus.de", f"has {n - 1}")
    assert nothing_beside(destdir) == []


def test_score_names_both_files_and_counts_when_line_counts_differ(
    cli: Invoke, tmp_path: Path
) -> None:
    hyp = write_lines(tmp_path / "hyp.de", ["Ein Hund.", "Eine Katze.", "Ein Haus."])
    ref = write_lines(tmp_path / "ref.de", ["Ein Hund.", "Eine Katze."])
    result = cli(["score", "-r", str(ref), "-i", str(hyp)])
    assert_user_error(result, 1, "hyp.de has 3 lines", "ref.de has 2")
    assert result.stdout == ""


def test_score_names_stdin_when_piped_hypotheses_differ_in_count(
    cli: Invoke, tmp_path: Path
) -> None:
    ref = write_lines(tmp_path / "ref.de", ["Ein Hund.", "Eine Katze."])
    result = cli(["score", "-r", str(ref), "--json"], input="Ein Hund.\n")
    assert_user_error(result, 1, "<stdin> has 1 lines", "ref.de has 2")
    assert result.stdout == ""


def test_score_names_the_system_whose_line_count_differs(cli: Invoke, tmp_path: Path) -> None:
    base = write_lines(tmp_path / "base.de", ["Ein Hund.", "Eine Katze."])
    other = write_lines(tmp_path / "other.de", ["Ein Hund."])
    ref = write_lines(tmp_path / "ref.de", ["Ein Hund.", "Eine Katze."])
    result = cli(["score", "-r", str(ref), str(base), str(other), "--paired-bs"])
    assert_user_error(result, 1, "other.de has 1 lines", "ref.de has 2")
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--by-length", "--buckets", "0,10,x"], "--buckets '0,10,x'"),
        (["--by-length", "--buckets", "10,20"], "first bucket edge must be 0"),
        (["--buckets", "0,10"], "--buckets is used only with --by-length"),
        (["--by-length", "--bucket-by", "source"], "--source"),
        (["--paired-bs", "--paired-ar"], "exclude each other"),
        (["--paired-ar"], "two systems"),
        (["--plot", "fig.bmp"], "unknown image format"),
    ],
    ids=[
        "not-a-number",
        "not-from-0",
        "without-by-length",
        "no-source",
        "two-tests",
        "one-system",
        "bmp",
    ],
)
def test_score_bad_analysis_options_are_usage_errors(
    cli: Invoke, tmp_path: Path, extra: list[str], fragment: str
) -> None:
    ref = write_lines(tmp_path / "ref.de", ["Ein Hund."])
    result = cli(["score", "-r", str(ref), *extra], input="Ein Hund.\n")
    assert_user_error(result, 2, fragment)
    assert result.stdout == ""
    assert sorted(tmp_path.iterdir()) == [ref]


def test_align_names_both_files_and_counts_when_line_counts_differ(
    cli: Invoke, model_dir: Path, tmp_path: Path
) -> None:
    src = write_lines(tmp_path / "src.en", ["A dog.", "A cat.", "A house."])
    tgt = write_lines(tmp_path / "tgt.de", ["Ein Hund.", "Eine Katze."])
    out = tmp_path / "out.align"
    args = ["align", "-m", str(model_dir), "--source", str(src), "--target", str(tgt)]
    result = cli([*args, "--output", str(out)])
    assert_user_error(result, 1, "src.en has 3 lines", "tgt.de has 2")
    assert result.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.en", "tgt.de"]


def test_preprocess_leaves_a_destdir_that_is_not_a_data_dir_alone(
    cli: Invoke, corpus_dir: Path, tmp_path: Path
) -> None:
    destdir = tmp_path / "notes"
    destdir.mkdir()
    (destdir / "todo.txt").write_text("keep me\n", "utf-8")
    result = cli(preprocess_args(corpus_dir / "train", destdir))
    assert_user_error(result, 1, "notes", "not an nmtkit data directory")
    assert [p.name for p in destdir.iterdir()] == ["todo.txt"]
    assert nothing_beside(destdir) == [destdir]


# ------------------------------------------------------------------------------ invalid UTF-8


def test_preprocess_names_file_and_line_of_invalid_utf8(
    cli: Invoke, corpus_dir: Path, tmp_path: Path
) -> None:
    prefix = copy_corpus(corpus_dir, tmp_path)
    break_utf8(tmp_path / "corpus.de", 5)
    destdir = tmp_path / "data"
    error = assert_user_error(cli(preprocess_args(prefix, destdir)), 1, "corpus.de:5", "UTF-8")
    assert "--skip-invalid" in error
    assert nothing_beside(destdir) == []


def test_preprocess_skip_invalid_drops_and_counts_invalid_pairs(
    cli: Invoke, corpus_dir: Path, tmp_path: Path
) -> None:
    prefix = copy_corpus(corpus_dir, tmp_path)
    break_utf8(tmp_path / "corpus.de", 5)
    break_utf8(tmp_path / "corpus.en", 9)
    destdir = tmp_path / "data"
    result = cli(preprocess_args(prefix, destdir, "--skip-invalid"))
    assert result.exit_code == 0, result.output
    manifest = json.loads((destdir / "manifest.json").read_text("utf-8"))
    assert manifest["clean_counts"]["invalid_utf8"] == 2
    assert manifest["splits"]["train"]["num_sentences"] == NUM_TRAIN - 2
    assert "invalid_utf8 2" in " ".join(result.stderr.split())


def test_translate_names_the_line_of_invalid_utf8_and_writes_no_output_file(
    cli: Invoke, model_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out.de"
    args = ["translate", "-m", str(model_dir), "--output", str(out)]
    result = cli(args, input=b"A dog.\nA \xff cat.\n")
    error = assert_user_error(result, 1, "<stdin>:2", "UTF-8")
    assert "--skip-invalid" not in error  # translate has no such flag
    assert list(tmp_path.iterdir()) == []


def test_score_names_file_and_line_of_invalid_utf8(cli: Invoke, tmp_path: Path) -> None:
    ref = write_lines(tmp_path / "ref.de", ["Ein Hund.", "Eine Katze."])
    hyp = tmp_path / "hyp.de"
    hyp.write_bytes(b"Ein Hund.\nEine \xff Katze.\n")
    assert_user_error(cli(["score", "-r", str(ref), "-i", str(hyp)]), 1, "hyp.de:2", "UTF-8")


def test_align_names_file_and_line_of_invalid_utf8(
    cli: Invoke, model_dir: Path, tmp_path: Path
) -> None:
    src = tmp_path / "src.en"
    src.write_bytes(b"A dog.\nA \xff cat.\n")
    tgt = write_lines(tmp_path / "tgt.de", ["Ein Hund.", "Eine Katze."])
    out = tmp_path / "out.align"
    args = ["align", "-m", str(model_dir), "--source", str(src), "--target", str(tgt)]
    assert_user_error(cli([*args, "--output", str(out)]), 1, "src.en:2", "UTF-8")
    assert not out.exists()


# ------------------------------------------------------------------------------ missing files


def missing_file_cases(model_dir: Path, corpus_dir: Path, missing: Path) -> dict[str, list[str]]:
    here = str(corpus_dir / "valid.en")
    return {
        "preprocess": preprocess_args(missing, missing.parent / "data"),
        "train-data": ["train", str(missing), "-o", str(missing.parent / "model")],
        "translate-input": ["translate", "-m", str(model_dir), "-i", str(missing)],
        "translate-model": ["translate", "-m", str(missing)],
        "score-ref": ["score", "-r", str(missing), "-i", here],
        "score-hyp": ["score", "-r", here, "-i", str(missing)],
        "align-source": [
            *("align", "-m", str(model_dir)),
            *("--source", str(missing), "--target", here),
        ],
        "align-model": ["align", "-m", str(missing), "--source", here, "--target", here],
    }


MISSING_CASES = [
    "preprocess",
    "train-data",
    "translate-input",
    "translate-model",
    "score-ref",
    "score-hyp",
    "align-source",
    "align-model",
]


@pytest.mark.parametrize("case", MISSING_CASES)
def test_missing_file_is_named_in_one_error_line(
    cli: Invoke, model_dir: Path, corpus_dir: Path, tmp_path: Path, case: str
) -> None:
    missing = tmp_path / "nowhere.txt"
    args = missing_file_cases(model_dir, corpus_dir, missing)[case]
    result = cli(args)
    assert_user_error(result, 1, "nowhere.txt")
    assert result.stdout == ""
    assert sorted(tmp_path.iterdir()) == []


def test_missing_config_file_is_a_usage_error(
    cli: Invoke, preprocessed: Run, tmp_path: Path
) -> None:
    args = ["train", str(preprocessed.path), "-o", str(tmp_path / "model")]
    result = cli([*args, "-c", str(tmp_path / "missing.yaml")])
    assert_user_error(result, 2, "missing.yaml")
    assert not (tmp_path / "model").exists()


# ------------------------------------------------------------------------------ config keys


def test_unknown_key_in_set_names_the_valid_keys(
    cli: Invoke, preprocessed: Run, tmp_path: Path
) -> None:
    args = ["train", str(preprocessed.path), "-o", str(tmp_path / "model"), "--preset", "tiny"]
    result = cli([*args, "--set", "train.lrr=0.1"])
    error = assert_user_error(
        result, 2, "train.lrr: unknown key 'lrr'", "choose from", "max_updates"
    )
    assert "did you mean 'lr'" in error
    assert not (tmp_path / "model").exists()


def test_unknown_key_in_config_file_names_the_valid_keys(
    cli: Invoke, preprocessed: Run, tmp_path: Path
) -> None:
    config = tmp_path / "exp.yaml"
    config.write_text("train:\n  lr: 0.001\n  max_update: 10\n", "utf-8")
    args = ["train", str(preprocessed.path), "-o", str(tmp_path / "model"), "-c", str(config)]
    error = assert_user_error(cli(args), 2, "train.max_update: unknown key", "max_updates")
    assert "did you mean 'max_updates'" in error
    assert not (tmp_path / "model").exists()


def test_unknown_key_in_config_file_names_the_file(
    cli: Invoke, preprocessed: Run, tmp_path: Path
) -> None:
    config = tmp_path / "exp.yaml"
    config.write_text("train:\n  max_update: 10\n", "utf-8")
    args = ["train", str(preprocessed.path), "-o", str(tmp_path / "model"), "-c", str(config)]
    assert_user_error(cli(args), 2, "exp.yaml")


@pytest.mark.parametrize(
    ("override", "listed"),
    [
        ("model.attention.name=locatoin", "additive"),
        ("model.encoder=convs2s", "birnn, cnn"),
        ("search.strategy=bean", "beam, greedy"),
    ],
)
def test_unknown_component_lists_the_registered_ones(
    cli: Invoke, preprocessed: Run, tmp_path: Path, override: str, listed: str
) -> None:
    name = override.split("=")[1]
    args = ["train", str(preprocessed.path), "-o", str(tmp_path / "model"), "--preset", "tiny"]
    # A component name in a config is bad usage (exit 2), like an unknown key.
    assert_user_error(cli([*args, "--set", override]), 2, f"'{name}'", "choose from", listed)
    assert not (tmp_path / "model").exists()


# ------------------------------------------------------------------------------ checkpoints


def not_a_checkpoint(kind: str, folder: Path, corpus_dir: Path) -> Path:
    if kind == "text":
        return Path(shutil.copy(corpus_dir / "valid.en", folder / "model.pt"))
    if kind == "torch-dict":
        torch.save({"model": torch.randn(4, 4)}, folder / "weights.pt")
        return folder / "weights.pt"
    if kind == "torch-tensor":
        torch.save(torch.randn(3), folder / "tensor.pt")
        return folder / "tensor.pt"
    (folder / "empty_dir").mkdir()
    return folder / "empty_dir"


@pytest.mark.parametrize("command", ["translate", "align"])
@pytest.mark.parametrize("kind", ["text", "torch-dict", "torch-tensor", "empty-dir"])
def test_a_file_that_is_not_a_checkpoint_is_named_in_one_error_line(
    cli: Invoke, corpus_dir: Path, tmp_path: Path, kind: str, command: str
) -> None:
    path = not_a_checkpoint(kind, tmp_path, corpus_dir)
    src = str(corpus_dir / "valid.en")
    tgt = str(corpus_dir / "valid.de")
    if command == "translate":
        result = cli(["translate", "-m", str(path)], input="A dog.\n")
    else:
        result = cli(["align", "-m", str(path), "--source", src, "--target", tgt])
    error = assert_user_error(result, 1, path.name)
    assert "checkpoint" in error
    assert result.stdout == ""


# ------------------------------------------------------------------------------ cleaning


def test_empty_training_set_after_cleaning_is_an_error_naming_the_corpus(
    cli: Invoke, corpus_dir: Path, tmp_path: Path
) -> None:
    destdir = tmp_path / "data"
    result = cli(preprocess_args(corpus_dir / "train", destdir, "--max-len", "2"))
    assert_user_error(result, 1, "train.en", "no training pairs left after cleaning", "max_len")
    assert nothing_beside(destdir) == []


# ------------------------------------------------------------------------------ long input


def test_translate_cuts_a_line_over_max_source_len_with_a_warning(
    cli: Invoke, model_dir: Path, val_pairs: tuple[list[str], list[str]]
) -> None:
    long_line = " ".join(val_pairs[0][:40])
    lines = [val_pairs[0][0], long_line, ""]
    args = ["translate", "-m", str(model_dir), "--max-source-len", "100"]
    result = cli(args, input="".join(f"{x}\n" for x in lines))
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert len(result.stdout.split("\n")[:-1]) == 3
    warning = " ".join(result.stderr.split())
    assert "WARNING" in warning and "input line 2" in warning
    assert "over --max-source-len 100: reading only the first 100" in warning
    assert "input line 1 " not in warning


# ------------------------------------------------------------------------------ train runs


def test_train_resume_in_an_empty_dir_is_an_error(
    cli: Invoke, preprocessed: Run, tmp_path: Path
) -> None:
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    args = ["train", str(preprocessed.path), "--preset", "tiny", "--resume"]
    assert_user_error(cli([*args, "-o", str(fresh)]), 1, "fresh", "nothing to resume")
    assert list(fresh.iterdir()) == []
    assert_user_error(cli([*args, "-o", str(tmp_path / "absent")]), 1, "absent")
    assert not (tmp_path / "absent").exists()


def test_train_into_a_dir_holding_a_run_is_refused_and_leaves_it_alone(
    cli: Invoke, preprocessed: Run, model_dir: Path, tmp_path: Path
) -> None:
    save_dir = Path(shutil.copytree(model_dir, tmp_path / "model"))
    before = {p.name: p.read_bytes() for p in save_dir.iterdir()}
    args = ["train", str(preprocessed.path), "-o", str(save_dir), "--preset", "tiny"]
    result = cli([*args, "--max-updates", "2"])
    error = assert_user_error(result, 1, "model", "already holds a training run")
    assert "--resume" in error and "--overwrite" in error
    assert {p.name: p.read_bytes() for p in save_dir.iterdir()} == before


def test_train_into_a_save_dir_under_a_file_fails_before_any_work(
    cli: Invoke, preprocessed: Run, tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("not a folder")
    save_dir = tmp_path / "file" / "model"
    args = ["train", str(preprocessed.path), "-o", str(save_dir), "--preset", "tiny"]
    error = assert_user_error(cli(args), 1, str(save_dir), "cannot make this folder")
    assert error.endswith(f"{tmp_path / 'file'} is a file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_translate_refuses_a_damaged_checkpoint_in_one_line(
    cli: Invoke, model_dir: Path, tmp_path: Path
) -> None:
    damaged = Path(shutil.copy(model_dir / "best.pt", tmp_path / "best.pt"))
    weight = torch.load(damaged, weights_only=True)["model"]["src_embed.weight"]
    data = bytearray(damaged.read_bytes())
    offset = bytes(data).find(weight.numpy().tobytes()[:64])
    data[offset + 41] ^= 0x7F  # one byte of a weight, as a failing disk would change it
    damaged.write_bytes(bytes(data))
    result = cli(["translate", "-m", str(damaged)], input="A dog.\n")
    assert_user_error(result, 1, f"{damaged}: damaged: its contents do not match the checksum")
    assert result.stdout == ""


@pytest.mark.parametrize("command", ["translate", "align"])
def test_a_device_this_torch_lacks_is_one_usage_error_line(
    cli: Invoke, model_dir: Path, corpus_dir: Path, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: False)  # a CPU-only build
    src, tgt = str(corpus_dir / "valid.en"), str(corpus_dir / "valid.de")
    args = ["-m", str(model_dir), "--device", "cuda"]
    if command == "translate":
        result = cli(["translate", *args], input="A dog.\n")
    else:
        result = cli(["align", *args, "--source", src, "--target", tgt])
    assert_user_error(result, 2, "--device cuda: this torch build has no CUDA")
    assert result.stdout == ""


# ------------------------------------------------------------------------------ usage


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--output-format", "xml"], "unknown output format 'xml'"),
        (["--greedy", "--nbest", "2"], "--nbest"),
        (["--beam", "0"], "--beam"),
        (["--batch-size", "0"], "--batch-size"),
        (["--batch-size", "-1"], "--batch-size"),
        (["--chunk-size", "0"], "--chunk-size must be at least 1, got 0"),
        (["--chunk-size", "-5"], "--chunk-size"),
        (["--max-len-a", "-0.5"], "--max-len-a must be 0 or more"),
        (["--max-len-b", "-1"], "--max-len-b must be 0 or more"),
        (["--max-source-len", "-1"], "--max-source-len"),
        (["--max-tokens", "0"], "--max-tokens"),
    ],
)
def test_translate_rejects_bad_options_with_exit_2(
    cli: Invoke, model_dir: Path, extra: list[str], fragment: str
) -> None:
    result = cli(["translate", "-m", str(model_dir), *extra], input="A dog.\n")
    assert_user_error(result, 2, fragment)
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--plot-format", "gif", "--plot", "plots"], "unknown plot format 'gif'"),
        (["--limit", "-1"], "--limit"),
        (["--batch-size", "0"], "--batch-size"),
    ],
)
def test_align_rejects_bad_options_with_exit_2(
    cli: Invoke, model_dir: Path, corpus_dir: Path, extra: list[str], fragment: str
) -> None:
    src, tgt = str(corpus_dir / "valid.en"), str(corpus_dir / "valid.de")
    args = ["align", "-m", str(model_dir), "--source", src, "--target", tgt]
    result = cli([*args, *extra])
    assert_user_error(result, 2, fragment)
    assert result.stdout == ""


@pytest.mark.parametrize(
    "args",
    [
        ["translate"],
        ["translate", "-m", "model", "--threads", "0"],
        ["align", "-m", "model", "--source", "a", "--target", "b", "--threads", "-1"],
        ["train", "data", "-o", "model", "--threads", "-1"],
        ["score"],
        ["preprocess", "-s", "en"],
        [*preprocess_args(Path("corpus"), Path("data")), "--workers", "-1"],
        [*preprocess_args(Path("corpus"), Path("data")), "--subword-sample", "-1"],
        ["nosuchcommand"],
    ],
    ids=lambda args: "-".join(args[:1] + args[-2:]),
)
def test_bad_usage_exits_2_without_a_traceback(cli: Invoke, args: list[str]) -> None:
    assert_usage_error(cli(args))


def test_unknown_metric_is_a_usage_error(cli: Invoke, tmp_path: Path) -> None:
    ref = write_lines(tmp_path / "ref.de", ["Ein Hund."])
    result = cli(["score", "-r", str(ref), "-M", "bleu", "-M", "meteor"], input="Ein Hund.\n")
    assert_user_error(result, 2, "unknown metric 'meteor'", "bleu, chrf, ter")


def test_nmtkit_debug_adds_the_traceback_to_a_user_error(cli: Invoke, tmp_path: Path) -> None:
    ref = write_lines(tmp_path / "ref.de", ["Ein Hund.", "Eine Katze."])
    result = cli(["score", "-r", str(ref)], input="Ein Hund.\n", debug=True)
    assert result.exit_code == 1
    assert "Traceback" in result.stderr
    assert result.stderr.splitlines()[-1].startswith("nmtkit: error:")


def test_ctrl_c_exits_130_with_one_line(
    cli: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("nmtkit.scoring.comparison.compare_files", interrupted)
    ref = write_lines(tmp_path / "ref.de", ["Ein Hund."])
    result = cli(["score", "-r", str(ref)], input="Ein Hund.\n")
    assert result.exit_code == 130
    assert result.stderr == "nmtkit: interrupted\n"
    assert result.stdout == ""
