"""Training-step levers side by side in one process: the same batches, rounds in alternating order.

python benchmarks/train_step_ab.py JOINT_DATA TRIMMED_DATA [--rounds 5] [--steps 15]
                                  [--precision auto|fp32|bf16] [--arms base,dec,defer,enc,all]

JOINT_DATA is Multi30k preprocessed with ``--keep-target-vocab``, TRIMMED_DATA the same with
``--trim-target-vocab`` (the default); both segment the training pairs alike, so the batches
are the same. Each arm is the default model, Adam, label smoothing 0.2, its loss under autocast
at ``--precision`` as ``nmtkit train`` runs it (``auto``: bf16 on a CPU with native bf16, else
fp32), trained on ``--steps`` batches a round; it prints each arm's target tokens a second
(median of the rounds) and its ratio to the first:

- base: the step before the thirteenth round's levers (the decoder's step layers and ``nn.GRU``
  as autograd takes them, the joint target ids);
- dec: the decoder's GRU step layers with deferred weight gradients
  (nmtkit.models.deferred_grads);
- defer: and the attention's query layer (``AttentionScorer.query_layers``);
- enc: and the encoder's GRU in steps (nmtkit.models.encoders.gru_steps; fp32 only, so under
  bf16 the same as ``defer``);
- all: and the trimmed target vocabulary: the default.

An arm named ``NAME@N`` is arm NAME with batches of ``train.max_tokens=N`` (``--arms
all@1200,all@1600,all@2000`` compares batch sizes): its batches are the same epoch's sentences,
grouped into fewer, larger batches.

Run it alone (nothing else on the cores): the arms share the machine's state, not its noise.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from nmtkit.config import Config
from nmtkit.models import decoders
from nmtkit.models.attention.additive import AdditiveAttention
from nmtkit.models.encoders import recurrent
from nmtkit.models.seq2seq import build_model
from nmtkit.runtime import autocast, resolve_precision, tune_allocator
from nmtkit.training.data import EpochExamples, TrainingData, concat_policy

DEFERRED, IN_STEPS = decoders.deferred_weight_grads, recurrent.runs_in_steps
QUERY_LAYERS = AdditiveAttention.query_layers


def levers(*, defer: bool, attn: bool, enc: bool) -> None:
    """Switch the gradient levers on or off for the arms that follow."""
    decoders.deferred_weight_grads = (  # type: ignore[assignment]
        DEFERRED if defer else (lambda *layers: contextlib.nullcontext())
    )
    AdditiveAttention.query_layers = QUERY_LAYERS if attn else (lambda self: ())  # type: ignore[method-assign]
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


def train_steps(
    setup: dict[str, Any], batches: list[Any], label_smoothing: float, precision: str
) -> float:
    """Train on ``batches``; return target tokens a second."""
    model, optimizer = setup["model"], setup["optimizer"]
    tokens, start = 0, time.perf_counter()
    for batch in batches:
        with autocast(precision, "cpu"):
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
    parser.add_argument("--precision", choices=["auto", "fp32", "bf16"], default="auto")
    parser.add_argument(
        "--arms",
        default="base,dec,defer,enc,all",
        help="the first is the base; NAME@N: batches of N tokens",
    )
    args = parser.parse_args()
    tune_allocator()
    precision = resolve_precision(args.precision)
    print(f"precision {precision}, CPU {torch.backends.cpu.get_cpu_capability()}")
    config = Config()
    needed = 5 + 2 * args.steps  # warm-up, then two sets of batches, alternating by round
    every = {  # data, deferred decoder, deferred attention query, encoder in steps
        "base": (args.joint, False, False, False),
        "dec": (args.joint, True, False, False),
        "defer": (args.joint, True, True, False),
        "enc": (args.joint, True, True, True),
        "all": (args.trimmed, True, True, True),
    }
    arms = {name: every[name.split("@")[0]] for name in args.arms.split(",")}

    def arm_config(name: str) -> Config:
        if "@" not in name:
            return config
        train = dataclasses.replace(config.train, max_tokens=int(name.split("@")[1]))
        return dataclasses.replace(config, train=train)

    setups = {name: arm(data, arm_config(name), needed) for name, (data, *_) in arms.items()}
    smoothing = config.train.label_smoothing

    def run(name: str, batches: list[Any]) -> float:
        _, defer, attn, enc = arms[name]
        levers(defer=defer, attn=attn, enc=enc)
        return train_steps(setups[name], batches, smoothing, precision)

    for name, setup in setups.items():
        run(name, setup["batches"][:5])
    rates: dict[str, list[float]] = {name: [] for name in arms}
    for number in range(args.rounds):
        order = list(arms) if number % 2 == 0 else list(reversed(arms))
        first = 5 + (number % 2) * args.steps
        for name in order:
            rates[name].append(run(name, setups[name]["batches"][first : first + args.steps]))
    base = statistics.median(next(iter(rates.values())))
    print("| arm | output rows | target tok/s (median) | rounds | / base |")
    print("| --- | ---: | ---: | --- | ---: |")
    for name, values in rates.items():
        median = statistics.median(values)
        rounds = " ".join(f"{v:,.0f}" for v in values)
        rows = setups[name]["rows"]
        print(f"| {name} | {rows:,} | {median:,.0f} | {rounds} | {median / base:.2f} |")


if __name__ == "__main__":
    main()
