"""The RDB file: SAVE (on the event loop), BGSAVE (in a forked child, node/persistence/
background.py), the `save` points that trigger one, and the status behind LASTSAVE, INFO and
MISCONF (stop-writes-on-bgsave-error). Replies and error texts are Redis 7.2's (rdb.c).
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from node.commands.reply import CommandError
from node.persistence.background import ChildSlot, fork_job
from node.persistence.files import remove_quietly, replace_durably
from node.persistence.snapshot import SnapshotMeta, write_snapshot

if TYPE_CHECKING:
    from node.server.server import Server

log = logging.getLogger("rill.persistence")

# Redis CONFIG_BGSAVE_RETRY_DELAY: a failed periodic save is retried after this long.
_BGSAVE_RETRY_DELAY: Final = 5
# shared.bgsaveerr (server.c), without the leading '-'.
_BGSAVE_ERR: Final = (
    "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. "
    "Commands that may modify the data set are disabled, because this instance is configured to report "
    "errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check "
    "the Redis logs for details about the RDB error."
)


class Snapshots:
    """The RDB file of one node (`Persistence.snapshots`)."""

    def __init__(
        self, server: Server, child: ChildSlot, meta: Callable[[], SnapshotMeta], status_changed: Callable[[], None]
    ) -> None:
        self.server = server
        self.config = server.config
        self.child = child
        self._meta = meta  # the replication position a snapshot records
        self._status_changed = status_changed  # the MISCONF text may have changed
        self.save_points = parse_save(self.config.get("save"))
        self.bgsave_ok = True
        self.last_bgsave_try = 0.0
        self.last_bgsave_seconds = -1
        self.rdb_saves = 0
        self.bgsave_scheduled = False
        self.lastsave = int(time.time())  # unix time of the last successful save (LASTSAVE)
        # The server's write count (node/server/server.py) when the data set was last saved or
        # loaded: Redis's server.dirty is the count less this, and only this module moves it.
        self._writes_at_save = 0
        self.config.on_change(self._on_config_change)

    def changes_since_save(self) -> int:
        """Writes since the last save (Redis's server.dirty: INFO rdb_changes_since_last_save,
        the save points)."""
        return self.server.writes - self._writes_at_save

    def saved_now(self) -> None:
        """The data set as it is now is on disk (a save, or the load at start-up)."""
        self._writes_at_save = self.server.writes

    def path(self) -> str:
        return os.path.join(self.config.get("dir"), self.config.get("dbfilename"))

    def refusal(self) -> str | None:
        """The MISCONF text writes get while BGSAVE fails and save points are set."""
        return _BGSAVE_ERR if not self.bgsave_ok and self.save_points else None

    def save(self) -> None:
        """SAVE: a snapshot written on the event loop (clients wait, as in Redis)."""
        if self.child.running("rdb"):
            raise CommandError("ERR Background save already in progress")
        self.rdb_saves += 1
        if not self.save_now():
            raise CommandError("ERR")

    def save_now(self) -> bool:
        path = self.path()
        temp = os.path.join(self.config.get("dir"), f"temp-{os.getpid()}.rdb")
        try:
            write_snapshot(temp, self.server.keyspace, self._meta())
            replace_durably(temp, path)
        except OSError as exc:
            remove_quietly(temp)
            log.warning("Write error saving DB on disk: %s", exc.strerror or exc)
            return False
        self.saved_now()
        self.lastsave = int(time.time())
        self.bgsave_ok = True
        self._status_changed()
        log.info("DB saved on disk")
        return True

    def bgsave(self, schedule: bool, in_exec: bool) -> str:
        if self.child.running("rdb"):
            raise CommandError("ERR Background save already in progress")
        if self.child.running() or in_exec:
            if schedule or in_exec:
                self.bgsave_scheduled = True
                return "Background saving scheduled"
            raise CommandError(
                "ERR Another child process is active (AOF?): can't BGSAVE right now. "
                "Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible."
            )
        if not self.start_bgsave():
            raise CommandError("ERR")
        return "Background saving started"

    def start_bgsave(self) -> bool:
        self.last_bgsave_try = time.time()
        self.rdb_saves += 1
        temp = os.path.join(self.config.get("dir"), f"temp-bgsave-{os.getpid()}.rdb")
        keyspace = self.server.keyspace
        meta = self._meta()
        try:
            job = fork_job("rdb", temp, lambda: write_snapshot(temp, keyspace, meta))
        except OSError as exc:
            log.warning("Can't save in background: fork: %s", exc.strerror)
            self._bgsave_finished(False, time.monotonic())
            return False
        job.on_done = functools.partial(self._bgsave_done, temp, self.server.writes, job.started)
        self.child.job = job
        log.info("Background saving started by pid %d", job.pid)
        return True

    def _bgsave_done(self, temp: str, writes_at_fork: int, started: float, ok: bool, message: str) -> None:
        if ok:
            try:
                replace_durably(temp, self.path())
            except OSError as exc:
                ok, message = False, f"rename: {exc.strerror}"
        if ok:
            # What was written after the fork is not in the file.
            self._writes_at_save = max(self._writes_at_save, writes_at_fork)
            self.lastsave = int(time.time())
            log.info("Background saving terminated with success")
        else:
            remove_quietly(temp)
            log.warning("Background saving error: %s", message)
        self._bgsave_finished(ok, started)

    def _bgsave_finished(self, ok: bool, started: float) -> None:
        self.bgsave_ok = ok
        self.last_bgsave_seconds = int(time.monotonic() - started)
        self._status_changed()

    def save_point_reached(self) -> bool:
        if not self.save_points:
            return False
        now = time.time()
        if not self.bgsave_ok and now - self.last_bgsave_try < _BGSAVE_RETRY_DELAY:
            return False
        dirty = self.changes_since_save()
        since = now - self.lastsave
        for seconds, changes in self.save_points:
            if dirty >= changes and since > seconds:
                log.info("%d changes in %d seconds. Saving...", changes, seconds)
                return True
        return False

    def _on_config_change(self, name: str, value: str) -> None:
        if name == "save":
            self.save_points = parse_save(value)
            self._status_changed()


def parse_save(value: str) -> list[tuple[int, int]]:
    words = value.split()
    return [(int(words[i]), int(words[i + 1])) for i in range(0, len(words) - 1, 2)]
