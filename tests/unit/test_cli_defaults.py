"""nmtkit.cli.defaults: the defaults the commands' help shows, read from source, equal the
library's dataclass fields and constants they name (so help text cannot drift from them)."""

from __future__ import annotations

import dataclasses
import importlib
import re
from pathlib import Path
from typing import Any

import pytest

import nmtkit.cli
from nmtkit.cli.defaults import default, default_tag, shown

CLI = Path(nmtkit.cli.__file__).parent
# default(WHERE, "name") or default_tag(WHERE, 'name', ...), WHERE a constant or a string
CALL = re.compile(r"""default(?:_tag)?\(\s*([A-Z_]+|"[^"]+"|'[^']+')\s*,\s*(f?)["']([^"']+)["']""")


def used_defaults() -> list[tuple[str, str]]:
    """Every (where, name) the command modules read; f-string names expanded by hand."""
    modules = {
        path.stem: importlib.import_module(f"nmtkit.cli.{path.stem}") for path in CLI.glob("*.py")
    }
    found = set()
    for stem, module in modules.items():
        for match in CALL.finditer((CLI / f"{stem}.py").read_text("utf-8")):
            where_text, is_f, name = match.groups()
            where = getattr(module, where_text) if where_text.isupper() else where_text[1:-1]
            names = [name.replace("{term}", t) for t in "ab"] if is_f else [name]
            found.update((where, n) for n in names)
    return sorted(found)


def imported_default(where: str, name: str) -> Any:
    """The same default, from the imported module: a dataclass field's or a constant."""
    path, _, qualname = where.partition(":")
    owner: Any = importlib.import_module("nmtkit." + path.removesuffix(".py").replace("/", "."))
    if not qualname:
        return getattr(owner, name)
    for part in qualname.split("."):
        owner = getattr(owner, part)
    field = {f.name: f for f in dataclasses.fields(owner)}[name]
    return field.default


USED = used_defaults()


def test_the_commands_read_many_defaults() -> None:
    assert len(USED) >= 30
    assert ("config.py:SearchConfig", "max_len_a") in USED


@pytest.mark.parametrize(("where", "name"), USED)
def test_each_default_in_help_is_the_librarys(where: str, name: str) -> None:
    assert default(where, name) == imported_default(where, name)


def test_a_default_naming_a_module_constant_is_resolved() -> None:
    # LengthPolicy's field reads max_tokens: int = DEFAULT_MAX_TOKENS
    from nmtkit.search.length_policy import DEFAULT_MAX_TOKENS

    assert default("search/length_policy.py:LengthPolicy", "max_tokens") == DEFAULT_MAX_TOKENS


def test_an_unknown_field_is_a_lookup_error() -> None:
    with pytest.raises(LookupError, match="no literal default"):
        default("config.py:SearchConfig", "no_such_field")


def test_tags_are_escaped_for_rich_markup_and_name_whose_setting_wins() -> None:
    from nmtkit.config import SearchConfig

    tag = default_tag("config.py:SearchConfig", "batch_size", of="the model's")
    assert tag == f"\\[default: the model's, {SearchConfig().batch_size}]"
    lengths = "search/length_policy.py:LengthPolicy"
    assert default_tag(lengths, "max_source_len", note=", whole lines") == (
        "\\[default: 0, whole lines]"
    )
    assert shown((0, 10, 20)) == "0,10,20"
