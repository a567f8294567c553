"""Training-step levers side by side in one process: the same batches, rounds in alternating order.

python benchmarks/train_step_ab.py JOINT_DATA TRIMMED_DATA [--rounds 5] [--steps 15]

JOINT_DATA is Multi30k preprocessed with ``--keep-target-vocab``, TRIMMED_DATA the same with
``--trim-target-vocab`` (the default); both segment the training pairs alike, so the batches
are the same. Each arm is the default model (fp32 unless the CPU makes ``auto`` bf16), Adam,
label smoothing 0.2, trained on ``--steps`` batches a round; it prints each arm's target tokens
a second (median of the rounds) and its ratio to the first:

- base: the step before this round's levers (the decoder's step layers and ``nn.GRU`` as
  autograd takes them, the joint target ids);
- defer: the decoder's step layers with deferred weight gradients (nmtkit.models.deferred_grads);
- enc: and the encoder's GRU in steps (nmtkit.models.encoders.gru_steps);
- all: and the trimmed target vocabulary: the default.

Run it alone (nothing else on the cores): the arms share the machine's state, not its noise.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from nmtkit.config import Config
from nmtkit.models import decoders
from nmtkit.models.encoders import recurrent
from nmtkit.models.seq2seq import build_model
from nmtkit.runtime import tune_allocator
from nmtkit.training.data import EpochExamples, TrainingData, concat_policy

DEFERRED, IN_STEPS = decoders.deferred_weight_grads, recurrent.runs_in_steps


def levers(*, defer: bool, enc: bool) -> None:
    """Switch the two gradient levers on or off for the arms that follow."""
    decoders.deferred_weight_grads = (  # type: ignore[assignment]
        DEFERRED if defer else (lambda *layers: contextlib.nullcontext())
    )
    recurrent.runs_in_steps = IN_STEPS if enc else (lambda *args: False)  # type: ignore[assignment]


def arm(data_dir: Path, config: Config, batches: int) -> dict[str, Any]:
    data = TrainingData.load(data_dir)
    torch.manual_seed(0)
    model = build_model(
        config.model,
        src_vocab_size=data.src_text.vocab_size,
        tgt_vocab_size=data.tgt_text.vocab_size,
        pad_id=0,
    ).train()
    examples = EpochExamples.of(data.train, concat_policy(config.train), seed=1, epoch=1)
    indices = examples.batches(
        max_tokens=config.train.max_tokens, max_sentences=None, seed=1, epoch=1
    )
    return {
        "model": model,
        "optimizer": torch.optim.Adam(model.parameters(), lr=config.train.lr, fused=True),
        "batches": [examples.batch(i) for i in indices[:batches]],
        "rows": data.tgt_text.vocab_size,
    }


def train_steps(setup: dict[str, Any], batches: list[Any], label_smoothing: float) -> float:
    """Train on ``batches``; return target tokens a second."""
    model, optimizer = setup["model"], setup["optimizer"]
    tokens, start = 0, time.perf_counter()
    for batch in batches:
        loss, _ = model.loss(batch, label_smoothing=label_smoothing)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        tokens += int((batch.tgt_out != 0).sum())
    return tokens / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("joint", type=Path)
    parser.add_argument("trimmed", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=15)
    args = parser.parse_args()
    tune_allocator()
    config = Config()
    needed = 5 + 2 * args.steps  # warm-up, then two sets of batches, alternating by round
    arms = {
        "base": (args.joint, False, False),
        "defer": (args.joint, True, False),
        "enc": (args.joint, True, True),
        "all": (args.trimmed, True, True),
    }
    setups = {name: arm(data, config, needed) for name, (data, _, _) in arms.items()}
    smoothing = config.train.label_smoothing

    def run(name: str, batches: list[Any]) -> float:
        levers(defer=arms[name][1], enc=arms[name][2])
        return train_steps(setups[name], batches, smoothing)

    for name, setup in setups.items():
        run(name, setup["batches"][:5])
    rates: dict[str, list[float]] = {name: [] for name in arms}
    for number in range(args.rounds):
        order = list(arms) if number % 2 == 0 else list(reversed(arms))
        first = 5 + (number % 2) * args.steps
        for name in order:
            rates[name].append(run(name, setups[name]["batches"][first : first + args.steps]))
    base = statistics.median(rates["base"])
    print("| arm | output rows | target tok/s (median) | rounds | / base |")
    print("| --- | ---: | ---: | --- | ---: |")
    for name, values in rates.items():
        median = statistics.median(values)
        rounds = " ".join(f"{v:,.0f}" for v in values)
        rows = setups[name]["rows"]
        print(f"| {name} | {rows:,} | {median:,.0f} | {rounds} | {median / base:.2f} |")


if __name__ == "__main__":
    main()
