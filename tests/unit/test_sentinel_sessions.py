"""A sentinel's clients are `ClientSession`s: a server without data has no `Node` to give them.
Every command and subcommand a sentinel runs (those it shares with a node and its own) must run
on one; a handler that takes a node's `Session` (or reaches for `ctx.node`) fails here, in the
compiled build with mypyc's TypeError on its argument, in the pure one with an AttributeError."""

from __future__ import annotations

import asyncio
from pathlib import Path

from node.commands.context import ClientSession, Session
from node.commands.table import CommandTable
from node.sentinel.shell import SentinelShell
from node.sentinel.startup import load


def _calls(table: CommandTable) -> list[list[bytes]]:
    """Each command and subcommand of `table` with as few arguments as its arity allows."""
    calls = []
    for name, spec in sorted(table.items()):
        for sub in sorted(spec.subcommands) or [None]:
            head = [name] if sub is None else [name, sub.encode()]
            arity = (spec.subcommands[sub] if sub is not None else spec).arity
            calls.append(head + [b"0"] * max(0, abs(arity) - len(head)))
    return calls


def _sentinel(tmp_path: Path) -> SentinelShell:
    """A sentinel as `rill sentinel` builds it (not started: no links, no listening)."""
    conf = tmp_path / "sentinel.conf"
    conf.write_text(f"port 0\ndir {tmp_path}\nsentinel monitor m 127.0.0.1 1 1\n")
    return SentinelShell(load([str(conf)]))


def test_every_command_a_sentinel_runs_takes_a_client_session(tmp_path: Path) -> None:
    core = _sentinel(tmp_path).core
    calls = _calls(core.commands)
    for call in ([b"client", b"list"], [b"ping"], [b"subscribe", b"0"], [b"publish", b"0", b"0"],
                 [b"sentinel", b"masters"], [b"role"]):
        assert call in calls
    failures: list[tuple[list[bytes], str]] = []

    async def run_all() -> None:
        for argv in calls:
            session = ClientSession(core, 1)
            try:
                core.execute(session, argv)
            except Exception as exc:  # what the client would never get a reply for
                failures.append((argv, repr(exc)))

    asyncio.run(run_all())
    assert failures == []


def test_a_sentinel_makes_client_sessions_without_a_node(tmp_path: Path) -> None:
    core = _sentinel(tmp_path).core
    session = core._new_session(7, "127.0.0.1:5000", "127.0.0.1:26379", -1)
    assert type(session) is ClientSession and not isinstance(session, Session)
    assert session.core is core and not hasattr(session, "node")
    assert session.db == {} and session.db_index == 0
