"""Background saves in a forked child: BGSAVE and the AOF rewrite write their snapshot from
the child's copy-on-write image of the keyspace while the parent keeps serving clients.

Why fork rather than a thread over a copy: the child sees the keyspace exactly as it was at
the fork, with no copy made on the event loop (copying a large PEL or many streams would
stop clients for as long), and it serializes on the other core instead of competing with
the event loop for the GIL. Python's reference counting makes the child touch (and so copy)
the pages of the objects it reads; that costs the child memory, never the parent time.

The child runs nothing but the job: signal handlers back to default, every inherited file
descriptor closed (listening sockets included, so a restarted node can bind while an
orphaned child finishes), the cyclic GC off, and on Linux it dies with its parent. It
reports failure through a pipe and its exit status.
"""

from __future__ import annotations

import ctypes
import gc
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from node.persistence.files import remove_quietly

_PR_SET_PDEATHSIG: Final = 1


@dataclass(slots=True)
class ChildJob:
    kind: str  # "rdb" (BGSAVE) or "aof" (rewrite)
    pid: int
    error_fd: int
    temp_path: str
    started: float = field(default_factory=time.monotonic)
    on_done: Callable[[bool, str], None] | None = None


def fork_job(kind: str, temp_path: str, work: Callable[[], object]) -> ChildJob:
    """Fork a child that runs `work` and exits (0 on success). Raises OSError if the fork
    fails."""
    read_fd, write_fd = os.pipe()
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        raise
    if pid == 0:  # pragma: no cover - the child; its result is checked by the parent
        _run_child(parent, write_fd, work)
    os.close(write_fd)
    os.set_blocking(read_fd, False)
    return ChildJob(kind, pid, read_fd, temp_path)


def _run_child(parent: int, write_fd: int, work: Callable[[], object]) -> None:
    status = 1
    try:
        gc.disable()
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        _die_with_parent(parent)
        os.closerange(3, write_fd)
        os.closerange(write_fd + 1, _max_fd())
        work()
        status = 0
    except BaseException as exc:  # noqa: B036 - the child must always reach os._exit
        try:
            os.write(write_fd, f"{type(exc).__name__}: {exc}".encode()[:4000])
        except BaseException:  # noqa: B036
            pass
    finally:
        os._exit(status)


def _die_with_parent(parent: int) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _max_fd() -> int:
    try:
        return int(os.sysconf("SC_OPEN_MAX"))
    except (OSError, ValueError):
        return 65536


def poll_job(job: ChildJob) -> tuple[bool, str] | None:
    """None while the child runs; then (success, error text)."""
    try:
        pid, status = os.waitpid(job.pid, os.WNOHANG)
    except ChildProcessError:
        pid, status = job.pid, 1 << 8
    if pid == 0:
        return None
    return _result(job, status)


def kill_job(job: ChildJob) -> None:
    try:
        os.kill(job.pid, signal.SIGKILL)
        os.waitpid(job.pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
    os.close(job.error_fd)


def _result(job: ChildJob, status: int) -> tuple[bool, str]:
    try:
        message = os.read(job.error_fd, 4096).decode("utf-8", "replace")
    except OSError:
        message = ""
    os.close(job.error_fd)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        return True, ""
    if os.WIFSIGNALED(status):
        return False, message or f"killed by signal {os.WTERMSIG(status)}"
    return False, message or f"exited with status {os.WEXITSTATUS(status)}"


class ChildSlot:
    """The one background child the node runs at a time (a BGSAVE or an AOF rewrite: Redis
    allows one fork at a time too)."""

    __slots__ = ("job",)

    def __init__(self) -> None:
        self.job: ChildJob | None = None

    def running(self, kind: str | None = None) -> bool:
        """Whether a child runs (of `kind`, when given)."""
        return self.job is not None and (kind is None or self.job.kind == kind)

    def abandon(self) -> None:
        """Kills the child and removes its temporary file (its work is not needed)."""
        job, self.job = self.job, None
        if job is not None:
            kill_job(job)
            remove_quietly(job.temp_path)

    def poll(self) -> None:
        """Reaps a finished child and calls its `on_done(ok, message)`."""
        job = self.job
        if job is None:
            return
        result = poll_job(job)
        if result is not None:
            self.job = None
            if job.on_done is not None:
                job.on_done(*result)
