"""The shape of the code: no import circle inside a package, and one writer for each piece of
state the node's parts share.

A circle is the sign of a part that reaches back into what built it: the part should be given
a narrow view (a Protocol or a small object of the lower level) when it is built instead.
Imports under TYPE_CHECKING count: they are the same reach, only hidden from the interpreter.

`CIRCLES_LEFT` lists the packages whose circles are still to break; whoever breaks one removes
its package from the list (the test fails while a listed package has no circle left, so the
list only shrinks). The layers between packages are import-linter's (pyproject.toml).
"""

from __future__ import annotations

import pathlib
import re

import grimp
import pytest

# Packages checked here, and those of them that still hold a circle (issue #35, item 5).
PACKAGES = ("node", "replication", "chaos", "pipeline", "bench")
CIRCLES_LEFT = frozenset({"node.replication", "bench"})


def _circles() -> list[list[str]]:
    """The strongly connected components (more than one module) of the import graph."""
    # No cache: a stale one (it keys files by modification time) hides a new import.
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=False, cache_dir=None)
    modules = sorted(graph.modules)
    imports = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    # Tarjan's algorithm, iterative (the graph is deep enough to pass the recursion limit).
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            module, i = work.pop()
            if i == 0:
                index[module] = low[module] = len(index)
                stack.append(module)
                on_stack.add(module)
            targets = imports[module]
            if i < len(targets):
                work.append((module, i + 1))
                target = targets[i]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[module] = min(low[module], index[target])
                continue
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[module])
    return found


def _package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "node" and len(parts) > 2 else parts[0]


@pytest.fixture(scope="module")
def circles() -> list[list[str]]:
    return _circles()


def test_no_import_circle_outside_the_packages_left(circles: list[list[str]]) -> None:
    unexpected = [c for c in circles if not {_package(m) for m in c} <= CIRCLES_LEFT]
    assert unexpected == [], "import circles (TYPE_CHECKING imports included):\n" + "\n".join(
        " <-> ".join(c) for c in unexpected
    )


def test_the_list_of_packages_left_only_shrinks(circles: list[list[str]]) -> None:
    still = {_package(m) for c in circles for m in c}
    cleaned = sorted(CIRCLES_LEFT - still)
    assert cleaned == [], f"no circle left in {cleaned}: remove them from CIRCLES_LEFT"


# Who may change the node's shared state: each writer call and the modules that alone make it
# (docs/design.md, "Who changes what"). The parts read the state through the views they are
# given when built (node/server/role_view.py, node/server/write_gates.py).
WRITERS = {
    r"\.become_primary\(": {"node/replication/role.py"},
    r"\.become_replica\(": {"node/replication/role.py"},
    r"\.require_quorum\(": {"node/replication/role.py"},
    r"\.require_lease\(": {"node/replication/role.py"},
    r"\.deny_writes\(": {"node/persistence/service.py"},
    r"\.writes \+=": {"node/server/server.py"},
    r"\._writes_at_save =": {"node/persistence/snapshots.py"},
    r"\.saved_now\(": {"node/persistence/snapshots.py", "node/persistence/service.py"},
}


@pytest.mark.parametrize("call", sorted(WRITERS))
def test_each_piece_of_shared_state_has_its_writers(call: str) -> None:
    root = pathlib.Path(__file__).resolve().parent.parent
    found = {
        str(path.relative_to(root))
        for path in (root / "node").rglob("*.py")
        if re.search(call, path.read_text(encoding="utf-8"))
    }
    assert found <= WRITERS[call], f"{call} written from {sorted(found - WRITERS[call])}"
