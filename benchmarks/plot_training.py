"""Plot training curves from model directories' metrics.jsonl: validation BLEU and training
loss per update, one line per model.

    python benchmarks/plot_training.py --out curves.png NAME=MODEL_DIR/metrics.jsonl ...
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from nmtkit.outputs import save_figure


def read_metrics(path: Path) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """(step, validation BLEU) and (step, training loss per token) pairs of one run."""
    bleu, loss = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("kind") == "valid" and "val_bleu" in record:
            bleu.append((record["step"], record["val_bleu"]))
        elif record.get("kind") == "train" and "loss" in record:
            loss.append((record["step"], record["loss"]))
    return bleu, loss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("runs", nargs="+", help="NAME=path/to/metrics.jsonl")
    args = parser.parse_args()
    fig = Figure(figsize=(9, 3.4))
    FigureCanvasAgg(fig)
    ax_bleu, ax_loss = fig.subplots(1, 2)
    for run in args.runs:
        name, _, path = run.partition("=")
        bleu, loss = read_metrics(Path(path))
        if bleu:
            ax_bleu.plot(*zip(*bleu, strict=True), marker="o", markersize=3, label=name)
        if loss:
            ax_loss.plot(*zip(*loss, strict=True), label=name)
    ax_bleu.set(xlabel="update", ylabel="validation BLEU (greedy)", title="Validation BLEU")
    ax_loss.set(xlabel="update", ylabel="loss per target token", title="Training loss")
    for ax in (ax_bleu, ax_loss):
        ax.grid(alpha=0.3)
        ax.legend()
    save_figure(fig, args.out, "png")


if __name__ == "__main__":
    main()
