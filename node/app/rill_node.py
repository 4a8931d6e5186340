"""One Rill node, assembled: the one place that builds the node's parts, connects them and
runs them.

    Keyspace (node.engine) and EffectLog (node.log)
      └─ Server (node.server): clients, dispatch, blocking, WATCH, the write path
           └─ Persistence (node.persistence): load at start, AOF of the log, snapshots
                └─ ReplicationNode (node.replication): backlog, primary and replica sides,
                   WAIT and WAITAOF

Each part is given the parts below it, and what it reads of the parts above it, when it is
built; none builds another, and nothing is patched in afterwards. The replication role
(node/replication/role.py's `Role`, read by the server through node/server/role_view.py) and
the write gates (node/server/write_gates.py) are made here first, for the server to read and
their one writer each to change. `RillNode` is also the `Node`
that command handlers reach through their session (node.commands.context): the data and the
write path are the server's, each narrow service belongs to the part that owns it, and the
`Admin` one (INFO, MEMORY STATS, statistics, DEBUG SLEEP, SHUTDOWN), which spans them all,
is the node's own. It runs the lifecycle: the data is loaded before the node listens, and it
shuts down gracefully on SIGTERM/SIGINT or SHUTDOWN. With `metrics-port` set it also serves
Prometheus metrics (node/app/metrics.py).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import time
from collections.abc import Callable
from typing import Any, Final

from node import REDIS_VERSION, __version__
from node.app.info import add_node_sections, memory_stats
from node.app.memory import MemoryAccounting
from node.app.metrics import start_metrics
from node.commands import load_all
from node.commands.context import Admin, Clients, ClientSession, PubSub, Watches
from node.commands.table import CommandTable
from node.config import Config
from node.engine.keyspace import Keyspace
from node.log.effect_log import EffectLog
from node.metrics.exporter import MetricsExporter
from node.persistence.service import Persistence
from node.replication import info as replication_info
from node.replication.committed import CommittedReads
from node.replication.role import ReplicationNode, Role
from node.server.expire_cron import ExpireCron
from node.server.info import Fields
from node.server.server import Server, wall_clock_ms
from node.server.write_gates import WriteGates

log = logging.getLogger("rill.server")

# How long a shutdown waits for clients to take the replies already written to them.
_SHUTDOWN_FLUSH_GRACE: Final = 2.0


class RillNode:
    """One node. `serve()` runs it until shutdown."""

    def __init__(self, config: Config, clock: Callable[[], int] | None = None) -> None:
        load_all()
        self.config = config
        # Milliseconds since the epoch; tests drive the node with a fake clock.
        self.clock: Callable[[], int] = clock if clock is not None else wall_clock_ms
        self.keyspace = Keyspace(config.databases)
        self.effects = EffectLog()
        # The role and the write gates are made first: the server is given them to read,
        # their writers (replication; persistence and replication) to change them.
        role = Role()
        gates = WriteGates()
        self.server = Server(
            config, self.keyspace, self.effects, self.clock, role=role, gates=gates, node=self,
            sync_stats=self._sync_stats,
        )
        self.acl = self.server.acl
        self.persistence = Persistence(self.server, gates)
        self.replication = ReplicationNode(self.server, self.persistence, role, gates)
        add_node_sections(self.server.info_sections, self)
        # The write path and the server's registries, as commands reach them.
        self.now_ms = self.server.now_ms
        self.propagate = self.server.propagate
        self.propagate_many = self.server.propagate_many
        self.propagate_to_replicas = self.server.propagate_to_replicas
        self.lease_refusal = self.server.lease_refusal
        self.appended_from_log = self.server.appended_from_log
        self.expiry = self.server.expiry
        self.execute = self.server.execute
        self.watches: Watches = self.server
        self.clients: Clients = self.server
        self.pubsub: PubSub = self.server.pubsub
        self.admin: Admin = self
        self.waits = self.replication.waits
        self.committed = CommittedReads(self.replication)
        self.expire_cron = ExpireCron(self.server, self)
        self.keys_expired_at_load = 0  # INFO rdb_last_load_keys_expired
        # used_memory and the maxmemory check.
        self.memory = MemoryAccounting(self)
        self.shutdown_reason = ""
        self.shutdown_flags: frozenset[str] = frozenset()
        self._shutdown: asyncio.Event | None = None
        self.metrics_exporter: MetricsExporter | None = None  # `metrics-port`, when set

    @property
    def role(self) -> str:
        return self.server.role

    def _sync_stats(self) -> Fields:
        """INFO stats' full and partial resync counts, the replication side's."""
        return replication_info.sync_stats(self.replication)

    @property
    def mode(self) -> str:
        return self.server.mode

    @property
    def commands(self) -> CommandTable:
        return self.server.commands

    # -- Admin -------------------------------------------------------------------------------

    def info(self, sections: list[str]) -> str:
        return self.server.info(sections)

    def memory_stats(self) -> dict[bytes, Any]:
        return memory_stats(self)

    def command_stats(self) -> dict[str, Any]:
        return self.server.dispatcher.stats

    def reset_stats(self) -> None:
        self.server.reset_stats()

    def request_shutdown(self, session: ClientSession | None, flags: frozenset[str] = frozenset()) -> None:
        words = " ".join(["SHUTDOWN", *sorted(f.upper() for f in flags)])
        who = f"client id={session.id} addr={session.addr}" if session is not None else "the node"
        self.shutdown_reason = f"{words} from {who}"
        self.shutdown_flags = flags
        if self._shutdown is not None:
            self._shutdown.set()

    def sleep(self, seconds: float) -> None:
        # DEBUG SLEEP blocks the whole node, as in Redis.
        time.sleep(seconds)

    # -- lifecycle -----------------------------------------------------------------------------

    async def serve(self) -> None:
        await self.start()
        assert self._shutdown is not None
        await self._shutdown.wait()
        await self.stop()

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._shutdown = asyncio.Event()
        # The data is loaded before listening, so no client ever sees a partial data set.
        self.persistence.load()
        self.replication.attach()
        self.committed.attach()
        await self.server.listen()
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, self._on_signal, sig)
            except (NotImplementedError, RuntimeError):
                pass
        await self.replication.start()
        self.metrics_exporter = await start_metrics(self)
        # Long-lived data (command table, config) is frozen out of the GC's view, and the
        # young-generation threshold raised: per-command garbage is acyclic, so frequent
        # collections would only cost time on the hot path.
        gc.collect()
        gc.freeze()
        gc.set_threshold(50_000, 50, 100)
        self.persistence.start(loop)
        self.keys_expired_at_load = self.expire_cron.start(loop)
        log.info(
            "Rill %s (Redis %s compatible) ready: pid=%d port=%d",
            __version__, REDIS_VERSION, os.getpid(), self.server.port,
        )

    async def stop(self) -> None:
        """Stop accepting, close every client once the replies already produced are written
        (blocked clients get none, as on a Redis shutdown), then log one line."""
        started = time.monotonic()
        self.expire_cron.stop()
        if self.metrics_exporter is not None:
            self.metrics_exporter.stop()
        self.server.stop_listening()
        # The replication link stops first: nothing is applied once the shutdown began.
        await self.replication.stop()
        # The AOF is made durable (and replies waiting for it released) before clients close.
        self.persistence.shutdown(self.shutdown_flags)
        clients, dropped = await self.server.close_clients(started + _SHUTDOWN_FLUSH_GRACE)
        log.warning(
            "Shutdown (%s): closed %d client connection(s)%s in %.0f ms, offset=%d; Rill is now ready to exit, bye bye...",
            self.shutdown_reason or "requested", clients,
            f", {dropped} with unsent output dropped" if dropped else "",
            (time.monotonic() - started) * 1000, self.effects.offset,
        )

    def _on_signal(self, sig: int) -> None:
        self.shutdown_reason = signal.Signals(sig).name
        if self._shutdown is not None:
            self._shutdown.set()
