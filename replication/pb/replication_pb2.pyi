from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ReplicaMessage(_message.Message):
    __slots__ = ("hello", "ack")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    ACK_FIELD_NUMBER: _ClassVar[int]
    hello: Hello
    ack: Ack
    def __init__(self, hello: _Optional[_Union[Hello, _Mapping]] = ..., ack: _Optional[_Union[Ack, _Mapping]] = ...) -> None: ...

class Hello(_message.Message):
    __slots__ = ("protocol_version", "replica_id", "replid", "offset", "announce_host", "announce_port", "auth", "user", "fence_epoch", "log_epoch", "failover")
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    REPLID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    ANNOUNCE_HOST_FIELD_NUMBER: _ClassVar[int]
    ANNOUNCE_PORT_FIELD_NUMBER: _ClassVar[int]
    AUTH_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    FENCE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LOG_EPOCH_FIELD_NUMBER: _ClassVar[int]
    FAILOVER_FIELD_NUMBER: _ClassVar[int]
    protocol_version: int
    replica_id: str
    replid: str
    offset: int
    announce_host: str
    announce_port: int
    auth: str
    user: str
    fence_epoch: int
    log_epoch: int
    failover: bool
    def __init__(self, protocol_version: _Optional[int] = ..., replica_id: _Optional[str] = ..., replid: _Optional[str] = ..., offset: _Optional[int] = ..., announce_host: _Optional[str] = ..., announce_port: _Optional[int] = ..., auth: _Optional[str] = ..., user: _Optional[str] = ..., fence_epoch: _Optional[int] = ..., log_epoch: _Optional[int] = ..., failover: _Optional[bool] = ...) -> None: ...

class Ack(_message.Message):
    __slots__ = ("applied_offset", "fsynced_offset", "lease_stamp", "written_offset")
    APPLIED_OFFSET_FIELD_NUMBER: _ClassVar[int]
    FSYNCED_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LEASE_STAMP_FIELD_NUMBER: _ClassVar[int]
    WRITTEN_OFFSET_FIELD_NUMBER: _ClassVar[int]
    applied_offset: int
    fsynced_offset: int
    lease_stamp: int
    written_offset: int
    def __init__(self, applied_offset: _Optional[int] = ..., fsynced_offset: _Optional[int] = ..., lease_stamp: _Optional[int] = ..., written_offset: _Optional[int] = ...) -> None: ...

class PrimaryMessage(_message.Message):
    __slots__ = ("continue_sync", "full_sync", "snapshot_chunk", "batch", "heartbeat")
    CONTINUE_SYNC_FIELD_NUMBER: _ClassVar[int]
    FULL_SYNC_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_CHUNK_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    continue_sync: ContinueSync
    full_sync: FullSync
    snapshot_chunk: SnapshotChunk
    batch: Batch
    heartbeat: Heartbeat
    def __init__(self, continue_sync: _Optional[_Union[ContinueSync, _Mapping]] = ..., full_sync: _Optional[_Union[FullSync, _Mapping]] = ..., snapshot_chunk: _Optional[_Union[SnapshotChunk, _Mapping]] = ..., batch: _Optional[_Union[Batch, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ...) -> None: ...

class ContinueSync(_message.Message):
    __slots__ = ("replid", "offset", "epoch", "epoch_history")
    REPLID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    EPOCH_HISTORY_FIELD_NUMBER: _ClassVar[int]
    replid: str
    offset: int
    epoch: int
    epoch_history: _containers.RepeatedCompositeFieldContainer[EpochStart]
    def __init__(self, replid: _Optional[str] = ..., offset: _Optional[int] = ..., epoch: _Optional[int] = ..., epoch_history: _Optional[_Iterable[_Union[EpochStart, _Mapping]]] = ...) -> None: ...

class FullSync(_message.Message):
    __slots__ = ("replid", "offset", "snapshot_size", "reason", "epoch", "epoch_history")
    REPLID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_SIZE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    EPOCH_HISTORY_FIELD_NUMBER: _ClassVar[int]
    replid: str
    offset: int
    snapshot_size: int
    reason: str
    epoch: int
    epoch_history: _containers.RepeatedCompositeFieldContainer[EpochStart]
    def __init__(self, replid: _Optional[str] = ..., offset: _Optional[int] = ..., snapshot_size: _Optional[int] = ..., reason: _Optional[str] = ..., epoch: _Optional[int] = ..., epoch_history: _Optional[_Iterable[_Union[EpochStart, _Mapping]]] = ...) -> None: ...

class EpochStart(_message.Message):
    __slots__ = ("epoch", "start_offset")
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    start_offset: int
    def __init__(self, epoch: _Optional[int] = ..., start_offset: _Optional[int] = ...) -> None: ...

class SnapshotChunk(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    def __init__(self, data: _Optional[bytes] = ...) -> None: ...

class Batch(_message.Message):
    __slots__ = ("start_offset", "data", "unit_sizes", "lease_stamp", "committed_offset")
    START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    UNIT_SIZES_FIELD_NUMBER: _ClassVar[int]
    LEASE_STAMP_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_OFFSET_FIELD_NUMBER: _ClassVar[int]
    start_offset: int
    data: bytes
    unit_sizes: _containers.RepeatedScalarFieldContainer[int]
    lease_stamp: int
    committed_offset: int
    def __init__(self, start_offset: _Optional[int] = ..., data: _Optional[bytes] = ..., unit_sizes: _Optional[_Iterable[int]] = ..., lease_stamp: _Optional[int] = ..., committed_offset: _Optional[int] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ("primary_offset", "ack_requested", "epoch", "lease_stamp", "committed_offset")
    PRIMARY_OFFSET_FIELD_NUMBER: _ClassVar[int]
    ACK_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEASE_STAMP_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_OFFSET_FIELD_NUMBER: _ClassVar[int]
    primary_offset: int
    ack_requested: bool
    epoch: int
    lease_stamp: int
    committed_offset: int
    def __init__(self, primary_offset: _Optional[int] = ..., ack_requested: _Optional[bool] = ..., epoch: _Optional[int] = ..., lease_stamp: _Optional[int] = ..., committed_offset: _Optional[int] = ...) -> None: ...
