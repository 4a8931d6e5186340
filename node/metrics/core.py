"""The server core's metrics: what every server built on it reports, a node or a sentinel —
its version and mode, uptime, clients (connected, blocked), connections, commands (in all and
per command: calls, failures, refusals, time), error replies by code, network bytes and Pub/Sub.

Read at scrape time from INFO's server, clients and stats sections and from the dispatcher's
per-command statistics (INFO commandstats, errorstats): nothing is counted twice, nothing is
added to the request path. CONFIG RESETSTAT zeroes the counters, which Prometheus reads as a
counter reset.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.core import CounterMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector

from node.metrics.figures import PREFIX, Figure, families, section
from node.server.core import ServerCore

_SERVER: Final = (
    Figure("uptime_in_seconds", "uptime_seconds", "Seconds since the server started"),
)

_CLIENTS: Final = (
    Figure("connected_clients", "connected_clients", "Client connections (replication links excluded)"),
    Figure("blocked_clients", "blocked_clients", "Clients blocked in XREAD, XREADGROUP, WAIT, WAITAOF ..."),
    Figure("total_blocking_keys", "blocking_keys", "Keys blocked clients wait on"),
    Figure("maxclients", "maxclients", "The maxclients setting"),
)

_STATS: Final = (
    Figure("total_connections_received", "connections_received", "Connections accepted", counter=True),
    Figure("rejected_connections", "connections_rejected", "Connections refused (maxclients)", counter=True),
    Figure("total_commands_processed", "commands_processed", "Commands run", counter=True),
    Figure("instantaneous_ops_per_sec", "instantaneous_ops_per_second",
           "Commands per second over the last 1.6 s (INFO's instantaneous_ops_per_sec)"),
    Figure("total_error_replies", "error_replies", "Error replies sent", counter=True),
    Figure("total_net_input_bytes", "net_input_bytes", "Bytes read from clients", counter=True),
    Figure("total_net_output_bytes", "net_output_bytes", "Bytes written to clients", counter=True),
    Figure("keyspace_hits", "keyspace_hits", "Key lookups that found the key", counter=True),
    Figure("keyspace_misses", "keyspace_misses", "Key lookups that did not find the key", counter=True),
    Figure("expired_keys", "expired_keys", "Keys deleted because their TTL passed", counter=True),
    Figure("sync_full", "sync_full", "Full resynchronizations served to replicas", counter=True),
    Figure("sync_partial_ok", "sync_partial_ok", "Partial resynchronizations served to replicas", counter=True),
    Figure("sync_partial_err", "sync_partial_err",
           "Partial resynchronizations refused (a full one followed)", counter=True),
    Figure("pubsub_channels", "pubsub_channels", "Channels with subscribers"),
    Figure("pubsub_patterns", "pubsub_patterns", "Patterns with subscribers"),
    Figure("client_query_buffer_limit_disconnections", "client_query_buffer_limit_disconnections",
           "Clients disconnected for exceeding client-query-buffer-limit", counter=True),
    Figure("client_output_buffer_limit_disconnections", "client_output_buffer_limit_disconnections",
           "Clients disconnected for exceeding client-output-buffer-limit", counter=True),
)


def server_registry(*collectors: Collector) -> CollectorRegistry:
    """A server's registry: the process's figures (prometheus_client's standard collectors:
    process_resident_memory_bytes, process_cpu_seconds_total, open files, the Python version,
    GC) and the server's collectors."""
    # The collectors describe no names up front (which series exist depends on the state):
    # registered as nameless, they still answer a `name[]`-restricted scrape.
    registry = CollectorRegistry(support_collectors_without_names=True)
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    for collector in collectors:
        registry.register(collector)
    return registry


class CoreCollector(Collector):
    """A prometheus_client collector for one `ServerCore`."""

    def __init__(self, core: ServerCore) -> None:
        self.core = core

    def collect(self) -> Iterator[Metric]:
        core = self.core
        server = section(core.info_sections, "server")
        yield InfoMetricFamily(PREFIX + "build", "Rill's version, the Redis version it is compatible with, its mode", value={
            "version": str(server.get("rill_version", "")),
            "redis_version": str(server.get("redis_version", "")),
            "mode": core.mode,
        })
        yield from families(server, _SERVER)
        yield from families(section(core.info_sections, "clients"), _CLIENTS)
        yield from families(section(core.info_sections, "stats"), _STATS)
        yield from self._commands()

    def _commands(self) -> Iterator[Metric]:
        dispatcher = self.core.dispatcher
        calls = CounterMetricFamily(PREFIX + "commands", "Calls per command (INFO commandstats)", labels=["command"])
        failed = CounterMetricFamily(PREFIX + "commands_failed", "Calls per command that replied an error", labels=["command"])
        rejected = CounterMetricFamily(
            PREFIX + "commands_rejected", "Calls per command refused before running (arity, auth, state)", labels=["command"]
        )
        seconds = CounterMetricFamily(PREFIX + "commands_duration_seconds", "Time spent running each command", labels=["command"])
        for name, st in dispatcher.stats.items():
            if st.calls or st.failed or st.rejected:  # as INFO commandstats lists them
                calls.add_metric([name], st.calls)
                failed.add_metric([name], st.failed)
                rejected.add_metric([name], st.rejected)
                seconds.add_metric([name], st.nsec / 1e9)
        yield from (calls, failed, rejected, seconds)
        errors = CounterMetricFamily(PREFIX + "errors", "Error replies per error code (INFO errorstats)", labels=["error"])
        for code, count in sorted(dispatcher.errors.items()):
            errors.add_metric([code], count)
        yield errors
