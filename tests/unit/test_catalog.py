"""`nmtkit list` reads the catalog; `--user-dir` folders and checkpoints name their providers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from nmtkit import registry
from nmtkit.catalog import catalog, catalog_json
from nmtkit.checkpoint import check_providers, providers
from nmtkit.config import load_config
from nmtkit.errors import CheckpointError, ConfigError, PluginError
from nmtkit.plugins import load_user_dir

EXPECTED = {
    "encoder": {"birnn", "rnn", "transformer", "cnn"},
    "attention": {"additive", "dot", "general", "scaled-dot", "multihead", "location", "none"},
    "decoder": {"gru", "cgru"},
    "search": {"greedy", "beam", "sampling"},
}


def test_every_built_in_component_is_listed_with_description_and_options() -> None:
    items = catalog()
    for kind, names in EXPECTED.items():
        assert names <= {i.name for i in items if i.kind == kind}
    for item in items:
        assert item.description, f"{item.kind} {item.name} has no description"
        assert item.provider.startswith("nmtkit.") or item.provider
    beam = next(i for i in items if (i.kind, i.name) == ("search", "beam"))
    assert {o.name: o.default for o in beam.options}["beam_size"] == 5


def test_one_kind_and_json() -> None:
    items = catalog("attention")
    assert {i.kind for i in items} == {"attention"}
    decoded = json.loads(catalog_json(items))
    additive = next(d for d in decoded if d["name"] == "additive")
    assert additive["options"] == [{"name": "hidden_size", "type": "int", "default": 256}]


def test_an_unknown_kind_is_bad_usage() -> None:
    with pytest.raises(ConfigError, match="choose from encoder, attention, decoder, search"):
        catalog("scorer")


def write(folder: Path, name: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)


PLUGIN = '''
from dataclasses import dataclass
from nmtkit.registry import SoftmaxAttention, register

@register("attention", "{name}")
class Uniform(SoftmaxAttention):
    """Every real position gets the same weight."""

    @dataclass(frozen=True, kw_only=True, slots=True)
    class Config:
        pass

    def project_keys(self, annotations, pad_mask):
        return annotations

    def energies(self, query, state):
        return state.pad_mask.float() * 0
'''


def test_a_user_dir_of_modules_registers_its_components(tmp_path: Path) -> None:
    write(tmp_path / "plugins", "uniform_attention_a.py", PLUGIN.format(name="uniform-a"))
    write(tmp_path / "plugins", "_private.py", "raise RuntimeError('never imported')\n")
    modules = load_user_dir(tmp_path / "plugins")
    assert [m.__name__ for m in modules] == ["uniform_attention_a"]
    assert registry.provider("attention", "uniform-a")["module"] == "uniform_attention_a"
    assert load_user_dir(tmp_path / "plugins") == modules  # once only
    config = load_config(preset="tiny", overrides=["model.attention=uniform-a"])
    assert config.model.attention.name == "uniform-a"


def test_a_user_dir_package_is_imported_under_its_name(tmp_path: Path) -> None:
    package = tmp_path / "uniform_pkg_b"
    write(package, "__init__.py", "from . import scorer  # noqa: F401\n")
    write(package, "scorer.py", PLUGIN.format(name="uniform-b"))
    load_user_dir(package)
    assert registry.owner("attention", "uniform-b") == "uniform_pkg_b.scorer"


def test_a_broken_plugin_module_is_named(tmp_path: Path) -> None:
    write(tmp_path / "broken", "broken_plugin_c.py", "import no_such_module_anywhere\n")
    with pytest.raises(PluginError, match="'broken_plugin_c' failed to import: ModuleNotFound"):
        load_user_dir(tmp_path / "broken")


def test_a_module_name_taken_by_an_installed_module_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "shadow", "json.py", "")
    with pytest.raises(PluginError, match="already taken"):
        load_user_dir(tmp_path / "shadow")
    sys.path.remove(str((tmp_path / "shadow").resolve()))


def test_missing_or_empty_user_dirs_are_errors(tmp_path: Path) -> None:
    with pytest.raises(PluginError, match="no such folder"):
        load_user_dir(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(PluginError, match="no Python modules"):
        load_user_dir(tmp_path / "empty")


def test_checkpoints_record_providers_and_name_a_missing_plugin() -> None:
    recorded = providers(load_config(preset="tiny"))
    assert recorded["model.attention"] == {
        "kind": "attention",
        "name": "additive",
        "module": "nmtkit.models.attention.additive",
        "distribution": registry.provider("attention", "additive")["distribution"],
    }
    recorded["model.attention"].update(
        name="gone", module="nmtkit_gone", distribution="nmtkit-gone"
    )
    with pytest.raises(CheckpointError, match="attention 'gone' from plugin package 'nmtkit-gone'"):
        check_providers(recorded, where="model/best.pt")
