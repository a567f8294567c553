"""Config loading: presets, YAML, --set overrides, type coercion and the errors users see."""

from __future__ import annotations

import itertools
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from nmtkit.config import (
    Config,
    config_from_dict,
    dump_yaml,
    load_config,
    parse_override,
    presets,
)
from nmtkit.errors import ConfigError

PRESETS = ["default", "demo", "rnnencdec", "rnnsearch-paper", "tiny"]


def preset_text(name: str) -> str:
    return (resources.files("nmtkit") / "configs" / f"{name}.yaml").read_text("utf-8")


def leaves(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``."""
    found: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            found.update(leaves(value, f"{prefix}{key}."))
        else:
            found[f"{prefix}{key}"] = value
    return found


def test_the_tests_cover_every_shipped_preset() -> None:
    assert presets() == PRESETS


def test_the_default_preset_sets_nothing_so_it_is_the_dataclass_defaults() -> None:
    assert yaml.safe_load(preset_text("default")) is None  # comments only
    assert load_config() == load_config(preset=None) == Config()


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_takes_the_values_in_its_file_and_round_trips(name: str) -> None:
    config = load_config(preset=name)
    loaded = leaves(config.to_dict())
    for key, value in leaves(yaml.safe_load(preset_text(name)) or {}).items():
        assert loaded[key] == value, key
    assert config_from_dict(config.to_dict()) == config


@pytest.mark.parametrize("name", [name for name in PRESETS if name != "default"])
def test_every_other_preset_says_in_its_header_how_it_differs_from_the_default(name: str) -> None:
    header = itertools.takewhile(lambda line: line.startswith("#"), preset_text(name).splitlines())
    assert "default" in " ".join(header)


def test_demo_preset_is_the_default_model_for_a_fixed_number_of_updates() -> None:
    """`make demo` promises a working translator in minutes on any CPU: a budget in updates
    (the same model everywhere), the default's sizes, single sentences, one validation."""
    demo, default = load_config(preset="demo"), load_config()
    assert demo.model.encoder == default.model.encoder
    assert demo.model.decoder == default.model.decoder
    assert demo.model.attention == default.model.attention
    assert demo.train.max_updates == demo.train.validate_every == 400
    assert demo.train.time_budget is None
    assert (demo.train.lr, demo.model.dropout, demo.train.concat_rate) == (0.003, 0.1, 0.0)
    assert (demo.train.max_tokens, default.train.max_tokens) == (2000, 1600)  # as tuned


def test_paper_preset_has_the_papers_sizes() -> None:
    model = load_config(preset="rnnsearch-paper").model
    assert model.embed_size == 620
    assert model.encoder.options.hidden_size == 1000
    assert model.attention.options.hidden_size == 1000
    assert model.decoder.options.hidden_size == 1000
    assert model.decoder.options.readout_size == 500


def test_paper_preset_has_the_values_docs_paper_md_states() -> None:
    """The "rnnsearch-paper" column of docs/paper.md, key by key."""
    config = load_config(preset="rnnsearch-paper")
    model, train, search = config.model, config.train, config.search
    assert (model.init, model.dropout) == ("paper", 0.0)
    assert model.decoder.options.readout_state == "previous"
    assert (model.encoder.name, model.encoder.options.cell) == ("birnn", "gru")
    assert model.attention.name == "additive"
    assert (train.max_sentences, train.max_tokens) == (80, 100_000)
    assert (train.optimizer, train.lr, train.adadelta_rho, train.adadelta_eps) == (
        "adadelta",
        1.0,
        0.95,
        1e-6,
    )
    assert (train.clip_norm, train.label_smoothing, train.lr_schedule) == (1.0, 0.0, "constant")
    assert search.strategy.name == "beam"
    options = search.strategy.options
    assert (options.beam_size, options.length_penalty, options.coverage_penalty) == (12, 0.0, 0.0)


def test_a_config_saved_before_init_readout_state_and_max_sentences_loads_as_before() -> None:
    saved = load_config(preset="tiny").to_dict()
    del saved["model"]["init"], saved["model"]["decoder"]["readout_state"]
    del saved["train"]["max_sentences"]
    config = config_from_dict(saved)
    assert (config.model.init, config.model.decoder.options.readout_state) == ("uniform", "current")
    assert config.train.max_sentences is None


@pytest.mark.parametrize(
    ("override", "fragment"),
    [
        ("model.init=orthogonal", "unknown init 'orthogonal'"),
        ("model.decoder.readout_state=next", "unknown readout_state 'next'"),
        ("train.max_sentences=0", "train.max_sentences must be at least 1"),
    ],
)
def test_bad_paper_options_are_config_errors(override: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        load_config(preset="tiny", overrides=[override])


@pytest.mark.parametrize(
    ("override", "check"),
    [
        ("train.lr=1e-3", lambda c: c.train.lr == 0.001),
        ("train.max_updates=7", lambda c: c.train.max_updates == 7),
        ("model.attention.hidden_size=64", lambda c: c.model.attention.options.hidden_size == 64),
        ("model.attention=none", lambda c: c.model.attention.name == "none"),
        ("search.strategy=greedy", lambda c: c.search.strategy.name == "greedy"),
        ("train.adam_betas=[0.8, 0.9]", lambda c: c.train.adam_betas == (0.8, 0.9)),
    ],
)
def test_set_overrides_a_key(override: str, check) -> None:
    assert check(load_config(overrides=[override]))


def test_yaml_file_sits_between_preset_and_overrides(tmp_path: Path) -> None:
    path = tmp_path / "exp.yaml"
    path.write_text("train:\n  lr: 0.01\n  seed: 5\n")
    config = load_config(path=path, overrides=["train.seed=9"])
    assert (config.train.lr, config.train.seed) == (0.01, 9)


@pytest.mark.parametrize(
    ("override", "fragment"),
    [
        ("train.lrr=1", "train.lrr: unknown key 'lrr'; choose from seed,"),
        ("train.lrr=1", "did you mean 'lr'"),
        ("model.attention.hiden_size=3", "hidden_size"),
        ("train.max_tokens=abc", "train.max_tokens must be int"),
        ("train.lr=-1", "must be positive"),
        ("model.attention=lokation", "choose from additive"),
        ("train.precision=half", "train.precision: unknown precision 'half'"),
        ("nonsense", "key=value"),
    ],
)
def test_bad_overrides_are_config_errors(override: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=None) as info:
        load_config(overrides=[override])
    assert fragment in str(info.value)


def test_unknown_key_in_a_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("train:\n  learning_rate: 0.1\n")
    with pytest.raises(ConfigError) as info:
        load_config(path=path)
    assert str(path) in str(info.value) and "choose from" in str(info.value)


def test_dumped_yaml_loads_back(tmp_path: Path) -> None:
    config = load_config(overrides=["train.lr=0.003", "model.attention=none"])
    path = tmp_path / "c.yaml"
    path.write_text(dump_yaml(config))
    assert load_config(preset=None, path=path) == config


@given(
    st.lists(st.from_regex(r"[a-z_]{1,8}", fullmatch=True), min_size=1, max_size=4),
    st.integers(-1000, 1000),
)
def test_parse_override_nests_dotted_keys(parts: list[str], value: int) -> None:
    nested = parse_override(f"{'.'.join(parts)}={value}")
    for part in parts:
        nested = nested[part]
    assert nested == value
