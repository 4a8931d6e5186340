"""Applying the log: the one path by which the node runs commands read from an effect log,
whether a replica's batch of its primary's log (`apply_batch`) or an AOF file being loaded
(`apply_block` and `apply_command`, driven by node/persistence/aof_reader.py).

Each command goes one of three ways, whatever its source:
* a block of XADDs in the log's form outside a MULTI: grouped by stream and appended in C
  from the bytes (`node.log.logged_xadd`);
* a single XADD in that form: straight to its stream (`append_logged_xadd`);
* anything else, and any XADD those refuse: through the server (`execute`), in a session
  flagged "replay" (the log-only forms), as a client's command would, so WATCH, blocked
  readers and INFO's statistics see it. While MONITOR clients are attached every command
  goes that way: only the dispatcher reports to them.
A command that fails is handed to the caller's `failed` (a replica stops, an AOF load counts
it and goes on).

A replica's batch may hold replication-only units (PUBLISH, SPUBLISH: always a unit of their
own); `replica_only` lists where they are in the batch, which the replica keeps out of its AOF.

A replica's batch is all-or-nothing as far as it can be checked without running it: every
command is found and checked first (whole units, known commands, their arity, as the
dispatcher would refuse them), and a batch that does not pass is refused with nothing
applied. A command that fails once applying began cannot come from a primary whose state
this replica shares (effects are deterministic): it proves the replica had diverged before the
batch, so restoring that state would not make it right. The replica stops there and the link
asks for a full sync, which replaces the whole state (docs/safety.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Protocol

import hiredis

from node.commands.context import Block, Session
from node.commands.reply import ReplyError
from node.engine.keyspace import Keyspace
from node.engine.logged_run import logged_xadd_block
from node.log.logged_xadd import append_logged_groups, append_logged_xadd, group_sizes
from node.log.scan import check_units, command_end

# Commands the log carries for replicas only (Redis propagates them to replicas, never to the
# AOF): PUBLISH, and the PING a primary with Redis replicas logs (node/replication/redis_primary.py).
_REPLICA_ONLY: Final = frozenset({b"publish", b"spublish", b"ping"})


class ApplyError(Exception):
    """A replica cannot apply its primary's batch: it is not a piece of the log, or one of
    its commands failed here (the replica diverged). The link then asks for a full sync."""


class LogDispatcher(Protocol):
    """What the applier asks of the server's dispatcher."""

    def refusal(self, argv: list[bytes], in_multi: bool) -> str | None: ...
    def count_direct(self, session: Session, name: bytes, calls: int) -> None: ...
    def batch_started(self) -> None: ...
    def batch_ended(self) -> None: ...


class CommandRunner(Protocol):
    """What the applier needs of the server: run a command as a client's, and the state that
    decides whether one may skip it."""

    keyspace: Keyspace

    @property
    def dispatcher(self) -> LogDispatcher: ...
    def execute(self, session: Session, argv: list[bytes]) -> Any: ...
    def monitored(self) -> bool: ...


# Called with a command that failed and its reply (the ReplyError, or the Block it would
# wait with): raises to stop applying, returns to go on.
FailurePolicy = Callable[[list[bytes], Any], None]


class _XaddBlock:
    """A planned block of logged XADDs: its groups by stream (see `logged_xadd_block`)."""

    __slots__ = ("groups",)

    def __init__(self, groups: list[tuple[bytes, bytes]]) -> None:
        self.groups = groups


class LogApplier:
    """Applies log commands to the node in one session (the replication link's client, or an
    AOF file's replay)."""

    def __init__(self, runner: CommandRunner, session: Session, failed: FailurePolicy) -> None:
        self.runner = runner
        self.session = session
        self._failed = failed
        # Fed one whole command at a time, so it holds nothing between them.
        self._reader = hiredis.Reader()
        # XADDs appended without the dispatcher and not yet counted in its statistics.
        self._appended = 0
        # (start, end) in the last batch of each replication-only unit (see the module doc).
        self.replica_only: list[tuple[int, int]] = []

    # -- a replica's batch ---------------------------------------------------------------

    def apply_batch(self, data: bytes) -> None:
        """Applies `data`, whole units of the log, after checking all of it; raises
        ApplyError (see the module's docstring for what is applied then)."""
        problem = check_units(data)
        if problem is not None:
            raise ApplyError(problem)
        runner = self.runner
        direct = not runner.monitored()
        steps = self._plan(data, direct)
        dispatcher = runner.dispatcher
        # Timed back to back, as a client's batch: one clock read per command.
        dispatcher.batch_started()
        try:
            for step in steps:
                if isinstance(step, _XaddBlock):
                    self._append_block(data, step.groups)
                else:
                    self._apply(step, direct)
            self._count_appended()
        except BaseException:
            self.session.multi = None  # a unit cut by the failure is never run
            raise
        finally:
            dispatcher.batch_ended()

    def _plan(self, data: bytes, direct: bool) -> list[_XaddBlock | list[bytes]]:
        """Every command of `data` (whole units), parsed or grouped into XADD blocks, each
        checked as the dispatcher checks a command before running it; ApplyError for the
        first one it would refuse."""
        steps: list[_XaddBlock | list[bytes]] = []
        dispatcher = self.runner.dispatcher
        reader = self._reader
        replica_only: list[tuple[int, int]] = []
        self.replica_only = replica_only
        in_multi = False
        pos = 0
        size = len(data)
        while pos < size:
            if direct and not in_multi:
                end, groups = logged_xadd_block(data, pos)
                if groups:
                    steps.append(_XaddBlock(groups))
                    pos = end
                    continue
            end = command_end(data, pos)
            reader.feed(data, pos, end - pos)
            argv: list[bytes] = reader.gets()
            why = dispatcher.refusal(argv, in_multi)
            if why is not None:
                raise ApplyError(_failure_text(argv, why))
            # check_units made sure MULTI and EXEC alternate.
            name = argv[0]
            if len(name) == 5 and name.lower() == b"multi":
                in_multi = True
            elif len(name) == 4 and name.lower() == b"exec":
                in_multi = False
            elif not in_multi and 4 <= len(name) <= 8 and name.lower() in _REPLICA_ONLY:
                replica_only.append((pos, end))
            steps.append(argv)
            pos = end
        return steps

    # -- an AOF file, command by command ---------------------------------------------------

    def apply_block(self, data: bytes, pos: int) -> tuple[int, int]:
        """Appends the block of logged XADDs at data[pos:], if any and outside a MULTI:
        returns where it ends and how many commands it held ((pos, 0): none)."""
        if self.session.multi is not None:
            return pos, 0
        end, groups = logged_xadd_block(data, pos)
        if not groups:
            return pos, 0
        self._append_block(data, groups)
        return end, group_sizes(groups)

    def apply_command(self, argv: list[bytes]) -> None:
        self._apply(argv, True)

    def finish(self) -> None:
        """The source ended: count what went without the dispatcher, and drop a MULTI left
        open (its commands were only queued, never run)."""
        self._count_appended()
        self.session.multi = None

    # -- one block, one command -----------------------------------------------------------

    def _append_block(self, data: bytes, groups: list[tuple[bytes, bytes]]) -> None:
        # Not `self._appended += ...`: the commands a run stops at change the count meanwhile.
        appended = append_logged_groups(self.session, data, groups, self._apply_at)
        self._appended += appended

    def _apply_at(self, data: bytes, pos: int) -> None:
        """The command at data[pos:] (one a C run stopped at), the ordinary way."""
        reader = self._reader
        reader.feed(data, pos, command_end(data, pos) - pos)
        self._apply(reader.gets(), True)

    def _apply(self, argv: list[bytes], direct: bool) -> None:
        session = self.session
        if direct and append_logged_xadd(session, argv):
            self._appended += 1
            return
        self._count_appended()
        runner = self.runner
        reply = runner.execute(session, argv)
        # SWAPDB swaps the dict objects and only refreshes registered clients.
        session.select(session.db_index)
        if type(reply) is ReplyError or type(reply) is Block:
            self._failed(argv, reply)

    def _count_appended(self) -> None:
        """The dispatcher's statistics for the XADDs appended directly since the last call."""
        if self._appended:
            self.runner.dispatcher.count_direct(self.session, b"xadd", self._appended)
            self._appended = 0


def _failure_text(argv: list[bytes], why: str) -> str:
    shown = b" ".join(argv[:4]).decode("utf-8", "replace")[:120]
    return f"'{shown}' from the primary failed here: {why}"


def replica_failure(argv: list[bytes], reply: Any) -> None:
    """A replica's policy: any failure stops the batch."""
    why = reply.message if isinstance(reply, ReplyError) else "it would block"
    raise ApplyError(_failure_text(argv, why))
