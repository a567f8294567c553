"""Experiment configs: frozen dataclasses per YAML section, presets, ``--set`` overrides.

Precedence: dataclass defaults < preset < YAML file < ``--set section.key=value``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from nmtkit import registry
from nmtkit.errors import ConfigError, PluginError, check_probability, unknown_name
from nmtkit.runtime import INFERENCE_PRECISIONS, PRECISIONS


@dataclass(frozen=True, kw_only=True, slots=True)
class ComponentSpec:
    """A registered component chosen by name, with its validated ``Config``."""

    name: str
    options: Any

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, **dataclasses.asdict(self.options)}


def component(kind: str, name: str) -> Any:
    """A dataclass field holding a component of ``kind``, ``name`` by default."""

    def default() -> ComponentSpec:
        return ComponentSpec(name=name, options=registry.get(kind, name).Config())

    return field(default_factory=default, metadata={"kind": kind, "name": name})


def _check_precision(value: str, section: str) -> None:
    if value in INFERENCE_PRECISIONS and value not in PRECISIONS:  # int8, packed16
        raise ConfigError(
            f"precision {value!r} is for translation only; choose from " + ", ".join(PRECISIONS),
            where=f"{section}.precision",
            hint=f"ask for it when translating: translate/align --precision {value}",
        )
    if value not in PRECISIONS:
        raise unknown_name("precision", value, PRECISIONS, where=f"{section}.precision")


INITS = ("uniform", "paper")  # model.init
CONCAT_MODES = ("consecutive", "random")  # train.concat_mode


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelConfig:
    embed_size: int = 256  # source and target word embeddings (paper: 620)
    # On embeddings and the readout. 0.3 rather than 0.2: +0.79 val BLEU (beam 5) after 30
    # minutes of training (docs/quality.md); a run that sees few epochs trains with less
    # (train.short_run_dropout).
    dropout: float = 0.3
    # Dropout on the annotations h_j as well, at the same probability: each decoder step's
    # attention reads them dropped out (Nematus drops out its hidden layers so). Off: level
    # validation BLEU after 30 minutes, one seed (docs/quality.md).
    dropout_annotations: bool = False
    # Word dropout on the source (nmtkit.models.word_dropout): each source position's whole
    # embedding zeroed with this probability in training (Marian's --dropout-src; the target
    # side's is model.decoder.word_dropout). Fixed, not set by the run-length rule. Off: 0.1 on
    # both sides lost 0.71 val BLEU (beam 5) after 30 minutes, one seed (docs/quality.md).
    source_word_dropout: float = 0.0
    init: str = "uniform"  # uniform | paper (Bahdanau et al., 2015, B.1; ignores init_scale)
    init_scale: float = 0.1  # uniform: every parameter ~ uniform(-init_scale, init_scale)
    # the source embedding is the target's (a joint vocabulary; with decoder.tie_embeddings,
    # one table for source words, target words and the output layer)
    share_embeddings: bool = False
    encoder: ComponentSpec = component("encoder", "birnn")
    attention: ComponentSpec = component("attention", "additive")
    # The conditional GRU (Nematus), which attends after reading y_{i-1}: +1.0 val BLEU (beam 5)
    # over RNNsearch's `gru` after 15 minutes of training, on 17 % fewer updates (+1.8 at 30)
    # (docs/quality.md). The rnnsearch-paper and tiny presets keep `gru`.
    decoder: ComponentSpec = component("decoder", "cgru")

    def __post_init__(self) -> None:
        if self.init not in INITS:
            raise unknown_name("init", self.init, INITS, where="model.init")
        check_probability(self.source_word_dropout, "model.source_word_dropout")


@dataclass(frozen=True, kw_only=True, slots=True)
class TrainConfig:
    seed: int = 1
    # Batch budget: sentences x (longest side + EOS), padding included. 1600: a step's matrix
    # products cost little more for more rows (most in bf16), so 1.18x the tokens a second of
    # 1200 and +0.55 val BLEU (beam 5) at 30 minutes on AVX-512 + bf16; 2000 was faster still
    # and only equal to 1200 on validation (docs/quality.md).
    max_tokens: int = 1600
    max_sentences: int | None = None  # at most this many sentences a batch (None: no limit)
    max_epochs: int | None = None
    max_updates: int | None = None
    time_budget: float | None = None  # minutes of training, then stop cleanly
    optimizer: str = "adam"  # adam | adadelta
    lr: float = 0.002
    adam_betas: tuple[float, float] = (0.9, 0.999)
    adadelta_rho: float = 0.95
    adadelta_eps: float = 1e-6
    clip_norm: float = 1.0  # gradient norm clipping; 0 turns it off
    # 0.2 rather than 0.1: +0.68 val BLEU (beam 5) after 15 minutes with a 512-wide decoder,
    # +0.15 (2 seeds, within noise) with the 384-wide default (docs/quality.md)
    label_smoothing: float = 0.2
    # auto: wsd for a run with an end (time budget, max updates or epochs), else plateau;
    # linear: a straight line down to min_lr at the run's end | wsd: constant, then that line
    # over the run's last decay_share | plateau | inverse_sqrt | constant
    lr_schedule: str = "auto"
    decay_share: float = 0.2  # wsd: the share of the run (0-1] over which lr falls to min_lr
    warmup_updates: int = 0  # linear warm-up (all schedules)
    plateau_factor: float = 0.5  # plateau: multiply lr by this when validation BLEU stalls
    plateau_patience: int = 1  # plateau: validations without improvement before reducing
    min_lr: float = 1e-5
    validate_every: int = 300  # updates between validations (and once when training stops)
    patience: int = 8  # early stopping: validations without a better BLEU; 0 turns it off
    # also keep the checkpoints of the last keep_last validations as checkpoint_<update>.pt
    # (nmtkit average MODEL_DIR --last N averages them); 0 keeps none
    keep_last: int = 0
    log_every: int = 50  # updates between log lines
    # also write metrics.jsonl's records as TensorBoard scalars into this folder (None: off;
    # needs the tensorboard extra); a resumed run appends to it
    tensorboard: str | None = None
    # when training ends, the beam's length penalty is chosen among these (and search's own) by
    # validation BLEU and stored in the model's config, translate's default; () is off (the
    # default: on Multi30k the validation set's choice did not carry over, docs/quality.md)
    tune_length_penalties: tuple[float, ...] = ()
    # when training ends, write the vocabulary shortlist (shortlist.npz, IBM Model 1 over the
    # training pairs, as `nmtkit shortlist` builds it) beside the model, for translate
    # --shortlist (docs/speed.md)
    shortlist: bool = True
    threads: int | None = None  # torch intra-op threads (None: torch's default)
    # matrix products: fp32 | bf16 | fp16 (with loss scaling) | auto (bf16 on native-bf16 CPUs
    # and GPUs, fp16 on other CUDA GPUs, else fp32)
    precision: str = "auto"
    device: str = "cpu"  # cpu | cuda | cuda:N (under torchrun, cuda is cuda:LOCAL_RANK)
    update_freq: int = 1  # micro-batches of max_tokens per rank summed into one update
    # concatenation augmentation (nmtkit.data.concat): each epoch adds concat_rate x pairs
    # examples of 2..concat_max pairs joined end to end, neighbours (consecutive) or any (random);
    # 0.25 keeps several sentences on one line as good as one (docs/long-inputs.md)
    concat_rate: float = 0.25
    concat_max: int = 3
    concat_mode: str = "consecutive"  # consecutive | random
    # read the data dir's sampled segmentations of the training pairs, one an epoch in turn,
    # when it has them (preprocess --sampled-segmentations: subword regularization); false
    # reads the one-best segmentation every epoch
    sampled_segmentations: bool = True
    # a run with a known end (time budget, max updates or epochs) on course to see at most 3.5
    # epochs trains with this dropout instead of model.dropout, one of 7 or more with
    # model.dropout, one between on the line between them (nmtkit.training.run_length_dropout);
    # None: model.dropout always. Only ever lowers it.
    short_run_dropout: float | None = 0.2

    def __post_init__(self) -> None:
        _check_precision(self.precision, "train")
        positive = {
            "max_tokens": self.max_tokens,
            "update_freq": self.update_freq,
            "validate_every": self.validate_every,
            "log_every": self.log_every,
            "threads": 1 if self.threads is None else self.threads,
            "max_epochs": 1 if self.max_epochs is None else self.max_epochs,
            "max_updates": 1 if self.max_updates is None else self.max_updates,
            "max_sentences": 1 if self.max_sentences is None else self.max_sentences,
        }
        for key, value in positive.items():
            if value < 1:
                raise ConfigError(f"train.{key} must be at least 1, got {value}")
        if self.lr <= 0:
            raise ConfigError(f"train.lr must be positive, got {self.lr}")
        if self.keep_last < 0:
            raise ConfigError(f"train.keep_last must be 0 or more, got {self.keep_last}")
        if self.time_budget is not None and self.time_budget <= 0:
            raise ConfigError(f"train.time_budget must be positive, got {self.time_budget}")
        if not 0 < self.decay_share <= 1:
            raise ConfigError(f"train.decay_share must be in (0, 1], got {self.decay_share}")
        if not 0 <= self.concat_rate <= 10:
            raise ConfigError(f"train.concat_rate must be between 0 and 10, got {self.concat_rate}")
        if self.concat_max < 2:
            raise ConfigError(f"train.concat_max must be at least 2, got {self.concat_max}")
        if self.short_run_dropout is not None and not 0 <= self.short_run_dropout < 1:
            raise ConfigError(
                f"train.short_run_dropout must be in [0, 1) or null, got {self.short_run_dropout}"
            )
        if self.concat_mode not in CONCAT_MODES:
            raise unknown_name("concatenation mode", self.concat_mode, CONCAT_MODES, where="train")


@dataclass(frozen=True, kw_only=True, slots=True)
class SearchConfig:
    strategy: ComponentSpec = component("search", "beam")
    max_len_a: float = 1.5  # output length cap: a * source length + b (pieces)
    max_len_b: int = 10
    batch_size: int = 128  # sentences per batch
    precision: str = "auto"  # matrix products: fp32 | bf16 | fp16 | auto (as train.precision)

    def __post_init__(self) -> None:
        _check_precision(self.precision, "search")
        if self.max_len_a < 0 or self.max_len_b < 0:
            raise ConfigError(
                f"search.max_len_a and search.max_len_b must not be negative, "
                f"got {self.max_len_a} and {self.max_len_b}"
            )
        if self.batch_size < 1:
            raise ConfigError(f"search.batch_size must be at least 1, got {self.batch_size}")


@dataclass(frozen=True, kw_only=True, slots=True)
class Config:
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    search: SearchConfig = field(default_factory=SearchConfig)

    def to_dict(self) -> dict[str, Any]:
        return _to_plain(self)


def components(config: Any, *, where: str = "") -> list[tuple[str, str, ComponentSpec]]:
    """Every component a config chooses: (dotted key, kind, spec), e.g. ("model.encoder", ...)."""
    found = []
    for f in dataclasses.fields(config):
        value, key = getattr(config, f.name), _join(where, f.name)
        if "kind" in f.metadata:
            found.append((key, f.metadata["kind"], value))
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            found.extend(components(value, where=key))
    return found


def _to_plain(value: Any) -> Any:
    if isinstance(value, ComponentSpec):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple):
        return list(value)
    return value


# ---------------------------------------------------------------------------- loading


def presets() -> list[str]:
    """Names of the shipped presets (``nmtkit/configs/*.yaml``)."""
    folder = resources.files("nmtkit") / "configs"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


def load_config(
    *,
    preset: str | None = "default",
    path: Path | None = None,
    overrides: Sequence[str] = (),
) -> Config:
    """Resolve a config from a preset, a YAML file and ``key=value`` overrides.

    Raises:
        ConfigError: unknown preset, key or component; a value of the wrong type.
    """
    data: dict[str, Any] = {}
    if preset is not None:
        if preset not in presets():
            raise unknown_name("preset", preset, presets())
        text = (resources.files("nmtkit") / "configs" / f"{preset}.yaml").read_text("utf-8")
        _merge(data, yaml.safe_load(text) or {})
    if path is not None:
        _merge(data, _read_yaml(path))
        try:
            config_from_dict(data)
        except ConfigError as exc:  # name the file the bad key came from
            where = f"{path}: {exc.where}" if exc.where else str(path)
            raise ConfigError(exc.message, where=where, hint=exc.hint) from None
    for item in overrides:
        _merge(data, parse_override(item))
    return config_from_dict(data)


def config_from_dict(data: dict[str, Any]) -> Config:
    """Build a :class:`Config` from plain data (as saved in checkpoints)."""
    return build_dataclass(Config, data, where="")


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(Path(path).read_text("utf-8"))
    except FileNotFoundError:
        raise ConfigError("no such config file", where=str(path)) from None
    except IsADirectoryError:
        raise ConfigError("is a folder, not a config file", where=str(path)) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 (byte {exc.start})", where=str(path)) from None
    except yaml.YAMLError as exc:
        # One line: the problem and where it is, without PyYAML's multi-line excerpt.
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise ConfigError(f"not valid YAML: {problem}", where=where) from None
    if not isinstance(data, dict):
        raise ConfigError("a config file must be a mapping of sections", where=str(path))
    return data


def parse_override(item: str) -> dict[str, Any]:
    """Turn ``a.b.c=value`` into ``{"a": {"b": {"c": value}}}`` (value parsed as YAML)."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip() or any(not part for part in key.strip().split(".")):
        raise ConfigError(f"--set takes key=value, got {item!r}", hint="e.g. --set train.lr=0.001")
    value: Any = yaml.safe_load(raw) if raw.strip() else ""
    for part in reversed(key.strip().split(".")):
        value = {part: value}
    return value


def _merge(into: dict[str, Any], new: dict[str, Any]) -> None:
    for key, value in new.items():
        old = into.get(key)
        if isinstance(value, str) and isinstance(old, dict) and "name" in old:
            into[key] = {"name": value}  # a component chosen by name alone drops old options
        elif isinstance(value, dict) and isinstance(old, dict):
            if "name" in value and value.get("name") != old.get("name"):
                into[key] = dict(value)
            else:
                _merge(old, value)
        else:
            into[key] = value


def build_dataclass(cls: Any, data: Any, *, where: str) -> Any:
    """Build dataclass ``cls`` from ``data``, coercing each value by its declared type.

    Raises:
        ConfigError: ``data`` is not a mapping, has an unknown key or a value of the wrong type.
    """
    if not isinstance(data, dict):
        raise ConfigError("expected a mapping of options", where=where or "config")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    for key in data:
        if key not in fields:
            raise unknown_name("key", key, fields, where=_join(where, key))
    values = {}
    for key, value in data.items():
        path = _join(where, key)
        kind = fields[key].metadata.get("kind")
        if kind is not None:
            default = fields[key].metadata["name"]
            values[key] = _build_component(kind, value, default=default, where=path)
        else:
            values[key] = _coerce(hints[key], value, where=path)
    return cls(**values)


def _build_component(kind: str, value: Any, *, default: str, where: str) -> ComponentSpec:
    """A component from its name, or from a mapping of options with (else ``default``'s) name."""
    options = {"name": value} if isinstance(value, str) else value
    if not isinstance(options, dict):
        raise ConfigError(
            f"expected a {kind} name or a mapping of its options, got {value!r}",
            where=where,
            hint=f"e.g. {where}.name={default}",
        )
    options = dict(options)
    name = str(options.pop("name", default))
    try:
        cls = registry.get(kind, name)
    except PluginError as exc:  # a name the user wrote: bad usage, like an unknown key
        raise ConfigError(exc.message, where=where, hint=exc.hint) from None
    return ComponentSpec(name=name, options=build_dataclass(cls.Config, options, where=where))


def _coerce(hint: Any, value: Any, *, where: str) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        if value is None and type(None) in args:
            return None
        hint = next(a for a in args if a is not type(None))
        origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint):
        return build_dataclass(hint, value, where=where)
    if origin is tuple and typing.get_args(hint)[1:] == (Ellipsis,):
        if not isinstance(value, list | tuple):
            raise _type_error(where, value, "a list")
        return tuple(_coerce(typing.get_args(hint)[0], v, where=where) for v in value)
    if origin is tuple:
        args = typing.get_args(hint)
        if not isinstance(value, list | tuple) or len(value) != len(args):
            raise _type_error(where, value, f"a list of {len(args)}")
        return tuple(_coerce(a, v, where=where) for a, v in zip(args, value, strict=True))
    try:
        if hint is bool:
            if isinstance(value, bool):
                return value
            if str(value).lower() in ("true", "false", "yes", "no", "1", "0"):
                return str(value).lower() in ("true", "yes", "1")
            raise ValueError
        if hint is int:
            if isinstance(value, bool) or float(value) != int(float(value)):
                raise ValueError
            return int(float(value))
        if hint is float:
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        if hint is str:
            if isinstance(value, bool | dict | list):
                raise ValueError
            return str(value)
    except (TypeError, ValueError):
        raise _type_error(where, value, hint.__name__) from None
    return value


def _type_error(where: str, value: Any, expected: str) -> ConfigError:
    return ConfigError(
        f"{where} must be {expected}, got {value!r}",
        hint="quote the value in YAML if it was read as another type",
    )


def _join(where: str, key: Any) -> str:
    return f"{where}.{key}" if where else str(key)


def dump_yaml(config: Config) -> str:
    """The resolved config as YAML, as written to ``model_dir/config.yaml``."""
    return yaml.safe_dump(config.to_dict(), sort_keys=False)
