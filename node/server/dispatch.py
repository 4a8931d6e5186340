"""Executing one command for one client: table lookup, arity, authentication, ACL
permissions, maxmemory, MULTI queueing, read-only replicas, the handler call, error texts and
per-command statistics. While maxmemory is set, every write is measured (node.engine.memory).

The ACL check (node/commands/acl.py) runs only for a client whose user is restricted: the
fast path requires `session.user.unrestricted` (the default user's case: a server without
ACL rules pays one attribute read per command) or, for a restricted user, that its
precomputed plan for the command allows it (`User.permits`: a dict lookup and a pattern match
per key); anything else takes the full path, where the refusal gets its reason.

The rules and texts are Redis 7.2's (server.c processCommand/call).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final

from node.commands.acl import check_command, check_queued_command
from node.commands.context import Block, ClientSession, Session
from node.commands.expiry import Hidden, command_keys, expire_before_retry, expire_command_keys, restore_hidden
from node.commands.reply import QUEUED, CommandError, ReplyError
from node.commands.table import CommandSpec, CommandTable, lookup, queues_write
from node.engine.memory import DatasetMeter
from node.log.effect_log import EffectLog
from node.server.pause import ALL, NONE
from node.server.write_gates import WriteGates

# Commands that run immediately even inside MULTI (processCommand's exec/discard/multi/
# watch/quit/reset exception).
_MULTI_IMMEDIATE: Final = frozenset({b"exec", b"discard", b"multi", b"watch", b"quit", b"reset"})
# What a client in MULTI may still run while over maxmemory (processCommand's OOM check).
_OOM_IN_MULTI: Final = frozenset({"exec", "discard", "quit", "reset"})
# Writes that change keys they do not name, or other databases: the dataset is counted
# again after them.
_UNMEASURED_WRITES: Final = frozenset({"flushall", "flushdb", "swapdb", "move", "copy"})
OOM_ERROR: Final = "OOM command not allowed when used memory > 'maxmemory'."
# What a RESP2 client in Pub/Sub mode may run (processCommand's pubsub check).
_PUBSUB_CONTEXT: Final = frozenset({
    "ping", "subscribe", "ssubscribe", "unsubscribe", "sunsubscribe", "psubscribe", "punsubscribe", "quit", "reset",
})


class CommandStats:
    __slots__ = ("calls", "nsec", "rejected", "failed")

    def __init__(self) -> None:
        self.calls = 0
        self.nsec = 0  # INFO commandstats shows usec; summing ns keeps sub-µs calls counted
        self.rejected = 0
        self.failed = 0

    @property
    def usec(self) -> int:
        return self.nsec // 1000


# A plain command's fast-path entry: spec, its stats, arity bounds, whether its effects must
# form one unit (writes and EXEC), and whether rules refusing writes apply to it.
_Plain = tuple[CommandSpec, CommandStats, int, int, bool, bool]


class Dispatcher:
    """Owns the lookup cache and the statistics; the server calls `execute`.

    `execute` first tries a fast path for plain commands (no subcommands) of an authenticated
    client outside MULTI and Pub/Sub, when no rule refuses writes; everything else goes
    through the full sequence of checks in processCommand's order. Commands are looked up in
    `table`, the server's command table.
    """

    def __init__(self, table: CommandTable, effects: EffectLog, gates: WriteGates) -> None:
        self._table = table
        # Name as sent (e.g. b"XADD") → spec; avoids lower-casing on every call.
        self._cache: dict[bytes, CommandSpec] = {}
        self._plain: dict[bytes, _Plain] = {}
        self._effects = effects
        # Clock reading at which the next command of a batch starts (0 outside batches):
        # within a batch each command ends where the next starts, one clock read each.
        self._mark = 0
        # False while some rule may refuse writes (a replica, a persistence error, too few
        # replicas): writes then take the full path, which knows every rule.
        self.writes_unchecked = True
        self.stats: dict[str, CommandStats] = {}
        self.errors: dict[str, int] = {}
        self.total_commands = 0
        self.total_errors = 0
        # The spec of the last command that ran (not one refused or queued); set after its
        # handler returns, so for EXEC it names EXEC, not the last queued command. MONITOR
        # shows only commands that ran.
        self.executed: CommandSpec | None = None
        # Persistence's -MISCONF and replication's quorum (node/server/write_gates.py: who
        # sets each); a change updates writes_unchecked.
        self._gates = gates
        gates.on_change(self._update_unchecked)
        # Set by the node while maxmemory is on: whether used memory is over it now.
        self._memory_full: Callable[[], bool] | None = None
        # Set with it: the dataset estimate each write updates (what it named, before/after).
        self.meter: DatasetMeter | None = None
        # CLIENT PAUSE / FAILOVER (node/server/pause.py): what is postponed now.
        self._pause = NONE
        self._unpaused_plain: dict[bytes, _Plain] | None = None

    def limit_memory(self, full: Callable[[], bool] | None, meter: DatasetMeter | None) -> None:
        """maxmemory on (`full` says whether used memory is over it; `meter` is kept up to
        date by every write) or off (None, None)."""
        self._memory_full = full
        self.meter = meter
        self._update_unchecked()

    def _update_unchecked(self) -> None:
        self.writes_unchecked = (
            self._gates.denial is None and self._gates.quorum is None and self._memory_full is None
            and self._pause == NONE
        )

    def set_pause_level(self, level: int) -> None:
        """The pause changed (node/server/pause.py). While everything is paused no command
        may take the fast path: its table is set aside until the pause ends."""
        self._pause = level
        if level == ALL and self._unpaused_plain is None:
            self._unpaused_plain, self._plain = self._plain, {}
        elif level != ALL and self._unpaused_plain is not None:
            self._plain, self._unpaused_plain = self._unpaused_plain, None
        self._update_unchecked()

    def reset_stats(self) -> None:
        # Zeroed in place, not dropped: CONFIG RESETSTAT is itself counted after it runs,
        # into the entry `call` already holds (as Redis counts it).
        for st in self.stats.values():
            st.calls = st.nsec = st.rejected = st.failed = 0
        self.errors.clear()
        self.total_errors = 0

    def batch_started(self) -> None:
        """A client's batch of commands begins: time its commands back to back."""
        self._mark = time.perf_counter_ns()

    def batch_ended(self) -> None:
        self._mark = 0

    def last_executed(self) -> CommandSpec | None:
        # A method, not an attribute read: after `executed = None` the type checker (and so
        # compiled code) would take a read of the attribute to be None.
        return self.executed

    def resolve(self, argv: list[bytes]) -> CommandSpec | None:
        name = argv[0]
        spec = self._cache.get(name)
        if spec is None:
            spec = self._table.get(name.lower())
            if spec is None:
                return None
            if len(self._cache) < 4096:
                self._cache[name] = spec
        return spec

    def count_direct(self, session: ClientSession, name: bytes, calls: int) -> None:
        """Statistics for `calls` commands `name` that ran without `execute` (a replica
        appending its primary's XADDs), timed together up to now from the batch's clock mark."""
        spec = self.resolve([name])
        assert spec is not None
        st = self._stat(spec)
        end = time.perf_counter_ns()
        st.calls += calls
        st.nsec += end - (self._mark or end)
        if self._mark:
            self._mark = end
        self.total_commands += calls
        self.executed = spec
        session.last_command = spec.name

    def _stat(self, spec: CommandSpec) -> CommandStats:
        st = self.stats.get(spec.name)
        if st is None:
            st = self.stats[spec.name] = CommandStats()
        return st

    def count_error(self, message: str) -> None:
        code = message.split(" ", 1)[0]
        self.errors[code] = self.errors.get(code, 0) + 1
        self.total_errors += 1

    def count_failed(self, name: str, message: str) -> None:
        """An error reply that ends the blocked command `name` (its call was counted when it
        blocked): a failed call of it, and an error in errorstats, as Redis counts it."""
        st = self.stats.get(name)
        if st is not None:
            st.failed += 1
        self.count_error(message)

    def reject(self, session: ClientSession, spec: CommandSpec | None, message: str) -> ReplyError:
        """A command refused before running (unknown, arity, auth, …); inside MULTI it also
        dooms the transaction."""
        if spec is not None:
            self._stat(spec).rejected += 1
        if session.multi is not None:
            session.multi_error = True
        if spec is not None and spec.name == "exec":
            # rejectCommand: a refused EXEC discards the transaction (open or not) and says why.
            session.discard_transaction()
            message = "EXECABORT Transaction discarded because of: " + message.removeprefix("ERR ")
        self.count_error(message)
        return ReplyError(message)

    def execute(self, session: ClientSession, argv: list[bytes], role: str, from_master: bool = False) -> Any:
        """Run argv for session; returns the reply value or a Block."""
        self.total_commands += 1
        plain = self._plain.get(argv[0])
        if plain is not None:
            spec, st, low, high, unit, gated = plain
            if (
                low <= len(argv) <= high
                and session.authenticated
                and (session.user.unrestricted or session.user.permits(spec, argv))
                and session.multi is None
                and session.subscriptions is None
                and (not gated or (self.writes_unchecked and role == "master"))
            ):
                return self._run(session, spec, st, argv, unit)
        return self._execute_checked(session, argv, role, from_master)

    def _checked_spec(self, argv: list[bytes]) -> tuple[CommandSpec | None, str | None]:
        """The spec that runs argv, and the error it is refused with before anything else is
        checked (unknown command or subcommand, wrong arity), if any."""
        spec = self.resolve(argv)
        if spec is None:
            return None, unknown_command_text(argv)
        if spec.subcommands:
            # A container with a handler of its own (COMMAND) also runs without a subcommand.
            if len(argv) < 2 and spec.handler is None:
                return spec, f"ERR wrong number of arguments for '{spec.name}' command"
            sub = spec.subcommands.get(argv[1].decode("utf-8", "replace").lower()) if len(argv) > 1 else None
            if sub is None:
                if spec.handler is None:
                    return spec, "ERR unknown subcommand '%s'. Try %s HELP." % (
                        _printable(argv[1])[:128], spec.name.upper()
                    )
            else:
                spec = sub
        if not spec.arity_ok(len(argv)):
            return spec, f"ERR wrong number of arguments for '{spec.name}' command"
        return spec, None

    def refusal(self, argv: list[bytes], in_multi: bool) -> str | None:
        """For a command read from a log, before anything of its batch runs: the error
        `execute` would refuse it with whatever the data (unknown command or subcommand,
        wrong arity, not allowed inside MULTI), counted as a rejected call; None if none."""
        spec, error = self._checked_spec(argv)
        if error is None and spec is not None and in_multi and "no_multi" in spec.flags:
            if argv[0].lower() not in _MULTI_IMMEDIATE:
                error = "ERR Command not allowed inside a transaction"
        if error is not None:
            if spec is not None:
                self._stat(spec).rejected += 1
            self.count_error(error)
        return error

    def _execute_checked(self, session: ClientSession, argv: list[bytes], role: str, from_master: bool) -> Any:
        spec, error = self._checked_spec(argv)
        if error is not None:
            return self.reject(session, spec, error)
        assert spec is not None
        flags = spec.flags
        if not session.authenticated and "no_auth" not in flags and session.core.acl.auth_required():
            return self.reject(session, spec, "NOAUTH Authentication required.")
        if session.multi is not None and "no_multi" in flags and argv[0].lower() not in _MULTI_IMMEDIATE:
            return self.reject(session, spec, "ERR Command not allowed inside a transaction")
        if not session.user.unrestricted:
            if session.in_exec:
                denial = check_queued_command(session, spec, argv)
                if denial is not None:
                    self.count_error(denial)
                    return ReplyError(denial)
            else:
                denial = check_command(session, spec, argv)
                if denial is not None:
                    return self.reject(session, spec, denial)
        if self._memory_full is not None and role == "master" and self._refuses_for_memory(session, spec):
            return self.reject(session, spec, OOM_ERROR)
        gates = self._gates
        write_denial = gates.denial
        if (
            write_denial is not None
            and role == "master"
            and ("write" in flags or spec.name == "ping" or (spec.name == "exec" and _queues_write(session)))
            and "replay" not in session.flags
        ):
            return self.reject(session, spec, write_denial)
        quorum = gates.quorum
        if (
            quorum is not None
            and role == "master"
            and ("write" in flags or (spec.name == "exec" and _queues_write(session)))
            and "replay" not in session.flags
        ):
            denial = quorum()  # min-replicas-to-write: checkGoodReplicasStatus
            if denial is not None:
                return self.reject(session, spec, denial)
        # processCommand refuses writes on a replica before queueing them, so MULTI on a
        # replica dooms the transaction instead of queueing a write that cannot run.
        if role == "slave" and not from_master and "write" in flags:
            return self.reject(session, spec, "READONLY You can't write against a read only replica.")
        if (
            session.subscriptions is not None
            and session.proto == 2
            and not session.in_exec
            and spec.name not in _PUBSUB_CONTEXT
        ):
            # Under RESP2 a subscribed connection only (un)subscribes (RESP3 has no limit);
            # commands queued before it subscribed still run inside EXEC.
            return self.reject(session, spec, (
                "ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET "
                "are allowed in this context" % spec.name
            ))
        if self._pause and not from_master and not session.in_exec and "replay" not in session.flags and (
            self._pause == ALL or _may_replicate(spec, session)
        ):
            # Paused (CLIENT PAUSE, FAILOVER): the client waits and the command runs again,
            # every check included, once the pause lets it. A transaction already running
            # ends first (a pause starts at the end of the EXEC that set it). CLIENT LIST
            # names the command, as Redis's lookup sets it before the pause check.
            session.last_command = spec.name
            return Block([], 0, _never_ready, postponed=argv)
        if session.multi is not None and argv[0].lower() not in _MULTI_IMMEDIATE:
            session.multi.append(argv)
            return QUEUED
        return self.call(session, spec, argv)

    def _refuses_for_memory(self, session: ClientSession, spec: CommandSpec) -> bool:
        """processCommand's maxmemory rule (noeviction): over maxmemory, commands that may
        add memory (denyoom; EXEC when it queued one) are refused, and in MULTI every
        command but EXEC, DISCARD, QUIT and RESET (queueing takes memory too); the
        replication link and log replays never (a replica never refuses its primary)."""
        flags = spec.flags
        if "denyoom" in flags or (spec.name == "exec" and _queues_denyoom(self, session)):
            pass
        elif session.multi is None or spec.name in _OOM_IN_MULTI or "no_multi" in flags:
            # "no_multi" commands inside MULTI get their own refusal first (processCommand).
            return False
        if "master" in session.flags or "replay" in session.flags:
            return False
        full = self._memory_full
        return full is not None and full()

    def call(self, session: ClientSession, spec: CommandSpec, argv: list[bytes]) -> Any:
        st = self._stat(spec)
        unit = spec.is_write or spec.name == "exec"
        # Only top-level commands: argv[0] of a subcommand names its container.
        if (spec.handler is not None and not spec.subcommands and "|" not in spec.name and len(self._plain) < 4096
                and self._pause != ALL):
            arity = spec.arity
            # Writes, and PING (refused on a persistence error, as in Redis), pass the write
            # rules when any of them applies.
            gated = spec.is_write or spec.name == "ping"
            self._plain[argv[0]] = (spec, st, abs(arity), arity if arity > 0 else 1 << 30, unit, gated)
        return self._run(session, spec, st, argv, unit)

    def _run(self, session: ClientSession, spec: CommandSpec, st: CommandStats, argv: list[bytes], unit: bool) -> Any:
        if not session.in_exec:  # inside EXEC, CLIENT LIST and the ACL log say cmd=exec, as Redis
            session.last_command = spec.name
        handler = spec.handler
        assert handler is not None
        mark = self._mark
        start = mark if mark else time.perf_counter_ns()
        # With volatile keys in the client's database, the keys the command names are expired
        # first (node.commands.expiry); for a write, the DELs that logs are in its unit. Only a
        # node's client (a Session) has keys: a server without data has an empty database.
        volatile = len(session.expires.deadlines) != 0
        hidden: Hidden | None = None
        meter = self.meter if unit else None
        before = 0
        if meter is not None:
            # The dataset estimate follows the write: the keys it names, before and after.
            meter.dataset(self._effects.offset)
            before = meter.measure(session.db, session.expires.deadlines, command_keys(spec, argv))
            before_db = session.db
        if unit:
            self._effects.begin()
        try:
            if volatile and isinstance(session, Session):
                hidden = expire_command_keys(session, spec, argv)
            reply = handler(session, argv)
        except CommandError as exc:
            reply = ReplyError(exc.message)  # counted as failed below, once
        except (TypeError, AttributeError, UnicodeError):
            if not all(type(a) is bytes for a in argv):
                # An element that was not a bulk string reached the handler.
                raise ProtocolViolation("Protocol error: expected '$', got something else") from None
            raise
        finally:
            if hidden is not None:
                restore_hidden(hidden)
            if unit:
                self._effects.end()
            if meter is not None:
                if spec.name in _UNMEASURED_WRITES or meter.seen < 0 or session.db is not before_db:
                    meter.seen = -1  # counted again at the next reading
                else:
                    after = meter.measure(session.db, session.expires.deadlines, command_keys(spec, argv))
                    meter.total += after - before
                    meter.seen = self._effects.offset
        if type(reply) is Block:
            if isinstance(session, Session):
                expire_before_retry(reply)
            if not session.user.unrestricted:
                reply.retry = _PermittedRetry(spec, argv, reply.retry)
        end = time.perf_counter_ns()
        if mark:
            self._mark = end
        st.calls += 1
        st.nsec += end - start  # for EXEC, the queued commands' time included
        self.executed = spec
        if type(reply) is ReplyError:
            st.failed += 1
            self.count_error(reply.message)
        return reply


class ProtocolViolation(Exception):
    """The request itself broke the protocol: reply with the error and close."""


def _queues_denyoom(dispatcher: Dispatcher, session: ClientSession) -> bool:
    """EXEC counts as denyoom when a queued command is (Redis's mstate.cmd_flags)."""
    for argv in session.multi or ():
        spec = dispatcher.resolve(argv)
        if spec is not None and "denyoom" in spec.flags:
            return True
    return False


def _queues_write(session: ClientSession) -> bool:
    """EXEC counts as a write when a queued command is one."""
    return queues_write(session.multi or ())


def _may_replicate(spec: CommandSpec, session: ClientSession) -> bool:
    """What a WRITE pause postpones (processCommand's is_may_replicate_command): a command
    that may write or be propagated, EXEC of a transaction holding one."""
    if spec.is_write or "may_replicate" in spec.flags:
        return True
    if spec.name == "exec":
        for argv in session.multi or ():
            queued = lookup(argv)
            if queued is not None and (queued.is_write or "may_replicate" in queued.flags):
                return True
    return False


class _PermittedRetry:
    """A blocked command of a restricted user, checked again before each retry (Redis 7.2
    reprocesses a woken command through processCommand): rules changed meanwhile end the
    wait with the NOPERM error."""

    __slots__ = ("spec", "argv", "retry")

    def __init__(self, spec: CommandSpec, argv: list[bytes], retry: Callable[[ClientSession], Any]) -> None:
        self.spec = spec
        self.argv = argv
        self.retry = retry

    def __call__(self, session: ClientSession) -> Any:
        denial = check_command(session, self.spec, self.argv)
        if denial is not None:
            raise CommandError(denial)
        return self.retry(session)


def _never_ready(session: ClientSession) -> None:
    return None


def _printable(arg: bytes) -> str:
    return arg.decode("utf-8", "replace")


def unknown_command_text(argv: list[bytes]) -> str:
    # server.c: args are quoted one by one until 128 characters are used.
    args = ""
    for arg in argv[1:]:
        if len(args) >= 128:
            break
        args += "'%s' " % _printable(arg)[: 128 - len(args)]
    return "ERR unknown command '%s', with args beginning with: %s" % (_printable(argv[0])[:128], args)
