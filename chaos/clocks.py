"""The clock nemesis' control side: each node and sentinel runs with `clock_shim.c` preloaded
(`make chaos-deps` builds it next to the venv's Python as `rill-chaos-clock.so`), which makes the
process's clocks follow its own control file. The lab changes them at run time, per process:
the wall clock (CLOCK_REALTIME, gettimeofday, time) steps forward or back and changes its rate;
the monotonic clocks (CLOCK_MONOTONIC, CLOCK_BOOTTIME: what durations are measured on) change
their rate only, continuously and never backwards (`set_drift`).

The control file is `struct control` of the shim: seq (u64, a seqlock: odd while written),
base_real, base_fake (i64 ns), rate (f64) for the wall clock, fake = base_fake + (real -
base_real) * rate; then mono_base_real, mono_base_fake, boot_base_real, boot_base_fake (i64 ns)
and mono_rate (f64) for CLOCK_MONOTONIC and CLOCK_BOOTTIME (mono_rate 0: never set, the real
clocks). Rewritten in place (the processes map it shared), under the seqlock.

A wall-clock step of 0.2-1.9 s stays under Sentinel's TILT threshold (2 s) and is what NTP,
`date -s` or a VM resync does to a running machine. The monotonic clocks are never stepped (the
kernel never steps them); their rate is what fenced mode's assumption 1 bounds (docs/safety.md).
"""

from __future__ import annotations

import mmap
import os
import shutil
import struct
import sys
import threading
import time

LAYOUT = struct.Struct("=Qqqdqqqqd")  # seq; wall: base_real, base_fake, rate; monotonic: see above
_BOOTTIME = getattr(time, "CLOCK_BOOTTIME", time.CLOCK_MONOTONIC)
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
    """One process's clocks, as the lab controls them."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        with open(path, "wb") as f:
            f.write(LAYOUT.pack(0, 0, 0, 0.0, 0, 0, 0, 0, 0.0))  # seq 0, rates 0: never set, the real clocks
        self._file = open(path, "r+b")  # noqa: SIM115 (closed in close())
        self._map = mmap.mmap(self._file.fileno(), LAYOUT.size)
        self.offset_s = 0.0  # what the lab moved the wall clock by so far, at the moment of the last change
        self.rate = 1.0
        self.drift = 1.0  # the monotonic clocks' rate
        self.drift_offset_s = 0.0  # how far the monotonic clock is ahead of the real one (behind: < 0)

    def env(self, shim: str) -> dict[str, str]:
        """What a process started with this clock needs in its environment."""
        preload = " ".join(p for p in (shim, os.environ.get("LD_PRELOAD", "")) if p)
        return {"LD_PRELOAD": preload, ENV: self.path}

    def _read(self) -> list[int | float]:
        return list(LAYOUT.unpack_from(self._map, 0))

    @staticmethod
    def _fake(real: int, base_real: int | float, base_fake: int | float, rate: int | float) -> int:
        return real if rate <= 0 else int(base_fake) + int((real - int(base_real)) * rate)

    def fake_now_ns(self, real_ns: int | None = None) -> int:
        """The process's wall clock at real wall time `real_ns` (now)."""
        real = time.clock_gettime_ns(time.CLOCK_REALTIME) if real_ns is None else real_ns
        _seq, base_real, base_fake, rate = self._read()[:4]
        return self._fake(real, base_real, base_fake, rate)

    def fake_monotonic_ns(self, clock_id: int, real_ns: int) -> int:
        """The process's CLOCK_MONOTONIC (or CLOCK_BOOTTIME) at that clock's real reading `real_ns`."""
        fields = self._read()
        base = 6 if clock_id == _BOOTTIME and clock_id != time.CLOCK_MONOTONIC else 4
        return self._fake(real_ns, fields[base], fields[base + 1], fields[8])

    def _write(self, fields: list[int | float]) -> None:
        # Whole slices, never struct.pack_into: it zeroes the bytes it packs before it writes
        # them, and a reader seeing seq and the rates at 0 meanwhile would use the real clocks
        # for a moment (a monotonic clock going back by its whole drift).
        seq = int(self._read()[0])
        self._map[0:8] = struct.pack("=Q", seq + 1)  # odd: readers wait
        self._map[8:LAYOUT.size] = LAYOUT.pack(seq + 1, *fields[1:])[8:]
        self._map[0:8] = struct.pack("=Q", seq + 2)

    def step(self, seconds: float) -> None:
        """The wall clock jumps by `seconds` (negative: back), keeping its rate."""
        with self._lock:
            real = time.clock_gettime_ns(time.CLOCK_REALTIME)
            fields = self._read()
            fields[1:4] = [real, self.fake_now_ns(real) + int(seconds * 1e9), self.rate]
            self._write(fields)
            self.offset_s = (self.fake_now_ns(real) - real) / 1e9

    def set_rate(self, rate: float) -> None:
        """From now on the wall clock runs at `rate` seconds per real second (no jump)."""
        with self._lock:
            real = time.clock_gettime_ns(time.CLOCK_REALTIME)
            fields = self._read()
            fields[1:4] = [real, self.fake_now_ns(real), rate]
            self._write(fields)
            self.rate = rate
            self.offset_s = (self.fake_now_ns(real) - real) / 1e9

    def set_drift(self, rate: float) -> None:
        """From now on the monotonic clocks (CLOCK_MONOTONIC, CLOCK_BOOTTIME) run at `rate` seconds
        per real second, from where they are: no jump, never back (rate > 0)."""
        if not rate > 0:
            raise ValueError(f"a clock rate must be positive, not {rate}")
        with self._lock:
            mono = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            boot = time.clock_gettime_ns(_BOOTTIME)
            fields = self._read()
            fields[4:9] = [mono, self.fake_monotonic_ns(time.CLOCK_MONOTONIC, mono),
                           boot, self.fake_monotonic_ns(_BOOTTIME, boot), rate]
            self._write(fields)
            self.drift = rate
            self.drift_offset_s = (int(fields[5]) - mono) / 1e9

    def close(self) -> None:
        self._map.close()
        self._file.close()
