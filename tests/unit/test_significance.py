"""Paired tests give the p-values, means and CIs that `sacrebleu --paired-bs/--paired-ar` prints."""

from __future__ import annotations

import gzip
import json
import os
import random
import re
import sys
from pathlib import Path

import pytest

from nmtkit.errors import ConfigError, DataError
from nmtkit.scoring.significance import (
    DEFAULT_NUM_SAMPLES,
    PairedResult,
    SignificanceOptions,
    check_significance_options,
    paired_test,
)
from tests.processes import run

NUM_LINES = 80
NUM_SAMPLES = 60  # small, for speed; sacrebleu's defaults are 1000 (bs) and 10000 (ar)
SACREBLEU = Path(sys.executable).parent / "sacrebleu"


def _drop_words(lines: list[str], share: float, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for line in lines:
        words = line.split()
        if rng.random() < share and len(words) > 2:
            del words[rng.randrange(len(words))]
        out.append(" ".join(words))
    return out


@pytest.fixture(scope="module")
def ref(shared_data: Path) -> list[str]:
    with gzip.open(shared_data / "multi30k" / "val.de.gz", "rt", encoding="utf-8") as stream:
        return [next(stream).rstrip("\n") for _ in range(NUM_LINES)]


@pytest.fixture(scope="module")
def systems(ref: list[str]) -> list[list[str]]:
    """A baseline, a clearly worse system and a slightly better one."""
    return [_drop_words(ref, 0.5, seed=0), _drop_words(ref, 0.9, seed=1), _drop_words(ref, 0.4, 2)]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory, ref: list[str], systems: list) -> list[Path]:
    """[ref, base, worse, better] on disk."""
    folder = tmp_path_factory.mktemp("significance")
    paths = []
    for name, lines in zip(["ref", "base", "worse", "better"], [ref, *systems], strict=True):
        paths.append(folder / name)
        paths[-1].write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return paths


def _sacrebleu(files: list[Path], *args: str) -> str:
    """Run the sacrebleu command's paired test; its text table (its JSON fails on chrF and TER)."""
    ref, *hyps = (str(p) for p in files)
    command = [str(SACREBLEU), ref, "-i", *hyps, "-m", "bleu", "chrf", "ter", "-f", "text"]
    done = run(  # the suite's environment has no SACREBLEU_SEED (tests/processes.py)
        [*command, "-w", "4", *args], capture_output=True, text=True, check=True, timeout=120
    )
    return done.stdout


def _parse_table(text: str) -> list[list[list[str]]]:
    """Return, per system and metric, the numbers of the cell: score [mean ci] [p-value]."""
    rows: list[list[list[str]]] = []
    for line in text.splitlines():
        if not line.startswith("│") or "System" in line:
            continue
        name, *cells = (cell.strip() for cell in line.strip("│").split("│"))
        numbers = [re.findall(r"[0-9]+\.[0-9]+", cell) for cell in cells]
        if name:
            rows.append(numbers)
        else:  # the p-values under a system's scores
            rows[-1] = [a + b for a, b in zip(rows[-1], numbers, strict=True)]
    return rows


def _ours(result: PairedResult) -> list[str]:
    values = [result.score, result.mean, result.ci, result.p_value]
    return [f"{value:.4f}" for value in values if value is not None]


TESTS = [
    pytest.param("bs", "--paired-bs-n", id="bootstrap"),
    pytest.param("ar", "--paired-ar-n", id="randomization"),
]


@pytest.mark.parametrize(("test", "count_flag"), TESTS)
def test_results_and_signatures_equal_the_sacrebleu_command(
    files: list[Path], systems: list, ref: list[str], test: str, count_flag: str
) -> None:
    text = _sacrebleu(files, f"--paired-{test}", count_flag, str(NUM_SAMPLES))
    options = SignificanceOptions(test=test, num_samples=NUM_SAMPLES)
    report = paired_test(systems, [ref], options=options)
    assert [m.name for m in report.metrics] == ["BLEU", "chrF", "TER"]
    ours = [[_ours(m.results[row]) for m in report.metrics] for row in range(len(systems))]
    assert ours == _parse_table(text)
    signatures = re.findall(r"^ - (?:BLEU|chrF2|TER)\s+(\S+)$", text, flags=re.MULTILINE)
    assert [m.signature for m in report.metrics] == signatures
    assert f"{test}:{NUM_SAMPLES}|seed:12345" in report.metrics[0].signature
    assert report.metrics[0].results[0].p_value is None  # the baseline
    assert report.metrics[0].results[1].significant  # the worse system
    assert all(r.mean is None for r in report.metrics[0].results) == (test == "ar")


def test_the_seed_changes_the_resamples_and_the_environment_is_restored(
    systems: list, ref: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SACREBLEU_SEED", "7")
    runs = {
        seed: paired_test(
            systems[:2],
            [ref],
            options=SignificanceOptions(num_samples=NUM_SAMPLES, seed=seed),
            metrics=["bleu"],
        )
        for seed in (12345, 99)
    }
    assert runs[12345].metrics[0].results[1].mean != runs[99].metrics[0].results[1].mean
    assert "seed:99" in runs[99].metrics[0].signature
    assert os.environ["SACREBLEU_SEED"] == "7"


def test_ter_results_are_plain_floats(systems: list, ref: list[str]) -> None:
    options = SignificanceOptions(num_samples=NUM_SAMPLES)
    report = paired_test(systems[:2], [ref], options=options, metrics=["ter"])
    names = ["base", "worse"]
    data = report.to_dict(names)
    json.dumps(data)  # sacrebleu's own JSON output fails on TER's numpy floats
    assert data["baseline"] == "base"
    (ter,) = data["metrics"]
    assert [r["system"] for r in ter["results"]] == names
    assert all(type(r["score"]) is float and type(r["ci"]) is float for r in ter["results"])


def test_defaults_are_sacrebleus() -> None:
    assert SignificanceOptions() == SignificanceOptions(test="bs", num_samples=None, seed=12345)
    assert DEFAULT_NUM_SAMPLES == {"bs": 1000, "ar": 10000}
    assert check_significance_options(SignificanceOptions(test="ar"), num_systems=2) == 10000


@pytest.mark.parametrize(
    ("options", "num_systems", "match"),
    [
        (SignificanceOptions(test="t"), 2, r"unknown paired test 't'.*bs, ar"),
        (SignificanceOptions(), 1, r"needs two systems"),
        (SignificanceOptions(num_samples=0), 2, r"samples must be 1 or more"),
        (SignificanceOptions(seed=0), 2, r"seed must be 1 or more"),
    ],
    ids=["unknown-test", "one-system", "zero-samples", "zero-seed"],
)
def test_bad_options_are_config_errors(
    options: SignificanceOptions, num_systems: int, match: str
) -> None:
    with pytest.raises(ConfigError, match=match):
        check_significance_options(options, num_systems=num_systems)


def test_a_system_of_another_length_is_a_data_error(systems: list, ref: list[str]) -> None:
    with pytest.raises(DataError, match=r"system 2 has 79 lines but a reference has 80"):
        paired_test([systems[0], systems[1][:-1]], [ref], metrics=["bleu"])


@pytest.mark.parametrize(
    ("p_value", "significant"), [(None, False), (0.01, True), (0.0499, True), (0.05, False)]
)
def test_significance_mark_is_p_below_0_05(p_value: float | None, significant: bool) -> None:
    assert PairedResult(score=1.0, p_value=p_value).significant is significant
