"""The multi-part AOF directory, as Redis 7 lays it out: a manifest naming one base file (a
snapshot), the incremental AOF files that follow it, and history files waiting for deletion.

    appendonlydir/appendonly.aof.manifest
        file appendonly.aof.2.base.rill seq 2 type b
        file appendonly.aof.3.incr.aof seq 3 type i startoffset 10440
        file appendonly.aof.4.incr.aof seq 4 type i startoffset 99120

Lines are Redis's `file <name> seq <n> type <b|h|i>` with Rill keys (Redis's parser ignores
unknown keys):
- `startoffset`, the effect-log offset at which an incr file begins, so the replication
  offset after loading is `startoffset` of the last incr file plus its length;
- `replid`, `replid2` and `secondoffset` on an incr file that starts where the log took a new
  replication id (a promotion, a restart, a replica adopting its primary's): the position's
  identity from there on, which a restart loads instead of the base's. Recording it this way
  costs a new incr file, not a rewrite of the whole data set.

The manifest is the commit point of every change to the set of files: it is replaced only by
writing a temp file, fsyncing it, renaming it over the old one and fsyncing the directory,
so a crash leaves the old manifest or the new one, each naming files that exist.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Final

from node.persistence.files import atomic_write
from node.text import split_config_line
from replication.replids import is_replid

BASE: Final = "b"
HISTORY: Final = "h"
INCR: Final = "i"

BASE_SUFFIX: Final = ".base.rill"
INCR_SUFFIX: Final = ".incr.aof"
MANIFEST_SUFFIX: Final = ".manifest"
TEMP_PREFIX: Final = "temp-"
_MAX_LINE: Final = 1024


class ManifestError(Exception):
    """The manifest cannot be used; the text names the file, the line and the reason."""


@dataclass(frozen=True, slots=True)
class AofFile:
    name: str
    seq: int
    kind: str  # BASE, HISTORY or INCR
    start_offset: int = -1  # INCR: effect-log offset of the file's first byte
    # INCR: the replication identity the log took at start_offset ("" when unchanged).
    replid: str = ""
    replid2: str = ""
    second_offset: int = -1

    def line(self) -> str:
        text = f"file {self.name} seq {self.seq} type {self.kind}"
        if self.kind == INCR:
            text += f" startoffset {self.start_offset}"
            if self.replid:
                text += f" replid {self.replid} replid2 {self.replid2} secondoffset {self.second_offset}"
        return text + "\n"


@dataclass(frozen=True, slots=True)
class Manifest:
    base: AofFile | None = None
    incrs: tuple[AofFile, ...] = ()
    history: tuple[AofFile, ...] = ()
    # Highest sequence numbers ever used, so a new file never reuses a name.
    base_seq: int = 0
    incr_seq: int = 0

    def format(self) -> bytes:
        files = ([self.base] if self.base else []) + list(self.history) + list(self.incrs)
        return "".join(f.line() for f in files).encode()

    def with_new_incr(
        self, filename: str, start_offset: int, replid: str = "", replid2: str = "", second_offset: int = -1
    ) -> tuple[Manifest, AofFile]:
        """A new incr file starting at `start_offset`; with `replid`, one recording the
        replication identity the log took there."""
        seq = self.incr_seq + 1
        incr = AofFile(f"{filename}.{seq}{INCR_SUFFIX}", seq, INCR, start_offset, replid, replid2, second_offset)
        return replace(self, incrs=(*self.incrs, incr), incr_seq=seq), incr

    def recorded_identity(self) -> AofFile | None:
        """The last incr file that records a replication identity: the one the log has
        after loading (the base's when None)."""
        for incr in reversed(self.incrs):
            if incr.replid:
                return incr
        return None

    def new_base_name(self, filename: str) -> tuple[str, int]:
        seq = self.base_seq + 1
        return f"{filename}.{seq}{BASE_SUFFIX}", seq

    def after_rewrite(self, base_name: str, base_seq: int, covered: int) -> Manifest:
        """The new base replaces the old one and the incr files with seq <= `covered` (the
        ones whose effects the base contains); they become history."""
        old = [replace(f, kind=HISTORY) for f in ((self.base,) if self.base else ())]
        old += [replace(f, kind=HISTORY) for f in self.incrs if f.seq <= covered]
        return replace(
            self,
            base=AofFile(base_name, base_seq, BASE),
            incrs=tuple(f for f in self.incrs if f.seq > covered),
            history=(*self.history, *old),
            base_seq=max(self.base_seq, base_seq),
        )

    def past_seqs_on_disk(self, dirpath: str, filename: str) -> Manifest:
        """Sequence numbers above any base/incr file of `filename` in `dirpath`, so a new
        file never takes the name of one an older manifest (or a crash) left behind."""
        bases, incrs = aof_files_on_disk(dirpath, filename)
        base_seq = max([self.base_seq, *(f.seq for f in bases)])
        incr_seq = max([self.incr_seq, *(f.seq for f in incrs)])
        return replace(self, base_seq=base_seq, incr_seq=incr_seq)

    def without_history(self) -> Manifest:
        return replace(self, history=())

    def files(self) -> list[AofFile]:
        """Base then incr files: the load order."""
        return ([self.base] if self.base else []) + list(self.incrs)


def aof_files_on_disk(dirpath: str, filename: str) -> tuple[list[AofFile], list[AofFile]]:
    """The base files and the incr files of `filename` in `dirpath` (named by their
    sequence numbers, whatever a manifest says), each list by sequence number."""
    try:
        names = os.listdir(dirpath)
    except FileNotFoundError:
        return [], []
    bases: list[AofFile] = []
    incrs: list[AofFile] = []
    prefix = filename + "."
    for name in names:
        if not name.startswith(prefix):
            continue
        seq, _, suffix = name[len(prefix):].partition(".")
        if not seq.isdigit():
            continue
        if "." + suffix == BASE_SUFFIX:
            bases.append(AofFile(name, int(seq), BASE))
        elif "." + suffix == INCR_SUFFIX:
            incrs.append(AofFile(name, int(seq), INCR))
    return sorted(bases, key=lambda f: f.seq), sorted(incrs, key=lambda f: f.seq)


def manifest_name(filename: str) -> str:
    return filename + MANIFEST_SUFFIX


def parse_manifest(data: bytes, name: str) -> Manifest:
    """Parse a manifest (Redis aofLoadManifestFromFile's rules and texts)."""
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise ManifestError(f"Bad AOF manifest {name}: not UTF-8 text") from None
    if not text:
        raise ManifestError(f"Bad AOF manifest {name}: Found an empty AOF manifest")
    base: AofFile | None = None
    incrs: list[AofFile] = []
    history: list[AofFile] = []
    base_seq = incr_seq = 0
    max_incr = 0
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    else:
        raise ManifestError(_line_error(name, len(lines), lines[-1], "The AOF manifest file is truncated (no final newline)"))
    for number, raw in enumerate(lines, 1):
        if raw.startswith("#"):
            continue
        if len(raw) > _MAX_LINE:
            raise ManifestError(_line_error(name, number, raw[:64] + "...", "The AOF manifest file contains too long line"))
        words = split_config_line(raw)
        if not words or len(words) < 6 or len(words) % 2:
            raise ManifestError(_line_error(name, number, raw, "Invalid AOF manifest file format"))
        keys: dict[str, str] = {}
        for i in range(0, len(words), 2):
            keys[words[i].lower()] = words[i + 1]
        file_name = keys.get("file", "")
        seq = _to_int(keys.get("seq", ""))
        kind = keys.get("type", "")[:1]
        start = _to_int(keys.get("startoffset", "-1"))
        replid, replid2 = keys.get("replid", ""), keys.get("replid2", "0" * 40)
        second_offset = _to_int(keys.get("secondoffset", "-1"))
        if not file_name or not seq or not kind or start is None:
            raise ManifestError(_line_error(name, number, raw, "Invalid AOF manifest file format"))
        identity: tuple[str, str, int] = ("", "", -1)
        if replid:
            if not is_replid(replid) or not is_replid(replid2) or second_offset is None or second_offset < -1:
                raise ManifestError(_line_error(name, number, raw, "Invalid replication id or second offset"))
            identity = (replid, replid2, second_offset)
        if os.path.basename(file_name) != file_name or file_name in (".", ".."):
            raise ManifestError(_line_error(name, number, raw, "File can't be a path, just a filename"))
        info = AofFile(file_name, seq, kind, start, *identity)
        if kind == BASE:
            if base is not None:
                raise ManifestError(_line_error(name, number, raw, "Found duplicate base file information"))
            base = info
            base_seq = max(base_seq, seq)
        elif kind == HISTORY:
            history.append(info)
        elif kind == INCR:
            if seq <= max_incr:
                raise ManifestError(_line_error(name, number, raw, "Found a non-monotonic sequence number"))
            if start < 0:
                raise ManifestError(_line_error(name, number, raw, "Incr file without startoffset"))
            incrs.append(info)
            max_incr = incr_seq = seq
        else:
            raise ManifestError(_line_error(name, number, raw, "Unknown AOF file type"))
    for h in history:
        if h.name.endswith(BASE_SUFFIX):
            base_seq = max(base_seq, h.seq)
        else:
            incr_seq = max(incr_seq, h.seq)
    return Manifest(base, tuple(incrs), tuple(history), base_seq, incr_seq)


def load_manifest(path: str) -> Manifest:
    """Read and parse the manifest at `path` (OSError if unreadable)."""
    with open(path, "rb") as f:
        data = f.read()
    return parse_manifest(data, os.path.basename(path))


def write_manifest(dirpath: str, filename: str, manifest: Manifest) -> None:
    """Durably replace the manifest: temp file, fsync, rename, fsync of the directory."""
    name = manifest_name(filename)
    atomic_write(os.path.join(dirpath, name), manifest.format(), os.path.join(dirpath, TEMP_PREFIX + name))


def _line_error(name: str, number: int, line: str, reason: str) -> str:
    return f"Bad AOF manifest {name} at line {number} ('{line.strip()}'): {reason}"


def _to_int(raw: str) -> int | None:
    body = raw[1:] if raw.startswith("-") else raw
    if not body.isdigit():
        return None
    return int(raw)
