"""The disk nemesis: a FUSE passthrough filesystem (mfusepy over libfuse3) that each node's
`dir` is mounted on, so the lab decides what a node's disk keeps.

- **Power loss**: what was written but not fsynced is lost. Writes go through to the backing
  directory at once (reads see them, as with a page cache); per file the filesystem remembers how
  long it was at its last fsync and what each write since then overwrote below that length. On
  power loss every file goes back to that: truncated to its synced length, overwritten bytes put
  back. Metadata (create, rename, unlink, mkdir) counts as durable at once, which is what a
  journalling filesystem gives a program that fsyncs a file before renaming it (Rill's
  `rill-fence.json`, the AOF manifest). A file created and never fsynced comes back empty.
- **Full disk**: writes (and creates) fail with ENOSPC. **EIO**: writes, fsyncs and reads fail
  with EIO. Both until the lab says `ok` again.

fsync itself returns at once (nothing is really flushed: the power loss is simulated), so
`appendfsync always` costs a FUSE round trip, not a disk flush.

Run as its own process, `python -m chaos.diskfs BACKING MOUNTPOINT CONTROL`, in the foreground,
single-threaded. The lab drives it through CONTROL, a JSON file it rewrites (`{"mode": "ok" |
"full" | "eio", "power_loss": n}`), polled every 20 ms; when `power_loss` grows, the files are
put back and `CONTROL.ack` is written with the new count (`DiskControl` below does all this).
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

ACK_TIMEOUT = 10.0


@dataclass
class Unsynced:
    """A file written since its last fsync: its length then, and what the writes since
    overwrote below that length (offset, bytes), oldest first."""

    synced_size: int
    overwritten: list[tuple[int, bytes]] = field(default_factory=list)


class Durability:
    """The bookkeeping of what a power loss takes back (pure, on real files: testable without
    FUSE)."""

    def __init__(self) -> None:
        self.unsynced: dict[str, Unsynced] = {}
        self.lock = threading.Lock()

    def before_write(self, path: str, fd: int, offset: int, length: int) -> None:
        with self.lock:
            state = self.unsynced.get(path)
            if state is None:
                state = self.unsynced[path] = Unsynced(os.fstat(fd).st_size)
            if offset < state.synced_size:
                end = min(offset + length, state.synced_size)
                state.overwritten.append((offset, os.pread(fd, end - offset, offset)))

    def before_truncate(self, path: str, length: int) -> None:
        with self.lock:
            state = self.unsynced.get(path)
            size = os.stat(path).st_size
            if state is None:
                state = self.unsynced[path] = Unsynced(size)
            if length < state.synced_size:
                with open(path, "rb") as f:
                    f.seek(length)
                    state.overwritten.append((length, f.read(state.synced_size - length)))

    def created(self, path: str) -> None:
        with self.lock:
            self.unsynced[path] = Unsynced(0)

    def synced(self, path: str) -> None:
        with self.lock:
            self.unsynced.pop(path, None)

    def renamed(self, old: str, new: str) -> None:
        with self.lock:
            state = self.unsynced.pop(old, None)
            self.unsynced.pop(new, None)
            if state is not None:
                self.unsynced[new] = state

    def removed(self, path: str) -> None:
        with self.lock:
            self.unsynced.pop(path, None)

    def power_loss(self) -> int:
        """Puts every unsynced file back as it was at its last fsync; returns how many bytes
        that dropped or restored."""
        undone = 0
        with self.lock:
            for path, state in self.unsynced.items():
                if not os.path.exists(path):
                    continue
                with open(path, "r+b") as f:
                    size = os.fstat(f.fileno()).st_size
                    undone += max(0, size - state.synced_size)
                    f.truncate(state.synced_size)
                    for offset, data in reversed(state.overwritten):
                        f.seek(offset)
                        f.write(data)
                        undone += len(data)
            self.unsynced.clear()
        return undone


def _operations(backing: str, durability: Durability, mode: list[str]) -> Any:
    import mfusepy  # type: ignore[import-untyped]

    def real(path: str) -> str:
        return os.path.join(backing, path.lstrip("/"))

    def refuse(*kinds: str) -> None:
        if mode[0] == "eio" and "eio" in kinds:
            raise mfusepy.FuseOSError(errno.EIO)
        if mode[0] == "full" and "full" in kinds:
            raise mfusepy.FuseOSError(errno.ENOSPC)

    class Passthrough(mfusepy.Operations):  # type: ignore[misc]
        use_ns = True

        def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
            st = os.lstat(real(path))
            attrs = {key: getattr(st, key) for key in ("st_gid", "st_mode", "st_nlink", "st_size", "st_uid")}
            attrs.update(st_atime=st.st_atime_ns, st_mtime=st.st_mtime_ns, st_ctime=st.st_ctime_ns)
            return attrs

        def readdir(self, path: str, fh: int) -> list[str]:
            return [".", "..", *os.listdir(real(path))]

        def access(self, path: str, amode: int) -> int:
            if not os.access(real(path), amode):
                raise mfusepy.FuseOSError(errno.EACCES)
            return 0

        def chmod(self, path: str, mode_bits: int) -> int:
            os.chmod(real(path), mode_bits)
            return 0

        def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
            if times is None:
                os.utime(real(path))
            else:
                os.utime(real(path), ns=times)
            return 0

        def mkdir(self, path: str, mode_bits: int) -> int:
            refuse("eio", "full")
            os.mkdir(real(path), mode_bits)
            return 0

        def rmdir(self, path: str) -> int:
            os.rmdir(real(path))
            return 0

        def unlink(self, path: str) -> int:
            os.unlink(real(path))
            durability.removed(real(path))
            return 0

        def rename(self, old: str, new: str) -> int:
            refuse("eio")
            os.rename(real(old), real(new))
            durability.renamed(real(old), real(new))
            return 0

        def statfs(self, path: str) -> dict[str, int]:
            st = os.statvfs(real(path))
            return {key: getattr(st, key) for key in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail",
                                                      "f_ffree", "f_files", "f_flag", "f_frsize", "f_namemax")}

        def open(self, path: str, flags: int) -> int:
            return os.open(real(path), flags & ~os.O_CREAT)

        def create(self, path: str, mode_bits: int, fi: Any = None) -> int:
            refuse("eio", "full")
            fd = os.open(real(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode_bits)
            durability.created(real(path))
            return fd

        def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
            refuse("eio")
            return os.pread(fh, size, offset)

        def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
            refuse("eio", "full")
            durability.before_write(real(path), fh, offset, len(data))
            return os.pwrite(fh, data, offset)

        def truncate(self, path: str, length: int, fh: int | None = None) -> int:
            refuse("eio")
            durability.before_truncate(real(path), length)
            os.truncate(real(path), length)
            return 0

        def fsync(self, path: str, datasync: int, fh: int) -> int:
            refuse("eio")
            durability.synced(real(path))
            return 0

        def fsyncdir(self, path: str, datasync: int, fh: int) -> int:
            refuse("eio")
            return 0

        def flush(self, path: str, fh: int) -> int:
            return 0

        def release(self, path: str, fh: int) -> int:
            os.close(fh)
            return 0

    return Passthrough()


def serve(backing: str, mountpoint: str, control: str) -> None:
    import mfusepy

    durability = Durability()
    mode = ["ok"]
    seen = {"power_loss": 0}

    def watch() -> None:
        last = None
        while True:
            try:
                stamp = os.stat(control).st_mtime_ns
                if stamp != last:
                    last = stamp
                    with open(control, encoding="utf-8") as f:
                        wanted = json.load(f)
                    mode[0] = str(wanted.get("mode", "ok"))
                    if int(wanted.get("power_loss", 0)) > seen["power_loss"]:
                        seen["power_loss"] = int(wanted["power_loss"])
                        undone = durability.power_loss()
                        with open(control + ".tmp", "w", encoding="utf-8") as f:
                            json.dump({"power_loss": seen["power_loss"], "undone_bytes": undone}, f)
                        os.replace(control + ".tmp", control + ".ack")
            except (OSError, ValueError):
                pass
            time.sleep(0.02)

    threading.Thread(target=watch, daemon=True).start()
    mfusepy.FUSE(_operations(backing, durability, mode), mountpoint, foreground=True, nothreads=True)


class DiskControl:
    """The lab's handle on one node's filesystem: starts the FUSE process, changes its mode,
    cuts its power, unmounts it."""

    def __init__(self, backing: str, mountpoint: str, log: str) -> None:
        self.backing, self.mountpoint = backing, mountpoint
        self.control = mountpoint.rstrip("/") + ".control"
        self.power_losses = 0
        self.mode = "ok"
        os.makedirs(backing, exist_ok=True)
        os.makedirs(mountpoint, exist_ok=True)
        self._write()
        with open(log, "ab") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "chaos.diskfs", backing, mountpoint, self.control],
                                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        deadline = time.monotonic() + 15.0
        while not os.path.ismount(mountpoint):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the disk nemesis could not mount {mountpoint} (see {log})")
            time.sleep(0.05)

    def _write(self) -> None:
        tmp = self.control + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"mode": self.mode, "power_loss": self.power_losses}, f)
        os.replace(tmp, self.control)

    def set_mode(self, mode: str) -> None:
        """"ok", "full" (ENOSPC) or "eio"."""
        self.mode = mode
        self._write()

    def power_loss(self) -> int:
        """Drops what was not fsynced (the node must be dead: SIGKILLed first); returns the
        bytes undone."""
        self.power_losses += 1
        self._write()
        deadline = time.monotonic() + ACK_TIMEOUT
        while time.monotonic() < deadline:
            try:
                with open(self.control + ".ack", encoding="utf-8") as f:
                    ack = json.load(f)
                if int(ack["power_loss"]) >= self.power_losses:
                    return int(ack["undone_bytes"])
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.02)
        raise RuntimeError(f"the disk nemesis of {self.mountpoint} did not acknowledge the power loss")

    def close(self) -> None:
        subprocess.run(["fusermount3", "-u", "-z", self.mountpoint], capture_output=True, check=False)
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        print("usage: python -m chaos.diskfs BACKING MOUNTPOINT CONTROL", file=sys.stderr)
        return 2
    serve(*args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
