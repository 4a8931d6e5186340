"""RDB files read by the codec (node/rdb/file.py) and loaded into a keyspace
(node/persistence/redis_rdb.py), on the 7.2.4 fixture file (tests/persistence/data): every
record is found, a file cut anywhere is refused at or before the cut, any single changed byte
is refused (by the parser where it breaks the structure, by the CRC otherwise), and a file
written back loads to the same keyspace."""

from __future__ import annotations

import os

import pytest

from node.engine.digest import digest_keyspace
from node.engine.keyspace import Keyspace
from node.persistence.redis_rdb import RdbLoadError, load_rdb_bytes, rdb_aux_fields
from node.rdb.dump import create_payload
from node.rdb.file import Aux, End, Key, read_records, write_rdb

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "persistence", "data", "redis-7.2.4.rdb")


@pytest.fixture(scope="module")
def good() -> bytes:
    with open(FIXTURE, "rb") as f:
        return f.read()


def test_the_records_of_a_redis_file(good: bytes) -> None:
    records = list(read_records(good, 16))
    aux = {r.name: r.value for r in records if isinstance(r, Aux)}
    assert aux[b"redis-ver"] == b"7.2.4" and aux[b"redis-bits"] == b"64"
    keys = {(r.db, r.key): r for r in records if isinstance(r, Key)}
    assert len(keys) == 8
    assert keys[(3, b"in-db-3")].value == b"three"
    assert keys[(0, b"volatile")].expire_ms == 4102444800000
    assert isinstance(records[-1], End) and records[-1].checksum_checked


def _refusal_offset(data: bytes) -> int:
    with pytest.raises(RdbLoadError) as info:
        load_rdb_bytes(data, Keyspace(16), False, "dump.rdb")
    text = str(info.value)
    assert text.startswith("Bad RDB file dump.rdb")
    return int(text.split(" at offset ")[1].split(":")[0]) if " at offset " in text else len(data)


def test_a_file_cut_anywhere_is_refused_at_or_before_the_cut(good: bytes) -> None:
    for cut in [*range(0, 64), *range(64, len(good), 97), *range(len(good) - 16, len(good))]:
        assert _refusal_offset(good[:cut]) <= cut, cut


def test_any_changed_byte_is_refused(good: bytes) -> None:
    for i in range(0, len(good), 41):
        damaged = good[:i] + bytes([good[i] ^ 0x41]) + good[i + 1 :]
        _refusal_offset(damaged)


def test_a_file_written_back_loads_the_same_keyspace(good: bytes) -> None:
    first = Keyspace(16)
    load_rdb_bytes(good, first, False, "dump.rdb")
    for version in (10, 11):
        for compress in (True, False):
            data = b"".join(write_rdb(first, version, rdb_aux_fields("7.2.4", 0, 0), compress))
            again = Keyspace(16)
            loaded = load_rdb_bytes(data, again, False, "again.rdb")
            assert loaded.keys == 8
            assert digest_keyspace(again) == digest_keyspace(first)
            # Groups, PELs and consumers too (RDB 10 leaves out the consumers' active times).
            for db, values in enumerate(first.dbs):
                for key, value in values.items():
                    assert create_payload(again.dbs[db][key], version) == create_payload(value, version)
            assert again.expires[0].get(b"volatile") == first.expires[0].get(b"volatile")
