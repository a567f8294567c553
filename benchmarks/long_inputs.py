"""Long inputs from test_2016_flickr: lines of K consecutive sentences joined, and the table.

python benchmarks/long_inputs.py join K SRC REF OUT_SRC OUT_REF
    K consecutive lines joined by a space (a trailing remainder of fewer than K dropped).
python benchmarks/long_inputs.py table OUT
    BLEU (sacreBLEU 13a, cased) of every OUT/<model>/<decoding>/x<K>.<lang> against
    OUT/ref.x<K>, each as a % of the same model and decoding on single sentences, and the
    hypothesis/reference length ratio; markdown on stdout, JSON in OUT/table.json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from nmtkit.scoring.metrics import corpus_bleu


def join(k: int, paths: list[str]) -> None:
    src, ref, out_src, out_ref = (Path(p) for p in paths)
    for inp, out in ((src, out_src), (ref, out_ref)):
        lines = inp.read_text(encoding="utf-8").splitlines()
        groups = [lines[i : i + k] for i in range(0, len(lines) - k + 1, k)]
        out.write_text("".join(" ".join(g) + "\n" for g in groups), encoding="utf-8")


def words(lines: list[str]) -> int:
    return sum(len(line.split()) for line in lines)


def table(out: Path) -> None:
    refs = {
        int(p.name.split(".")[1][1:]): p.read_text(encoding="utf-8").splitlines()
        for p in sorted(out.glob("ref.x*"))
    }
    rows = []
    for folder in sorted(p for p in out.glob("*/*") if p.is_dir() and any(p.glob("x1.*"))):
        row: dict[str, object] = {"model": folder.parent.name, "decoding": folder.name}
        for k, ref in sorted(refs.items()):
            hyp_path = next(folder.glob(f"x{k}.*"), None)
            if hyp_path is None:
                continue
            hyps = hyp_path.read_text(encoding="utf-8").splitlines()
            row[f"x{k}"] = round(corpus_bleu(hyps, ref).score, 2)
            row[f"len{k}"] = round(words(hyps) / max(1, words(ref)), 3)
        rows.append(row)
    single = {(r["model"], r["decoding"]): r.get("x1") for r in rows}
    for row in rows:
        base = single.get((row["model"], row["decoding"])) or single.get((row["model"], "beam5"))
        for k in (2, 3):
            if f"x{k}" in row and isinstance(base, float) and base > 0:
                row[f"x{k}%"] = round(100 * float(row[f"x{k}"]) / base, 1)  # type: ignore[arg-type]
    (out / "table.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    print(
        "| model | decoding | 1 sentence | 2 joined | 3 joined | 2 joined % | 3 joined % "
        "| hyp/ref length 1 / 2 / 3 |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        lengths = " / ".join(str(r.get(f"len{k}", "-")) for k in (1, 2, 3))
        print(
            f"| {r['model']} | {r['decoding']} | {r.get('x1', '-')} | {r.get('x2', '-')} "
            f"| {r.get('x3', '-')} | {r.get('x2%', '-')} | {r.get('x3%', '-')} | {lengths} |"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["join"] and len(sys.argv) == 7:
        join(int(sys.argv[2]), sys.argv[3:])
    elif sys.argv[1:2] == ["table"] and len(sys.argv) == 3:
        table(Path(sys.argv[2]))
    else:
        sys.exit(__doc__)
