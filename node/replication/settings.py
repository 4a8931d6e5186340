"""The `replication` package's settings and TLS credentials, from the node's configuration
(docs/replication.md lists the directives)."""

from __future__ import annotations

from node.config import Config
from replication import ClientTls, OutputBufferLimit, PrimarySettings, ReplicaSettings, ServerTls


def primary_settings(config: Config) -> PrimarySettings:
    timeout = float(config.get_int("repl-timeout"))
    hard, soft, seconds = config.output_limits.get("slave", (0, 0, 0))
    return PrimarySettings(
        requirepass=config.requirepass or None,
        # A heartbeat at least twice per repl-timeout, so an idle link never looks dead.
        ping_period=min(float(config.get_int("repl-ping-replica-period")), timeout / 2),
        timeout=timeout,
        output_buffer_limit=OutputBufferLimit(hard, soft, float(seconds)),
    )


def replica_settings(config: Config) -> ReplicaSettings:
    return ReplicaSettings(
        masterauth=config.get("masterauth") or None,
        timeout=float(config.get_int("repl-timeout")),
        apply_slice_seconds=config.get_int("repl-apply-slice-time") / 1e6,
    )


def server_tls(config: Config) -> ServerTls | None:
    if config.get("repl-tls") != "yes":
        return None
    if not config.get("repl-tls-cert-file") or not config.get("repl-tls-key-file"):
        raise OSError("repl-tls yes needs repl-tls-cert-file and repl-tls-key-file (the node's certificate)")
    ca = config.get("repl-tls-ca-cert-file")
    mutual = config.get("repl-tls-auth-clients") == "yes"
    return ServerTls.from_files(
        config.get("repl-tls-cert-file"), config.get("repl-tls-key-file"),
        ca if mutual and ca else None,
    )


def client_tls(config: Config) -> ClientTls | None:
    if config.get("repl-tls") != "yes":
        return None
    cert = config.get("repl-tls-cert-file")
    key = config.get("repl-tls-key-file")
    return ClientTls.from_files(
        config.get("repl-tls-ca-cert-file") or None, cert or None, key or None,
    )
