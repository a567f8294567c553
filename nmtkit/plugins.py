"""Third-party components: installed packages found through the ``nmtkit.plugins`` entry-point
group (:func:`discover_plugins`, which the registry runs on demand), and a local folder of
modules imported with ``--user-dir``. Either way a plugin module only has to import and
decorate its classes with :func:`nmtkit.registry.register`.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import logging
import os
import sys
from pathlib import Path
from types import ModuleType

from nmtkit.errors import PluginError

log = logging.getLogger(__name__)

PLUGIN_GROUP = "nmtkit.plugins"

_loaded: dict[Path, list[ModuleType]] = {}
_discovered = False


def discover_plugins() -> None:
    """Import every module named in the ``nmtkit.plugins`` entry-point group, once.

    ``NMTKIT_DISABLE_PLUGINS=1`` skips discovery.

    Raises:
        PluginError: a plugin module fails to import (naming the entry point and distribution).
    """
    global _discovered
    if _discovered or os.environ.get("NMTKIT_DISABLE_PLUGINS") == "1":
        return
    _discovered = True
    for entry in sorted(importlib.metadata.entry_points(group=PLUGIN_GROUP), key=lambda e: e.name):
        dist = entry.dist.name if entry.dist else "unknown distribution"
        try:
            entry.load()
        except PluginError:
            raise
        except Exception as exc:
            raise PluginError(
                f"plugin {entry.name!r} from {dist} failed to load: {exc}", where=entry.value
            ) from exc
        log.debug("loaded plugin %s from %s", entry.name, dist)


def distribution_of(module: str) -> str:
    """The installed distribution that provides ``module`` (its top-level package); "" when
    none does (a ``--user-dir`` module, or a source checkout)."""
    dists = _distributions().get(module.split(".")[0], [])
    return dists[0] if dists else ""


@functools.cache
def _distributions() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


def load_user_dir(folder: str | Path) -> list[ModuleType]:
    """Import a plugin folder once: a package (it has ``__init__.py``) or its top-level modules.

    A package is imported under its folder's name with the parent folder on ``sys.path``, so its
    modules can import each other relatively; a plain folder is put on ``sys.path`` and each
    ``*.py`` in it (not starting with ``_``) is imported by name, in sorted order.

    Raises:
        PluginError: the folder is missing, or one of its modules fails to import (naming it).
    """
    path = Path(folder).expanduser().resolve()
    if path in _loaded:
        return _loaded[path]
    if not path.is_dir():
        raise PluginError(f"--user-dir {folder}: no such folder")
    if (path / "__init__.py").is_file():
        root, names = path.parent, [path.name]
    else:
        root = path
        names = sorted(p.stem for p in path.glob("*.py") if not p.name.startswith("_"))
        if not names:
            raise PluginError(f"--user-dir {folder}: no Python modules in it")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    modules = [_import(name, path) for name in names]
    _loaded[path] = modules
    return modules


def _import(name: str, folder: Path) -> ModuleType:
    try:
        module = importlib.import_module(name)
    except PluginError:
        raise
    except Exception as exc:  # a plugin's own bug: name the module, keep the cause
        raise PluginError(
            f"--user-dir {folder}: module {name!r} failed to import: {type(exc).__name__}: {exc}"
        ) from exc
    origin = Path(module.__file__ or "").resolve()
    if folder not in (origin, *origin.parents):
        raise PluginError(
            f"--user-dir {folder}: module name {name!r} is already taken by {origin}; "
            "rename the plugin module"
        )
    log.debug("loaded user plugin module %s from %s", name, folder)
    return module
