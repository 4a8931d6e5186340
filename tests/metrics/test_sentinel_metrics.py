"""A `rill sentinel`'s Prometheus metrics (`metrics-port` in its file), scraped over HTTP from
three real sentinels watching three real Rill nodes: the master's status, address, replicas
and sentinels as the sentinels learn them, and a failover's events and new address."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

from bench.procs import free_port
from tests.conformance.sentinel.procs import Cluster, cluster, wait_until
from tests.conftest import ROOT, wait_for_port
from tests.integration.test_sentinel_interop import (
    AGREE_S,
    DEMOTE_S,
    SETTLE_S,
    explained,
    replica_of,
    sentinel_conf,
    settled,
    wait_for_new_master,
)
from tests.metrics.scrape import Samples, labelled, scrape, value

SENTINELS = ("s0", "s1", "s2")


def start(c: Cluster) -> dict[str, int]:
    """Rill nodes m, r1, r2 and three rill sentinels serving metrics; their metrics ports,
    once every sentinel knows both replicas and the two other sentinels."""
    c.node("m", kind="rill")
    c.node("r1", replica_of="m", kind="rill")
    c.node("r2", replica_of="m", kind="rill")
    conf = sentinel_conf(c.ports["m"])
    metrics = {}
    for name in SENTINELS:
        port = metrics[name] = free_port()
        c.rill_sentinel(name, lambda p, d, port=port: conf(p, d) + f"metrics-port {port}\n")
        wait_for_port(port, c.servers[name].proc)
    for name in SENTINELS:
        wait_until(lambda n=name: settled(c, n, len(SENTINELS)), SETTLE_S, f"{name} to discover the others")
    return metrics


def address(samples: Samples) -> str:
    (current,) = [a for (n, labels), v in samples.items() if n == "rill_sentinel_master_address" and v == 1
                  for k, a in labels if k == "address"]
    return current


def test_a_sentinel_shows_its_master_and_a_failover() -> None:
    with cluster() as c:
        metrics = start(c)
        for name in SENTINELS:
            s = scrape(metrics[name])
            assert value(s, "rill_build_info", mode="sentinel", redis_version="7.2.4", version=_version()) == 1
            assert value(s, "rill_sentinel_masters") == 1
            assert labelled(s, "rill_sentinel_master_status", "status") == {"ok": 1, "sdown": 0, "odown": 0}
            assert address(s) == f"127.0.0.1:{c.ports['m']}"
            assert value(s, "rill_sentinel_master_replicas", master="mymaster") == 2
            assert value(s, "rill_sentinel_master_replicas_down", master="mymaster") == 0
            assert value(s, "rill_sentinel_master_sentinels", master="mymaster") == 3
            assert value(s, "rill_sentinel_master_quorum", master="mymaster") == 2
            assert value(s, "rill_sentinel_master_failover_in_progress", master="mymaster") == 0
            events = labelled(s, "rill_sentinel_events_total", "event")
            assert events.get("+slave") == 2 and events.get("+sentinel") == 2, events
            assert "+switch-master" not in events
            assert (value(s, "rill_commands_total", command="sentinel|master") or 0) >= 1  # settled() asked it
            # The sentinel's file keeps the directive across the rewrites it does.
            assert f"metrics-port {metrics[name]}" in c.read_conf(name)

        c.kill("m")
        try:
            new = wait_for_new_master(c, list(SENTINELS), "m")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{explained(c, list(SENTINELS))}") from None
        led = 0
        for name in SENTINELS:
            s = wait_until(lambda n=name: _switched(metrics[n]), AGREE_S, f"{name}'s metrics to show the new master")
            assert address(s) == f"127.0.0.1:{c.ports[new]}"
            assert (value(s, "rill_sentinel_master_config_epoch", master="mymaster") or 0) >= 1
            events = labelled(s, "rill_sentinel_events_total", "event")
            assert events.get("+switch-master") == 1, events
            assert events.get("+sdown", 0) >= 1  # the old master, seen down
            led += int(events.get("+failover-end", 0))
        assert led == 1  # one sentinel led the failover

        # The old master, known as a replica of the new one, is down until it comes back.
        wait_until(lambda: value(scrape(metrics["s0"]), "rill_sentinel_master_replicas_down", master="mymaster") == 1,
                   SETTLE_S, "the old master counted as a replica that is down")
        c.restart("m")
        wait_until(lambda: replica_of(c, "m", new), DEMOTE_S, "the old master to follow the new one")
        wait_until(lambda: value(scrape(metrics["s0"]), "rill_sentinel_master_replicas_down", master="mymaster") == 0,
                   SETTLE_S, "the old master back up as a replica")


def _switched(port: int) -> Samples | None:
    s = scrape(port)
    events = labelled(s, "rill_sentinel_events_total", "event")
    done = events.get("+switch-master") == 1 and value(s, "rill_sentinel_master_failover_in_progress", master="mymaster") == 0
    return s if done else None


def _version() -> str:
    from node import __version__

    return __version__


def test_tilt_shows_once_the_process_stalled() -> None:
    """A sentinel whose timer fires more than 2 s late enters TILT (sentinel.c's
    SENTINEL_TILT_TRIGGER): a SIGSTOP of 3 s does it, and the metrics show it."""
    with cluster() as c:
        c.node("m", kind="rill")
        port = free_port()
        conf = sentinel_conf(c.ports["m"])
        c.rill_sentinel("s", lambda p, d: conf(p, d) + f"metrics-port {port}\n")
        wait_for_port(port, c.servers["s"].proc)
        assert value(scrape(port), "rill_sentinel_tilt") == 0
        c.pause("s")
        time.sleep(3)
        c.resume("s")
        s = wait_until(lambda: _in_tilt(port), 30, "the sentinel in TILT")
        assert labelled(s, "rill_sentinel_events_total", "event").get("+tilt") == 1


def _in_tilt(port: int) -> Samples | None:
    s = scrape(port)
    return s if value(s, "rill_sentinel_tilt") == 1 else None


def test_a_bad_metrics_port_is_a_fatal_configuration_error() -> None:
    d = tempfile.mkdtemp(prefix="sentinel-metrics-")
    path = os.path.join(d, "sentinel.conf")
    with open(path, "w") as f:
        f.write(f"port {free_port()}\ndir {d}\nmetrics-port 70000\n")
    done = subprocess.run([sys.executable, "-m", "node.main", "sentinel", path], cwd=ROOT, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 1
    out = done.stdout + done.stderr
    assert "*** FATAL CONFIG FILE ERROR" in out and "metrics-port 70000" in out
    assert "argument must be between 0 and 65535 inclusive" in out
