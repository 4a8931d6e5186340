"""The shape of the code: no import circle in or between Rill's packages, and one writer for
each piece of state the node's parts share.

A circle is the sign of a part that reaches back into what built it: the part should be given
a narrow view (a Protocol or a small object of the lower level) when it is built instead.
Imports under TYPE_CHECKING count: they are the same reach, only hidden from the interpreter.

The layers between packages are import-linter's (pyproject.toml).
"""

from __future__ import annotations

import pathlib
import re

import grimp
import pytest

# Packages checked here: no import circle in or between them (issue #35, item 5).
PACKAGES = ("node", "replication", "chaos", "pipeline", "bench")


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


def test_no_import_circle() -> None:
    circles = _circles()
    assert circles == [], "import circles (TYPE_CHECKING imports included):\n" + "\n".join(
        " <-> ".join(c) for c in circles
    )


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
    r"\.commit_notes =": {"node/server/server.py", "node/replication/committed.py"},
    r"\._muted =": {"node/log/effect_log.py"},
    # The replication position: the effect log alone moves its offset (each unit it commits,
    # `replicated`), and these move it when a data set is loaded or replaced.
    r"effects\.offset [+-]?=": set(),
    r"effects\.(move_to|restore|restart)\(": {"node/persistence/service.py", "node/replication/node_state_machine.py",
                                               "node/replication/redis_link.py"},
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


# File names that several of the packages use, each for the same concept (issue #35, item 6);
# any other name used twice says too little about what its file holds.
SHARED_NAMES = {
    "__init__.py": "a package",
    "__main__.py": "a package's command line",
    "cluster.py": "a local cluster of server processes: `rill cluster`, the bench's and tests' launcher, the chaos lab's own",
    "config.py": "a server's configuration: a node's directives, a sentinel's sentinel.conf",
    "core.py": "the server core (node/server) and what its metrics export (node/metrics)",
    "discovery.py": "finding peers: a replica its primary, a sentinel the instances around a master",
    "failover.py": "a sentinel failover: carried out (the sentinel policy), measured (the bench suite)",
    "fencing.py": "fenced mode, on a node and in the sentinel policy",
    "groups.py": "consumer groups: the engine's, the Spark source's group mode",
    "ids.py": "stream entry IDs: the engine's, the Spark source's",
    "info.py": "INFO sections: the core's machinery, the node's and replication's sections",
    "memory.py": "a node's memory: what the engine's values take, what the node accounts",
    "metrics.py": "the Prometheus metrics of a node, of a sentinel",
    "options.py": "user-settable options: a sentinel's per master, the Spark data source's",
    "pubsub.py": "Pub/Sub: its commands, the server's subscriptions",
    "registry.py": "who is there: a primary's replicas, a sentinel's instances",
    "report.py": "results as tables and files: the bench's, the chaos matrix's",
    "runner.py": "what drives one thing through its steps: a sentinel's policy, a chaos run",
    "stream_refs.py": "XDELEX/XACKDEL's references: the commands and the engine's rules",
    "tls.py": "the TLS set-up of one kind of link (clients, replication, the chaos lab's targets)",
}


def test_a_file_name_used_twice_names_one_concept() -> None:
    root = pathlib.Path(__file__).resolve().parent.parent
    where: dict[str, list[str]] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            where.setdefault(path.name, []).append(str(path.relative_to(root)))
    twice = {name: paths for name, paths in where.items() if len(paths) > 1 and name not in SHARED_NAMES}
    assert twice == {}
