"""deploy/compose.yaml with a real Docker engine: the images build, the primary and its two
replicas come up healthy, writes replicate (WAIT, then reads on the replicas) for clients on
the host (127.0.0.1 only) and for a redis-py client in a container on the compose network,
the `chaos` profile puts a toxiproxy in front of each node, and a failover done by hand
(the primary's container killed, a replica promoted, the other re-pointed, the old primary
back as a replica) loses no acknowledged write. The sentinel services are not started:
`rill sentinel` does not exist yet (docs/deploy.md).

One compose project for the module (conftest.py), in this order: the tests before the
failover rely on the original roles.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import time
import urllib.request
from collections.abc import Callable

import pytest
import redis

from tests.deploy.project import COMPOSE_FILE, NODES, Project, compose_command

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]


def _until(what: str, ready: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f} s: {what}")
        time.sleep(0.2)


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


def test_nodes_are_healthy_and_published_on_loopback_only(project: Project) -> None:
    for service in NODES:
        assert project.health(service) == "healthy"
        bindings = project.inspect(service)["HostConfig"]["PortBindings"]  # type: ignore[index]
        assert {b["HostIp"] for ports in bindings.values() for b in ports} == {"127.0.0.1"}, service
    roles = {service: project.client(service).execute_command("ROLE")[0] for service in NODES}
    assert roles == {"primary": "master", "replica-1": "slave", "replica-2": "slave"}


def test_a_password_is_required(project: Project) -> None:
    anonymous = redis.Redis(host="127.0.0.1", port=project.port("primary"), socket_timeout=10)
    with pytest.raises(redis.AuthenticationError):
        anonymous.xadd("nope", {"a": "1"})


def test_the_image_runs_compiled_as_a_non_root_user_without_compilers(project: Project) -> None:
    container = project.container("primary")
    assert project.engine.docker("exec", container, "id", "-u").stdout.strip() != "0"
    found = project.engine.docker("exec", container, "sh", "-c", "command -v gcc cc x86_64-linux-gnu-gcc",
                                  check=False)
    assert found.stdout.strip() == ""
    module = project.engine.docker("exec", container, "python3", "-c",
                                   "import node.server.server as s; print(s.__file__)").stdout.strip()
    assert module.endswith(".so"), module
    image = json.loads(project.engine.docker("image", "inspect", project.image("rill")).stdout)[0]["Config"]
    assert image["Volumes"] == {"/data": {}}
    assert image["Healthcheck"]["Test"][-1] == "rill-healthcheck"
    assert image["Entrypoint"] == ["rill"]


def test_a_write_on_the_primary_reaches_both_replicas(project: Project) -> None:
    primary = project.client("primary")
    ids = [primary.xadd("orders", {"item": f"book-{i}"}) for i in range(20)]
    assert primary.wait(2, 10_000) == 2
    for replica in ("replica-1", "replica-2"):
        client = project.client(replica)
        assert [entry_id for entry_id, _ in client.xrange("orders")] == ids
        with pytest.raises(redis.ReadOnlyError):
            client.xadd("orders", {"item": "pen"})


def test_a_client_on_the_compose_network_reaches_the_nodes_by_name(project: Project) -> None:
    out = project.engine.run(["docker", "run", "--rm", "--network", project.network, "--env", "RILL_PASSWORD",
                              project.image("client"), "--primary", "primary", "--replicas", "replica-1,replica-2",
                              "--stream", "from-the-network", "--count", "10"],
                             env={"RILL_PASSWORD": project.password}, timeout=120).stdout
    seen = json.loads(out)
    assert seen["role"] == "master" and seen["acked"] == 2 and len(seen["added"]) == 10
    assert seen["seen"] == {"replica-1": seen["added"], "replica-2": seen["added"]}


def _toxiproxy(project: Project, node: str, body: dict[str, object]) -> None:
    api = project.port(f"toxi-{node}", 8474)
    request = urllib.request.Request(f"http://127.0.0.1:{api}/proxies/{node}", data=json.dumps(body).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        assert reply.status == 200


def test_the_chaos_profile_puts_a_toxiproxy_in_front_of_each_node(project: Project) -> None:
    proxies = tuple(f"toxi-{node}" for node in NODES)
    project.compose("up", "-d", *proxies, profiles=("chaos",))
    for node, proxy in zip(NODES, proxies):
        through = redis.Redis(host="127.0.0.1", port=project.port(proxy), password=project.password,
                              socket_timeout=10, decode_responses=True)
        _until(f"{proxy} forwards to {node}", lambda c=through: _answers(c))  # type: ignore[misc]
        assert through.info("replication")["role"] == project.client(node).info("replication")["role"]
    through = redis.Redis(host="127.0.0.1", port=project.port("toxi-primary"), password=project.password,
                          socket_timeout=10)
    _toxiproxy(project, "primary", {"enabled": False})
    assert not _answers(through)
    assert project.client("primary").ping()  # the node itself is untouched
    _toxiproxy(project, "primary", {"enabled": True})
    _until("toxi-primary forwards again", lambda: _answers(through))
    project.compose("stop", *proxies, profiles=("chaos",))


def test_a_manual_failover_loses_no_acknowledged_write(project: Project) -> None:
    # What the sentinels will do, done by hand: the primary's container dies, replica-1 is
    # promoted, replica-2 follows it, the old primary comes back as a replica.
    primary = project.client("primary")
    before = [primary.xadd("failover", {"n": str(i)}) for i in range(10)]
    assert primary.wait(2, 10_000) == 2
    project.compose("kill", "primary")
    new, other = project.client("replica-1"), project.client("replica-2")
    _until("replica-1 sees its primary gone", lambda: new.info("replication")["master_link_status"] == "down")
    _until("the replicas' health checks see it", lambda: project.health("replica-2") == "unhealthy")
    assert new.replicaof("NO", "ONE")
    assert other.replicaof("replica-1", 6379)
    after = [new.xadd("failover", {"n": str(i)}) for i in range(10, 20)]
    assert new.wait(1, 10_000) == 1
    assert [entry_id for entry_id, _ in other.xrange("failover")] == before + after

    project.compose("start", "primary")  # its published port may change: clients ask again
    project.wait_healthy(("primary",))
    old = project.client("primary")
    assert [entry_id for entry_id, _ in old.xrange("failover")] == before  # its volume kept them
    assert old.replicaof("replica-1", 6379)
    assert new.wait(2, 10_000) == 2
    assert [entry_id for entry_id, _ in old.xrange("failover")] == before + after
    with pytest.raises(redis.ReadOnlyError):
        old.xadd("failover", {"n": "on the old primary"})
    project.wait_healthy(NODES)

    # CONFIG REWRITE writes the new roles into each node's config copy in its volume, so
    # restarted containers keep them.
    for service in NODES:
        assert project.client(service).config_rewrite()
    project.compose("restart", *NODES)
    project.wait_healthy(NODES)
    roles = {service: project.client(service).execute_command("ROLE")[:1] for service in NODES}
    assert roles == {"primary": ["slave"], "replica-1": ["master"], "replica-2": ["slave"]}
    assert project.client("replica-1").wait(2, 10_000) == 2
    assert [entry_id for entry_id, _ in project.client("primary").xrange("failover")] == before + after


def test_compose_refuses_to_start_without_a_password(tmp_path: pathlib.Path) -> None:
    # No engine needed: docker-compose checks the file and its variables first.
    env_file = tmp_path / "empty.env"
    env_file.write_text("")
    env = {k: v for k, v in os.environ.items() if k != "RILL_PASSWORD"}
    done = subprocess.run([*compose_command(), "--env-file", str(env_file), "--file", COMPOSE_FILE, "config"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode != 0
    assert "set RILL_PASSWORD in deploy/.env" in done.stderr
