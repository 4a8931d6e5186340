"""The policy's side of its links (sentinel.c's instanceLink and redisAsyncCommand): which
connections it asked the shell to open and to what, which requests await a reply and which
reply callback handles each, reconnecting an instance, and the commands it writes —
AUTH and CLIENT SETNAME on a new connection, PING, and the reconfiguration block.

A connection or request id the policy forgot (closed, or lost with its connection) is
ignored when the shell reports on it: its reply never comes as far as the policy."""

from __future__ import annotations

from typing import Final

from node.sentinel.instance import MASTER, SENTINEL, SLAVE, Addr, Instance, Link
from node.sentinel.messages import Close, Connect, Send
from node.sentinel.policy.outbox import Outbox
from node.sentinel.policy.state import State
from node.sentinel.timings import HELLO_CHANNEL

# Request kinds: which reply callback handles the answer (sentinel.c's *ReplyCallback).
DISCARD: Final = "discard"
PING: Final = "ping"
INFO: Final = "info"
PUBLISH: Final = "publish"
IS_MASTER_DOWN: Final = "is-master-down"
SUBSCRIBE: Final = "subscribe"
FENCE: Final = "fence"


class Request:
    __slots__ = ("kind", "instance", "conn")

    def __init__(self, kind: str, instance: Instance, conn: int) -> None:
        self.kind = kind
        self.instance = instance
        self.conn = conn


class _Conn:
    __slots__ = ("link", "pubsub", "instance")

    def __init__(self, link: Link, pubsub: bool, instance: Instance) -> None:
        self.link = link
        self.pubsub = pubsub
        self.instance = instance


class Connections:
    """The connections and requests the policy has open."""

    def __init__(self, state: State, outbox: Outbox) -> None:
        self._state = state
        self._outbox = outbox
        self._next_conn = 0
        self._next_request = 0
        self._conns: dict[int, _Conn] = {}
        self._requests: dict[int, Request] = {}

    # ------------------------------------------------------------------ what the shell reports

    def connected(self, conn: int, local_ip: str | None) -> None:
        entry = self._conns.get(conn)
        if entry is not None and entry.link.cc == conn:
            entry.link.local_ip = local_ip

    def connection_error(self, conn: int) -> None:
        """The shell lost connection `conn` (instanceLinkConnectionError): the link will be
        reconnected by the timer; replies still owed on it never come."""
        entry = self._conns.get(conn)
        if entry is None:
            return
        link = entry.link
        if link.pc == conn:
            link.pc = None
        if link.cc == conn:
            link.cc = None
        link.disconnected = True
        self._forget_conn(conn)

    def take_reply(self, conn: int, request: int) -> Request | None:
        """The request a reply answers, when a callback is to handle it (not for a forgotten
        request or connection, a subscription, or a released instance)."""
        req = self._requests.pop(request, None)
        entry = self._conns.get(conn)
        if req is None or entry is None or req.conn != conn:
            return None
        link = entry.link
        if req.kind == SUBSCRIBE:
            link.pc_last_activity = self._state.now
            return None
        link.pending_commands -= 1
        if req.instance.released:
            return None
        return req

    def take_message(self, conn: int) -> Instance | None:
        """The instance whose Pub/Sub connection delivered a message (None: not one we keep)."""
        entry = self._conns.get(conn)
        if entry is None or not entry.pubsub or entry.instance.released:
            return None
        entry.link.pc_last_activity = self._state.now
        return entry.instance

    # ------------------------------------------------------------------ opening and closing

    def close(self, link: Link, conn: int | None) -> None:
        """instanceLinkCloseConnection."""
        if conn is None:
            return
        if link.cc == conn:
            link.cc = None
            link.pending_commands = 0
        if link.pc == conn:
            link.pc = None
        link.disconnected = True
        self._forget_conn(conn)
        self._outbox.add(Close(conn))

    def close_link(self, link: Link) -> None:
        """Both connections of a link."""
        self.close(link, link.cc)
        self.close(link, link.pc)

    def _forget_conn(self, conn: int) -> None:
        self._conns.pop(conn, None)
        for request in [r for r, req in self._requests.items() if req.conn == conn]:
            del self._requests[request]

    def _new_conn(self, ri: Instance, pubsub: bool) -> int:
        self._next_conn += 1
        conn = self._next_conn
        self._conns[conn] = _Conn(ri.link, pubsub, ri)
        self._outbox.add(Connect(conn, ri.addr.host, ri.addr.port, pubsub))
        return conn

    def reconnect(self, ri: Instance) -> None:
        """sentinelReconnectInstance: at most once per PING period, open whichever of the
        two connections is missing (Pub/Sub only for masters and replicas)."""
        link = ri.link
        now = self._state.now
        if not link.disconnected or ri.addr.port == 0:
            return
        if now - link.last_reconn_time < self._state.timings.ping_period:
            return
        link.last_reconn_time = now
        myid = self._state.myid
        if link.cc is None:
            conn = self._new_conn(ri, pubsub=False)
            link.cc = conn
            link.pending_commands = 0
            link.cc_conn_time = now
            link.local_ip = None
            self._send_auth(ri, conn)
            self.send(ri, conn, DISCARD, "CLIENT", "SETNAME", f"sentinel-{myid[:8]}-cmd")
            self.send_ping(ri)
        if ri.flags & (MASTER | SLAVE) and link.pc is None:
            conn = self._new_conn(ri, pubsub=True)
            link.pc = conn
            link.pc_conn_time = now
            self._send_auth(ri, conn)
            self.send(ri, conn, DISCARD, "CLIENT", "SETNAME", f"sentinel-{myid[:8]}-pubsub")
            self.send(ri, conn, SUBSCRIBE, "SUBSCRIBE", HELLO_CHANNEL, counted=False)
        if link.cc is not None and (ri.flags & SENTINEL or link.pc is not None):
            link.disconnected = False

    # ------------------------------------------------------------------ commands

    def send(self, ri: Instance, conn: int | None, kind: str, *argv: str, counted: bool = True) -> bool:
        """Queue a command on `conn` (redisAsyncCommand); False if there is no connection."""
        if conn is None:
            return False
        self._next_request += 1
        request = self._next_request
        self._requests[request] = Request(kind, ri, conn)
        if counted:
            ri.link.pending_commands += 1
        self._outbox.add(Send(conn, request, (_map_command(ri, argv[0]), *argv[1:])))
        return True

    def _send_auth(self, ri: Instance, conn: int) -> None:
        """sentinelSendAuthIfNeeded: replies are not checked, a refused AUTH shows as a down
        instance."""
        auth_pass: str | None
        auth_user: str | None
        if ri.flags & SENTINEL:
            if self._state.sentinel_auth_pass:
                auth_pass, auth_user = self._state.sentinel_auth_pass, self._state.sentinel_auth_user
            else:
                auth_pass, auth_user = self._state.requirepass, None
        else:
            master = ri if ri.flags & MASTER else ri.master
            assert master is not None
            auth_pass, auth_user = master.auth_pass, master.auth_user
        if auth_pass and auth_user is None:
            self.send(ri, conn, DISCARD, "AUTH", auth_pass)
        elif auth_pass and auth_user:
            self.send(ri, conn, DISCARD, "AUTH", auth_user, auth_pass)

    def send_ping(self, ri: Instance) -> bool:
        link = ri.link
        if not self.send(ri, link.cc, PING, "PING"):
            return False
        link.last_ping_time = self._state.now
        # A PING still unanswered keeps the time it was sent: SDOWN counts from the first.
        if link.act_ping_time == 0:
            link.act_ping_time = self._state.now
        return True

    def send_slaveof(self, ri: Instance, addr: Addr | None, *, epoch: int | None = None,
                     position: tuple[int, int] | None = None, kill_clients: bool = True) -> bool:
        """The reconfiguration block: SLAVEOF, CONFIG REWRITE (persist it when the node has a
        config file) and CLIENT KILL of normal and Pub/Sub clients (so they reconnect and ask
        for the master again), in one MULTI/EXEC. Replies are not checked. In fenced mode the
        promotion names its epoch, which the node refuses if it was fenced by a newer one, and
        the position of the node's log the choice relied on, which it refuses if its log is
        elsewhere now."""
        conn = ri.link.cc
        if conn is None:
            return False
        target: tuple[str, ...] = ("NO", "ONE") if addr is None else (addr.host, str(addr.port))
        if epoch is not None:
            target += ("EPOCH", str(epoch))
        if position is not None:
            target += ("POSITION", str(position[0]), str(position[1]))
        self.send(ri, conn, DISCARD, "MULTI")
        self.send(ri, conn, DISCARD, "SLAVEOF", *target)
        self.send(ri, conn, DISCARD, "CONFIG", "REWRITE")
        if kill_clients:
            self.send(ri, conn, DISCARD, "CLIENT", "KILL", "TYPE", "normal")
            self.send(ri, conn, DISCARD, "CLIENT", "KILL", "TYPE", "pubsub")
        self.send(ri, conn, DISCARD, "EXEC")
        return True


def _map_command(ri: Instance, command: str) -> str:
    """Commands renamed on the monitored nodes (`sentinel rename-command`)."""
    owner = ri.master if ri.master is not None else ri
    for name, renamed in owner.renamed_commands.items():
        if name.lower() == command.lower():
            return renamed
    return command
