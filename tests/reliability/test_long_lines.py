"""One long line, bounded memory: the peak RSS of a command on a single line of growing length
grows at most about linearly with the line, and a line whose attention would not fit is refused
with one error line, before any work.

Each command runs in a fresh process (``ru_maxrss`` of the child), so the figures are the
command's own. The increments are measured above the same command on a short line, which holds
the interpreter, torch and the model.
"""

from __future__ import annotations

import os
import random
import resource
import subprocess
from pathlib import Path

import pytest

from tests.reliability.checks import NMTKIT, assert_one_error_line
from tests.toy_corpora import SYMBOLS

SHORT = 100  # words of the reference line
FLOOR_MIB = 24.0  # increments below this are noise of the allocator and the page cache

pytestmark = pytest.mark.slow


def write_line(folder: Path, num_words: int) -> Path:
    """A line of ``num_words`` toy symbols (one piece each), in its own file."""
    rng = random.Random(num_words)
    path = folder / f"line{num_words}.txt"
    path.write_text(" ".join(rng.choice(SYMBOLS) for _ in range(num_words)) + "\n")
    return path


def run(args: list[str], *, address_space: int | None = None) -> tuple[int, str, float]:
    """Run ``nmtkit ARGS``: exit status, stderr and the child's peak RSS in MiB."""

    def limit() -> None:
        if address_space is not None:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    proc = subprocess.Popen(
        [*NMTKIT, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=limit,
    )
    assert proc.stderr is not None
    stderr = proc.stderr.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    return os.waitstatus_to_exitcode(status), stderr, usage.ru_maxrss / 1024


def peak_mib(command: list[str], line: Path, model: Path) -> float:
    args = [a.replace("LINE", str(line)) for a in command]
    code, stderr, rss = run([*args, "-m", str(model), "--threads", "1", "-q"])
    assert code == 0, stderr
    return rss


SCORE_PAIRS = ["score-pairs", "--source", "LINE", "--target", "LINE"]
GREEDY = ["translate", "-i", "LINE", "--greedy", "--max-len-a", "1", "--max-len-b", "0"]
ALIGN = ["align", "--source", "LINE", "--target", "LINE"]


@pytest.mark.parametrize(
    ("command", "length"),
    [(SCORE_PAIRS, 2500), (GREEDY, 2500), (ALIGN, 2500)],
    ids=["score-pairs", "translate-greedy", "align"],
)
def test_peak_memory_grows_at_most_linearly_with_the_line(
    command: list[str], length: int, toy_model: Path, tmp_path: Path
) -> None:
    base = peak_mib(command, write_line(tmp_path, SHORT), toy_model)
    once = peak_mib(command, write_line(tmp_path, length), toy_model) - base
    four_times = peak_mib(command, write_line(tmp_path, 4 * length), toy_model) - base
    assert four_times <= 4.5 * max(once, FLOOR_MIB), (base, once, four_times)


def test_soft_align_memory_is_linear_plus_the_attention_matrix(
    toy_model: Path, tmp_path: Path
) -> None:
    """--soft writes one pair's word weights, so it keeps its attention, [T, S] pieces (fp32 in
    the decoder, float64 where it is gathered to words): that part is quadratic by nature and
    allowed for (at 56 bytes a cell); nothing else may grow faster than the line, as a
    [T, S, A] tensor did."""
    length = 400
    soft = [*ALIGN, "--soft"]
    base = peak_mib(soft, write_line(tmp_path, SHORT), toy_model)
    once = peak_mib(soft, write_line(tmp_path, length), toy_model) - base
    four_times = peak_mib(soft, write_line(tmp_path, 4 * length), toy_model) - base
    matrix = 56 * (4 * length + 1) ** 2 / 2**20
    assert four_times <= 4.5 * max(once, FLOOR_MIB) + matrix, (base, once, four_times)


ADDRESS_SPACE = 6 * 2**30  # ulimit -v for the refusals: the line would need more than this


def test_soft_align_refuses_a_pair_whose_attention_would_not_fit(
    toy_model: Path, tmp_path: Path
) -> None:
    """--soft needs the pair's whole attention (Pharaoh links do not: they are read off in
    blocks, and the default align is held to the linear bound above)."""
    line = write_line(tmp_path, 16000)  # 16001^2 cells of about 40 bytes: 10 GB
    code, stderr, _ = run(
        ["align", "-m", str(toy_model), "--source", str(line), "--target", str(line), "--soft"],
        address_space=ADDRESS_SPACE,
    )
    assert_one_error_line(
        code, "", stderr, 1, "pair 1", "16000 source x 16000 target pieces", "--max-source-len"
    )


def test_translate_with_alignments_refuses_a_line_whose_attention_would_not_fit(
    toy_model: Path, tmp_path: Path
) -> None:
    line = write_line(tmp_path, 8000)  # 5 beams x 12011 steps x 8001 positions: 7.7 GB
    code, stderr, _ = run(
        ["translate", "-m", str(toy_model), "-i", str(line), "--output-format", "jsonl", "-q"],
        address_space=ADDRESS_SPACE,
    )
    assert_one_error_line(code, "", stderr, 1, "input line 1", "8000 source pieces", "--max-len")
