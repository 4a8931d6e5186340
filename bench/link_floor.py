"""`python -m bench.link_floor`: the floor under a replication hop. Two processes exchange a
message and its reply, one exchange at a time, over a grpc.aio bidirectional stream (the
replication link's transport, with its poller I/O: replication/grpc_io.py) and over a plain
asyncio socket, both on uvloop: the wall time of an exchange (p50 / p99) and the client
process's CPU per exchange. A `WAIT 1` needs two such hops (the batch out, the ack back), so
what grpc.aio costs here over the socket is what the link's design pays per safe write
(issue 38; docs/replication.md, *Where the CPU goes*). Prints a table; writes nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from bench.procs import ROOT, free_port, install_exit_handlers
from bench.repl_cluster import percentile

PAYLOAD = b"x" * 200  # about a batch of two XADDs
WARMUP = 200
TRANSPORTS = ("grpc", "socket")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _identity(data: bytes) -> bytes:
    return data


async def _grpc_server(port: int) -> None:
    import grpc

    async def echo(requests: AsyncIterator[bytes], context: object) -> AsyncIterator[bytes]:
        async for message in requests:
            yield message

    handler = grpc.method_handlers_generic_handler(
        "floor.Echo", {"Stream": grpc.stream_stream_rpc_method_handler(echo, _identity, _identity)})
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    print("ready", flush=True)
    await server.wait_for_termination()


async def _grpc_exchanges(port: int, count: int) -> tuple[list[float], float]:
    import grpc

    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.stream_stream("/floor.Echo/Stream", request_serializer=_identity,
                                     response_deserializer=_identity)()

        async def exchange() -> None:
            await call.write(PAYLOAD)
            await call.read()

        return await _timed(exchange, count)


async def _socket_server(port: int) -> None:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                writer.write(await reader.readexactly(len(PAYLOAD)))
        except asyncio.IncompleteReadError:
            writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", port)
    print("ready", flush=True)
    await server.serve_forever()


async def _socket_exchanges(port: int, count: int) -> tuple[list[float], float]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    async def exchange() -> None:
        writer.write(PAYLOAD)
        await reader.readexactly(len(PAYLOAD))

    try:
        return await _timed(exchange, count)
    finally:
        writer.close()


async def _timed(exchange: Callable[[], Awaitable[None]], count: int) -> tuple[list[float], float]:
    for _ in range(WARMUP):
        await exchange()
    seconds: list[float] = []
    started = _cpu()
    for _ in range(count):
        begin = time.perf_counter()
        await exchange()
        seconds.append(time.perf_counter() - begin)
    return seconds, (_cpu() - started) / count


def _measure(transport: str, count: int) -> tuple[list[float], float]:
    import uvloop

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "bench.link_floor", "--serve", transport, "--port", str(port)],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert server.stdout is not None
        if server.stdout.readline() != b"ready\n":
            raise RuntimeError(f"the {transport} echo server did not start")
        exchanges = _grpc_exchanges if transport == "grpc" else _socket_exchanges
        return uvloop.run(exchanges(port, count))
    finally:
        server.kill()
        server.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.link_floor", description=__doc__.split("\n\n")[0])
    parser.add_argument("--exchanges", type=int, default=5000, help="timed exchanges per run (default 5000)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds (default 2)")
    parser.add_argument("--serve", choices=TRANSPORTS, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    import replication  # noqa: F401  (selects gRPC's poller I/O before grpc loads, as the node does)

    if args.serve:
        import uvloop

        uvloop.run(_grpc_server(args.port) if args.serve == "grpc" else _socket_server(args.port))
        return 0
    install_exit_handlers()
    print(f"one {len(PAYLOAD)}-byte message and its reply at a time, two processes, uvloop; load average "
          f"{os.getloadavg()[0]:.2f}")
    for round_no in range(1, args.rounds + 1):
        for transport in TRANSPORTS:
            seconds, cpu = _measure(transport, args.exchanges)
            print(f"  round {round_no}, {transport:6s}: p50 {percentile(seconds, 0.5) * 1e6:4.0f} µs, "
                  f"p99 {percentile(seconds, 0.99) * 1e6:4.0f} µs, client CPU {cpu * 1e6:4.0f} µs per exchange")
    return 0


if __name__ == "__main__":
    sys.exit(main())
