"""The clock nemesis' control side: each node and sentinel runs with `clock_shim.c` preloaded
(`make chaos-deps` builds it next to the venv's Python as `rill-chaos-clock.so`), which makes the
process's wall clock (CLOCK_REALTIME, gettimeofday, time) follow its own control file. The lab
steps that clock forward or back and changes its rate at run time, per process.

The control file is `struct control` of the shim: seq (u64, a seqlock: odd while written),
base_real (i64 ns), base_fake (i64 ns), rate (f64); fake = base_fake + (real - base_real) * rate.
Rewritten in place (the processes map it shared), under the seqlock.

Only wall clocks move (the shim explains why): a step of 0.2-1.9 s stays under Sentinel's TILT
threshold (2 s) and is what NTP, `date -s` or a VM resync does to a running machine.
"""

from __future__ import annotations

import mmap
import os
import shutil
import struct
import sys
import threading
import time

LAYOUT = struct.Struct("=Qqqd")  # seq, base_real, base_fake, rate
SHIM_NAME = "rill-chaos-clock.so"
ENV = "RILL_CHAOS_CLOCK"


def shim_path() -> str | None:
    """The built shim: $RILL_CHAOS_CLOCK_SHIM, else next to this Python (the venv), else None."""
    for path in (os.environ.get("RILL_CHAOS_CLOCK_SHIM", ""), os.path.join(os.path.dirname(sys.executable), SHIM_NAME)):
        if path and os.path.exists(path):
            return path
    return None


def build_shim(out: str) -> str:
    """Compiles clock_shim.c to `out` (what `make chaos-deps` runs)."""
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "clock_shim.c")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise RuntimeError("no C compiler to build the clock shim")
    import subprocess

    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", "-o", out, source, "-ldl"],
                   check=True)
    return out


class Clock:
    """One process's wall clock, as the lab controls it."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        with open(path, "wb") as f:
            f.write(LAYOUT.pack(0, 0, 0, 1.0))  # seq 0: never set, the real clock
        self._file = open(path, "r+b")  # noqa: SIM115 (closed in close())
        self._map = mmap.mmap(self._file.fileno(), LAYOUT.size)
        self.offset_s = 0.0  # what the lab moved it by so far, at the moment of the last change
        self.rate = 1.0

    def env(self, shim: str) -> dict[str, str]:
        """What a process started with this clock needs in its environment."""
        preload = " ".join(p for p in (shim, os.environ.get("LD_PRELOAD", "")) if p)
        return {"LD_PRELOAD": preload, ENV: self.path}

    def _read(self) -> tuple[int, int, int, float]:
        seq, base_real, base_fake, rate = LAYOUT.unpack_from(self._map, 0)
        return int(seq), int(base_real), int(base_fake), float(rate)

    def fake_now_ns(self, real_ns: int | None = None) -> int:
        real = time.clock_gettime_ns(time.CLOCK_REALTIME) if real_ns is None else real_ns
        seq, base_real, base_fake, rate = self._read()
        return real if seq == 0 else base_fake + int((real - base_real) * rate)

    def _write(self, base_real: int, base_fake: int, rate: float) -> None:
        seq = self._read()[0]
        struct.pack_into("=Q", self._map, 0, seq + 1)  # odd: readers wait
        struct.pack_into("=qqd", self._map, 8, base_real, base_fake, rate)
        struct.pack_into("=Q", self._map, 0, seq + 2)

    def step(self, seconds: float) -> None:
        """The wall clock jumps by `seconds` (negative: back), keeping its rate."""
        with self._lock:
            real = time.clock_gettime_ns(time.CLOCK_REALTIME)
            self._write(real, self.fake_now_ns(real) + int(seconds * 1e9), self.rate)
            self.offset_s = (self.fake_now_ns(real) - real) / 1e9

    def set_rate(self, rate: float) -> None:
        """From now on the wall clock runs at `rate` seconds per real second (no jump)."""
        with self._lock:
            real = time.clock_gettime_ns(time.CLOCK_REALTIME)
            self._write(real, self.fake_now_ns(real), rate)
            self.rate = rate
            self.offset_s = (self.fake_now_ns(real) - real) / 1e9

    def close(self) -> None:
        self._map.close()
        self._file.close()
