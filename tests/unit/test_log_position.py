"""The effect log owns the node's replication position (node/log/effect_log.py): the backlog and
the AOF follow it through the units they are given; one found to end elsewhere is a bug,
reported as PositionMismatch, never repaired by moving the backlog or the log (a repair would
hide which bytes a replica or a restart gets). A node reads its position in one place:
`ReplicationNode.end_offset()`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from node.app.rill_node import RillNode
from node.commands.context import Session
from node.config import Config
from node.log.effect_log import PositionMismatch
from replication import new_replid

PING_UNIT = b"*1\r\n$4\r\nPING\r\n"


def _run(test: Callable[[RillNode], Awaitable[None]], config: Config | None = None) -> None:
    """`test(node)` on a running loop, with the node's data loaded and its replication side
    attached (what `RillNode.start` does before listening), nothing listening."""
    async def main() -> None:
        node = RillNode(config or Config())
        node.persistence.load()
        node.replication.attach()
        node.persistence.start(asyncio.get_running_loop())
        try:
            await test(node)
        finally:
            node.persistence.shutdown(frozenset())
    asyncio.run(main())


def _xadd(node: RillNode, n: int = 1) -> None:
    session = Session(node, 0, addr="test")
    session.authenticated = True
    for _ in range(n):
        node.server.execute(session, [b"XADD", b"s", b"*", b"f", b"v"])


def test_the_nodes_position_is_the_logs_with_its_units_in_the_backlog() -> None:
    async def test(node: RillNode) -> None:
        repl = node.replication
        assert repl.backlog is not None
        repl.feed.record()  # as at a replica's first resync: the backlog keeps the log's units
        _xadd(node, 3)
        # The units of this event-loop turn are not in the backlog yet (batched per turn).
        assert repl.backlog.end < node.server.effects.offset
        assert repl.end_offset() == node.server.effects.offset == repl.backlog.end > 0
    _run(test)


def test_a_backlog_that_ends_elsewhere_than_the_log_is_reported_not_reset() -> None:
    async def test(node: RillNode) -> None:
        repl = node.replication
        backlog = repl.backlog
        assert backlog is not None
        repl.feed.record()
        replid, end = backlog.replid, backlog.append(PING_UNIT)  # bytes the log never had
        _xadd(node)
        logged = node.server.effects.offset
        with pytest.raises(PositionMismatch, match="the backlog ends at offset"):
            repl.flush()
        with pytest.raises(PositionMismatch, match="the backlog ends at offset"):
            repl.end_offset()
        # Nothing moved to hide it: same history, same end, the log where it was.
        assert (backlog.replid, backlog.end) == (replid, end)
        assert node.server.effects.offset == logged
    _run(test)


def test_a_backlog_reset_elsewhere_than_the_log_is_reported_and_the_log_stays() -> None:
    async def test(node: RillNode) -> None:
        repl = node.replication
        backlog = repl.backlog
        assert backlog is not None
        _xadd(node, 2)
        offset = repl.end_offset()
        with pytest.raises(PositionMismatch, match=f"the backlog ends at offset {offset + 100} but the effect log at {offset}"):
            backlog.reset(new_replid(), offset + 100)
        assert node.server.effects.offset == offset
    _run(test)


def test_an_aof_that_ends_elsewhere_than_the_log_is_reported_not_rewritten(tmp_path: Path) -> None:
    config = Config()
    config.set("dir", str(tmp_path), startup=True)
    config.set("appendonly", "yes", startup=True)

    async def test(node: RillNode) -> None:
        persistence = node.persistence
        _xadd(node, 2)
        persistence.aof.commit()
        writer = persistence.writer
        assert writer is not None and writer.end_offset == node.server.effects.offset
        persistence.log_identity_changed()  # in step: records nothing new, raises nothing
        writer.end_offset += 7
        with pytest.raises(PositionMismatch, match="the AOF ends at offset"):
            persistence.log_identity_changed()
        assert not persistence.rewrite_scheduled
    _run(test, config)
