"""The disk nemesis on a real FUSE mount: a power loss keeps exactly what was fsynced (synced
bytes, overwrites of them undone, renames of synced files), and full disk and EIO fail the
calls they should until the lab says ok."""

from __future__ import annotations

import os
import time

import pytest

from chaos.diskfs import DiskControl


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


@pytest.fixture
def disk(tmp_path: object):  # type: ignore[no-untyped-def]
    base = str(tmp_path)
    control = DiskControl(os.path.join(base, "backing"), os.path.join(base, "mnt"), os.path.join(base, "fs.log"))
    yield control
    control.close()
    assert not os.path.ismount(control.mountpoint)


def test_a_power_loss_keeps_what_was_fsynced(disk: DiskControl) -> None:
    mnt = disk.mountpoint
    aof = os.path.join(mnt, "aof")
    with open(aof, "wb") as f:
        f.write(b"synced|")
        f.flush()
        os.fsync(f.fileno())
        f.write(b"written, not synced")
        f.flush()
    fd = os.open(aof, os.O_RDWR)
    os.pwrite(fd, b"XX", 0)  # an overwrite of synced bytes
    os.close(fd)
    with open(os.path.join(mnt, "fence.tmp"), "w") as f:  # the temp-file, fsync, rename dance
        f.write("{epoch: 3}")
        f.flush()
        os.fsync(f.fileno())
    os.rename(os.path.join(mnt, "fence.tmp"), os.path.join(mnt, "fence.json"))
    with open(os.path.join(mnt, "never-synced"), "w") as f:
        f.write("gone")
    assert _read(aof) == b"XXnced|written, not synced"

    assert disk.power_loss() == len(b"written, not synced") + 2 + len(b"gone")
    assert _read(aof) == b"synced|"
    assert _read(os.path.join(mnt, "fence.json")) == b"{epoch: 3}"
    assert _read(os.path.join(mnt, "never-synced")) == b""
    assert disk.power_loss() == 0  # nothing unsynced left


def test_full_disk_and_eio_until_ok(disk: DiskControl) -> None:
    path = os.path.join(disk.mountpoint, "f")
    with open(path, "wb") as f:
        f.write(b"data")
    disk.set_mode("full")
    time.sleep(0.2)  # the filesystem polls its control file every 20 ms
    with pytest.raises(OSError) as full, open(path, "ab") as f:
        f.write(b"more")
        f.flush()
    assert full.value.errno == 28  # ENOSPC
    disk.set_mode("eio")
    time.sleep(0.2)
    with pytest.raises(OSError) as eio:
        _read(path)
    assert eio.value.errno == 5  # EIO
    disk.set_mode("ok")
    time.sleep(0.2)
    assert _read(path) == b"data"
