"""Transactions through redis-py against a real Rill node: pipelines with transaction=True,
the optimistic-locking retry loop that WATCH exists for (with concurrent clients), and a
blocked reader that a transaction's write wakes.
"""

from __future__ import annotations

import threading
import time

import pytest
import redis

from tests.conftest import Server


def _wait_until_blocked(client: redis.Redis, timeout: float = 5.0) -> None:
    """Wait until some client shows the blocked flag in CLIENT LIST."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any("b" in c.get("flags", "") for c in client.client_list()):
            return
        time.sleep(0.01)
    raise AssertionError("no client got blocked")


def test_transactional_pipeline_returns_every_reply(r: redis.Redis) -> None:
    with r.pipeline(transaction=True) as pipe:
        pipe.set("a", "1").incr("a").get("a").mget("a", "nokey")
        assert pipe.execute() == [True, 2, b"2", [b"2", None]]


def test_runtime_error_inside_a_transaction_does_not_stop_the_others(r: redis.Redis) -> None:
    r.set("text", "abc")
    with r.pipeline(transaction=True) as pipe:
        pipe.incr("text").set("after", "1")
        results = pipe.execute(raise_on_error=False)
    assert isinstance(results[0], redis.ResponseError)
    assert str(results[0]) == "value is not an integer or out of range"
    assert results[1] is True
    assert r.get("after") == b"1"


def test_queue_time_error_discards_the_transaction(r: redis.Redis) -> None:
    with r.pipeline(transaction=True) as pipe:
        pipe.set("a", "1").execute_command("SET", "only-a-key")
        with pytest.raises(redis.ResponseError):
            pipe.execute()
    assert r.exists("a") == 0


def test_watch_detects_a_concurrent_write(r: redis.Redis, rill_node: Server) -> None:
    other = rill_node.client()
    try:
        r.set("balance", 100)
        with r.pipeline(transaction=True) as pipe:
            pipe.watch("balance")
            balance = int(pipe.get("balance") or 0)
            other.incrby("balance", 50)
            pipe.multi()
            pipe.set("balance", balance - 30)
            with pytest.raises(redis.WatchError):
                pipe.execute()
        assert r.get("balance") == b"150"
    finally:
        other.close()


def test_optimistic_increments_from_many_clients_lose_no_update(rill_node: Server) -> None:
    # The canonical WATCH use: read, compute, write in MULTI; retry when EXEC fails.
    setup = rill_node.client()
    setup.flushall()
    setup.set("counter", 0)
    per_worker, workers = 40, 4
    retries = [0] * workers
    errors: list[BaseException] = []

    def work(index: int) -> None:
        client = rill_node.client()
        try:
            for _ in range(per_worker):
                while True:
                    with client.pipeline(transaction=True) as pipe:
                        try:
                            pipe.watch("counter")
                            value = int(pipe.get("counter") or 0)
                            pipe.multi()
                            pipe.set("counter", value + 1)
                            pipe.execute()
                            break
                        except redis.WatchError:
                            retries[index] += 1
        except BaseException as exc:  # surfaced by the main thread
            errors.append(exc)
        finally:
            client.close()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert not errors
    assert setup.get("counter") == str(per_worker * workers).encode()
    setup.close()


def test_watch_survives_writes_to_other_keys(r: redis.Redis, rill_node: Server) -> None:
    other = rill_node.client()
    try:
        r.set("k", "1")
        with r.pipeline(transaction=True) as pipe:
            pipe.watch("k")
            other.set("unrelated", "x")
            other.delete("missing")
            pipe.multi()
            pipe.incr("k")
            assert pipe.execute() == [2]
    finally:
        other.close()


def test_flushall_fails_the_watch_of_an_existing_key(r: redis.Redis, rill_node: Server) -> None:
    other = rill_node.client()
    try:
        r.set("k", "1")
        with r.pipeline(transaction=True) as pipe:
            pipe.watch("k", "never-existed")
            other.flushall()
            pipe.multi()
            pipe.set("k", "2")
            with pytest.raises(redis.WatchError):
                pipe.execute()
    finally:
        other.close()


def test_exec_wakes_a_client_blocked_on_a_key_it_writes(r: redis.Redis, rill_node: Server) -> None:
    r.xadd("s", {"f": "v"}, id="1-0")
    reader = rill_node.client(socket_timeout=10)
    result: list[object] = []

    def read() -> None:
        result.append(reader.xread({"s": "$"}, block=5000))

    thread = threading.Thread(target=read)
    try:
        thread.start()
        _wait_until_blocked(r)
        with r.pipeline(transaction=True) as pipe:
            pipe.set("other", "1").xadd("s", {"f": "w"}, id="2-0")
            pipe.execute()
        thread.join(timeout=10)
        assert not thread.is_alive()
        assert result == [[[b"s", [(b"2-0", {b"f": b"w"})]]]]
    finally:
        thread.join(timeout=10)
        reader.close()
