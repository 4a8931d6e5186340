"""deploy/compose.yaml with a real Docker engine: the images build, the primary, its two
replicas and three sentinels come up healthy, writes replicate (WAIT, then reads on the
replicas) for clients on the host (127.0.0.1 only) and for a redis-py client in a container
on the compose network, the sentinels know every node and each other by service name, metrics
are served on 127.0.0.1, the `chaos` profile puts a toxiproxy in front of each node, the
`pipeline` profile runs the example Spark job against the cluster, and when
the primary's container is killed the sentinels promote a replica while redis-py's Sentinel
client (in a container) keeps writing, and the old primary, started again, rejoins as a
replica; a planned `SENTINEL FAILOVER` then hands the role to another node without losing a
WAIT-acknowledged write.

One compose project for the module (conftest.py), in this order: the tests before the
failover rely on the original roles.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import time
import urllib.request
from collections.abc import Callable

import pytest
import redis

from tests.deploy.project import COMPOSE_FILE, NODES, SENTINELS, Project, compose_command
from tests.metrics.scrape import labelled, scrape, value

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

# Bounds, not expectations. The sentinels find the replicas (INFO every 10 s) and each other
# (hellos every 2 s) in seconds; a failover takes down-after-milliseconds (5 s) and a few
# seconds more, but a sentinel starved of CPU enters TILT for 30 s, and a split vote waits
# twice failover-timeout (60 s) before the next election.
SETTLE_S = 120.0
FAILOVER_S = 300.0
# The pipeline image downloads a Java runtime and PySpark; its job starts Spark in the container.
PIPELINE_BUILD_S = 1500.0
PIPELINE_RUN_S = 900.0


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
    for service in (*NODES, *SENTINELS):
        assert project.health(service) == "healthy"
        bindings = project.inspect(service)["HostConfig"]["PortBindings"]  # type: ignore[index]
        assert {b["HostIp"] for ports in bindings.values() for b in ports} == {"127.0.0.1"}, service
        assert "9121/tcp" in bindings, service  # the metrics
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


def test_the_pipeline_profile_runs_the_example_spark_job(project: Project) -> None:
    project.compose("build", "pipeline", profiles=("pipeline",), timeout=PIPELINE_BUILD_S)
    out = project.compose("run", "--rm", "-T", "pipeline", "--seconds", "20", "--rate", "200", profiles=("pipeline",),
                          timeout=PIPELINE_RUN_S)
    assert "the streaming job reads the replicas" in out, out[-3000:]
    produced = max(int(n) for n in re.findall(r"produced=\s*(\d+)", out))
    reported = re.search(r"Batch report: (\d+) events", out)
    windows = re.search(r"Windowed aggregates: (\d+) rows in stream .*?, (\d+) rows in Parquet", out)
    assert reported and windows, out[-3000:]
    # Every event produced was read (from the replicas) and counted; every window the
    # streaming job closed is in Rill and in Parquet.
    assert int(reported.group(1)) == produced > 1000
    assert int(windows.group(1)) == int(windows.group(2)) > 0
    primary = project.client("primary")
    assert primary.xlen("shop:events") == produced
    assert primary.xlen("shop:revenue-10s") == int(windows.group(1))


def _sentinel(project: Project, service: str) -> redis.Redis:
    # Sentinels have no password of their own (they use RILL_PASSWORD towards the nodes).
    return redis.Redis(host="127.0.0.1", port=project.port(service, 26379), socket_timeout=10, decode_responses=True)


def _fields(reply: object) -> dict[str, str]:
    """A SENTINEL MASTER/REPLICAS/SENTINELS entry as a dict (redis-py parses some, not all)."""
    if isinstance(reply, dict):
        return {str(k): str(v) for k, v in reply.items()}
    assert isinstance(reply, list)
    return {str(k): str(v) for k, v in zip(reply[::2], reply[1::2])}


def _sentinel_view(project: Project, service: str) -> dict[str, str]:
    return _fields(_sentinel(project, service).execute_command("SENTINEL", "MASTER", "rill"))


def _settled(view: dict[str, str]) -> bool:
    return view["num-slaves"] == "2" and view["num-other-sentinels"] == "2"


def test_the_sentinels_know_the_nodes_and_each_other_by_name(project: Project) -> None:
    for sentinel in SENTINELS:
        _until(f"{sentinel} discovers both replicas and the other sentinels",
               lambda s=sentinel: _settled(_sentinel_view(project, s)), SETTLE_S)  # type: ignore[misc]
        view = _sentinel_view(project, sentinel)
        assert (view["ip"], view["port"], view["flags"]) == ("primary", "6379", "master")
        replicas = _sentinel(project, sentinel).execute_command("SENTINEL", "REPLICAS", "rill")
        names = sorted(_fields(r)["ip"] for r in replicas)
        assert names == ["replica-1", "replica-2"]  # replica-announce-ip, not container addresses
        others = _sentinel(project, sentinel).execute_command("SENTINEL", "SENTINELS", "rill")
        assert sorted(_fields(o)["ip"] for o in others) == sorted(set(SENTINELS) - {sentinel})


def test_metrics_are_published_on_loopback(project: Project) -> None:
    primary = scrape(project.port("primary", 9121))
    assert value(primary, "rill_role", role="master") == 1
    assert labelled(primary, "rill_replica_online", "replica") == {"replica-1:6379": 1, "replica-2:6379": 1}
    for service in ("replica-1", "replica-2"):
        replica = scrape(project.port(service, 9121))
        assert value(replica, "rill_role", role="slave") == 1
        assert value(replica, "rill_master_link_up") == 1
    for sentinel in SENTINELS:
        samples = scrape(project.port(sentinel, 9121))
        assert value(samples, "rill_sentinel_master_address", master="rill", address="primary:6379") == 1
        assert value(samples, "rill_sentinel_master_status", master="rill", status="ok") == 1
        assert value(samples, "rill_sentinel_master_replicas", master="rill") == 2
        assert value(samples, "rill_sentinel_master_sentinels", master="rill") == 3


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


def _role(client: redis.Redis) -> list[object]:
    try:
        return list(client.execute_command("ROLE"))
    except redis.RedisError:
        return []


def _master_at(sentinel: str, project: Project) -> str:
    """The master's service name as `sentinel` names it (announce-hostnames)."""
    host, port = _sentinel(project, sentinel).execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "rill")
    assert int(port) == 6379
    return str(host)


def test_the_sentinels_fail_over_and_a_sentinel_client_keeps_writing(project: Project) -> None:
    primary = project.client("primary")
    before = [primary.xadd("failover", {"n": str(i)}) for i in range(10)]
    assert primary.wait(2, 10_000) == 2
    # redis-py's Sentinel client, in a container on the compose network, writes from before
    # the primary dies until it has written 20 entries to the primary the sentinels promote.
    writer = subprocess.Popen(
        ["docker", "run", "--rm", "--network", project.network, "--env", "RILL_PASSWORD", project.image("client"),
         "--sentinels", ",".join(SENTINELS), "--service", "rill", "--stream", "through-sentinels", "--after", "20",
         "--seconds", str(FAILOVER_S)],
        env={**project.engine.env, "RILL_PASSWORD": project.password}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )
    try:
        _until("the client writes to the primary", lambda: primary.xlen("through-sentinels") >= 10, 120)
        project.compose("kill", "primary")
        _until("the sentinels agree on a new primary",
               lambda: len({_master_at(s, project) for s in SENTINELS} - {"primary"}) == 1
               and "primary" not in {_master_at(s, project) for s in SENTINELS}, FAILOVER_S)
        new = _master_at("sentinel-1", project)
        out, err = writer.communicate(timeout=FAILOVER_S + 60)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.communicate()
    assert writer.returncode == 0, err[-4000:]
    seen = json.loads(out)
    assert seen["masters"] == ["primary:6379", f"{new}:6379"], seen
    after = seen["written"][f"{new}:6379"]
    assert len(after) >= 20

    promoted = project.client(new)
    assert _role(promoted)[0] == "master"
    assert [entry_id for entry_id, _ in promoted.xrange("failover")] == before  # WAIT 2 before the kill
    assert [entry_id for entry_id, _ in promoted.xrange("through-sentinels")][-len(after):] == after
    other = project.client("replica-2" if new == "replica-1" else "replica-1")
    _until("the other replica follows the new primary", lambda: _role(other)[:4] == ["slave", new, 6379, "connected"],
           FAILOVER_S)
    for sentinel in SENTINELS:
        samples = scrape(project.port(sentinel, 9121))
        assert labelled(samples, "rill_sentinel_events_total", "event").get("+switch-master") == 1, sentinel
        assert value(samples, "rill_sentinel_master_address", master="rill", address=f"{new}:6379") == 1
    assert labelled(scrape(project.port(new, 9121)), "rill_role_changes_total", "to") == {"master": 1, "slave": 0}

    # The old primary comes back from its volume as a primary; the sentinels turn it into a
    # replica of the new one, and it takes the new primary's history.
    project.compose("start", "primary")
    old = project.client("primary")
    _until("the old primary rejoins as a replica", lambda: _role(old)[:4] == ["slave", new, 6379, "connected"],
           FAILOVER_S)
    assert promoted.wait(2, 10_000) == 2
    assert old.xrange("through-sentinels") == promoted.xrange("through-sentinels")
    with pytest.raises(redis.ReadOnlyError):
        old.xadd("failover", {"n": "on the old primary"})
    assert labelled(scrape(project.port("primary", 9121)), "rill_role_changes_total", "to")["slave"] == 1
    project.wait_healthy(NODES)

    # The sentinels had each node CONFIG REWRITE its role into its config copy: restarted
    # replicas keep following the new primary.
    replicas = tuple(service for service in NODES if service != new)
    project.compose("restart", *replicas)
    project.wait_healthy(NODES)
    for service in replicas:
        assert _role(project.client(service))[:2] == ["slave", new]
    assert promoted.wait(2, 10_000) == 2


def _sentinels_see_two_healthy_replicas_of(primary: str, project: Project) -> bool:
    for sentinel in SENTINELS:
        if _master_at(sentinel, project) != primary:
            return False
        replicas = [_fields(r) for r in _sentinel(project, sentinel).execute_command("SENTINEL", "REPLICAS", "rill")]
        if len(replicas) != 2 or any(r["flags"] != "slave" or r["master-link-status"] != "ok" for r in replicas):
            return False
    return True


def test_a_planned_sentinel_failover_keeps_every_acknowledged_write(project: Project) -> None:
    current = _master_at("sentinel-1", project)
    # After the restarts above, the sentinels learn the replicas' state from INFO (every 10 s).
    _until("every sentinel sees the primary's two replicas healthy",
           lambda: _sentinels_see_two_healthy_replicas_of(current, project), SETTLE_S)
    primary = project.client(current)
    acked = [primary.xadd("handover", {"n": str(i)}) for i in range(10)]
    assert primary.wait(2, 10_000) == 2
    assert _sentinel(project, "sentinel-2").execute_command("SENTINEL", "FAILOVER", "rill") == "OK"
    _until("the sentinels agree on another primary",
           lambda: len(names := {_master_at(s, project) for s in SENTINELS}) == 1 and current not in names, FAILOVER_S)
    chosen = _master_at("sentinel-1", project)
    promoted = project.client(chosen)
    assert _role(promoted)[0] == "master"
    assert [entry_id for entry_id, _ in promoted.xrange("handover")] == acked
    for service in NODES:
        if service != chosen:
            node = project.client(service)
            _until(f"{service} follows {chosen}", lambda n=node: _role(n)[:4] == ["slave", chosen, 6379, "connected"],  # type: ignore[misc]
                   FAILOVER_S)
    assert promoted.wait(2, 10_000) == 2
    for sentinel in SENTINELS:
        samples = scrape(project.port(sentinel, 9121))
        assert labelled(samples, "rill_sentinel_events_total", "event").get("+switch-master") == 2, sentinel


def test_compose_refuses_to_start_without_a_password(tmp_path: pathlib.Path) -> None:
    # No engine needed: docker-compose checks the file and its variables first.
    env_file = tmp_path / "empty.env"
    env_file.write_text("")
    env = {k: v for k, v in os.environ.items() if k != "RILL_PASSWORD"}
    done = subprocess.run([*compose_command(), "--env-file", str(env_file), "--file", COMPOSE_FILE, "config"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode != 0
    assert "set RILL_PASSWORD in deploy/.env" in done.stderr
