#!/usr/bin/env python3
"""`rill-healthcheck [--port PORT] [--sentinel]`: the container health check of a Rill node or
sentinel, over TLS when `RILL_TLS_CA_CERT_FILE` names the CA (deploy/compose.tls.yaml).

Healthy (exit 0) when the server on 127.0.0.1:PORT answers PING and, for a node that is a
replica, its link to the primary is up (`master_link_status:up`): a replica that lost its
primary serves stale reads, which an operator wants to see. A sentinel (`--sentinel`) only
has to answer PING. The password is read from the environment
(`RILL_PASSWORD`; none for a sentinel), never from the command line, so it does not show in
`docker inspect`. Standard library only: the image has no redis-cli.
"""

from __future__ import annotations

import argparse
import os
import socket
import ssl
import sys


def _command(*words: str) -> bytes:
    parts = [b"*%d\r\n" % len(words)]
    for word in words:
        raw = word.encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(raw), raw))
    return b"".join(parts)


class _Replies:
    """Reads simple strings, errors and bulk strings: the only replies sent for AUTH, PING
    and INFO."""

    def __init__(self, sock: socket.socket) -> None:
        self._file = sock.makefile("rb")

    def next(self) -> str:
        line = self._file.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("connection closed")
        kind, body = line[:1], line[1:-2].decode("utf-8", "replace")
        if kind == b"+":
            return body
        if kind == b"-":
            raise RuntimeError(body)
        if kind == b"$":
            data = self._file.read(int(body) + 2)
            return data[:-2].decode("utf-8", "replace")
        raise RuntimeError(f"unexpected reply {line!r}")


def _connect(port: int, timeout: float, ca_file: str) -> socket.socket:
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    if not ca_file:
        return raw
    context = ssl.create_default_context(cafile=ca_file)
    context.check_hostname = False  # 127.0.0.1; the certificate must still be the CA's
    return context.wrap_socket(raw)


def check(port: int, password: str, timeout: float, sentinel: bool = False, ca_file: str = "") -> str:
    """'' when healthy, otherwise why not."""
    with _connect(port, timeout, ca_file) as sock:
        commands = [_command("AUTH", password)] if password else []
        commands += [_command("PING")] if sentinel else [_command("PING"), _command("INFO", "replication")]
        sock.sendall(b"".join(commands))
        replies = _Replies(sock)
        if password:
            replies.next()
        if replies.next() != "PONG":
            return "no PONG"
        if sentinel:
            return ""
        fields = dict(line.split(":", 1) for line in replies.next().splitlines() if ":" in line)
    if fields.get("role") == "slave" and fields.get("master_link_status") != "up":
        return f"replica of {fields.get('master_host')}:{fields.get('master_port')}, link down"
    return ""


def main() -> int:
    parser = argparse.ArgumentParser(prog="rill-healthcheck", description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=6379)
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("--sentinel", action="store_true", help="a sentinel: PING only")
    args = parser.parse_args()
    try:
        problem = check(args.port, os.environ.get("RILL_PASSWORD", ""), args.timeout, args.sentinel,
                        os.environ.get("RILL_TLS_CA_CERT_FILE", ""))
    except (OSError, RuntimeError) as exc:
        problem = str(exc) or type(exc).__name__
    if problem:
        print(f"unhealthy: {problem}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
