"""The `replication` package's settings and TLS credentials, from the node's configuration
(docs/replication.md lists the directives)."""

from __future__ import annotations

from collections.abc import Callable

from node.config import Config
from replication import ClientTls, OutputBufferLimit, PrimarySettings, ReplicaSettings, ServerTls


def primary_settings(config: Config, authenticate: Callable[[str, str, str], str | None] | None = None) -> PrimarySettings:
    """`authenticate`: who may replicate (node/replication/access.py, the node's ACL users)."""
    timeout = float(config.get_int("repl-timeout"))
    hard, soft, seconds = config.output_limits.get("slave", (0, 0, 0))
    return PrimarySettings(
        requirepass=config.requirepass or None,
        authenticate=authenticate,
        # A heartbeat at least twice per repl-timeout, so an idle link never looks dead.
        ping_period=min(float(config.get_int("repl-ping-replica-period")), timeout / 2),
        timeout=timeout,
        output_buffer_limit=OutputBufferLimit(hard, soft, float(seconds)),
    )


def replica_settings(config: Config) -> ReplicaSettings:
    return ReplicaSettings(
        masterauth=config.get("masterauth") or None,
        masteruser=config.get("masteruser") or None,
        timeout=float(config.get_int("repl-timeout")),
        apply_slice_seconds=config.get_int("repl-apply-slice-time") / 1e6,
    )


def server_tls(config: Config) -> ServerTls | None:
    """The gRPC link's server side: `repl-tls` with its own files, or Redis's
    `tls-replication` with the node's tls-* certificate (replicas must present one signed by
    tls-ca-cert-file when tls-auth-clients is yes)."""
    if config.get("repl-tls") == "yes":
        if not config.get("repl-tls-cert-file") or not config.get("repl-tls-key-file"):
            raise OSError("repl-tls yes needs repl-tls-cert-file and repl-tls-key-file (the node's certificate)")
        ca = config.get("repl-tls-ca-cert-file")
        mutual = config.get("repl-tls-auth-clients") == "yes"
        return ServerTls.from_files(
            config.get("repl-tls-cert-file"), config.get("repl-tls-key-file"),
            ca if mutual and ca else None,
        )
    if config.get("tls-replication") == "yes":
        ca = config.get("tls-ca-cert-file")
        mutual = config.get("tls-auth-clients") == "yes"
        return ServerTls.from_files(config.get("tls-cert-file"), config.get("tls-key-file"), ca if mutual and ca else None)
    return None


def client_tls(config: Config) -> ClientTls | None:
    """The gRPC link's replica side (`repl-tls`, or `tls-replication` with the node's tls-*
    files: its client certificate, else its certificate)."""
    if config.get("repl-tls") == "yes":
        cert = config.get("repl-tls-cert-file")
        key = config.get("repl-tls-key-file")
        return ClientTls.from_files(
            config.get("repl-tls-ca-cert-file") or None, cert or None, key or None,
        )
    if config.get("tls-replication") == "yes":
        cert = config.get("tls-client-cert-file") or config.get("tls-cert-file")
        key = config.get("tls-client-key-file") or config.get("tls-key-file")
        return ClientTls.from_files(config.get("tls-ca-cert-file") or None, cert or None, key or None)
    return None
