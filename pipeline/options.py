"""The options of the ``rill`` data source: their names, defaults and validation, turned into
frozen values the readers and writers use.  Every bad option fails here, on the driver, with a
message naming the option, before any task starts.

Spark hands options over with lower-cased keys and string values; the names documented (and
accepted) are the camel-case ones in docs/pipeline.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlparse

from pipeline import ids

DEFAULT_URL: Final = "redis://127.0.0.1:6379/0"


class OptionError(ValueError):
    """An option of the rill data source is missing or invalid."""


@dataclass(frozen=True)
class Bound:
    """One end of a range to read in one stream: an ID, included or not, or a symbolic end."""

    kind: str  # "earliest", "latest" or "id"
    id: int = 0
    inclusive: bool = True


EARLIEST: Final = Bound("earliest")
LATEST: Final = Bound("latest")


@dataclass(frozen=True)
class Tls:
    """TLS for the nodes (a `rediss://` url) or the Sentinels: the CA to verify them with and
    this client's certificate, if they ask for one."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None


NO_TLS: Final = Tls()


@dataclass(frozen=True)
class ConnectionOptions:
    """Where the primary and the replicas are and how to reach them."""

    url: str
    sentinels: tuple[tuple[str, int], ...]
    master_name: str | None
    sentinel_password: str | None
    read_from: str  # "primary" or "replica"
    replica_urls: tuple[str, ...]
    socket_timeout: float
    replica_wait_timeout: float  # seconds a replica reader waits for the replica to catch up
    tls: Tls = NO_TLS  # used for the nodes when `url` is rediss://
    sentinel_tls: Tls | None = None  # the Sentinels speak TLS (sentinelTls=true)
    failover_timeout: float = 60.0  # seconds a task keeps looking for a primary or a node


@dataclass(frozen=True)
class ReadOptions:
    streams: tuple[str, ...]  # empty with a pattern: the streams are found at each batch
    starting: Mapping[str, Bound]
    ending: Mapping[str, Bound]
    partitions_per_stream: int
    batch_size: int
    max_entries_per_trigger: int | None
    fail_on_data_loss: bool
    group: str | None
    consumer: str | None  # None: a name unique to the query (pipeline.groups)
    arrow_batches: bool
    read_committed: str = "auto"  # "auto" (when the server has XCOMMITTED), "true" or "false"
    streams_pattern: str | None = None  # a glob of stream keys (SCAN MATCH ... TYPE stream)
    starting_default: Bound = LATEST  # for streams not named in startingOffsets (a pattern's new ones)
    min_entries_per_trigger: int | None = None
    max_trigger_delay: float = 15 * 60.0  # seconds a trigger may wait for min_entries_per_trigger

    def bound(self, stream: str) -> Bound:
        return self.starting.get(stream, self.starting_default)


@dataclass(frozen=True)
class WriteOptions:
    stream: str | None  # None: each row's `stream` column names its stream
    maxlen: int | None
    maxlen_exact: bool
    batch_size: int
    idempotence: str  # "auto", "required" or "off"
    idmp_duration: int
    idmp_maxsize: int
    idmp_producers: int  # producer IDs per query and stream (see pipeline.idempotence)
    write_concern: str = "auto"  # "auto", "majority", "1", "0" or "aof" (pipeline.durability)
    write_timeout: float = 10.0  # seconds a partition's WAIT may take


def _get(options: Mapping[str, str], name: str) -> str | None:
    # Spark lower-cases option keys; a plain dict from a test may not.
    value = options.get(name.lower(), options.get(name))
    return None if value is None else str(value)


def _int(options: Mapping[str, str], name: str, default: int | None, lo: int, hi: int | None = None) -> int | None:
    text = _get(options, name)
    if text is None:
        return default
    try:
        value = int(text.strip())
    except ValueError:
        raise OptionError(f"option {name} must be an integer, got {text!r}") from None
    if value < lo or (hi is not None and value > hi):
        limit = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
        raise OptionError(f"option {name} must be {limit}, got {value}")
    return value


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    text = _get(options, name)
    if text is None:
        return default
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise OptionError(f"option {name} must be true or false, got {text!r}")


def _choice(options: Mapping[str, str], name: str, default: str, choices: tuple[str, ...]) -> str:
    text = _get(options, name)
    if text is None:
        return default
    lowered = text.strip().lower()
    if lowered not in choices:
        raise OptionError(f"option {name} must be one of {', '.join(choices)}, got {text!r}")
    return lowered


def _host_port(item: str, name: str) -> tuple[str, int]:
    host, sep, port = item.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise OptionError(f"option {name} takes host:port[,host:port...], got {item!r}")
    return host.strip("[]"), int(port)


def _duration(options: Mapping[str, str], name: str, default_ms: int, lo: int = 0) -> float:
    value = _int(options, name, default_ms, lo)
    assert value is not None
    return value / 1000


_UNITS: Final = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def _spark_duration(options: Mapping[str, str], name: str, default: float) -> float:
    """A duration as Spark's Kafka source takes it: `15m`, `30s`, `500ms` (a bare number is ms)."""
    text = _get(options, name)
    if text is None:
        return default
    value = text.strip().lower()
    digits = value.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = value[len(digits):] or "ms"
    if not digits.isdigit() or unit not in _UNITS:
        raise OptionError(f"option {name} takes a duration like 30s, 5m or 500ms, got {text!r}")
    return int(digits) * _UNITS[unit]


def _tls(options: Mapping[str, str], prefix: str) -> Tls:
    ca, cert, key = (_get(options, f"{prefix}{part}") for part in ("CaFile", "CertFile", "KeyFile"))
    if (cert is None) != (key is None):
        raise OptionError(f"options {prefix}CertFile and {prefix}KeyFile go together (the client certificate and "
                          "its key)")
    for name, path in ((f"{prefix}CaFile", ca), (f"{prefix}CertFile", cert), (f"{prefix}KeyFile", key)):
        if path is not None and not os.path.isfile(path):
            raise OptionError(f"option {name}: no such file {path!r}")
    return Tls(ca, cert, key)


def _check_url(url: str, name: str) -> str:
    parsed = urlparse(url)
    if parsed.scheme not in ("redis", "rediss") or not parsed.hostname:
        raise OptionError(f"option {name} must be a redis://[:password@]host:port[/db] URL, got {url!r}")
    return url


def connection_options(options: Mapping[str, str]) -> ConnectionOptions:
    url = _check_url(_get(options, "url") or DEFAULT_URL, "url")
    sentinels_text = _get(options, "sentinels")
    sentinels = tuple(_host_port(s, "sentinels") for s in sentinels_text.split(",") if s.strip()) if sentinels_text else ()
    master_name = _get(options, "masterName")
    if sentinels and not master_name:
        raise OptionError("option sentinels needs masterName (the name the sentinels monitor the primary under)")
    if master_name and not sentinels:
        raise OptionError("option masterName needs sentinels (host:port of one or more Sentinels)")
    replica_text = _get(options, "replicaUrls") or ""
    replica_urls = tuple(_check_url(u.strip(), "replicaUrls") for u in replica_text.split(",") if u.strip())
    socket_timeout = _int(options, "socketTimeoutMs", 10_000, 1)
    replica_wait = _int(options, "replicaWaitTimeoutMs", 30_000, 0)
    assert socket_timeout is not None and replica_wait is not None
    tls = _tls(options, "ssl")
    if (tls.ca_file or tls.cert_file) and not url.startswith("rediss://"):
        raise OptionError("options sslCaFile, sslCertFile and sslKeyFile need a rediss:// url")
    sentinel_tls = _tls(options, "sentinelSsl") if _bool(options, "sentinelTls", False) else None
    return ConnectionOptions(
        url=url,
        sentinels=sentinels,
        master_name=master_name,
        sentinel_password=_get(options, "sentinelPassword"),
        read_from=_choice(options, "readFrom", "primary", ("primary", "replica")),
        replica_urls=replica_urls,
        socket_timeout=socket_timeout / 1000,
        replica_wait_timeout=replica_wait / 1000,
        tls=tls,
        sentinel_tls=sentinel_tls,
        failover_timeout=_duration(options, "failoverTimeoutMs", 60_000, 1),
    )


def _parse_bound(text: str, name: str, *, end: bool) -> Bound:
    value = text.strip()
    if value.lower() in ("earliest", "latest"):
        return EARLIEST if value.lower() == "earliest" else LATEST
    exclusive = value.startswith("(")
    try:
        # A bare <ms> means the whole millisecond on both ends, as in XRANGE.
        parsed = ids.parse(value[1:] if exclusive else value, missing_seq=ids.MAX_PART if end and not exclusive else 0)
    except ids.InvalidStreamId as e:
        raise OptionError(f"option {name}: {e}") from None
    return Bound("id", parsed, not exclusive)


def _offsets(options: Mapping[str, str], name: str, streams: tuple[str, ...], default: Bound, *,
             end: bool) -> dict[str, Bound]:
    text = _get(options, name)
    if text is None:
        return {s: default for s in streams}
    stripped = text.strip()
    if stripped.lower() in ("earliest", "latest"):
        return {s: _parse_bound(stripped, name, end=end) for s in streams}
    try:
        given = json.loads(stripped)
    except json.JSONDecodeError:
        raise OptionError(f"option {name} must be earliest, latest or JSON like {{\"stream\": \"1700000000000-0\"}}, "
                          f"got {text!r}") from None
    if not isinstance(given, dict) or not all(isinstance(v, str) for v in given.values()):
        raise OptionError(f"option {name} must map stream names to IDs (strings), got {text!r}")
    unknown = sorted(set(given) - set(streams))
    if unknown:
        raise OptionError(f"option {name} names streams that are not in option streams: {', '.join(unknown)}")
    return {s: _parse_bound(given[s], name, end=end) if s in given else default for s in streams}


def read_options(options: Mapping[str, str], *, streaming: bool) -> ReadOptions:
    streams_text = _get(options, "streams")
    streams = tuple(dict.fromkeys(s.strip() for s in (streams_text or "").split(",") if s.strip()))
    pattern = _get(options, "streamsPattern")
    if pattern is not None and not pattern.strip():
        raise OptionError("option streamsPattern is empty")
    if streams and pattern is not None:
        raise OptionError("give option streams or option streamsPattern, not both")
    if not streams and pattern is None:
        raise OptionError("option streams is required: the stream keys to read, comma-separated "
                          "(or streamsPattern, a glob of them)")
    group = _get(options, "group")
    default_start = LATEST if streaming else EARLIEST
    if pattern is not None and _get(options, "startingOffsets") is not None:
        text = (_get(options, "startingOffsets") or "").strip().lower()
        if text not in ("earliest", "latest"):
            raise OptionError("with streamsPattern, startingOffsets is earliest or latest")
        default_start = EARLIEST if text == "earliest" else LATEST
    starting = _offsets(options, "startingOffsets", streams, default_start, end=False) if streams else {}
    ending = _offsets(options, "endingOffsets", streams, LATEST, end=True) if streams else {}
    if pattern is not None and (_get(options, "endingOffsets") or "latest").strip().lower() != "latest":
        raise OptionError("with streamsPattern, endingOffsets is latest")
    if streaming and _get(options, "endingOffsets") is not None:
        raise OptionError("option endingOffsets applies to batch queries only")
    if not streaming:
        if any(b == LATEST for b in starting.values()) or (pattern is not None and default_start == LATEST):
            raise OptionError("startingOffsets=latest would read nothing in a batch query; use earliest or IDs")
        if any(b == EARLIEST for b in ending.values()):
            raise OptionError("endingOffsets=earliest would read nothing; use latest or IDs")
        if group is not None:
            raise OptionError("option group (consumer-group mode) applies to streaming queries only")
    if streaming and any(b.kind == "id" and not b.inclusive for b in starting.values()) and group is not None:
        raise OptionError("in consumer-group mode startingOffsets gives where a new group starts: "
                          "earliest, latest or an ID, not an exclusive (ID")
    partitions = _int(options, "partitionsPerStream", 1, 1, 1024)
    batch_size = _int(options, "batchSize", 5000, 1, 1_000_000)
    max_entries = _int(options, "maxEntriesPerTrigger", None, 1)
    min_entries = _int(options, "minOffsetsPerTrigger", None, 1)
    assert partitions is not None and batch_size is not None
    if min_entries is not None and not streaming:
        raise OptionError("option minOffsetsPerTrigger applies to streaming queries only")
    if min_entries is not None and max_entries is not None and min_entries > max_entries:
        raise OptionError(f"option minOffsetsPerTrigger ({min_entries}) is above maxEntriesPerTrigger ({max_entries})")
    if group is not None and _choice(options, "readFrom", "primary", ("primary", "replica")) == "replica":
        raise OptionError("consumer-group mode reads with XREADGROUP, a write: it needs readFrom=primary")
    return ReadOptions(
        streams=streams,
        starting=starting,
        ending=ending,
        partitions_per_stream=partitions,
        batch_size=batch_size,
        max_entries_per_trigger=max_entries,
        fail_on_data_loss=_bool(options, "failOnDataLoss", True),
        group=group,
        consumer=_get(options, "consumer") or None,
        arrow_batches=_bool(options, "arrowBatches", True),
        read_committed=_choice(options, "readCommitted", "auto", ("auto", "true", "false")),
        streams_pattern=pattern.strip() if pattern is not None else None,
        starting_default=default_start,
        min_entries_per_trigger=min_entries,
        max_trigger_delay=_spark_duration(options, "maxTriggerDelay", 15 * 60.0),
    )


def write_options(options: Mapping[str, str]) -> WriteOptions:
    maxlen_text = _get(options, "maxlen")
    maxlen: int | None = None
    exact = False
    if maxlen_text is not None:
        text = maxlen_text.strip()
        exact = text.startswith("=")
        digits = text[1:].strip() if exact else text.lstrip("~").strip()
        if not digits.isdigit():
            raise OptionError(f"option maxlen takes N (trim to about N entries) or =N (exactly N), got {maxlen_text!r}")
        maxlen = int(digits)
    stream = _get(options, "stream")
    batch_size = _int(options, "batchSize", 1000, 1, 1_000_000)
    duration = _int(options, "idmpDuration", 900, 1, 86_400)
    maxsize = _int(options, "idmpMaxsize", 10_000, 1, 10_000)
    producers = _int(options, "idmpProducers", 64, 1, 4096)
    assert batch_size is not None and duration is not None and maxsize is not None and producers is not None
    return WriteOptions(
        stream=stream.strip() if stream and stream.strip() else None,
        maxlen=maxlen,
        maxlen_exact=exact,
        batch_size=batch_size,
        idempotence=_choice(options, "idempotence", "auto", ("auto", "required", "off")),
        idmp_duration=duration,
        idmp_maxsize=maxsize,
        idmp_producers=producers,
        write_concern=_choice(options, "writeConcern", "auto", ("auto", "majority", "1", "0", "aof")),
        write_timeout=_duration(options, "writeTimeoutMs", 10_000, 1),
    )
