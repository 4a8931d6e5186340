"""Peak memory under abusive clients: redis-server and a Rill node side by side, each case on
a fresh server of each kind, the peak being the process's VmHWM (from /proc) minus its
resident set before the abuse (so the data set loaded first is not counted twice).

Cases (issue 28):
  xrange-burst   client-output-buffer-limit normal 32mb 16mb 10; a 1.5 MB stream; one write of
                 800 pipelined XRANGE s - + whose replies the client then reads to the end (or
                 until the server closes it)
  get-burst      the same limit; 500,000 pipelined GET of a 1 KB value, sent in one go, read
  maxmemory      maxmemory 50mb (noeviction); pipelined XADD of 100-byte entries until the
                 first -OOM (or 3,000,000 entries): how many were accepted, and the peak
  multibulk      an incomplete multibulk of 100 MB (one argument announced, 100 MB sent)

    python -m bench.memory_cap [--cases xrange-burst,get-burst,maxmemory,multibulk] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.client import RespClient, encode
from bench.procs import Server, install_exit_handlers, start_redis, start_rill

MB = 1024 * 1024


def _status(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _cmd(*args: bytes | str) -> bytes:
    return encode(args)


def _call(port: int, *args: bytes | str) -> object:
    with RespClient(port, timeout=60) as client:
        return client.check(*args)


def _send_all_read_all(port: int, payload: bytes, expect: int) -> int:
    """Sends payload in one go, then reads until `expect` bytes came or the server closed."""
    received = 0
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        try:
            sock.sendall(payload)
            while received < expect:
                chunk = sock.recv(1 << 20)
                if not chunk:
                    break
                received += len(chunk)
        except (ConnectionResetError, BrokenPipeError):
            pass  # the server closed the client (its output limit)
        except TimeoutError:
            pass  # stuck: the server stopped reading a client busy writing (complete: false)
    return received


def _read_simple_reply(f: Any) -> bytes:
    """One reply that is a status, an error, an integer or a bulk string (XADD, SET)."""
    line: bytes = f.readline()
    if line.startswith(b"$") and not line.startswith(b"$-1"):
        f.readline()
    return line


def _pipelined_load(port: int, commands: list[bytes]) -> list[bytes]:
    """Sends the commands in batches of 1,000 and returns the first line of each reply."""
    replies: list[bytes] = []
    with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
        f = sock.makefile("rb")
        for i in range(0, len(commands), 1000):
            batch = commands[i : i + 1000]
            sock.sendall(b"".join(batch))
            for _ in batch:
                replies.append(_read_simple_reply(f))
    return replies


def case_xrange_burst(server: Server) -> dict[str, Any]:
    _call(server.port, "CONFIG", "SET", "client-output-buffer-limit", "normal 32mb 16mb 10")
    value = b"v" * 90
    _pipelined_load(server.port, [_cmd("XADD", "s", f"1-{i + 1}", "f", value) for i in range(15_000)])
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
        sock.sendall(_cmd("XRANGE", "s", "-", "+"))
        size = 0
        f = sock.makefile("rb")
        head = f.readline()
        size += len(head)
        # The reply's total length: read it whole (8 lines an entry: *2, ID, *2, f, value).
        for _ in range(int(head[1:]) * 8):
            size += len(f.readline())
    before = _status(server.pid, "VmRSS")
    received = _send_all_read_all(server.port, _cmd("XRANGE", "s", "-", "+") * 800, size * 800)
    return {"reply_bytes": size, "received_bytes": received, "complete": received == size * 800,
            "rss_before": before, "peak_growth": _status(server.pid, "VmHWM") - before}


def case_get_burst(server: Server) -> dict[str, Any]:
    _call(server.port, "CONFIG", "SET", "client-output-buffer-limit", "normal 32mb 16mb 10")
    _call(server.port, "SET", "k", b"x" * 1024)
    reply = len(b"$1024\r\n") + 1024 + 2
    before = _status(server.pid, "VmRSS")
    received = _send_all_read_all(server.port, _cmd("GET", "k") * 500_000, reply * 500_000)
    return {"received_bytes": received, "complete": received == reply * 500_000,
            "rss_before": before, "peak_growth": _status(server.pid, "VmHWM") - before}


def case_maxmemory(server: Server) -> dict[str, Any]:
    _call(server.port, "CONFIG", "SET", "maxmemory", "50mb")
    before = _status(server.pid, "VmRSS")
    accepted = 0
    value = b"v" * 90
    with socket.create_connection(("127.0.0.1", server.port), timeout=120) as sock:
        f = sock.makefile("rb")
        refused = False
        while accepted < 3_000_000 and not refused:
            sock.sendall(_cmd("XADD", "s", "*", "f", value) * 1000)
            for _ in range(1000):
                line = _read_simple_reply(f)
                if line.startswith(b"-OOM"):
                    refused = True
                elif not refused:
                    accepted += 1
    return {"accepted_entries": accepted, "refused": refused, "rss_before": before,
            "peak_growth": _status(server.pid, "VmHWM") - before,
            "used_memory": _info_field(server.port, "used_memory")}


def case_multibulk(server: Server) -> dict[str, Any]:
    before = _status(server.pid, "VmRSS")
    chunk = b"x" * MB
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
        sock.sendall(b"*2\r\n$3\r\nSET\r\n$%d\r\n" % (200 * MB))
        for _ in range(100):
            sock.sendall(chunk)
        time.sleep(1.0)
        growth = _status(server.pid, "VmHWM") - before
    return {"pending_bytes": 100 * MB, "rss_before": before, "peak_growth": growth}


def _info_field(port: int, name: str) -> int:
    reply = _call(port, "INFO", "memory")
    assert isinstance(reply, bytes)
    text = reply.decode()
    for line in text.split("\r\n"):
        if line.startswith(name + ":"):
            return int(line.split(":")[1])
    return -1


CASES: dict[str, Callable[[Server], dict[str, Any]]] = {
    "xrange-burst": case_xrange_burst,
    "get-burst": case_get_burst,
    "maxmemory": case_maxmemory,
    "multibulk": case_multibulk,
}


def run(cases: list[str]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name in cases:
        results[name] = {}
        for kind, start in (("redis", start_redis), ("rill", start_rill)):
            server = start()
            try:
                results[name][kind] = CASES[name](server)
            finally:
                server.stop()
        r, n = results[name]["redis"], results[name]["rill"]
        results[name]["peak_ratio"] = round(n["peak_growth"] / max(r["peak_growth"], 1), 2)
        print(f"{name:14} redis +{r['peak_growth'] / MB:8.1f} MB   rill +{n['peak_growth'] / MB:8.1f} MB   "
              f"{json.dumps({k: v for k, v in n.items() if k not in ('rss_before', 'peak_growth')})}",
              flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    install_exit_handlers()
    results = run(args.cases.split(","))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
