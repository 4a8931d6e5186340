"""Garbage in: bad handshakes, wrong secrets, unknown histories, future offsets and nonsense
acks get a clear gRPC status (logged once), and nothing on the primary is corrupted."""

from __future__ import annotations

import asyncio
import dataclasses
import logging

import grpc
import pytest

from replication import PROTOCOL_VERSION, ReplicaSettings, new_run_id
from replication.pb import replication_pb2 as pb
from replication.pb import replication_pb2_grpc as pb_grpc
from tests.replication.inprocess_cluster import FAST_PRIMARY, FAST_REPLICA, Node, eventually, nodes, run

Call = grpc.aio.StreamStreamCall[pb.ReplicaMessage, pb.PrimaryMessage]
RawCall = grpc.aio.StreamStreamCall[bytes, bytes]  # no (de)serializers: raw bytes on the wire
SYNC_METHOD = "/rill.replication.v1.Replication/Sync"


def hello(**fields: object) -> pb.ReplicaMessage:
    values: dict[str, object] = {"protocol_version": PROTOCOL_VERSION, "replica_id": new_run_id()}
    values.update(fields)
    return pb.ReplicaMessage(hello=pb.Hello(**values))  # type: ignore[arg-type]


def ack(applied: int, fsynced: int = -1) -> pb.ReplicaMessage:
    return pb.ReplicaMessage(ack=pb.Ack(applied_offset=applied, fsynced_offset=fsynced))


async def refused(port: int, *messages: pb.ReplicaMessage, timeout: float = 5.0) -> grpc.aio.AioRpcError:
    """Sends messages on a raw Sync stream and returns the error status that ends it."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        call: Call = pb_grpc.ReplicationStub(channel).Sync()
        for message in messages:
            await call.write(message)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            async with asyncio.timeout(timeout):
                while True:
                    if await call.read() is grpc.aio.EOF:
                        break
        return caught.value


async def first_reply(port: int, message: pb.ReplicaMessage) -> pb.PrimaryMessage:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        call: Call = pb_grpc.ReplicationStub(channel).Sync()
        await call.write(message)
        reply = await call.read()
        call.cancel()
        assert isinstance(reply, pb.PrimaryMessage)
        return reply


async def still_serves(p: Node, port: int) -> None:
    """A well-behaved replica still converges: the bad peer corrupted nothing."""
    good = Node()
    try:
        good.follow(port)
        await good.caught_up(p.write_many(5))
        assert good.machine.digest() == p.machine.digest()
    finally:
        await good.close()


@pytest.mark.parametrize(
    ("messages", "code", "text"),
    [
        ([ack(0)], grpc.StatusCode.INVALID_ARGUMENT, "the first message must be a hello"),
        ([hello(protocol_version=99)], grpc.StatusCode.FAILED_PRECONDITION, "protocol version 99 is not supported"),
        ([hello(replica_id="me")], grpc.StatusCode.INVALID_ARGUMENT, "replica id must be 40"),
        ([hello(replid="not-a-replid")], grpc.StatusCode.INVALID_ARGUMENT, "replid must be empty or 40"),
        ([hello(offset=-5)], grpc.StatusCode.INVALID_ARGUMENT, "offset -5 is negative"),
        ([hello(announce_port=70000)], grpc.StatusCode.INVALID_ARGUMENT, "announce port 70000"),
    ],
    ids=["ack-first", "version", "replica-id", "replid", "negative-offset", "port"],
)
def test_bad_handshake_is_refused_with_a_clear_status_logged_once(
    messages: list[pb.ReplicaMessage], code: grpc.StatusCode, text: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def body() -> None:
        async with nodes(1) as (p,):
            port = await p.serve()
            p.write_many(10)
            before = (p.backlog.end, p.machine.digest())
            with caplog.at_level(logging.WARNING, logger="replication.primary"):
                error = await refused(port, *messages)
            assert error.code() == code
            assert text in (error.details() or "")
            assert [r.getMessage() for r in caplog.records if text in r.getMessage()] != []
            assert len([r for r in caplog.records if r.name == "replication.primary"]) == 1
            assert (p.backlog.end, p.machine.digest()) == before
            assert p.primary is not None and len(p.primary.registry) == 0
            await still_serves(p, port)

    run(body())


def test_garbage_bytes_instead_of_protobuf_end_the_stream_only() -> None:
    async def body() -> None:
        async with nodes(1) as (p,):
            port = await p.serve()
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                call: RawCall = channel.stream_stream(SYNC_METHOD)()
                await call.write(b"\xff\xfe this is not a protobuf message \x00\x01")
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    async with asyncio.timeout(5):
                        await call.read()
                assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert "the hello is not a valid message" in (caught.value.details() or "")
            await still_serves(p, port)

    run(body())


def test_garbage_bytes_after_a_valid_hello_drop_that_replica_only() -> None:
    async def body() -> None:
        async with nodes(1) as (p,):
            port = await p.serve()
            end = p.write_many(3)
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                call: RawCall = channel.stream_stream(SYNC_METHOD)()
                await call.write(hello(replid=p.backlog.replid, offset=end).SerializeToString())
                reply = await call.read()
                assert isinstance(reply, bytes)
                assert pb.PrimaryMessage.FromString(reply).WhichOneof("kind") == "continue_sync"
                await call.write(b"\x0a\xff\xff\xff garbage")
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    async with asyncio.timeout(5):
                        while True:
                            await call.read()
                assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert "unreadable message from the replica" in (caught.value.details() or "")
            await still_serves(p, port)

    run(body())


def test_oversized_message_is_refused_before_it_is_parsed() -> None:
    async def body() -> None:
        async with nodes(1) as (p,):
            port = await p.serve()
            error = await refused(port, hello(announce_host="h" * 100_000))
            assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            await still_serves(p, port)

    run(body())


def test_unknown_replid_and_future_offset_get_a_full_sync_with_the_reason() -> None:
    async def body() -> None:
        async with nodes(1) as (p,):
            port = await p.serve()
            end = p.write_many(10)
            reply = await first_reply(port, hello(replid="ab" * 20, offset=5))
            assert reply.WhichOneof("kind") == "full_sync"
            assert "replication id mismatch" in reply.full_sync.reason
            reply = await first_reply(port, hello(replid=p.backlog.replid, offset=end + 100))
            assert reply.WhichOneof("kind") == "full_sync"
            assert f"offset {end + 100} is in the future (primary is at {end})" in reply.full_sync.reason
            assert reply.full_sync.offset == end and reply.full_sync.snapshot_size == len(p.machine.snapshot())
            reply = await first_reply(port, hello(replid=p.backlog.replid, offset=end))
            assert reply.WhichOneof("kind") == "continue_sync" and reply.continue_sync.offset == end

    run(body())


def test_replica_claiming_a_future_offset_is_resynced_fully_and_converges() -> None:
    async def body() -> None:
        async with nodes(2) as (p, r):
            port = await p.serve()
            p.write_many(10)
            from replication import Backlog

            # Same history id, but 1000 bytes ahead of the primary (a diverged or lying replica).
            r.backlog = Backlog(1 << 20, replid=p.backlog.replid, offset=p.backlog.end + 1000)
            link = r.follow(port)
            await eventually(lambda: link.status().full_syncs == 1)
            end = p.write_many(5)
            await r.caught_up(end)
            assert r.machine.digest() == p.machine.digest() and r.backlog.end == end

    run(body())


@pytest.mark.parametrize(
    ("bad_ack", "text"),
    [
        (lambda end: ack(end + 1), "is beyond what was sent"),
        (lambda end: ack(end - 1), "went backwards"),
        (lambda end: ack(end, fsynced=end + 1), "fsynced offset"),
        (lambda end: hello(), "expected an ack"),
    ],
    ids=["beyond", "backwards", "fsync-beyond", "second-hello"],
)
def test_nonsense_ack_drops_the_replica_with_invalid_argument(bad_ack, text: str) -> None:  # type: ignore[no-untyped-def]
    async def body() -> None:
        async with nodes(1) as (p,):
            port = await p.serve()
            end = p.write_many(10)
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                call: Call = pb_grpc.ReplicationStub(channel).Sync()
                await call.write(hello(replid=p.backlog.replid, offset=end))
                reply = await call.read()
                assert isinstance(reply, pb.PrimaryMessage) and reply.WhichOneof("kind") == "continue_sync"
                await call.write(ack(end))
                await call.write(bad_ack(end))
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    async with asyncio.timeout(5):
                        while True:
                            await call.read()
                assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert text in (caught.value.details() or "")
            assert p.primary is not None
            await eventually(lambda: p.primary is not None and len(p.primary.registry) == 0)
            await still_serves(p, port)

    run(body())


def test_peer_that_never_says_hello_is_dropped_after_repl_timeout() -> None:
    async def body() -> None:
        async with nodes(1) as (p,):
            port = await p.serve(dataclasses.replace(FAST_PRIMARY, timeout=0.3))
            error = await refused(port)
            assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            assert "no hello within 0.3s" in (error.details() or "")

    run(body())


def test_replica_that_never_acks_is_dropped_after_repl_timeout() -> None:
    async def body() -> None:
        async with nodes(1) as (p,):
            port = await p.serve(dataclasses.replace(FAST_PRIMARY, timeout=0.5))
            error = await refused(port, hello(replid=p.backlog.replid, offset=0))
            assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            assert "no ack from the replica for 0.5s" in (error.details() or "")

    run(body())


def test_auth_mismatch_is_refused_without_retry_storm_and_recovers_when_fixed(caplog: pytest.LogCaptureFixture) -> None:
    async def body() -> None:
        async with nodes(2) as (p, r):
            port = await p.serve(dataclasses.replace(FAST_PRIMARY, requirepass="s3cret"))
            error = await refused(port, hello())
            assert error.code() == grpc.StatusCode.UNAUTHENTICATED
            assert error.details() == "NOAUTH Authentication required."
            with caplog.at_level(logging.WARNING, logger="replication.replica"):
                link = r.follow(port, dataclasses.replace(FAST_REPLICA, masterauth="wrong"))
                await eventually(lambda: link.status().last_error is not None)
                await asyncio.sleep(1.0)  # room for several more attempts at backoff_max (0.3 s)
            status = link.status()
            assert not status.link_up
            assert status.last_error == "UNAUTHENTICATED: WRONGPASS invalid username-password pair or user is disabled."
            logged = [r for r in caplog.records if r.name == "replication.replica" and "WRONGPASS" in r.getMessage()]
            assert len(logged) == 1 and logged[0].levelno == logging.ERROR
            link.settings = dataclasses.replace(FAST_REPLICA, masterauth="s3cret")
            await r.caught_up(p.write_many(3))
            assert r.machine.digest() == p.machine.digest()

    run(body())


def test_disconnected_replica_hears_why_and_reconnects_partially() -> None:
    async def body() -> None:
        async with nodes(2) as (p, r):
            port = await p.serve()
            link = r.follow(port)
            await r.caught_up(p.write_many(3))
            assert p.primary is not None and p.primary.disconnect(r.run_id, "CLIENT KILL by the test")
            await eventually(lambda: "CLIENT KILL by the test" in (link.status().last_error or ""))
            await r.caught_up(p.write_many(3))
            assert link.status().partial_syncs == 1 and link.status().full_syncs == 1

    run(body())


def test_replica_settings_reject_nonsense() -> None:
    with pytest.raises(ValueError):
        ReplicaSettings(backoff_initial=2.0, backoff_max=1.0)
