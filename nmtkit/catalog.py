"""What is registered: every component's kind, name, description, options and provider.

The library side of ``nmtkit list``: plain values that the CLI renders as a table or JSON.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from dataclasses import dataclass
from typing import Any

from nmtkit import registry
from nmtkit.errors import unknown_name


@dataclass(frozen=True, slots=True)
class OptionInfo:
    """One option of a component's ``Config``: its name, type and default."""

    name: str
    type: str
    default: Any


@dataclass(frozen=True, slots=True)
class ComponentInfo:
    """One registered component and the module that registered it."""

    kind: str
    name: str
    description: str
    options: tuple[OptionInfo, ...]
    provider: str


def catalog(kind: str | None = None) -> list[ComponentInfo]:
    """Every registered component (plugins included), by kind then name.

    Raises:
        ConfigError: ``kind`` is not a component kind.
    """
    kinds = list(registry.CONTRACTS)
    if kind is not None:
        if kind not in kinds:
            raise unknown_name("component kind", kind, kinds)
        kinds = [kind]
    return [_info(k, name) for k in kinds for name in registry.names(k)]


def _info(kind: str, name: str) -> ComponentInfo:
    cls = registry.get(kind, name)
    hints = typing.get_type_hints(cls.Config)
    options = tuple(
        OptionInfo(name=f.name, type=_type_name(hints.get(f.name, f.type)), default=_default(f))
        for f in dataclasses.fields(cls.Config)
    )
    description = cls.description or (cls.__doc__ or "").strip().split("\n")[0]
    return ComponentInfo(
        kind=kind,
        name=name,
        description=description,
        options=options,
        provider=registry.owner(kind, name),
    )


def _type_name(tp: Any) -> str:
    return tp.__name__ if isinstance(tp, type) else str(tp).replace("typing.", "")


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def catalog_json(items: list[ComponentInfo]) -> str:
    """The catalog as a JSON list of objects (options as a list of name/type/default)."""
    return json.dumps([dataclasses.asdict(item) for item in items], indent=2, default=str)
