"""Optional native build of the node's hot path with mypyc.

The package installs and runs as plain Python (pyproject.toml holds its metadata). The
request path, the command handlers and the stream engine are fully typed (mypy --strict),
so mypyc can compile them to C extensions with the same behaviour: `make native` runs

    RILL_NATIVE=1 python setup.py build_ext --inplace

which writes one extension per module next to its source (Python imports an extension
before a .py of the same name) plus the shared library `node/_native__mypyc*.so`, and builds
the few hand-written C modules (C_SOURCES; each has a Python fallback).
`make run`, `make test` and `make bench` rebuild it when a compiled source changed, and
`node/__init__.py` refuses to start from extensions older than their sources.
"""

from __future__ import annotations

import os

from setuptools import setup

# Modules compiled to C: whole packages and single modules (the Makefile's NATIVE_SOURCES
# names the same files, to rebuild when one changes). node/commands/reply.py stays Python:
# RSet subclasses list, which mypyc cannot compile as a native class.
NATIVE_PACKAGES = ("node/engine", "node/commands", "node/log", "node/server", "node/replication")
NATIVE_MODULES = ("node/persistence/aof_reader.py",)  # the AOF replay loop
NATIVE_EXCLUDE = frozenset({"node/commands/reply.py"})
# Each a module of its own, with a .pyi beside it.
C_SOURCES = ("node/log/_resp_encode.c", "node/log/_resp_scan.c", "node/engine/_logged_xadd.c")
C_HEADERS = ["node/resp_read.h"]  # shared by C_SOURCES


def native_sources() -> list[str]:
    sources = list(NATIVE_MODULES)
    for package in NATIVE_PACKAGES:
        for name in sorted(os.listdir(package)):
            path = f"{package}/{name}"
            if name.endswith(".py") and name != "__init__.py" and path not in NATIVE_EXCLUDE:
                sources.append(path)
    return sources


def native_extensions() -> list[object]:
    if os.environ.get("RILL_NATIVE") != "1":
        return []
    from mypyc.build import mypycify

    # RILL_NATIVE_OPT=0 compiles several times faster (for trying a change, not for measuring).
    opt_level = os.environ.get("RILL_NATIVE_OPT", "3")
    from setuptools import Extension

    compiled = list(mypycify(native_sources(), group_name="node._native", opt_level=opt_level, debug_level="1"))
    # Hand-written C where compiled Python still spends too much (see each file's header).
    return [
        *compiled,
        *(Extension(source[:-2].replace("/", "."), [source], include_dirs=["node"], depends=C_HEADERS)
          for source in C_SOURCES),
    ]


setup(ext_modules=native_extensions())
