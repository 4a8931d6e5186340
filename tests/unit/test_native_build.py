"""The native (mypyc) build: a stale build is refused, and when a build exists the tests run
the compiled modules."""

from __future__ import annotations

import glob
import os

import pytest

import node
import node.engine.stream
import node.log.encode
import node.server.dispatch
from node import StaleNativeBuild, check_native_build

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(node.__file__)))


def _touch(path: str, mtime: float) -> None:
    with open(path, "w"):
        pass
    os.utime(path, (mtime, mtime))


def _checkout(tmp_path: os.PathLike[str]) -> str:
    """A source checkout's package directory: setup.py beside it."""
    _touch(os.path.join(tmp_path, "setup.py"), 1)
    here = os.path.join(tmp_path, "node")
    os.mkdir(here)
    return here


def test_a_source_newer_than_the_build_is_refused_naming_it(tmp_path: os.PathLike[str]) -> None:
    here = _checkout(tmp_path)
    for package in ("engine", "server"):
        os.mkdir(os.path.join(here, package))
    _touch(os.path.join(here, "_native__mypyc.cpython-311-x86_64-linux-gnu.so"), 1000)
    _touch(os.path.join(here, "engine", "stream.cpython-311-x86_64-linux-gnu.so"), 1000)
    _touch(os.path.join(here, "engine", "stream.py"), 900)
    _touch(os.path.join(here, "engine", "new_module.py"), 2000)  # not compiled: not checked
    check_native_build(here)  # older source: fine
    os.utime(os.path.join(here, "engine", "stream.py"), (1100, 1100))
    with pytest.raises(StaleNativeBuild, match=r"engine/stream\.py changed after the native build"):
        check_native_build(here)


def test_a_c_source_newer_than_its_extension_is_refused(tmp_path: os.PathLike[str]) -> None:
    here = _checkout(tmp_path)
    os.mkdir(os.path.join(here, "log"))
    _touch(os.path.join(here, "_native__mypyc.cpython-311-x86_64-linux-gnu.so"), 1000)
    _touch(os.path.join(here, "log", "_resp_encode.cpython-311-x86_64-linux-gnu.so"), 1000)
    _touch(os.path.join(here, "log", "_resp_encode.c"), 900)
    check_native_build(here)
    os.utime(os.path.join(here, "log", "_resp_encode.c"), (1100, 1100))
    with pytest.raises(StaleNativeBuild, match=r"log/_resp_encode\.c changed after the native build"):
        check_native_build(here)


def test_without_a_build_nothing_is_checked(tmp_path: os.PathLike[str]) -> None:
    check_native_build(_checkout(tmp_path))  # no _native__mypyc library, no package directories


def test_an_installed_package_is_not_checked(tmp_path: os.PathLike[str]) -> None:
    # site-packages/node from a wheel: pip wrote the sources after the library (deploy/Dockerfile).
    here = os.path.join(tmp_path, "node")
    os.makedirs(os.path.join(here, "engine"))
    _touch(os.path.join(here, "_native__mypyc.cpython-311-x86_64-linux-gnu.so"), 1000)
    _touch(os.path.join(here, "engine", "stream.cpython-311-x86_64-linux-gnu.so"), 1000)
    _touch(os.path.join(here, "engine", "stream.py"), 1100)
    check_native_build(here)
    _touch(os.path.join(tmp_path, "setup.py"), 1)  # the same files in a checkout are refused
    with pytest.raises(StaleNativeBuild):
        check_native_build(here)


def test_the_suite_runs_the_compiled_modules_when_a_build_exists() -> None:
    if not glob.glob(os.path.join(ROOT, "node", "_native__mypyc.*")):
        pytest.fail("no native build: `make test` builds it (make native) before running the suite")
    assert node.server.dispatch.__file__.endswith(".so")
    assert node.log.encode._NATIVE_ENCODE is not None  # the C encoder was built too
    assert node.engine.stream.__file__.endswith(".so")
