"""Rows of a DataFrame from stream entries: the schema (the default one, or the user's, which
picks entry fields by name into typed columns) and the conversion of raw XRANGE/XREADGROUP
entries into Arrow record batches whose schema is exactly the one Spark declared.

The metadata columns ``stream``, ``id``, ``ts`` and ``fields`` are reserved: in a user schema
they mean the stream key, the entry ID, the time part of the ID and the map of all fields;
every other column takes the entry field of the same name (null when the entry lacks it).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc

DEFAULT_SCHEMA: Final = "stream string, id string, ts timestamp, fields map<string,string>"

_TS: Final = pa.timestamp("us", tz="UTC")
_FIELDS: Final = pa.map_(pa.string(), pa.string())
# Spark type name (DataType.typeName()) -> Arrow type of the column Spark expects.
_SIMPLE: Final = {
    "string": pa.string(), "long": pa.int64(), "integer": pa.int32(), "short": pa.int16(), "byte": pa.int8(),
    "double": pa.float64(), "float": pa.float32(), "boolean": pa.bool_(), "timestamp": _TS,
    "timestamp_ntz": pa.timestamp("us"), "date": pa.date32(), "binary": pa.binary(),
}
RESERVED: Final = {"stream": pa.string(), "id": pa.string(), "ts": _TS, "fields": _FIELDS}


class SchemaError(ValueError):
    """A user schema the source cannot fill."""


class FieldValueError(ValueError):
    """An entry field whose value does not convert to its column's type."""


@dataclass(frozen=True)
class Column:
    name: str
    arrow_type: pa.DataType


@dataclass(frozen=True)
class Projection:
    """What read() needs to build batches; derived once on the driver from the Spark schema,
    picklable (Arrow types pickle), so it travels inside the partitions."""

    columns: tuple[Column, ...]

    @property
    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, c.arrow_type) for c in self.columns])


def projection(schema: object) -> Projection:
    """The projection for a Spark StructType (checked: reserved columns must have their type,
    others a type a string converts to)."""
    from pyspark.sql.types import DecimalType, MapType, StringType, StructType

    assert isinstance(schema, StructType)
    columns = []
    for field in schema.fields:
        dtype = field.dataType
        if field.name in RESERVED:
            expected = RESERVED[field.name]
            ok = (isinstance(dtype, MapType) and isinstance(dtype.keyType, StringType)
                  and isinstance(dtype.valueType, StringType)) if field.name == "fields" \
                else _SIMPLE.get(dtype.typeName()) == expected
            if not ok:
                raise SchemaError(f"column {field.name!r} is reserved for the entry's "
                                  f"{'field map' if field.name == 'fields' else field.name} and must be "
                                  f"{'map<string,string>' if field.name == 'fields' else 'timestamp' if field.name == 'ts' else 'string'}, "
                                  f"got {dtype.simpleString()}")
            columns.append(Column(field.name, expected))
        elif isinstance(dtype, DecimalType):
            columns.append(Column(field.name, pa.decimal128(dtype.precision, dtype.scale)))
        elif dtype.typeName() in _SIMPLE:
            columns.append(Column(field.name, _SIMPLE[dtype.typeName()]))
        else:
            raise SchemaError(f"column {field.name!r} has type {dtype.simpleString()}: entry fields are strings and "
                              f"convert to {', '.join(sorted(_SIMPLE))} or decimal only (or read them from `fields`)")
    return Projection(tuple(columns))


def _convert(values: pa.Array, column: Column, stream: str, entry_ids: Sequence[bytes]) -> pa.Array:
    """A string column cast to the column's type; a value that does not convert is an error
    naming the stream, the entry and the field."""
    target = column.arrow_type
    if target == pa.string():
        return values
    try:
        if pa.types.is_timestamp(target):
            return _timestamps(values, target)
        return pc.cast(values, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        for value, entry in zip(values.to_pylist(), entry_ids):
            if value is None:
                continue
            try:
                pc.cast(pa.array([value]), target) if not pa.types.is_timestamp(target) else _timestamps(
                    pa.array([value]), target)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                raise FieldValueError(f"stream {stream!r}, entry {entry.decode()}: field {column.name!r} is "
                                      f"{value!r}, not a {target}") from None
        raise


def _timestamps(values: pa.Array, target: pa.DataType) -> pa.Array:
    """Epoch milliseconds (all digits) or ISO-8601, UTC when it has no zone; value by value."""
    digits = pc.utf8_is_digit(values).fill_null(False)
    epoch = pc.multiply(pc.cast(pc.if_else(digits, values, "0"), pa.int64()), 1000).cast(pa.timestamp("us"))
    iso = _iso(pc.if_else(digits, "1970-01-01T00:00:00", values))
    return pc.if_else(digits, epoch, iso).cast(target)


def _iso(values: pa.Array) -> pa.Array:
    """ISO-8601 strings as UTC wall time (timestamp without zone)."""
    naive = pa.timestamp("us")
    try:
        return pc.cast(values, pa.timestamp("us", tz="UTC")).cast(naive)  # with a zone
    except pa.ArrowInvalid:
        pass
    try:
        return pc.cast(values, naive)  # without one: UTC
    except pa.ArrowInvalid:
        if len(values) <= 1:
            raise
    # both kinds mixed: one value at a time (raises on a value that is neither)
    return pa.concat_arrays([_iso(pa.array([v], pa.string())) if v is not None else pa.nulls(1, naive)
                             for v in values.to_pylist()])


def batch(projection: Projection, stream: str, entries: Sequence[Sequence[object]]) -> pa.RecordBatch:
    """An Arrow batch of the given raw entries: ``[id, [field, value, field, value, ...]]`` as
    hiredis returns them (bytes). An entry deleted while pending comes as ``[id, None]``."""
    ids_: list[bytes] = []
    flat: list[list[bytes]] = []
    for entry in entries:
        ids_.append(entry[0])  # type: ignore[arg-type]
        flat.append(entry[1] or [])  # type: ignore[arg-type]
    arrays = []
    for column in projection.columns:
        if column.name == "stream":
            arrays.append(pa.array([stream] * len(ids_), pa.string()))
        elif column.name == "id":
            arrays.append(pa.array(ids_, pa.binary()).cast(pa.string()))
        elif column.name == "ts":
            millis = [int(i.split(b"-", 1)[0]) * 1000 for i in ids_]
            arrays.append(pa.array(millis, pa.int64()).cast(pa.timestamp("us")).cast(_TS))
        elif column.name == "fields":
            arrays.append(_field_maps(flat))
        else:
            name = column.name.encode()
            raw = pa.array([_lookup(fv, name) for fv in flat], pa.binary())
            arrays.append(raw if column.arrow_type == pa.binary()
                          else _convert(_utf8(raw, stream, ids_), column, stream, ids_))
    return pa.RecordBatch.from_arrays(arrays, schema=projection.arrow_schema)


def rows(projection: Projection, stream: str, entries: Sequence[Sequence[object]]) -> Iterator[tuple[object, ...]]:
    """The same rows as `batch`, as Python tuples (option arrowBatches=false: the slower path
    Spark also accepts, kept to measure the difference). Metadata columns are built directly;
    a schema with entry-field columns goes through `batch`."""
    names = [c.name for c in projection.columns]
    if any(name not in RESERVED for name in names):
        for row in batch(projection, stream, entries).to_pylist():
            yield tuple(row.values())
        return
    for entry in entries:
        raw_id: bytes = entry[0]  # type: ignore[assignment]
        fv: list[bytes] = entry[1] or []  # type: ignore[assignment]
        values = {
            "stream": stream,
            "id": raw_id.decode(),
            "ts": datetime.fromtimestamp(int(raw_id.split(b"-", 1)[0]) / 1000, UTC),
            "fields": {k.decode(): v.decode() for k, v in zip(fv[0::2], fv[1::2])} if "fields" in names else None,
        }
        yield tuple(values[name] for name in names)


def output(projection: Projection, stream: str, entries: Sequence[Sequence[object]],
           as_arrow: bool) -> Iterator[object]:
    """What read() yields for a page of entries: one Arrow batch, or tuples."""
    if as_arrow:
        yield batch(projection, stream, entries)
    else:
        yield from rows(projection, stream, entries)


def _lookup(fv: list[bytes], name: bytes) -> bytes | None:
    # Field names sit at even positions; the last occurrence wins, as in a map.
    for k in range(len(fv) - 2, -1, -2):
        if fv[k] == name:
            return fv[k + 1]
    return None


def _field_maps(flat: list[list[bytes]]) -> pa.Array:
    offsets = [0]
    keys: list[bytes] = []
    items: list[bytes] = []
    for fv in flat:
        keys.extend(fv[0::2])
        items.extend(fv[1::2])
        offsets.append(len(keys))
    return pa.MapArray.from_arrays(pa.array(offsets, pa.int32()), _utf8(pa.array(keys, pa.binary()), "", []),
                                   _utf8(pa.array(items, pa.binary()), "", []), type=_FIELDS)


def _utf8(values: pa.Array, stream: str, entry_ids: Sequence[bytes]) -> pa.Array:
    try:
        return values.cast(pa.string())
    except pa.ArrowInvalid:
        raise FieldValueError(f"stream {stream!r}: an entry field is not valid UTF-8; read it into a binary "
                              "column of a user schema instead") from None
