"""Durable file operations shared by the AOF, the manifest and snapshots: fsync of a
directory and the write-temp-then-rename replacement that never leaves a half-written file
under the final name."""

from __future__ import annotations

import os


def fsync_dir(path: str) -> None:
    """Make renames and creations inside `path` durable (POSIX: the directory entry lives in
    the directory, which needs its own fsync)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_durably(path: str, data: bytes) -> None:
    """Create or truncate `path`, write `data` and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_durably(temp_path: str, final_path: str) -> None:
    """Atomically move a complete, fsynced temp file over `final_path` and make the rename
    itself durable. A crash leaves either the old file or the new one, never a mix."""
    os.replace(temp_path, final_path)
    fsync_dir(os.path.dirname(os.path.abspath(final_path)))


def atomic_write(final_path: str, data: bytes, temp_path: str | None = None) -> None:
    """write_durably to a temp name in the same directory, then replace_durably."""
    temp = temp_path or os.path.join(
        os.path.dirname(os.path.abspath(final_path)), "temp-" + os.path.basename(final_path)
    )
    try:
        write_durably(temp, data)
        replace_durably(temp, final_path)
    except BaseException:
        remove_quietly(temp)
        raise


def remove_quietly(path: str) -> None:
    """Best-effort cleanup: a file that cannot be removed must not hide the error that made
    the caller clean up."""
    try:
        os.unlink(path)
    except OSError:
        pass
