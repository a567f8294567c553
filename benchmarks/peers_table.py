"""The side-by-side table of ``benchmarks/peers.sh``: nmtkit's speed.json against the
``peer key=value`` lines that ../shared/peers/run_<peer>.sh print, with ratios nmtkit/peer."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

# (label, the peer's key, the path in nmtkit's speed.json, higher is better)
MEASURES = [
    ("train target tok/s", "train_tok_per_s", ("train", "tok_per_s"), True),
    ("train peak RSS MiB", "train_peak_rss_mib", ("train", "peak_rss_mib"), False),
    ("beam 5 sent/s, whole command", "translate_sent_per_s_beam5",
     ("translate", "beam5", "whole_sent_per_s"), True),
    ("beam 5 sent/s, decode only", "decode_only_sent_per_s_beam5",
     ("translate", "beam5", "decode_sent_per_s"), True),
    ("greedy sent/s, whole command", "translate_sent_per_s_greedy",
     ("translate", "greedy", "whole_sent_per_s"), True),
    ("greedy sent/s, decode only", "decode_only_sent_per_s_greedy",
     ("translate", "greedy", "decode_sent_per_s"), True),
    ("BLEU beam 5", "bleu_beam5", ("translate", "beam5", "bleu"), True),
    ("BLEU greedy", "bleu_greedy", ("translate", "greedy", "bleu"), True),
]  # fmt: skip


def read_peer(path: Path) -> tuple[str, dict[str, float]]:
    """Parse lines like ``fairseq train_tok_per_s=2121.3 train_budget_s=900``."""
    name, values = path.stem, {}
    for line in path.read_text("utf-8").splitlines():
        words = line.split()
        if len(words) < 2 or not all("=" in w for w in words[1:]):
            continue
        name = words[0]
        for word in words[1:]:
            key, value = word.split("=", 1)
            try:
                values[key] = float(value)
            except ValueError:
                continue
    return name, values


def lookup(result: dict, path: tuple[str, ...]) -> float | None:
    for key in path:
        if not isinstance(result, dict) or key not in result:
            return None
        result = result[key]
    return float(result) if isinstance(result, (int, float)) else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nmtkit", type=Path, required=True, help="speed.json of nmtkit")
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("peers", type=Path, nargs="+", help="one output file per peer")
    args = parser.parse_args()
    ours = json.loads(args.nmtkit.read_text("utf-8"))
    peers = dict(read_peer(path) for path in args.peers)

    table = Table(title="nmtkit and its peers, measured in one run on this machine")
    table.add_column("measure")
    table.add_column("nmtkit", justify="right")
    for name in peers:
        table.add_column(name, justify="right")
        table.add_column(f"nmtkit/{name}", justify="right")
    rows = []
    for label, key, path, _higher in MEASURES:
        mine = lookup(ours, path)
        row = {"measure": label, "nmtkit": mine}
        cells = [f"{mine:,.1f}" if mine is not None else "-"]
        for name, values in peers.items():
            theirs = values.get(key)
            ratio = mine / theirs if mine is not None and theirs else None
            row[name] = theirs
            row[f"nmtkit/{name}"] = ratio
            cells += [
                f"{theirs:,.1f}" if theirs is not None else "-",
                f"{ratio:.2f}" if ratio is not None else "-",
            ]
        rows.append(row)
        table.add_row(label, *cells)
    Console().print(table)
    args.out.write_text(json.dumps({"rows": rows, "peers": peers}, indent=2) + "\n", "utf-8")


if __name__ == "__main__":
    main()
