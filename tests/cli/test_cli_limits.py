"""Length limits and input checks through the command line: pieces bounded by preprocess and
checked by train, the one policy of translate and align for long input, options out of range,
a folder given as a file, and byte-order marks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli.runs import Invoke, Run
from tests.cli.test_cli_errors import (
    assert_user_error,
    copy_corpus,
    nothing_beside,
    preprocess_args,
    write_lines,
)

BOM = "\ufeff"


def flat(text: str) -> str:
    return " ".join(text.split())


def long_line(val_pairs: tuple[list[str], list[str]], num_sentences: int) -> str:
    """Validation sentences joined into one line of hundreds of pieces."""
    sources = val_pairs[0]
    return " ".join(sources[i % len(sources)] for i in range(num_sentences))


# ------------------------------------------------------------------------------ preprocess, train


def test_preprocess_drops_pairs_over_max_pieces_and_reports_them(
    cli: Invoke, corpus_dir: Path, tmp_path: Path
) -> None:
    prefix = copy_corpus(corpus_dir, tmp_path)
    for lang, line in (("en", "x" * 1_000_000), ("de", "Hund")):
        lines = (tmp_path / f"corpus.{lang}").read_text("utf-8").splitlines()
        lines[3] = line  # a 1 MB line without spaces: one token, passes --max-len and the ratio
        write_lines(tmp_path / f"corpus.{lang}", lines)
    destdir = tmp_path / "data"
    result = cli(preprocess_args(prefix, destdir))
    assert result.exit_code == 0, result.output
    manifest = json.loads((destdir / "manifest.json").read_text("utf-8"))
    assert manifest["clean_counts"]["too_many_pieces"] == 1
    assert manifest["config"]["clean"]["max_pieces"] == 250
    assert "too_many_pieces 1" in flat(result.stderr)


def test_train_refuses_a_data_dir_whose_sentences_break_its_limit(
    cli: Invoke, preprocessed: Run, tmp_path: Path
) -> None:
    data_dir = Path(shutil.copytree(preprocessed.path, tmp_path / "data"))
    path = data_dir / "manifest.json"
    manifest = json.loads(path.read_text("utf-8"))
    manifest["config"]["clean"]["max_pieces"] = 3
    path.write_text(json.dumps(manifest), "utf-8")
    model = tmp_path / "model"
    result = cli(["train", str(data_dir), "-o", str(model), "--preset", "tiny"])
    assert_user_error(result, 1, str(data_dir), "over this data dir's limit of 3", "--max-pieces")
    assert not model.exists()


def test_preprocess_max_pieces_below_1_is_a_usage_error(
    cli: Invoke, corpus_dir: Path, tmp_path: Path
) -> None:
    destdir = tmp_path / "data"
    result = cli(preprocess_args(corpus_dir / "train", destdir, "--max-pieces", "0"))
    assert_user_error(result, 2, "max_pieces")
    assert nothing_beside(destdir) == []


# ------------------------------------------------------------------------------ long input


def test_translate_reads_a_line_longer_than_any_training_source_whole(
    cli: Invoke, model_dir: Path, val_pairs: tuple[list[str], list[str]]
) -> None:
    lines = [val_pairs[0][0], long_line(val_pairs, 20)]  # hundreds of pieces, under 1024
    args = ["translate", "-m", str(model_dir), "--greedy", "--max-len-a", "0", "--max-len-b", "3"]
    result = cli(args, input="".join(f"{x}\n" for x in lines))
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == 2
    assert "WARNING" not in result.stderr


def test_translate_reads_a_3000_piece_line_whole_unless_max_source_len_cuts_it(
    cli: Invoke, model_dir: Path, val_pairs: tuple[list[str], list[str]]
) -> None:
    lines = [val_pairs[0][0], long_line(val_pairs, 250), ""]
    args = ["translate", "-m", str(model_dir), "--greedy", "--max-len-a", "0", "--max-len-b", "3"]
    whole = cli(args, input="".join(f"{x}\n" for x in lines))
    assert whole.exit_code == 0, whole.output
    assert len(whole.stdout.split("\n")[:-1]) == 3
    assert "max-source-len" not in flat(whole.stderr)  # no cap by default: nothing is cut
    result = cli([*args, "--max-source-len", "1024"], input="".join(f"{x}\n" for x in lines))
    assert result.exit_code == 0, result.output
    assert len(result.stdout.split("\n")[:-1]) == 3
    warning = flat(result.stderr)
    assert "input line 2 has" in warning and "over --max-source-len 1024" in warning
    assert "input line 1 " not in warning
    assert "Traceback" not in result.output


def test_align_cuts_a_long_pair_with_a_warning_naming_it(
    cli: Invoke,
    model_dir: Path,
    val_pairs: tuple[list[str], list[str]],
    tmp_path: Path,
) -> None:
    sources, targets = val_pairs
    src = write_lines(tmp_path / "src.en", [sources[0], long_line(val_pairs, 60)])
    tgt = write_lines(tmp_path / "tgt.de", [targets[0], " ".join(targets[:60])])
    args = ["align", "-m", str(model_dir), "--source", str(src), "--target", str(tgt)]
    result = cli([*args, "--max-source-len", "50", "--max-tokens", "200"])
    assert result.exit_code == 0, result.output
    links = result.stdout.splitlines()[1].split()
    assert links and all(int(link.split("-")[0]) < 50 for link in links)
    warning = flat(result.stderr)
    assert "pair 2 source has" in warning and "pair 2 target has" in warning
    assert "pair 1 " not in warning


# ------------------------------------------------------------------------------ bad options


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [(["--max-source-len", "-1"], "--max-source-len"), (["--max-tokens", "0"], "--max-tokens")],
)
def test_align_rejects_length_bounds_out_of_range_with_exit_2(
    cli: Invoke, model_dir: Path, corpus_dir: Path, extra: list[str], fragment: str
) -> None:
    src, tgt = str(corpus_dir / "valid.en"), str(corpus_dir / "valid.de")
    result = cli(["align", "-m", str(model_dir), "--source", src, "--target", tgt, *extra])
    assert_user_error(result, 2, fragment)
    assert result.stdout == ""


# ------------------------------------------------------------------------------ folders


def test_preprocess_given_a_folder_as_a_corpus_says_so(
    cli: Invoke, corpus_dir: Path, tmp_path: Path
) -> None:
    prefix = copy_corpus(corpus_dir, tmp_path)
    (tmp_path / "corpus.de").unlink()
    (tmp_path / "corpus.de").mkdir()
    destdir = tmp_path / "data"
    error = assert_user_error(cli(preprocess_args(prefix, destdir)), 1, "corpus.de", "is a folder")
    assert "no such file" not in error
    assert nothing_beside(destdir) == []


def test_translate_given_a_folder_as_input_says_so(
    cli: Invoke, model_dir: Path, tmp_path: Path
) -> None:
    result = cli(["translate", "-m", str(model_dir), "-i", str(tmp_path)])
    assert_user_error(result, 1, str(tmp_path), "is a folder")


# ------------------------------------------------------------------------------ byte-order marks


def test_preprocess_raw_heldout_copies_drop_a_byte_order_mark(
    cli: Invoke, corpus_dir: Path, tmp_path: Path
) -> None:
    prefix = copy_corpus(corpus_dir, tmp_path, "valid")
    for lang in ("en", "de"):
        path = tmp_path / f"corpus.{lang}"
        path.write_text(BOM + path.read_text("utf-8"), "utf-8")
    destdir = tmp_path / "data"
    args = preprocess_args(corpus_dir / "train", destdir, "--validpref", str(prefix))
    result = cli(args)
    assert result.exit_code == 0, result.output
    for lang in ("en", "de"):
        raw = (destdir / f"valid.raw.{lang}").read_text("utf-8")
        assert raw == (corpus_dir / f"valid.{lang}").read_text("utf-8")


@pytest.mark.parametrize("marked", ["hypotheses", "references", "both"])
def test_score_gives_100_bleu_for_identical_text_with_and_without_a_byte_order_mark(
    cli: Invoke, tmp_path: Path, marked: str
) -> None:
    lines = ["Ein Hund läuft über die Wiese.", "Eine Katze schläft auf dem Sofa."]
    text = "".join(f"{line}\n" for line in lines)
    hyp, ref = tmp_path / "hyp.de", tmp_path / "ref.de"
    hyp.write_text((BOM if marked in ("hypotheses", "both") else "") + text, "utf-8")
    ref.write_text((BOM if marked in ("references", "both") else "") + text, "utf-8")
    result = cli(["score", "-r", str(ref), "-i", str(hyp), "-M", "bleu", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["scores"][0]["score"] == pytest.approx(100.0)
