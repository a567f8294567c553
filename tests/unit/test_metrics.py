"""Scores equal the `sacrebleu` command's; options, errors and warnings behave as documented."""

from __future__ import annotations

import gzip
import importlib.util
import io
import json
import random
import shutil
import sys
from pathlib import Path

import pytest

from nmtkit.errors import ConfigError, DataError
from nmtkit.scoring.metrics import (
    MetricScore,
    ScoreReport,
    corpus_bleu,
    find_warnings,
    score,
    score_files,
)
from tests.processes import run

NUM_LINES = 200


def _read_gz(path: Path, num_lines: int) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8", newline="\n") as stream:
        return [next(stream).rstrip("\n") for _ in range(num_lines)]


def _perturb(lines: list[str], seed: int) -> list[str]:
    """Drop, swap or recase words so that BLEU, chrF, TER and -lc all see differences."""
    rng = random.Random(seed)
    out = []
    for line in lines:
        words = line.split()
        action = rng.random()
        if action < 0.3 and len(words) > 2:
            del words[rng.randrange(len(words))]
        elif action < 0.6 and len(words) > 2:
            k = rng.randrange(len(words) - 1)
            words[k], words[k + 1] = words[k + 1], words[k]
        elif action < 0.8:
            words = [w.lower() if rng.random() < 0.5 else w.upper() for w in words]
        out.append(" ".join(words))
    return out


@pytest.fixture(scope="module")
def val_de(shared_data: Path) -> list[str]:
    return _read_gz(shared_data / "multi30k" / "val.de.gz", NUM_LINES)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory, val_de: list[str]) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("scores")
    texts = {"ref": val_de, "ref2": _perturb(val_de, seed=1), "hyp": _perturb(val_de, seed=0)}
    paths = {}
    for name, lines in texts.items():
        paths[name] = folder / name
        paths[name].write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return paths


def _sacrebleu_cli(refs: list[Path], hyp: Path, extra: list[str]) -> list[dict]:
    exe = Path(sys.executable).parent / "sacrebleu"
    command = [str(exe)] if exe.exists() else [shutil.which("sacrebleu") or "sacrebleu"]
    command += [*map(str, refs), "-i", str(hyp), "-m", "bleu", "chrf", "ter", "-w", "4"]
    command += ["-f", "json", *extra]
    done = run(command, capture_output=True, text=True, check=True, timeout=120)
    return json.loads(done.stdout)


@pytest.mark.parametrize(
    ("cli_args", "options", "num_refs"),
    [
        ([], {}, 1),
        (["-lc"], {"lowercase": True}, 1),
        (["-tok", "intl"], {"tokenize": "intl"}, 1),
        ([], {}, 2),
        (["-lc", "-tok", "char"], {"lowercase": True, "tokenize": "char"}, 2),
    ],
    ids=["default", "lowercase", "tok-intl", "two-refs", "two-refs-lc-char"],
)
def test_scores_and_signatures_equal_the_sacrebleu_command(
    corpus: dict[str, Path], cli_args: list[str], options: dict, num_refs: int
) -> None:
    refs = [corpus["ref"], corpus["ref2"]][:num_refs]
    expected = _sacrebleu_cli(refs, corpus["hyp"], cli_args)
    report = score_files(corpus["hyp"], refs, **options)
    assert [s.name for s in report.scores] == ["BLEU", "chrF", "TER"]
    for ours, theirs in zip(report.scores, expected, strict=True):
        assert theirs["name"].startswith(ours.name)
        assert float(f"{ours.score:.4f}") == theirs["score"]
        assert ours.signature == theirs["signature"]
        assert ours.text.startswith(f"{theirs['name']} = {ours.score:.2f}")
    assert report.num_sentences == NUM_LINES


def test_lowercase_changes_bleu_only(corpus: dict[str, Path]) -> None:
    mixed = score_files(corpus["hyp"], [corpus["ref"]])
    lower = score_files(corpus["hyp"], [corpus["ref"]], lowercase=True)
    assert lower.scores[0].score > mixed.scores[0].score
    assert [s.score for s in lower.scores[1:]] == [s.score for s in mixed.scores[1:]]


def test_score_in_memory_equals_score_files(corpus: dict[str, Path], val_de: list[str]) -> None:
    hyps = corpus["hyp"].read_text(encoding="utf-8").splitlines()
    assert score(hyps, [val_de]) == score_files(corpus["hyp"], [corpus["ref"]])


def test_corpus_bleu_equals_bleu_of_score(val_de: list[str]) -> None:
    hyps = _perturb(val_de, seed=3)
    assert corpus_bleu(hyps, val_de) == score(hyps, [val_de], metrics=["bleu"]).scores[0]


def test_score_files_reads_stdin(corpus: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    data = corpus["hyp"].read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    assert score_files("-", [corpus["ref"]]) == score_files(corpus["hyp"], [corpus["ref"]])


def test_metrics_keep_the_order_asked_for() -> None:
    report = score(["a b c d"], [["a b c d"]], metrics=["TER", "bleu", "ter"])
    assert [s.name for s in report.scores] == ["TER", "BLEU"]
    assert report.scores[1].score == pytest.approx(100.0)


def test_score_files_with_different_line_counts_names_both_files(
    tmp_path: Path, val_de: list[str]
) -> None:
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_text("\n".join(val_de[:10]) + "\n", encoding="utf-8")
    ref.write_text("\n".join(val_de[:12]) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as caught:
        score_files(hyp, [ref])
    message = str(caught.value)
    assert str(hyp) in message and str(ref) in message
    assert "10" in message and "12" in message


@pytest.mark.parametrize(
    ("hyps", "refs", "error"),
    [
        (["a", "b"], [["a"]], DataError),
        (["a"], [["a"], ["a", "b"]], DataError),
        ([], [[]], DataError),
        (["a"], [], DataError),
        (["a"], ["a"], TypeError),
    ],
    ids=["short-ref", "second-ref-long", "empty", "no-ref", "flat-refs"],
)
def test_score_rejects_mismatched_input(hyps: list, refs: list, error: type) -> None:
    with pytest.raises(error):
        score(hyps, refs)


def test_mismatch_message_names_the_counts() -> None:
    with pytest.raises(DataError, match="has 1 lines but there are 2 hypotheses"):
        score(["a", "b"], [["a"]])


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"metrics": ["blue"]}, r"unknown metric 'blue'.*bleu, chrf, ter.*'bleu'"),
        ({"metrics": ["meteor"]}, r"unknown metric 'meteor'.*bleu, chrf, ter"),
        ({"metrics": []}, r"no metric"),
        ({"tokenize": "13b"}, r"unknown tokenizer '13b'.*13a.*intl"),
    ],
)
def test_unknown_names_raise_config_error_listing_valid_ones(options: dict, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected):
        score(["a"], [["a"]], **options)


@pytest.mark.skipif(importlib.util.find_spec("MeCab") is not None, reason="MeCab is installed")
def test_tokenizer_with_a_missing_extra_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"ja-mecab.*sacrebleu\[ja\]"):
        score(["a"], [["a"]], tokenize="ja-mecab")


def test_score_files_checks_options_before_reading(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        score_files(tmp_path / "missing", [tmp_path / "missing"], metrics=["nope"])


_CLEAN = [
    "Ein Mann, der auf einem Stuhl sitzt.",
    "A woman's dog is running in the park.",
    "Un homme joue de la guitare !",
    "Deux enfants : un garçon et une fille ?",
    "Es kostet 3.50 Euro... oder nicht?",
]


@pytest.mark.parametrize(
    ("hyps", "expected"),
    [
        (_CLEAN, []),
        (["Ein Mann , der auf einem Stuhl sitzt .", *_CLEAN[1:]], []),
        (["Ein Mann , der sitzt .", "Ein Hund läuft .", *_CLEAN[2:]], ["tokenized"]),
        (["A woman &apos;s dog .", "A man &quot; hi &quot;", "x"], ["tokenized"]),
        (["a well @-@ known man", "a long @-@ haired dog", "x"], ["tokenized"]),
        (["A woman 's dog runs", "They don't", "We can n't go"], ["tokenized"]),
        (["\u2581Ein \u2581Mann \u2581sitzt", *_CLEAN], ["subword"]),
        (["Ein Ma@@ nn sitzt", *_CLEAN], ["subword"]),
        (["\u2581Ein \u2581Mann , \u2581der .", "\u2581Ein Hund .", "x"], ["tokenized", "subword"]),
    ],
    ids=[
        "clean",
        "one-tokenized-line",
        "moses-punct",
        "entities",
        "aggregated-hyphens",
        "clitics",
        "sentencepiece",
        "bpe",
        "both",
    ],
)
def test_warnings_fire_on_tokenized_or_subword_text(hyps: list[str], expected: list[str]) -> None:
    warnings = find_warnings(hyps)
    assert len(warnings) == len(expected)
    for warning, word in zip(warnings, expected, strict=True):
        assert word in warning


@pytest.mark.parametrize("lang", ["de", "en", "fr"])
def test_no_warnings_on_clean_multi30k(shared_data: Path, lang: str) -> None:
    lines = _read_gz(shared_data / "multi30k" / f"val.{lang}.gz", NUM_LINES)
    assert score(lines, [lines], metrics=["bleu"]).warnings == ()


def test_warning_fires_on_moses_tokenized_multi30k(val_de: list[str]) -> None:
    from sacremoses import MosesTokenizer

    tokenizer = MosesTokenizer(lang="de")
    hyps = [tokenizer.tokenize(line, return_str=True) for line in val_de]
    (warning,) = score(hyps, [val_de], metrics=["bleu"]).warnings
    assert "tokenized" in warning


def _report() -> ScoreReport:
    return score(["Ein Mann sitzt ."], [["Ein Mann sitzt auf einem Stuhl ."]])


def test_report_to_dict_holds_every_metric_with_its_signature_as_json() -> None:
    report = _report()
    data = json.loads(json.dumps(report.to_dict()))
    assert [s["name"] for s in data["scores"]] == ["BLEU", "chrF", "TER"]
    assert data["num_sentences"] == 1
    assert data["scores"][0]["signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")


def test_metric_score_is_frozen() -> None:
    item = MetricScore(name="BLEU", score=1.0, text="BLEU = 1.00", signature="s")
    with pytest.raises(AttributeError):
        item.score = 2.0  # type: ignore[misc]
