"""Peak memory of one long line: align, translate and score-pairs on a single pair of N words.

python benchmarks/long_line_memory.py model DATA_DIR MODEL_DIR
    A model directory with the DEFAULT model config and untrained weights (memory does not
    depend on what the weights learned), over the vocabulary of the data dir DATA_DIR.
python benchmarks/long_line_memory.py run MODEL_DIR TEXT WORDS[,WORDS...] [COMMAND...]
    For each length, one line of that many words drawn from TEXT (a plain or .gz text file;
    the same line for source and target), then each COMMAND (align, score-pairs, greedy,
    beam5; all by default) in a fresh process: its peak RSS (ru_maxrss of the child) and wall
    time, one markdown row each. The output is capped as ``translate``'s defaults cap it.
"""

from __future__ import annotations

import gzip
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = {
    "align": ["align", "--source", "{src}", "--target", "{tgt}"],
    "score-pairs": ["score-pairs", "--source", "{src}", "--target", "{tgt}"],
    "greedy": ["translate", "-i", "{src}", "--greedy"],
    "beam5": ["translate", "-i", "{src}"],
}


def make_model(data_dir: Path, model_dir: Path) -> None:
    from nmtkit.checkpoint import BEST, Vocabulary, save_checkpoint
    from nmtkit.config import Config
    from nmtkit.data.datadir import load_manifest, load_pipeline
    from nmtkit.data.text import PAD_ID
    from nmtkit.models import build_model

    manifest = load_manifest(data_dir)
    src_lang, tgt_lang = manifest["src_lang"], manifest["tgt_lang"]
    src_text, tgt_text = load_pipeline(data_dir, src_lang), load_pipeline(data_dir, tgt_lang)
    config = Config()
    model = build_model(
        config.model,
        src_vocab_size=src_text.vocab_size,
        tgt_vocab_size=tgt_text.vocab_size,
        pad_id=PAD_ID,
    )
    vocab = Vocabulary(
        src_lang=src_lang,
        tgt_lang=tgt_lang,
        settings=src_text.settings,
        src_spm=src_text.spm_model,
        tgt_spm=tgt_text.spm_model,
        max_src_len=100,
    )
    model_dir.mkdir(parents=True, exist_ok=True)
    save_checkpoint(model_dir / BEST, model=model, config=config, vocab=vocab, step=0, bleu=None)


def long_line(text: Path, num_words: int) -> str:
    opener = gzip.open if text.suffix == ".gz" else open
    with opener(text, "rt", encoding="utf-8") as stream:
        words = [w for line in stream for w in line.split()]
    rng = random.Random(num_words)
    return " ".join(rng.choice(words) for _ in range(num_words))


def peak_rss(argv: list[str]) -> tuple[float, float, int]:
    """Run ``argv``: its peak RSS in MiB, its wall time in s, and its exit status."""
    limit = int(float(os.environ.get("LIMIT_GB", "8")) * 2**30)

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=cap)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if status and proc.stderr:
        sys.stderr.write(proc.stderr.read().decode()[-2000:])
    return usage.ru_maxrss / 1024, wall, os.waitstatus_to_exitcode(status)


def run(model_dir: Path, text: Path, lengths: list[int], commands: list[str]) -> None:
    print("| words | command | peak RSS (MiB) | wall (s) |")
    print("|---:|---|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for num_words in lengths:
            line = Path(tmp) / f"line{num_words}.txt"
            line.write_text(long_line(text, num_words) + "\n", encoding="utf-8")
            for name in commands:
                args = [a.format(src=line, tgt=line) for a in COMMANDS[name]]
                argv = [sys.executable, "-m", "nmtkit", *args, "-m", str(model_dir), "-q"]
                argv += ["--threads", "1"]
                rss, wall, code = peak_rss(argv)
                status = "" if code == 0 else f" (exit {code})"
                print(f"| {num_words} | {name} | {rss:.0f}{status} | {wall:.1f} |", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["model"] and len(sys.argv) == 4:
        make_model(Path(sys.argv[2]), Path(sys.argv[3]))
    elif sys.argv[1:2] == ["run"] and len(sys.argv) >= 5:
        sizes = [int(n) for n in sys.argv[4].split(",")]
        run(Path(sys.argv[2]), Path(sys.argv[3]), sizes, sys.argv[5:] or list(COMMANDS))
    else:
        sys.exit(__doc__)
