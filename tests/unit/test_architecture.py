"""docs/architecture.md is generated from the code: it must be up to date, and every module must
say what it holds. (The import contracts themselves are checked by ``make lint``.)"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    path = ROOT / "docs" / "make_architecture.py"
    spec = importlib.util.spec_from_file_location("make_architecture", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_architecture_doc_is_up_to_date(generator: ModuleType) -> None:
    committed = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert generator.render(ROOT) == committed, (
        "docs/architecture.md is out of date with the code or the import contracts: "
        "run `make docs` and commit the result"
    )


def test_every_module_has_a_docstring(generator: ModuleType) -> None:
    modules = generator.find_modules(ROOT)
    assert len(modules) > 10
    missing = [str(m.path) for m in modules if m.summary is None]
    assert not missing, f"modules without a docstring: {missing}"


def test_layer_diagram_names_every_layer_of_the_contract(generator: ModuleType) -> None:
    contracts = generator.load_contracts(ROOT)
    layers = generator.parse_layers(generator.layers_contract(contracts))
    text = generator.render_layers(contracts)
    assert "flowchart TD" in text
    for layer in layers:
        for name in layer.modules:
            assert f"`{name}`" in text
