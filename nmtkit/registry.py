"""The plugin registry: name-based lookup of the components of each kind, checked when they
register, with the built-ins loaded and third-party plugins discovered on demand.

A component author needs only this module: it also exports the contracts
(:mod:`nmtkit.contracts`) and the values they exchange (:mod:`nmtkit.values`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

from nmtkit.contracts import (
    AttentionScorer,
    Component,
    Decoder,
    Encoder,
    SearchStrategy,
    SoftmaxAttention,
    Translatable,
)
from nmtkit.errors import PluginError, unknown_name
from nmtkit.plugins import PLUGIN_GROUP, discover_plugins, distribution_of
from nmtkit.values import (
    Attended,
    Batch,
    Constraints,
    DecoderOutput,
    DecoderState,
    EncoderOutput,
    Hypothesis,
    ShortlistRows,
    StepOutput,
)

__all__ = [
    "CONTRACTS",
    "PLUGIN_GROUP",
    "Attended",
    "AttentionScorer",
    "Batch",
    "Component",
    "Constraints",
    "Decoder",
    "DecoderOutput",
    "DecoderState",
    "Encoder",
    "EncoderOutput",
    "Hypothesis",
    "SearchStrategy",
    "ShortlistRows",
    "SoftmaxAttention",
    "StepOutput",
    "Translatable",
    "discover_plugins",
    "get",
    "names",
    "owner",
    "provider",
    "register",
]

CONTRACTS: dict[str, type] = {
    "encoder": Encoder,
    "attention": AttentionScorer,
    "decoder": Decoder,
    "search": SearchStrategy,
}
_registry: dict[str, dict[str, type]] = {kind: {} for kind in CONTRACTS}
_owners: dict[tuple[str, str], str] = {}

C = TypeVar("C", bound=type)


def register(kind: str, name: str) -> Callable[[C], C]:
    """Class decorator: register a component of ``kind`` under ``name``.

    Raises:
        PluginError: unknown kind, a class that does not subclass the kind's contract or lacks a
            ``Config`` dataclass, or a name that is taken.
    """

    def decorate(cls: C) -> C:
        if kind not in CONTRACTS:
            raise unknown_name("component kind", kind, CONTRACTS, error=PluginError)
        if not issubclass(cls, CONTRACTS[kind]):
            raise PluginError(f"{cls.__qualname__} must subclass {CONTRACTS[kind].__name__}")
        if not dataclasses.is_dataclass(getattr(cls, "Config", None)):
            raise PluginError(f"{cls.__qualname__} needs a Config dataclass")
        owner = cls.__module__
        if name in _registry[kind]:
            raise PluginError(
                f"{kind} {name!r} is registered twice: by {_owners[(kind, name)]} and by {owner}"
            )
        _registry[kind][name] = cls
        _owners[(kind, name)] = owner
        return cls

    return decorate


def get(kind: str, name: str) -> type[Any]:
    """Return the class registered as ``name`` of ``kind``.

    Raises:
        PluginError: no such name; the message lists the registered ones and the closest match.
    """
    _load_builtins()
    if name not in _registry[kind]:
        discover_plugins()
    if name not in _registry[kind]:
        raise unknown_name(kind, name, sorted(_registry[kind]), error=PluginError)
    return _registry[kind][name]


def names(kind: str) -> list[str]:
    """Return every registered name of ``kind``, plugins included, sorted."""
    _load_builtins()
    discover_plugins()
    return sorted(_registry[kind])


def owner(kind: str, name: str) -> str:
    """Return the module that registered ``name``."""
    get(kind, name)
    return _owners[(kind, name)]


def provider(kind: str, name: str) -> dict[str, str]:
    """Where ``name`` comes from: its module and, when installed as a package, its distribution."""
    module = owner(kind, name)
    return {"module": module, "distribution": distribution_of(module)}


def _load_builtins() -> None:
    # The built-in components register on import; importing here keeps registry.py below
    # models and search in the import graph for everyone else.
    import nmtkit.models  # noqa: F401
    import nmtkit.search  # noqa: F401
