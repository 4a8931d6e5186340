"""Optional native build of the node's hot path with mypyc.

The package installs and runs as plain Python (pyproject.toml holds its metadata). The
request path, the command handlers and the stream engine are fully typed (mypy --strict),
so mypyc can compile them to C extensions with the same behaviour: `make native` runs

    RILL_NATIVE=1 python setup.py build_ext --inplace

which writes one extension per module next to its source (Python imports an extension
before a .py of the same name) plus the shared library `node/_native__mypyc*.so`, and builds
the few hand-written C modules (each has a Python fallback). `RILL_NATIVE=c` builds only
the C modules (with CFLAGS/LDFLAGS from the environment: `make asan-fuzz`). What is compiled
is listed in node/native_build.py; an in-place build records the hashes of its inputs there,
and `node/__init__.py` refuses to start from extensions that are not a build of the sources.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def _load_native_build() -> Any:
    # By path: importing the package would run the check of the build this replaces.
    spec = importlib.util.spec_from_file_location("rill_native_build", os.path.join(ROOT, "node", "native_build.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


native_build = _load_native_build()
KIND = os.environ.get("RILL_NATIVE", "")


def native_extensions() -> list[Any]:
    if KIND not in native_build.KINDS:
        return []
    # Hand-written C where compiled Python still spends too much (see each file's header).
    c_modules = [
        Extension(source[:-2].replace("/", "."), [source], include_dirs=["node"], depends=list(native_build.C_HEADERS))
        for source in native_build.C_SOURCES
    ]
    if KIND == "c":
        return c_modules
    from mypyc.build import mypycify

    # RILL_NATIVE_OPT=0 compiles several times faster (for trying a change, not for measuring).
    opt_level = os.environ.get("RILL_NATIVE_OPT", "3")
    compiled = mypycify(native_build.compiled_modules(ROOT), group_name="node._native", opt_level=opt_level,
                        debug_level="1")
    return [*compiled, *c_modules]


class RecordedBuildExt(build_ext):
    """build_ext that, in place, replaces every extension of the package (none left of a
    module since removed) and records the build (node/native_build.py)."""

    def run(self) -> None:
        if not self.inplace or KIND not in native_build.KINDS:
            super().run()
            return
        # Hashed before building: a source edited meanwhile leaves the build stale.
        inputs = native_build.digests(ROOT, native_build.build_inputs(ROOT, KIND))
        for path in [native_build.RECORD, *native_build.extensions(ROOT)]:
            if os.path.exists(os.path.join(ROOT, path)):
                os.remove(os.path.join(ROOT, path))
        super().run()
        # All the package's extensions are now this build's.
        native_build.write_record(ROOT, KIND, inputs, native_build.extensions(ROOT))


setup(ext_modules=native_extensions(), cmdclass={"build_ext": RecordedBuildExt})
