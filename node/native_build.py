"""What the native build is made of, and whether the build beside the sources is theirs.

`make native` (setup.py) compiles some of the node's modules with mypyc and builds the
hand-written C modules, writing each extension next to its source. Python imports an
extension before the .py of the same name, so a build that is not the sources' would
silently run other code: yesterday's after an edit, or a module deleted since. An in-place
build therefore records in `node/_native_build.json` the SHA-256 of every input (the modules
mypyc compiles, the C sources, their headers and stubs, setup.py; a change to the lists below
changes the inputs) and the extensions it wrote. `check_native_build` (run once per process
by node/__init__.py) refuses a build whose inputs changed, an extension the build did not
write (an orphan of a deleted module or of an older checkout) and a recorded one that is
missing.
`python -P node/native_build.py fresh` is how the Makefile decides to rebuild, by the same
rule. `RILL_PURE_PYTHON=1` makes the node ignore every extension (`use_python_sources`).

Standard library only, and loadable by path: setup.py loads it without importing the
package, whose __init__ would refuse the very build it is about to replace.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Sequence
from importlib.machinery import EXTENSION_SUFFIXES, SOURCE_SUFFIXES, FileFinder, ModuleSpec, SourceFileLoader
from typing import Final

# Modules compiled to C by mypyc: whole packages (but their __init__) and single modules.
# node/commands/reply.py stays Python: RSet subclasses list, which mypyc cannot compile as a
# native class. node/commands/redis_meta.py is generated data (a dict literal read once).
NATIVE_PACKAGES: Final = ("node/engine", "node/rdb", "node/commands", "node/log", "node/server", "node/replication")
NATIVE_MODULES: Final = ("node/persistence/aof_reader.py",)  # the AOF replay loop
NATIVE_EXCLUDE: Final = frozenset({"node/commands/reply.py", "node/commands/redis_meta.py"})
# The hand-written C modules, each with a .pyi beside it and a Python fallback.
C_SOURCES: Final = (
    "node/log/_resp_encode.c", "node/log/_resp_scan.c", "node/engine/_logged_xadd.c", "node/rdb/_rdb_native.c",
)
C_HEADERS: Final = ("node/resp_read.h",)  # shared by C_SOURCES
# What a build is (setup.py's RILL_NATIVE): "1" everything above, "c" the C modules only
# (the AddressSanitizer build of `make asan-fuzz`).
KINDS: Final = ("1", "c")
RECORD: Final = "node/_native_build.json"
_REMEDY: Final = "run `make native` to rebuild, or `make clean-native` to run from the Python sources"


class StaleNativeBuild(ImportError):
    pass


def compiled_modules(root: str) -> list[str]:
    """The .py files mypyc compiles, relative to the checkout `root`."""
    sources = list(NATIVE_MODULES)
    for package in NATIVE_PACKAGES:
        for name in sorted(os.listdir(os.path.join(root, package))):
            path = f"{package}/{name}"
            if name.endswith(".py") and name != "__init__.py" and path not in NATIVE_EXCLUDE:
                sources.append(path)
    return sources


def build_inputs(root: str, kind: str) -> list[str]:
    """Every file whose content a build of that kind depends on, relative to `root`."""
    inputs = [*C_SOURCES, *(source[:-2] + ".pyi" for source in C_SOURCES), *C_HEADERS, "setup.py"]
    if kind == "1":
        inputs += compiled_modules(root)
    return sorted(inputs)


def digests(root: str, paths: Sequence[str]) -> dict[str, str]:
    """SHA-256 of each file ("missing" for one that is not there)."""
    result = {}
    for path in paths:
        try:
            with open(os.path.join(root, path), "rb") as f:
                result[path] = hashlib.sha256(f.read()).hexdigest()
        except FileNotFoundError:
            result[path] = "missing"
    return result


def extensions(root: str) -> list[str]:
    """The extension modules this interpreter would import from the package, relative to
    `root` (another Python's builds do not count: it never loads them)."""
    found = []
    for directory, subdirectories, names in os.walk(os.path.join(root, "node")):
        subdirectories[:] = [d for d in subdirectories if d != "__pycache__"]
        for name in names:
            # The module name before the suffix: "x.cpython-312-….so" is no module "x" here.
            if any(name.endswith(suffix) and name[: -len(suffix)].isidentifier() for suffix in EXTENSION_SUFFIXES):
                found.append(os.path.relpath(os.path.join(directory, name), root).replace(os.sep, "/"))
    return sorted(found)


def write_record(root: str, kind: str, inputs: dict[str, str], built: Sequence[str]) -> None:
    """Records a finished in-place build: its kind, the digests of its inputs taken before
    it started (an edit during the build leaves it stale), the extensions it wrote."""
    record = {"kind": kind, "inputs": inputs, "extensions": sorted(built)}
    with open(os.path.join(root, RECORD), "w") as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.write("\n")


def problem(root: str) -> str | None:
    """Why the extensions in the checkout `root` are not a build of its sources, or None
    (none there, or the record's build with unchanged inputs)."""
    present = extensions(root)
    try:
        with open(os.path.join(root, RECORD)) as f:
            record = json.load(f)
    except FileNotFoundError:
        return f"{present[0]} is not from a build of these sources (no {RECORD})" if present else None
    except ValueError:
        return f"{RECORD} is damaged"
    kind = record.get("kind")
    if kind not in KINDS:
        return f"{RECORD} names no known build"
    built = set(record.get("extensions", ()))
    for path in present:
        if path not in built:
            return f"{path} is not from the last build (its module was removed or moved)"
    for path in sorted(built.difference(present)):
        return f"{path} of the last build is missing"
    recorded = record.get("inputs", {})
    now = digests(root, build_inputs(root, kind))
    for path in sorted(set(now) | set(recorded)):
        if path not in recorded:
            return f"{path} is new since the native build"
        if path not in now:
            gone = not os.path.exists(os.path.join(root, path))
            return f"{path} {'was removed' if gone else 'is no longer compiled'} since the native build"
        if recorded[path] != now[path]:
            return f"{path} changed since the native build"
    return None


def check_native_build(root: str) -> None:
    """Raises StaleNativeBuild unless the extensions beside the sources are their build (or
    there are none). Only a source checkout (setup.py beside the package) is checked: an
    installed wheel cannot be edited under its build, and holds no C sources to hash."""
    if not os.path.exists(os.path.join(root, "setup.py")):
        return
    why = problem(root)
    if why is not None:
        raise StaleNativeBuild(f"{why}: {_REMEDY}")


class _PythonSourcesOnly:
    """A meta path finder of the package's modules as .py sources only: an extension beside one is ignored,
    and a module that exists only as an extension (the C modules) is not found, so its
    caller takes its Python fallback."""

    def __init__(self) -> None:
        self._finders: dict[str, FileFinder] = {}

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: object = None) -> ModuleSpec | None:
        if not fullname.startswith("node.") or path is None:
            return None
        for entry in path:
            finder = self._finders.get(entry)
            if finder is None:
                finder = self._finders[entry] = FileFinder(entry, (SourceFileLoader, SOURCE_SUFFIXES))
            spec = finder.find_spec(fullname)
            if spec is not None:
                return spec
        raise ModuleNotFoundError(f"{fullname} has no Python source (RILL_PURE_PYTHON=1)", name=fullname)


def use_python_sources() -> None:
    """From now on the package's modules are imported from their .py sources only."""
    if not any(isinstance(finder, _PythonSourcesOnly) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PythonSourcesOnly())


def _main(argv: list[str]) -> int:
    """`fresh`: exit status 0 when the checkout holds a complete, fresh build of everything."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if argv != ["fresh"]:
        print("usage: python -P node/native_build.py fresh", file=sys.stderr)
        return 2
    if not extensions(root) or problem(root) is not None:
        return 1
    with open(os.path.join(root, RECORD)) as f:
        return 0 if json.load(f)["kind"] == "1" else 1


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
