"""The native build: the extensions beside the sources are refused unless they are a build of
those very sources (hashes of every input recorded by setup.py: compiled modules, C sources,
headers, stubs, setup.py), orphan extensions are refused, RILL_PURE_PYTHON=1 ignores every
extension, and when a build exists the suite runs the compiled modules."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import node.engine.stream
import node.log.encode
import node.server.dispatch
from node import native_build
from node.native_build import StaleNativeBuild, check_native_build

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(node.__file__)))
SUFFIX = ".cpython-311-x86_64-linux-gnu.so"
PURE = os.environ.get("RILL_PURE_PYTHON") == "1"
_EXTENSION = native_build.EXTENSION_SUFFIXES[0]


def _write(root: Path, path: str, text: str = "") -> None:
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(text)


def _checkout(root: Path, kind: str = "1") -> Path:
    """A checkout with every input of a build of that kind, built and recorded."""
    _write(root, "setup.py", "# setup")
    for package in native_build.NATIVE_PACKAGES:
        _write(root, f"{package}/__init__.py")
    for path in [*native_build.NATIVE_MODULES, "node/engine/stream.py", "node/commands/reply.py"]:
        _write(root, path, f"# {path}")
    for path in native_build.build_inputs(str(root), kind):
        if not (root / path).exists():
            _write(root, path, f"/* {path} */")
    built = [f"{source[:-2]}{_EXTENSION}" for source in native_build.C_SOURCES]
    if kind == "1":
        built += [f"node/_native__mypyc{_EXTENSION}", f"node/engine/stream{_EXTENSION}"]
    for path in built:
        _write(root, path)
    inputs = native_build.digests(str(root), native_build.build_inputs(str(root), kind))
    native_build.write_record(str(root), kind, inputs, built)
    return root


def _refused(root: Path, why: str) -> None:
    with pytest.raises(StaleNativeBuild, match=why) as refused:
        check_native_build(str(root))
    assert "`make native`" in str(refused.value) and "`make clean-native`" in str(refused.value)


def test_a_recorded_build_of_unchanged_sources_passes(tmp_path: Path) -> None:
    check_native_build(str(_checkout(tmp_path)))
    check_native_build(str(_checkout(tmp_path / "c", kind="c")))


@pytest.mark.parametrize("path", ["node/engine/stream.py", "node/persistence/aof_reader.py", "node/resp_read.h",
                                  "node/log/_resp_scan.c", "node/engine/_logged_xadd.pyi", "setup.py"])
def test_an_edited_input_is_refused_naming_it(tmp_path: Path, path: str) -> None:
    root = _checkout(tmp_path)
    with open(root / path, "a") as f:
        f.write(" ")  # same mtime or not: the content decides
    _refused(root, f"{path} changed since the native build")


def test_a_module_removed_or_added_since_the_build_is_refused(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    _write(root, "node/engine/new_module.py")
    _refused(root, "node/engine/new_module.py is new since the native build")
    os.remove(root / "node/engine/new_module.py")
    check_native_build(str(root))
    os.remove(root / "node/engine/stream.py")
    _refused(root, "node/engine/stream.py was removed since the native build")


def test_an_uncompiled_module_may_change(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    _write(root, "node/commands/reply.py", "# edited")
    _write(root, "node/app/rill_node.py", "# not compiled")
    check_native_build(str(root))


def test_an_orphan_extension_is_refused_naming_it(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    _write(root, f"node/server/effects{_EXTENSION}")  # a module deleted since
    _refused(root, f"node/server/effects{_EXTENSION} is not from the last build")


def test_a_missing_extension_or_record_is_refused(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    os.remove(root / f"node/engine/stream{_EXTENSION}")
    _refused(root, f"node/engine/stream{_EXTENSION} of the last build is missing")
    os.remove(root / native_build.RECORD)
    _refused(root, "is not from a build of these sources")
    _write(root, native_build.RECORD, "{not json")
    _refused(root, "damaged")


def test_without_a_build_nothing_is_refused_and_other_pythons_builds_are_ignored(tmp_path: Path) -> None:
    _write(tmp_path, "setup.py")
    _write(tmp_path, "node/engine/stream.py")
    _write(tmp_path, "node/engine/stream.cpython-399-x86_64-linux-gnu.so")  # never loaded by this Python
    check_native_build(str(tmp_path))


def test_an_installed_package_is_not_checked(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    _write(root, f"node/server/effects{_EXTENSION}")
    os.remove(root / "setup.py")  # site-packages: no setup.py beside the package
    check_native_build(str(root))


def test_the_makefiles_freshness_test_is_the_same_rule(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    shutil.copy(native_build.__file__, root / "node/native_build.py")
    inputs = native_build.digests(str(root), native_build.build_inputs(str(root), "1"))
    native_build.write_record(str(root), "1", inputs, native_build.extensions(str(root)))

    def fresh() -> int:
        command = [sys.executable, "-P", str(root / "node/native_build.py"), "fresh"]
        return subprocess.run(command, env={**os.environ, "PYTHONPATH": ""}).returncode

    assert fresh() == 0
    _write(root, "node/resp_read.h", "/* edited */")
    assert fresh() == 1
    shutil.rmtree(root / "node")
    _write(root, "node/native_build.py", (Path(native_build.__file__)).read_text())
    assert fresh() == 1  # no build at all: build one


def test_setup_py_records_a_build_that_passes_and_removes_orphans(tmp_path: Path) -> None:
    """The real setup.py, building the C modules only (a few seconds)."""
    for path in [*native_build.build_inputs(ROOT, "c"), "node/native_build.py"]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(os.path.join(ROOT, path), tmp_path / path)
    _write(tmp_path, f"node/server/effects{_EXTENSION}")  # an orphan of an older checkout
    env = {**os.environ, "RILL_NATIVE": "c"}
    command = [sys.executable, "setup.py", "-q", "build_ext", "--inplace"]
    subprocess.run(command, cwd=tmp_path, env=env, check=True, capture_output=True)
    assert native_build.extensions(str(tmp_path)) == sorted(f"{s[:-2]}{_EXTENSION}" for s in native_build.C_SOURCES)
    check_native_build(str(tmp_path))
    with open(tmp_path / "node/resp_read.h", "a") as f:
        f.write("\n")
    with pytest.raises(StaleNativeBuild, match="node/resp_read.h changed"):
        check_native_build(str(tmp_path))


_PROBE = "import node.engine.stream as s, node.log.encode as e; print(s.__file__.endswith('.so'), e._NATIVE_ENCODE is None)"


def test_pure_python_mode_ignores_every_extension(tmp_path: Path) -> None:
    env = {**os.environ, "RILL_PURE_PYTHON": "1"}
    out = subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    assert out.stdout.split() == ["False", "True"]


def test_the_suite_runs_the_compiled_modules_unless_told_to_run_pure_python() -> None:
    compiled = [m.__file__.endswith(".so") for m in (node.server.dispatch, node.engine.stream)]  # type: ignore[union-attr]
    if PURE:
        assert compiled == [False, False] and node.log.encode._NATIVE_ENCODE is None
        return
    if not native_build.extensions(ROOT):
        pytest.fail("no native build: `make test` builds it (make native) before running the suite")
    assert compiled == [True, True]
    assert node.log.encode._NATIVE_ENCODE is not None  # the C encoder was built too
