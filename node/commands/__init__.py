"""The command layer: one module per command family, each registering its handlers in
`node.commands.table`. Handlers parse arguments, call the engine and build the reply."""

from __future__ import annotations

import importlib
import pkgutil

_SKIP = {"table", "context", "reply", "args"}


def load_all() -> None:
    """Import every command module so its handlers are registered (idempotent)."""
    for info in pkgutil.iter_modules(__path__):
        if info.name not in _SKIP and not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
