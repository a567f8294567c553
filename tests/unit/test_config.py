"""Config loading: presets, YAML, --set overrides, type coercion and the errors users see."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nmtkit.config import config_from_dict, dump_yaml, load_config, parse_override, presets
from nmtkit.errors import ConfigError


@pytest.mark.parametrize("name", ["default", "rnnsearch-paper", "rnnencdec", "tiny"])
def test_every_preset_loads_and_round_trips(name: str) -> None:
    config = load_config(preset=name)
    assert config_from_dict(config.to_dict()) == config
    assert name in presets()


def test_paper_preset_has_the_papers_sizes() -> None:
    model = load_config(preset="rnnsearch-paper").model
    assert model.embed_size == 620
    assert model.encoder.options.hidden_size == 1000
    assert model.attention.options.hidden_size == 1000
    assert model.decoder.options.hidden_size == 1000
    assert model.decoder.options.readout_size == 500


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
        ("train.lrr=1", "did you mean 'lr'"),
        ("model.attention.hiden_size=3", "hidden_size"),
        ("train.max_tokens=abc", "train.max_tokens must be int"),
        ("train.lr=-1", "must be positive"),
        ("model.attention=lokation", "registered: additive"),
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
    assert str(path) in str(info.value) and "valid keys" in str(info.value)


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
