"""Rill: a Redis-Streams-compatible, replicated stream store."""

import os as _os

__version__ = "0.1.0"
# The Redis version whose semantics Rill follows; reported in INFO and HELLO so that
# clients which feature-detect by version (redis-py, Jedis, Lettuce) enable stream features.
REDIS_VERSION = "7.2.4"


class StaleNativeBuild(ImportError):
    pass


def check_native_build(here: str) -> None:
    """Python imports a compiled module before its .py: refuse to run compiled code older
    than its source, which would silently run yesterday's code after an edit. `here` is the
    package directory. Only a source checkout (setup.py beside the package) is checked: an
    installed wheel cannot be edited under its build, and pip gives its files the install
    time as mtime, in extraction order."""
    if not _os.path.exists(_os.path.join(_os.path.dirname(here), "setup.py")):
        return
    libs = [e for e in _os.scandir(here) if e.name.startswith("_native__mypyc.")]
    if not libs:
        return  # no native build: everything runs from the .py sources
    built = libs[0].stat().st_mtime
    # Every subpackage: setup.py decides which modules are compiled, the .so files say it.
    for package in _os.scandir(here):
        if not package.is_dir():
            continue
        names = {e.name: e for e in _os.scandir(package.path)}
        for name in names:
            if not name.endswith(".so"):
                continue
            stem = name.split(".", 1)[0]
            source = names.get(stem + ".py") or names.get(stem + ".c")
            if source is not None and source.stat().st_mtime > built:
                raise StaleNativeBuild(
                    f"{source.path} changed after the native build: run `make native` to "
                    "rebuild it, or `make clean-native` to run from the Python sources"
                )


check_native_build(_os.path.dirname(_os.path.abspath(__file__)))
