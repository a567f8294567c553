"""Write docs/architecture.md from the code as it is.

The module table comes from the module docstrings (the first paragraph of each), the layer
diagram from the import-linter contracts in pyproject.toml; the prose is the template below.
Edit this file, never the generated one, and regenerate it::

    make docs
    python docs/make_architecture.py docs/architecture.md   # the same
    python docs/make_architecture.py                        # to stdout

tests/unit/test_architecture.py checks that the committed file is up to date.
"""

# ruff: noqa: E501  (the template's markdown tables and diagrams cannot be wrapped)

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest's own dependency
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "nmtkit"
MODULES_MARK = "@@MODULES@@"
LAYERS_MARK = "@@LAYERS@@"


@dataclass(frozen=True)
class Module:
    """One ``.py`` file of the package: ``path`` relative to the repository root."""

    path: Path
    package: str  # dotted name of the package that holds it, e.g. "nmtkit.models.attention"
    summary: str | None  # the docstring's first paragraph on one line; None: no docstring


@dataclass(frozen=True)
class Layer:
    """One entry of a layers contract: its modules and whether they may import each other."""

    modules: tuple[str, ...]
    independent: bool


def docstring_summary(path: Path) -> str | None:
    """The first paragraph of a module's docstring, joined onto one line; None without one."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    if not doc or not doc.strip():
        return None
    return " ".join(doc.strip().split("\n\n")[0].split())


def find_modules(root: Path = ROOT) -> list[Module]:
    """Every module of the package, in path order."""
    found = []
    for path in sorted((root / PACKAGE).rglob("*.py")):
        rel = path.relative_to(root)
        found.append(Module(rel, ".".join(rel.parent.parts), docstring_summary(path)))
    return found


def load_contracts(root: Path = ROOT) -> list[dict[str, Any]]:
    """The import-linter contracts of pyproject.toml, in order."""
    with (root / "pyproject.toml").open("rb") as f:
        config = tomllib.load(f)
    contracts: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    return contracts


def layers_contract(contracts: list[dict[str, Any]]) -> dict[str, Any]:
    """The one ``layers`` contract over the whole package (the package's layering); others
    layer the inside of one subpackage."""
    found = [c for c in contracts if c["type"] == "layers" and c.get("containers") == [PACKAGE]]
    if len(found) != 1:
        raise ValueError(
            f"expected one layers contract of {PACKAGE} in pyproject.toml, found {len(found)}"
        )
    return found[0]


def parse_layers(contract: dict[str, Any]) -> list[Layer]:
    """The layers, top first, as import-linter reads them: ``a | b`` independent, ``a : b`` not."""
    layers = []
    for entry in contract["layers"]:
        sep = "|" if "|" in entry else ":"
        names = tuple(name.strip().strip("()") for name in entry.split(sep))
        layers.append(Layer(names, independent=sep == "|" or len(names) == 1))
    return layers


def _tail(module: str, containers: list[str]) -> str:
    """The top-level name under the contract's container: nmtkit.search.beam -> search."""
    for container in containers:
        if module.startswith(container + "."):
            return module[len(container) + 1 :].split(".")[0]
    return module


def _layer_of(module: str, layers: list[Layer], containers: list[str]) -> int:
    tail = _tail(module, containers)
    return next(i for i, layer in enumerate(layers) if tail in layer.modules)


def _ignored(contract: dict[str, Any]) -> list[tuple[str, str]]:
    pairs = (line.split("->") for line in contract.get("ignore_imports", []))
    return [(importer.strip(), imported.strip()) for importer, imported in pairs]


def render_layers(contracts: list[dict[str, Any]]) -> str:
    """The layering: a mermaid flowchart, the same as a list, and the other contracts."""
    contract = layers_contract(contracts)
    layers = parse_layers(contract)
    containers = contract.get("containers", [])
    within = " and ".join(f"`{c}`" for c in containers)
    out = ["```mermaid", "flowchart TD"]
    for i, layer in enumerate(layers):
        sep = " | " if layer.independent else " : "
        out.append(f'    L{i}["{sep.join(layer.modules)}"]')
    out += [f"    L{i} --> L{i + 1}" for i in range(len(layers) - 1)]
    for importer, imported in _ignored(contract):
        src, dst = (_layer_of(m, layers, containers) for m in (importer, imported))
        label = f"{_tail(importer, containers)} imports {_tail(imported, containers)} lazily"
        out.append(f'    L{src} -.->|"{label}"| L{dst}')
    out += ["```", "", f"The layers of {within}, top first (`a | b`: neither imports the other):"]
    out.append("")
    for i, layer in enumerate(layers, start=1):
        sep = " | " if layer.independent else " : "
        out.append(f"{i}. " + sep.join(f"`{name}`" for name in layer.modules))
    out.append("")
    if contract.get("exhaustive"):
        out += [f"Every module directly under {within} is in a layer (the contract is exhaustive)."]
        out.append("")
    ignored = _ignored(contract)
    if ignored:
        out.append("The only imports that point upward, allowed by name (`ignore_imports`):")
        out.append("")
        out += [f"- `{importer}` -> `{imported}`" for importer, imported in ignored]
        out.append("")
    out.append("The other contracts:")
    out.append("")
    for other in contracts:
        if other is contract:
            continue
        out.append(f"- **{other['name']}** ({other['type']}): " + _describe(other))
    return "\n".join(out)


def _describe(contract: dict[str, Any]) -> str:
    def names(key: str) -> str:
        return ", ".join(f"`{m}`" for m in contract.get(key, []))

    if contract["type"] == "forbidden":
        how = "directly" if contract.get("allow_indirect_imports") else "directly or indirectly"
        text = f"{names('source_modules')} may not import {names('forbidden_modules')}, {how}"
    elif contract["type"] == "independence":
        text = f"{names('modules')} do not import each other"
    elif contract["type"] == "layers":
        order = " above ".join(f"`{layer}`" for layer in contract["layers"])
        text = f"within {names('containers')}, imports point downward only: {order}"
    else:
        text = "see pyproject.toml"
    ignored = _ignored(contract)
    if ignored:
        text += "; except " + ", ".join(f"`{a}` -> `{b}`" for a, b in ignored)
    return text + "."


def _package_order(modules: list[Module], contracts: list[dict[str, Any]]) -> list[str]:
    """The root package first, then the subpackages in layer order (top first)."""
    contract = layers_contract(contracts)
    containers = contract.get("containers", [])
    layers = parse_layers(contract)
    rank = {name: (i, j) for i, layer in enumerate(layers) for j, name in enumerate(layer.modules)}
    packages = sorted({m.package for m in modules})

    def key(package: str) -> tuple[int, tuple[int, int], str]:
        if package == PACKAGE:
            return (0, (0, 0), package)
        return (1, rank.get(_tail(package, containers), (len(layers), 0)), package)

    return sorted(packages, key=key)


def render_modules(modules: list[Module], contracts: list[dict[str, Any]]) -> str:
    """One table per package: each module's path and the first paragraph of its docstring."""
    out: list[str] = []
    for package in _package_order(modules, contracts):
        members = sorted(
            (m for m in modules if m.package == package),
            key=lambda m: (m.path.name != "__init__.py", m.path.name),
        )
        out += [f"### `{package}`", "", "| module | what it holds |", "| --- | --- |"]
        for m in members:
            summary = (m.summary or "**no docstring**").replace("|", "\\|")
            out.append(f"| `{m.path.as_posix()}` | {summary} |")
        out.append("")
    return "\n".join(out).rstrip("\n")


def render(root: Path = ROOT) -> str:
    """The whole of docs/architecture.md."""
    contracts = load_contracts(root)
    text = TEMPLATE.replace(LAYERS_MARK, render_layers(contracts))
    return text.replace(MODULES_MARK, render_modules(find_modules(root), contracts))


def main(argv: list[str]) -> int:
    if len(argv) > 1 or (argv and argv[0] in ("-h", "--help")):
        print("usage: python docs/make_architecture.py [OUTPUT]", file=sys.stderr)
        return 2
    text = render()
    if argv:
        Path(argv[0]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


TEMPLATE = """\
<!-- Generated by docs/make_architecture.py from the code and pyproject.toml: edit that script,
     not this file, and run `make docs`. -->

# Architecture

How nmtkit is put together, for readers of the code and authors of plugins. The commands are in
[cli.md](cli.md), the files in [formats.md](formats.md). The [module table](#modules) and the
[import layering](#import-layering) below are generated from the code (module docstrings) and
from the import-linter contracts in `pyproject.toml`, which `make lint` checks.

## Data flow

```
preprocess  corpus files ─TextPipeline.encode─> subword ids (≤ max_pieces) ─write_dataset─> data dir
                                                       (.bin/.idx, spm.model, manifest.json)
train       data dir ─TokenDataset─> epoch_batches(seed, epoch) ─collate─> Batch
            Batch ─Seq2Seq (encoder, attention, decoder: from the registry)─> loss
                  ─TrainingLoop (optimizer, schedule, validation)─> best.pt, last.pt, train_state.pt
translate   raw lines ─Translator (encode, LengthPolicy.cut, chunk)─> decode_sequences (sort by length, token budget)
                  ─SearchStrategy (beam, greedy, sampling)─> Hypothesis ─TextPipeline.decode─>
                  Translation ─formats─> text | nbest | jsonl
serve       JSON requests ─FastAPI app (limits, settings)─> Batcher (one worker thread, batches by settings)
                  ─Translator.translate_chunk─> Translation ─> JSON answers, in request order
score       hypotheses, references ─sacrebleu─> BLEU, chrF, TER + signatures
align       sentence pairs ─Seq2Seq.force_decode─> attention ─merge_to_words─> Pharaoh | JSON | heatmaps
```

| module | piece |
| --- | --- |
| `data/text.py` | `TextPipeline`: Moses punctuation normalization → optional Moses tokenization → optional lowercasing → SentencePiece; `decode` drops PAD/BOS/EOS and undoes Moses tokenization. Special ids PAD 0, UNK 1, BOS 2, EOS 3. Cleaning filters. |
| `data/preprocess.py`, `data/datadir.py` | `preprocess()`: clean, learn SentencePiece, binarize; builds the data dir in a staging folder and renames it into place. |
| `data/trainset.py`, `data/workers.py`, `data/dedup.py` | The training split in bounded memory: chunks prepared, cleaned and encoded in `--workers` spawned processes, in corpus order; SentencePiece learned from a seeded sample of pairs; duplicates found by 64-bit digests. |
| `data/dataset.py` | `TokenDataset`: memory-mapped `.bin`/`.idx` reader; `write_dataset`, `write_chunks`. |
| `data/batching.py` | `batch_by_tokens`, `epoch_batches`, `collate` → `Batch`. |
| `registry.py`, `contracts.py`, `values.py` | `register`/`get`/`names` (`registry.py`, which re-exports the rest), the contracts, the values they exchange; plugin discovery in `plugins.py`. |
| `models/` | `Seq2Seq` and the built-in encoders (`models/encoders/`), attention scorers (`models/attention/`) and decoder. |
| `search/` | `GreedySearch`, `BeamSearch`, `SamplingSearch`; `decode.py`: `decode_sequences`, the one batched decoding loop over many sentences; `length_policy.py`: `LengthPolicy`, the one rule for long input (translate, align, score-pairs, serve). |
| `training/` | `train()`; `TrainingLoop` (`loop.py`) over one update (`update.py`), validation, the stopping rules (`stopping.py`), the model directory's rules (`model_dir.py`), the train state (`train_state.py`) and reporting; learning-rate schedules, the dropout that follows the run's length (`run_length_dropout.py`), `TrainingData`; `averaging.py`: `nmtkit average`. |
| `checkpoint.py` | model directory, `save_checkpoint`, `load_model`. |
| `files.py`, `outputs.py` | reading text (UTF-8, `.gz`, `-`, line-parallel pairs checked line by line); writing it (atomic, `-` for stdout, folders checked before work). |
| `translation/translator.py`, `translation/loading.py`, `translation/options.py`, `translation/results.py`, `translation/splitting.py`, `translation/formats.py`, `translation/streaming.py` | `Translator` (streaming, chunked), `open_translator` (models, ensemble, search overrides, shortlist) and the range checks of its options; the `Translation` it returns; `--split-sentences` (sentencex sentences, joined back in the line's layout); the output writers; input chunks that end when a pipe pauses (`--flush-ms`). |
| `translation/forced.py`, `translation/nbest.py` | `ForcedScorer`: log p, search score and perplexity of given translations by teacher forcing (`nmtkit score-pairs`); Moses n-best rescoring. |
| `serving/` | `nmtkit serve`: `Batcher` (dynamic batching on one worker thread, no HTTP), `TranslatorPool` (per-request search settings over the shared model), the FastAPI app and its JSON, the listening socket and the graceful uvicorn server. |
| `scoring/metrics.py` | sacreBLEU scoring; `scoring/comparison.py`, `significance.py`, `length_buckets.py`, `terms.py`: several systems, paired tests, BLEU by length, term accuracy. |
| `alignment/` | attention → word alignments (`attention_links.py`, over files `file_alignment.py`; `links.py`), symmetrization, Pharaoh I/O, AER (`gold.py`), heatmaps; `neural/`: the learned aligner of `align --learn`. |
| `shortlist/` | the vocabulary shortlist, whole: IBM Model 1 (`ibm1.py`), the table and each sentence's candidates (`table.py`), a search over the candidates alone (`restricted.py`), `nmtkit shortlist` and `translate --shortlist` (`builder.py`). |

**Batches.** `batch_by_tokens` sorts sentences by (target, source) length, breaking ties at
random, and cuts them greedily so that *sentences × (longest side + 1)* stays within
`train.max_tokens`; a longer sentence gets a batch of its own. The batches are then shuffled.
`collate` pads with PAD (0) into a `Batch`: `src` = x + EOS `[B, S]`, `src_lengths` `[B]`,
`tgt_in` = BOS + y and `tgt_out` = y + EOS, both `[B, T]`.

## The model

Shape letters, defined in `nmtkit/models/__init__.py`: B batch, K beam, S source length,
T target length, E embedding, H encoder units per direction, C annotation (context) width
(2H for `birnn`), D decoder state, A attention hidden size, M readout (maxout) width,
V target vocabulary.

`Seq2Seq` owns the source embedding and three registered components built from the config:
`encoder` (`model.encoder`), an attention scorer (`model.attention`) that it hands to the
`decoder` (`model.decoder`). With the paper's notation (Bahdanau et al., 2015, appendix A):

**Encoder** (`birnn`, A.2.1). The source words x_1..x_{Tx} (the last is EOS) are embedded
`[B, S, E]` (dropout) and read by a bidirectional GRU:

    h_j = [→h_j ; ←h_j]                                   annotations  [B, S, 2H]
    summary = ←h_1  (backward state at the first word)                 [B, H]

**Decoder** (`gru`, A.2.2). Once per sentence:

    s_0 = tanh(W_s ←h_1)                                               [B, D]
    keys_j = U_a h_j                                                   [B, S, A]

then for each step i, from the previous word y_{i-1} (BOS at i = 1) and state s_{i-1}:

    1. attend from s_{i-1}:  e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j)     [B, S]
                             α_ij = softmax_j(e_ij), padding masked       [B, S]
    2. context:              c_i = Σ_j α_ij h_j                           [B, 2H]
    3. GRU on [E y_{i-1}; c_i]:
                             r_i = σ(W_r E y_{i-1} + C_r c_i + U_r s_{i-1})
                             z_i = σ(W_z E y_{i-1} + C_z c_i + U_z s_{i-1})
                             ñ_i = tanh(W E y_{i-1} + C c_i + r_i ∘ (U s_{i-1}))
                             s_i = (1 − z_i) ∘ ñ_i + z_i ∘ s_{i-1}        [B, D]
    4. maxout readout over (s_i, E y_{i-1}, c_i):
                             t̃_i = U_o s_i + V_o E y_{i-1} + C_o c_i      [B, 2M]
                             t_i,k = max(t̃_i,2k−1, t̃_i,2k)               [B, M]  (dropout)
    5. output:               p(y_i | y_<i, x) = softmax(W_o t_i)          [B, V]

(biases omitted). The GRU uses PyTorch's convention: its z_i is the paper's 1 − z_i, and the
reset gate multiplies U s_{i-1} rather than s_{i-1}. By default the readout takes the new state
s_i, as in the paper's eq. (4), p(y_i | ...) = g(y_{i-1}, s_i, c_i); the decoder option
`readout_state: previous` takes s_{i-1} as the paper's appendix A.2.2 writes it, and the
`rnnsearch-paper` preset does so ([paper.md](paper.md)). Because step 1 uses s_{i-1} only, α_i does
not depend on y_{i-1}; a unit test checks this order. In training (teacher forcing)
`GRUDecoder.forward` computes the embedding's share of the gates and of the readout for all T
steps at once and loops only over what recurs; the output layer is applied only to real
(non-pad) target positions. The loss is label-smoothed cross-entropy summed over target tokens
(EOS included) and divided by their number. Every parameter starts at
uniform(−`init_scale`, `init_scale`) (`model.init: uniform`, the default), or as in the paper's
appendix B.1 with `model.init: paper` (`nmtkit/models/initialization.py`).

**RNNencdec is a configuration**, not separate code: the `rnnencdec` preset sets
`encoder: {name: rnn}` (a unidirectional GRU, summary = its last state →h_{Tx}) and
`attention: {name: none}` (`nmtkit/models/attention/fixed.py`). The `none` scorer returns, at
every step, weights that are one-hot on the last real source position, so c_i = →h_{Tx}, the
fixed sentence vector of Cho et al. (2014), and s_0 = tanh(W_s →h_{Tx}). The decoder is the
same `gru`.

**The conditional GRU** (`cgru`, the default decoder since 2026-12-07; Sennrich et al., 2017,
Nematus; the decoder of Marian's `s2s`; the `rnnsearch-paper` and `tiny` presets keep `gru`) moves the attention between two GRU transitions, so that it
attends from a state that has read y_{i-1}:

    1. s'_i = GRU_1(s_{i-1}, E y_{i-1})                                   [B, D]
    2. attend from s'_i:     e_ij = v_a^T tanh(W_a s'_i + U_a h_j), α_i, c_i as above
    3. s_i  = GRU_2(s'_i, c_i)                                            [B, D]
    4.–5. readout and output as in `gru`, over (s_i, E y_{i-1}, c_i)

It is `GRUDecoder` with one more recurrent matrix (`proposal_to_gates`, [D, 3D]) and its own
`_recur` (`nmtkit/models/conditional_gru.py`); everything else (teacher forcing, the search's
steps, the attention weights that `align` reads) is shared. Unit tests check its step against
two `torch.nn.GRUCell`s and that its α_i, unlike `gru`'s, depends on y_{i-1}.

## The registry and plugins

`nmtkit/registry.py` is all a component author needs (it re-exports the contracts of
`nmtkit/contracts.py` and the values of `nmtkit/values.py`): four kinds (`encoder`, `attention`,
`decoder`, `search`), each with a contract (a base class) whose constructor takes the
component's `Config` dataclass plus the sizes it depends on as keywords. The contracts, their
shapes and masking rules, and a complete working plugin are in [plugins.md](plugins.md);
`nmtkit list` prints every registered component with its options and defaults.

They exchange frozen values: `EncoderOutput` (annotations `[B,S,C]`, `pad_mask` `[B,S]` True at
padding, summary), `DecoderState` (s_{i-1} `[B,D]`, annotations, the scorer's precomputed keys,
`pad_mask`, the previous weights α_{i-1} and the coverage Σα; `advance(s_i, α_i)` steps it,
`reorder(rows)` moves the per-hypothesis tensors to a beam's survivors, and `select(index)`
keeps and repeats rows of every tensor as sentences start and finish), `Attended` (context `[B,C]`,
weights `[B,S]`), `StepOutput` (log-probabilities `[B,V]`, new state, α_i `[B,S]`),
`DecoderOutput` (readout `[B,T,M]`, weights `[B,T,S]`) and `Hypothesis` (tokens without
BOS/EOS, score, log-probability, optional weights). A search strategy sees the model only
through the `Translatable` protocol: `encode`, `init_state`, `decode_step`.

The API is `register(kind, name)` (a class decorator), `get(kind, name)`, `names(kind)` and
`provider(kind, name)`. `register` raises a `PluginError` for an unknown kind, a class that does
not subclass the kind's contract or lacks a `Config` dataclass, or a name already taken
(built-in names cannot be shadowed). `get` of an unknown name lists the registered names and the
closest match. `nmtkit/catalog.py` turns the registry into the rows `nmtkit list` prints.

Third parties plug in two ways. An installed package declares modules in the entry-point group
`nmtkit.plugins`; discovery is lazy (on the first lookup of an unknown name or the first
`names()` call every entry point is imported once, in name order) and a module that fails to
import is a `PluginError` naming the entry point and its distribution; `NMTKIT_DISABLE_PLUGINS=1`
skips it. A folder of modules loads with `--user-dir DIR` on every subcommand but `download`.
Both live in `nmtkit/plugins.py`. Checkpoints record each component's name, options, module and
distribution, so loading a model whose plugin is missing is a `CheckpointError` that names the
package to install.

## Search

`Translator` (`nmtkit/translation/translator.py`) encodes each input line (with
`--split-sentences`, each of its sentences: `nmtkit/translation/splitting.py`) with the source
`TextPipeline`, cuts a line over `--max-source-len` pieces with a warning (`LengthPolicy.cut`;
longer than any training source is fine), and hands each chunk to
`decode_sequences` (`nmtkit/search/decode.py`), which sorts it by length, searches it in batches
of at most `search.batch_size` sentences and `--max-tokens` padded pieces (`LengthPolicy.batches`,
so a very long sentence is searched alone), and returns the results in input order; validation
during training decodes through the same function, and `align` cuts and batches its pairs with
the same `LengthPolicy`. The output cap is ⌊a·|x| + b⌋ target pieces, at
least 1, EOS excluded, where |x| is the number of source pieces, a = `max_len_a` and
b = `max_len_b`; at the cap only EOS may follow. PAD and BOS are never generated.

With `translate --shortlist`, `decode_sequences` runs a `ShortlistSearch` around the strategy
(`nmtkit/shortlist/`: the table in `table.py`, built by `builder.py` from IBM Model 1,
`ibm1.py`; the search in `restricted.py`): the batch's candidate target pieces V' (each source
piece's `top_k`, the frequent pieces, the special ids, the prefix words) are numbered 0..V'−1,
their rows of the output layer are cut once per batch (`Seq2Seq.shortlist_rows`, none when the
layer is int8) and handed to every step (`Decoder.shortlist_step`, which projects onto those
rows alone; a decoder without it renormalizes its full step over V'), the search runs unchanged
in the candidates' numbering, and the hypotheses' words are mapped back to ids; a sentence with
a source piece the shortlist lacks is searched apart, over the whole vocabulary.

With several models (`translate -m A -m B`, `align -m A -m B`), an `Ensemble`
(`nmtkit/search/ensemble.py`) stands in for the model: it meets the `Translatable` protocol over
its members, each step's log-probabilities are the log of the mean of the members' probabilities
(as fairseq's `EnsembleModel`) and the attention weights are their mean; its `EnsembleState`, a
`DecoderState` that holds every member's, is selected and reordered member by member, so every
strategy (and a shortlist) runs unchanged. A single model is never wrapped.

**Greedy** takes the most probable word at each step; its score is log p / (|y| + 1).
**Sampling** (`SamplingSearch`) draws each word from the model's distribution, sharpened by a
temperature and cut to the top k words or the nucleus of mass p; every sentence has its own
generator seeded from the seed and the sentence, so its samples do not depend on the batch.
Greedy and sampling share one step loop (`decode_rows` in `nmtkit/search/rows.py`), and all
three strategies apply the same `NextWordRules` (`nmtkit/search/rules.py`): no PAD or BOS, EOS
at the cap, and the words of a forced prefix (`--prefix`) while it lasts.

**Beam** (`BeamSearch`, beam size K), batched over sentences and beams (`[B*K, ...]`), ranks
hypotheses by GNMT's score (Wu et al., 2016): log p / lp(y) + cp(x; y), with
lp(y) = ((5 + |y|) / 6)^α (|y| counts EOS) and the coverage penalty
cp = β Σ_j log min(Σ_i α_ij, 1) over the real source positions. For every step:

1. The K live hypotheses of each sentence (at the start only one) are extended by every word;
   the 2K best continuations by total log-probability are kept (`_expand`).
2. Those among the first K that end in EOS are finished and scored (`_Finished.add`).
3. The K best continuations that do not end in EOS live on (`_prune`), and the decoder state's
   per-hypothesis tensors move to them with `DecoderState.reorder`; a sentence that is done
   leaves every tensor through `DecoderState.select`.
4. With early stopping (the default, as in fairseq) a sentence with K finished hypotheses is
   done; with `--no-early-stop` it goes on while a live hypothesis could still beat the K-th
   best finished one. A done sentence is dropped from every tensor of the batch, so long
   sentences do not slow down short ones.

Each sentence returns its K best finished hypotheses by score. α = 0 ranks by log p and β = 0
turns the coverage penalty off; a beam of 1 gives the greedy result (a unit test checks this,
and that a sentence translates the same alone or in a batch).

## Training, determinism and resume

`train()` (`nmtkit/training/trainer.py`) loads the data dir, builds the model, and runs
`TrainingLoop` (`loop.py`). One update: collate a batch, set the learning rate from the schedule, compute
the loss, back-propagate, clip the gradient norm, step. Every `validate_every` updates it
computes the validation loss and the BLEU of greedy translations (`nmtkit/training/validation.py`:
`decode_sequences`, then sacreBLEU, detokenized, against `valid.raw.TGT`), writes `last.pt`,
`train_state.pt` and, on a new best BLEU, `best.pt`; the plateau schedule and early stopping
count validations without improvement.

- One `train.seed` seeds Python's `random` and torch (parameter initialization and dropout).
- The batch order of epoch e is a pure function of (seed, e): `np.random.default_rng([seed, e])`
  breaks length ties and shuffles the batches. numpy's global generator is never used.
- `train_state.pt` holds the model, optimizer and schedule states, the run position (`step`,
  `epoch`, `batch_in_epoch`, best BLEU and step, validations without improvement, seconds),
  torch's and Python's RNG states, and the config. `--resume` restores them, recomputes the
  epoch's batches, skips the `batch_in_epoch` already consumed, and continues the same run:
  N updates, then a resume up to N + M, log the same training losses as N + M updates in one
  go (an integration test checks this). The extra validation that closes a run does not feed
  the plateau schedule.
- A run records why it ended (`stop_reason`); resuming an ended run has nothing to do unless the
  new config raises the limit it met. Each save renames the previous `train_state.pt` to
  `train_state.prev.pt`, and every checkpoint and train state carries a SHA-256 of its contents
  (`nmtkit/checkpoint.py`), so a damaged file is refused on load and `--resume` falls back to the
  previous state. SIGINT and SIGTERM (`StopSignals` in `nmtkit/training/loop.py`) stop the run
  after the current update and save it; the CLI exits with 128 + the signal's number.
- With `train.keep_last` N, each validation also writes `checkpoint_<update>.pt` and deletes
  all but the newest N; `nmtkit average` (`nmtkit/training/averaging.py`) sums their float
  parameters in float64 and casts the mean back (fairseq's `average_checkpoints.py`), after
  checking that every checkpoint has the first's model config, vocabulary and shapes.
- Data-parallel under torchrun (`nmtkit/training/distributed.py`, the only module that says
  `torch.distributed`; [scale.md](scale.md)): an update takes W·F consecutive batches of the
  epoch's order (W ranks, F = `train.update_freq`), rank r every W-th from r; each rank
  back-propagates loss × W / (the update's target tokens), with DDP's `no_sync()` on all but its
  last micro-batch, so N ranks compute what one process with N times the `update_freq` does (an
  integration test runs the real torchrun with two gloo processes). DDP wraps only the training
  forward; validation and search use the model itself. Rank 0 alone logs, validates and writes;
  stop decisions are reduced over the ranks. `batch_in_epoch` counts batches of all ranks, so a
  run resumes on another number of ranks; rank 0's RNG is saved and the others' re-derived from
  (seed, rank, update).
- Greedy and beam search are deterministic.

## Scoring and alignment

`nmtkit.scoring.metrics.score` passes detokenized hypotheses and reference streams to
sacrebleu's `BLEU`, `CHRF` and `TER` with the options of the `sacrebleu` command, and returns
each score with its signature. `nmtkit.alignment.attention_links.align_corpus` encodes both sides, runs
`Seq2Seq.force_decode` (teacher forcing of the given target) to get α `[B, T, S]`, and
`piece_weights_to_words` (`nmtkit/alignment/links.py`) drops the EOS row and column,
renormalizes the rows, and merges pieces into words (`merge_to_words`: sum over a source word's
pieces, mean over a target word's pieces); the named extractor (`argmax_links` by default, which
links each target word to its strongest source word, or `threshold_links`) then makes the links.
`translate --output-format jsonl` applies the same merging and `argmax_links` to the search's
own attention (`Translator`), and `nmtkit/translation/formats.py` writes the links as Pharaoh.

`nmtkit score-pairs` (`ForcedScorer` in `nmtkit/translation/forced.py`) teacher-forces given
translations through `Seq2Seq.forward` in length-sorted batches under a token budget and sums
the log-probabilities of the target pieces and EOS; the attention summed over the steps is the
coverage. Each search strategy says how it scores a finished hypothesis from those
(`SearchStrategy.score`: log p / length by default, GNMT's log p / lp(y) + cp(x; y) for beam
search), so a translation scores as its search reported it (a unit test checks every strategy).

`nmtkit serve` (`nmtkit/serving/`) puts the same `Translator` behind HTTP. The event loop only
parses and checks requests; one worker thread, the only one that runs the model, takes queued
requests with equal search settings (`Decoding`, the batching key) once the oldest has waited
`--batch-wait-ms` or the group fills `--max-batch-sentences`, and decodes their sentences as one
chunk (`Translator.translate_chunk`); batch invariance makes each answer what `translate` writes.
A request's settings get their own `Translator` over the same loaded model (`TranslatorPool`).

## Import layering

Imports point downward only, and `make lint` checks it (`lint-imports`, the contracts in
`pyproject.toml`). `registry` imports the built-in `models` and `search` lazily, inside
`_load_builtins` at the first lookup, so that it stays below everything that registers into it;
those two imports are the contracts' only named exceptions. `training` validates through
`search` (`decode_sequences`), never through `translation`; `models` never imports `data` or
`training`; nothing imports `cli` but `python -m nmtkit`. `nmtkit/__init__.py` only re-exports
the API lazily (`from nmtkit import load_model, Translator`).

@@LAYERS@@

## Modules

Every module of the package with the first paragraph of its docstring, by package: the package
root (the public API and the foundations), then the subpackages from the top layer down.

@@MODULES@@
"""


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
