"""Memory figures of a real server process, read from /proc/<pid>/status: the peak resident
set (VmHWM) and the current one (VmRSS), in bytes. The memory tests bound a node's peak by
what its limits allow."""

from __future__ import annotations

MB = 1024 * 1024


def _status_kb(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def peak_rss(pid: int) -> int:
    """VmHWM: the highest resident set size the process ever had."""
    return _status_kb(pid, "VmHWM")


def rss(pid: int) -> int:
    return _status_kb(pid, "VmRSS")
