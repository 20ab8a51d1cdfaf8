"""Case files too large to hold: read in batches while the run goes, like a datasource.

A ``file:`` entry naming one CSV, JSONL or Parquet file of :data:`STREAM_AT` rows or more
(counted cheaply: newlines, or Parquet's footer) is not loaded into ``config.cases``. The
loader makes one first pass over it, holding one case at a time, for what a run must know
before it starts: every row valid (an error names its line, as for a small file), the number
of cases, their ids (kept as 8-byte hashes: a million ids take 8 MB, and duplicates are
checked among them and against the config's other cases) and the SHA-256 of the file's
bytes (the run's dataset hash and its record). The entry becomes a :class:`SourceSpec` with
``case_file`` set; the engine reads it again in batches (:func:`file_batches`) through the
same feed as a datasource's pages (evalwh.engine.feed), so what a run holds is bounded by
the batch, not by the file. Like a datasource run, such a run is not resumed nor sharded and
does not read the response cache (docs/cases.md).
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalwh.boundary import readable
from evalwh.config.datasets import file_cases, file_format, refuse_repeated_ids
from evalwh.config.model import Case, SourceSpec
from evalwh.config.regular import open_regular
from evalwh.errors import ConfigError

STREAM_AT = 50_000  # rows from which a case file is streamed instead of loaded whole
_CHUNK = 1 << 20


def rows_at_least(path: Path, fmt: str, n: int) -> bool:
    """Whether the file holds at least ``n`` rows, cheaply: Parquet's footer, or newlines
    (a CSV value may hold newlines: a file near the bound may be counted over it, which only
    streams it). Stops reading once ``n`` is reached."""
    fh, _ = open_regular(path)
    with fh:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            try:
                return int(pq.ParquetFile(fh).metadata.num_rows) >= n
            except Exception:  # not Parquet: the whole-file reader says so, with its fix
                return False
        lines = 0
        while chunk := fh.read(_CHUNK):
            lines += chunk.count(b"\n")
            if lines >= n:
                return True
    return False


def id_hash(case_id: str) -> int:
    """A case id as 8 bytes (blake2b): what the first pass keeps of a million ids."""
    return int.from_bytes(hashlib.blake2b(case_id.encode(), digest_size=8).digest(), "big")


def streamed_file(
    spec: dict[str, Any], root: Path, where: str, config_file: str, *, quiet: bool = False
) -> tuple[SourceSpec, array[int]] | None:
    """The entry as a streamed source with its ids' hashes, or None when it is loaded whole
    (a folder, a ``limit`` under :data:`STREAM_AT`, or a file of fewer rows)."""
    path = readable(root / spec["file"], f"{where}.file")
    if path.is_dir() or (spec.get("limit") and spec["limit"] < STREAM_AT):
        return None
    fmt = file_format(spec, path, where, config_file)
    if not rows_at_least(path, fmt, STREAM_AT):
        return None
    ids: array[int] = array("Q")
    for case in file_cases(spec, root, path, fmt, where, quiet=quiet):
        ids.append(id_hash(case.id))
    if not ids:
        raise ConfigError(
            "the file holds no cases (a header only, or empty)",
            file=str(path),
            fix=f"add rows to the file, or remove it from {where} in {config_file}",
        )
    params = {"file": str(spec["file"]), "cases": len(ids), "sha256": _file_sha256(path)}
    return SourceSpec("file", params, dict(spec), where, case_file=True), ids


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    fh, _ = open_regular(path)
    with fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()


def refusal(specs: list[SourceSpec], what: str) -> str | None:
    """Why ``what`` (--resume, --shard, batch mode, pairwise) does not go with a streamed
    case file, or None when no case file is streamed: each needs every case before the run
    (or a plan of every cell), which a streamed file is read in batches precisely to avoid."""
    files = [s for s in specs if s.case_file]
    if not files:
        return None
    names = ", ".join(f"{s.params['file']} ({s.params['cases']:,} cases)" for s in files)
    return (
        f"{what} does not go with a case file streamed while the run goes ({names}): a case "
        f"file of {STREAM_AT:,} rows or more is read in batches, not held, and {what} needs "
        f"every case up front. Run it without {what}, or split the file into files of fewer "
        f"than {STREAM_AT:,} rows, each listed under `cases:` (loaded whole, in memory)"
    )


def file_batches(
    spec: SourceSpec, root: Path, config_file: str, size: int, *, quiet: bool = False
) -> Iterator[list[Case]]:
    """A streamed case file's cases, ``size`` at a time. The file must still hold the cases
    the first pass counted (a file changed since is an error, not a different run)."""
    entry = spec.mapping
    path = readable(root / entry["file"], f"{spec.where}.file")
    fmt = file_format(entry, path, spec.where, config_file)
    batch: list[Case] = []
    read = 0
    for case in file_cases(entry, root, path, fmt, spec.where, quiet=quiet):
        batch.append(case)
        if len(batch) >= size:
            read += len(batch)
            yield batch
            batch = []
    if batch:
        read += len(batch)
        yield batch
    if read != spec.params["cases"]:
        raise ConfigError(
            f"the case file changed during the run: {read:,} cases read, "
            f"{spec.params['cases']:,} when the config was loaded",
            file=str(path),
            fix="leave a case file unchanged while a run reads it; start the run again",
        )


def refuse_duplicate_ids(
    streamed: list[tuple[SourceSpec, array[int]]], cases: list[Case], root: Path, config_file: str
) -> None:
    """A case id found twice among the streamed files and the config's other cases, as the
    loader refuses it among loaded cases: named with both places."""
    if not streamed:  # a config without a large case file imports no Arrow here
        return
    import pyarrow as pa
    import pyarrow.compute as pc

    every: array[int] = array("Q")
    for _, ids in streamed:
        every.extend(ids)
    every.extend(id_hash(c.id) for c in cases)
    # sorted, then neighbours compared: Arrow's sort over the array's own buffer (no copy)
    # takes ~20 MB at a million ids where a hash table (count_distinct) took ~120 MB
    hashes = pa.Array.from_buffers(pa.uint64(), len(every), [None, pa.py_buffer(every)])
    ordered = pc.take(hashes, pc.sort_indices(hashes))
    same = pc.equal(ordered[1:], ordered[:-1])
    suspects = set(pc.filter(ordered[1:], same).to_pylist()) if pc.any(same).as_py() else set()
    del hashes, ordered, same
    pa.default_memory_pool().release_unused()
    if not suspects:
        return
    # the cases behind the repeated hashes; none repeated: two ids' 8-byte hashes collided
    refuse_repeated_ids(_suspects(streamed, cases, suspects, root, config_file), config_file)


def _suspects(
    streamed: list[tuple[SourceSpec, array[int]]],
    cases: list[Case],
    hashes: set[int],
    root: Path,
    config_file: str,
) -> Iterator[Case]:
    """The cases whose id hashes to one of ``hashes``: the loaded ones, then each streamed
    file's, read again."""
    yield from (c for c in cases if id_hash(c.id) in hashes)
    for spec, _ in streamed:
        for batch in file_batches(spec, root, config_file, 1000):
            yield from (c for c in batch if id_hash(c.id) in hashes)
