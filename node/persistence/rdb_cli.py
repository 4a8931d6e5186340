"""`rill rdb`: RDB files from the command line.

* `rill rdb export FILE [--host H] [--port P] [--password PW]`: the data set of a running
  node as an RDB file that redis-server loads (RDB 10, Redis 7.0's version, which 7.0 and
  7.2 both load). It asks the node as `redis-cli --rdb` does (REPLCONF rdb-only 1, then
  SYNC: node/replication/redis_primary.py answers with the RDB of its data at that moment),
  so it works against a redis-server too, and writes the file through a temporary one
  beside it, renamed into place once complete.
* `rill rdb check FILE`: reads an RDB file as a node loading it would (node/rdb/) and
  reports its version, AUX fields and keys by type, or where it is damaged.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from collections import Counter
from typing import Final, TextIO

from node.log.encode import encode_command
from node.rdb.encoding import RdbError
from node.rdb.file import Aux, End, Key, Unsupported, read_records

_TIMEOUT: Final = 60.0


class ExportError(Exception):
    pass


def _line(sock: socket.socket, buf: bytearray) -> bytes:
    while b"\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ExportError("the server closed the connection")
        buf += chunk
    i = buf.index(b"\n")
    line = bytes(buf[:i]).rstrip(b"\r")
    del buf[: i + 1]
    return line


def fetch_rdb(host: str, port: int, password: str, path: str) -> int:
    """Writes the RDB the server at host:port sends for SYNC to `path`; returns its size."""
    with socket.create_connection((host, port), timeout=_TIMEOUT) as sock:
        buf = bytearray()
        if password:
            sock.sendall(encode_command([b"AUTH", password.encode()]))
            answer = _line(sock, buf)
            if not answer.startswith(b"+"):
                raise ExportError(f"AUTH failed: {answer[1:].decode('utf-8', 'replace')}")
        # One at a time: a server refuses SYNC while a reply is still pending.
        sock.sendall(encode_command([b"REPLCONF", b"rdb-only", b"1"]))
        answer = _line(sock, buf)
        # An older server does not know rdb-only: it still answers SYNC.
        if not answer.startswith(b"+") and not answer.startswith(b"-ERR Unrecognized REPLCONF option"):
            raise ExportError(f"the server refused: {answer[1:].decode('utf-8', 'replace')}")
        sock.sendall(encode_command([b"SYNC"]))
        header = _line(sock, buf)
        while not header:  # newlines sent while the server prepares the RDB
            header = _line(sock, buf)
        if header.startswith(b"-"):
            raise ExportError(f"the server refused SYNC: {header[1:].decode('utf-8', 'replace')}")
        if not header.startswith(b"$") or not header[1:].isdigit():
            raise ExportError(f"unexpected answer to SYNC: {header[:64]!r}")
        size = int(header[1:])
        temp = f"{path}.tmp-{os.getpid()}"
        try:
            with open(temp, "wb") as f:
                f.write(buf[:size])
                left = size - min(len(buf), size)
                while left:
                    chunk = sock.recv(min(left, 1 << 20))
                    if not chunk:
                        raise ExportError(f"the server closed the connection with {left} bytes of the RDB missing")
                    f.write(chunk)
                    left -= len(chunk)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp, path)
        except BaseException:
            if os.path.exists(temp):
                os.unlink(temp)
            raise
        return size


def check_rdb(path: str, out: TextIO) -> int:
    """Prints what the RDB file at `path` holds; 0 when it is whole and readable."""
    with open(path, "rb") as f:
        data = f.read()
    types: Counter[str] = Counter()
    expires = 0
    try:
        out.write(f"RDB file {path}: version {int(data[5:9]) if data[5:9].isdigit() else '?'}, {len(data)} bytes\n")
        for record in read_records(data, 1 << 30):
            if isinstance(record, Aux):
                out.write(f"  aux {record.name.decode('utf-8', 'replace')} = {record.value.decode('utf-8', 'replace')}\n")
            elif isinstance(record, Key):
                types["string" if type(record.value) is bytes else "stream"] += 1
                expires += record.expire_ms is not None
            elif isinstance(record, Unsupported):
                types[f"{record.what} (Rill does not hold it)"] += 1
            elif isinstance(record, End):
                out.write("  checksum " + ("ok" if record.checksum_checked else "not written (0)") + "\n")
    except RdbError as exc:
        out.write(f"Bad RDB file {path} {exc}\n")
        return 1
    for name, count in sorted(types.items()):
        out.write(f"  {count} key(s) of type {name}\n")
    out.write(f"  {expires} key(s) with a deadline\n")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="rill rdb", description="RDB files: export a node's data, check a file.")
    sub = parser.add_subparsers(dest="action", required=True)
    export = sub.add_parser("export", help="write a running node's data as an RDB file redis-server loads")
    export.add_argument("file")
    export.add_argument("--host", default="127.0.0.1")
    export.add_argument("--port", type=int, default=6379)
    export.add_argument("--password", default=os.environ.get("RILL_PASSWORD", ""),
                        help="the node's requirepass (default: $RILL_PASSWORD)")
    check = sub.add_parser("check", help="read an RDB file and report what it holds or where it is damaged")
    check.add_argument("file")
    args = parser.parse_args(argv)
    if args.action == "check":
        return check_rdb(args.file, sys.stdout)
    try:
        size = fetch_rdb(args.host, args.port, args.password, args.file)
    except (OSError, ExportError) as exc:
        print(f"rill rdb export: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {args.file}: {size} bytes (RDB from {args.host}:{args.port})")
    return 0


__all__ = ["check_rdb", "fetch_rdb", "main"]
