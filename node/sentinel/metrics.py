"""A sentinel's Prometheus metrics (`metrics-port` in its file, or `--metrics-port`): on top
of the server core's (node/metrics/core.py: clients, commands, ...) and the process's, the
masters it monitors — their status (ok, sdown, odown), address, replicas and sentinels known,
quorum, config epoch, a failover running — TILT, scripts, and the events it raised by type
(`+switch-master` counts the failovers it saw, `+failover-end` the ones it led).

Read at scrape time, on the event loop, from the policy's tables (what SENTINEL MASTERS and
INFO sentinel show) and from the runner's count of events.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from node.metrics.core import CoreCollector, server_registry
from node.metrics.exporter import MetricsExporter, serve
from node.metrics.figures import PREFIX, Figure, families, section
from node.sentinel.instance import FAILOVER_NONE, O_DOWN, S_DOWN
from node.sentinel.runner import Runner
from node.server.core import ServerCore

_PREFIX: Final = PREFIX + "sentinel_"
_STATUSES: Final = ("ok", "sdown", "odown")

_SENTINEL: Final = (
    Figure("sentinel_masters", "sentinel_masters", "Masters this sentinel monitors"),
    Figure("sentinel_tilt", "sentinel_tilt", "1 while in TILT mode (the clock jumped or the process stalled)"),
    Figure("sentinel_running_scripts", "sentinel_running_scripts", "Notification and reconfiguration scripts running"),
    Figure("sentinel_scripts_queue_length", "sentinel_scripts_queue_length", "Scripts waiting to run"),
)


class SentinelCollector(Collector):
    """A prometheus_client collector for one sentinel process: its server core's INFO
    sections and its runner (the policy, the events raised)."""

    def __init__(self, core: ServerCore, runner: Runner) -> None:
        self.core = core
        self.runner = runner

    def collect(self) -> Iterator[Metric]:
        yield from families(section(self.core.info_sections, "sentinel"), _SENTINEL)
        yield from self._masters()
        events = CounterMetricFamily(
            _PREFIX + "events", "Events raised, by type (+sdown, +odown, +switch-master, +tilt, ...)", labels=["event"]
        )
        for name, count in sorted(self.runner.events.items()):
            events.add_metric([name], count)
        yield events

    def _masters(self) -> Iterator[Metric]:
        sentinel = self.runner.sentinel
        labels = ["master"]
        status = GaugeMetricFamily(_PREFIX + "master_status", "1 for the master's status as this sentinel sees it",
                                   labels=["master", "status"])
        address = GaugeMetricFamily(_PREFIX + "master_address", "1 for the master's current address (host:port)",
                                    labels=["master", "address"])
        replicas = GaugeMetricFamily(_PREFIX + "master_replicas", "Replicas known for the master", labels=labels)
        replicas_down = GaugeMetricFamily(_PREFIX + "master_replicas_down", "Known replicas subjectively down",
                                          labels=labels)
        sentinels = GaugeMetricFamily(_PREFIX + "master_sentinels",
                                      "Sentinels monitoring the master, this one included", labels=labels)
        quorum = GaugeMetricFamily(_PREFIX + "master_quorum", "The master's quorum", labels=labels)
        epoch = GaugeMetricFamily(_PREFIX + "master_config_epoch", "The master's configuration epoch", labels=labels)
        failover = GaugeMetricFamily(_PREFIX + "master_failover_in_progress", "1 while a failover of the master runs",
                                     labels=labels)
        for name, ri in sentinel.masters.items():
            now = "odown" if ri.flags & O_DOWN else "sdown" if ri.flags & S_DOWN else "ok"
            for word in _STATUSES:
                status.add_metric([name, word], 1.0 if word == now else 0.0)
            address.add_metric([name, f"{ri.addr.host}:{ri.addr.port}"], 1.0)
            replicas.add_metric([name], len(ri.slaves))
            replicas_down.add_metric([name], sum(1 for r in ri.slaves.values() if r.flags & S_DOWN))
            sentinels.add_metric([name], len(ri.sentinels) + 1)
            quorum.add_metric([name], ri.quorum)
            epoch.add_metric([name], ri.config_epoch)
            failover.add_metric([name], 0.0 if ri.failover_state == FAILOVER_NONE else 1.0)
        yield from (status, address, replicas, replicas_down, sentinels, quorum, epoch, failover)


async def start_metrics(core: ServerCore, runner: Runner, port: int) -> MetricsExporter | None:
    """Serves the sentinel's metrics on `port` (its `metrics-port`), on the core's bind
    addresses; None when 0."""
    if not port:
        return None
    hosts = core.config.get("bind").split()
    registry = server_registry(CoreCollector(core), SentinelCollector(core, runner))
    return await serve(registry, hosts, port)
