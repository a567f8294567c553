"""The library's defaults as the commands' help shows them, taken from the dataclasses.

Every command module is imported at each start, and most modules that define these defaults
import torch (seconds, even for ``--help``); so the defaults are read from those modules' source
with ``ast`` instead of importing them, and never typed into help text by hand.
tests/unit/test_cli_defaults.py checks each one against the imported dataclass.
"""

from __future__ import annotations

import ast
import contextlib
import functools
from pathlib import Path
from typing import Any

_PACKAGE = Path(__file__).resolve().parent.parent


def default(where: str, name: str) -> Any:
    """The default of field ``name`` of a dataclass, or of a module constant ``name``.

    Args:
        where: ``module/path.py:Class`` (``Class.Inner`` for a nested class) under ``nmtkit/``,
            or ``module/path.py`` alone for a module constant.
    """
    path, _, qualname = where.partition(":")
    key = f"{qualname}.{name}" if qualname else name
    found = _defaults(path)
    if key not in found:  # a renamed field or a moved class: a bug, caught by the tests
        raise LookupError(f"no literal default {key} in nmtkit/{path}")
    return found[key]


def shown(value: Any) -> str:
    """``value`` as help text writes it: a sequence as ``a,b,c``, anything else as ``str``."""
    if isinstance(value, tuple | list):
        return ",".join(str(item) for item in value)
    return str(value)


def default_tag(where: str, name: str, *, of: str = "", note: str = "") -> str:
    """``\\[default: X]`` for help text (escaped: help is rich markup, where ``[...]`` is a tag).

    Args:
        of: whose setting wins, e.g. ``"the model's"``; X is then what a default one has.
        note: words after the value, e.g. ``", whole lines"``.
    """
    prefix = f"{of}, " if of else ""
    return f"\\[default: {prefix}{shown(default(where, name))}{note}]"


@functools.cache
def _defaults(path: str) -> dict[str, Any]:
    """The literal defaults in ``nmtkit/path``: module constants by name and class fields by
    ``Class.field``; a default naming a module constant (``= DEFAULT_MAX_TOKENS``) is resolved."""
    tree = ast.parse((_PACKAGE / path).read_text("utf-8"))
    found: dict[str, Any] = {}
    for node in tree.body:
        target, value = _assignment(node)
        if target is not None:
            _put(found, target, value, found)
    _collect_classes(tree.body, "", found)
    return found


def _collect_classes(body: list[ast.stmt], prefix: str, found: dict[str, Any]) -> None:
    for node in body:
        if not isinstance(node, ast.ClassDef):
            continue
        qualname = f"{prefix}{node.name}"
        for stmt in node.body:
            target, value = _assignment(stmt)
            if target is not None:
                _put(found, f"{qualname}.{target}", value, found)
        _collect_classes(node.body, f"{qualname}.", found)


def _assignment(node: ast.stmt) -> tuple[str | None, ast.expr | None]:
    """(name, value) of ``name: T = value`` or ``name = value``; (None, None) otherwise."""
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
        return node.target.id, node.value
    if (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
    ):
        return node.targets[0].id, node.value
    return None, None


def _put(
    found: dict[str, Any], key: str, value: ast.expr | None, constants: dict[str, Any]
) -> None:
    if isinstance(value, ast.Name) and value.id in constants:
        found[key] = constants[value.id]
        return
    with contextlib.suppress(ValueError, TypeError):  # not a literal, e.g. field(...): skipped
        found[key] = ast.literal_eval(value)  # type: ignore[arg-type]
