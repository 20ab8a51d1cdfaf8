"""Test cases: inline in eval.yaml, from CSV / JSONL / Parquet files, or page by page from a
datasource (:mod:`evalwh.datasources`; its rows are mapped here like a file's).

A file source maps columns onto a case: ``id`` (default column ``id``; the row number when
the file has no such column), ``expected`` (default ``expected``), ``human_label``,
``metadata`` (listed columns) and ``vars`` (listed columns, default: every other column).
JSONL rows that already hold ``vars`` are read as inline cases.

A value starting with ``file://`` names a file (relative to the cases file): the case
gets it under ``files.<column>`` instead of a var (:mod:`evalwh.config.attachments`).

A value shaped like an API key (:data:`evalwh.config.secrets.KEY_PATTERNS`) refuses the file, as it
would refuse eval.yaml: keys never go into the warehouse. A column that holds such strings
on purpose (a redaction test set) is named in ``allow_secret_like: [column, ...]``.

New formats register in :data:`READERS` (suffix -> reader of rows).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from evalwh.boundary import in_folder, readable
from evalwh.config.attachments import Attachment
from evalwh.config.model import Case, SourceSpec
from evalwh.config.regular import NotRegular, open_regular, what_it_is
from evalwh.datasources.jsonl import parse_line
from evalwh.errors import ConfigError

Row = dict[str, Any]
RowReader = Callable[[Path], Iterator[tuple[int, Row]]]  # yields (line or row number, row)


CSV_FIELD_LIMIT = 64 * 1024 * 1024  # one cell may hold a long document, not a whole disk


def _read_csv(path: Path) -> Iterator[tuple[int, Row]]:
    csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_LIMIT))
    with _open_text(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh, strict=True)
        try:
            yield from _csv_rows(reader, path)
        except csv.Error as exc:
            raise ConfigError(
                f"malformed CSV: {exc}",
                file=str(path),
                line=reader.line_num + 1,  # the record that failed starts after those read
                fix='quote a value that holds commas, quotes or newlines ("..."), doubling '
                'any quote inside it ("")',
            ) from None


def _csv_rows(reader: csv.DictReader[str], path: Path) -> Iterator[tuple[int, Row]]:
    if reader.fieldnames is None:
        raise ConfigError("the CSV file is empty", file=str(path), fix="add a header row")
    dupes = {c for c in reader.fieldnames if reader.fieldnames.count(c) > 1}
    if dupes:
        raise ConfigError(
            f"duplicate column(s) {', '.join(sorted(dupes))}",
            file=str(path),
            line=1,
            fix="give every column a unique name",
        )
    for row in reader:
        if None in row:
            raise ConfigError(
                f"row has more fields than the header ({len(reader.fieldnames)} columns)",
                file=str(path),
                line=reader.line_num,
                fix="quote values that contain commas, or add the missing header",
            )
        yield reader.line_num, dict(row)


def _open_text(path: Path, **text: Any) -> io.TextIOWrapper:
    """A cases file opened as text, refused unless it is a regular file (a FIFO would hang)."""
    fh, _ = open_regular(path)
    return io.TextIOWrapper(fh, **text)


def _read_jsonl(path: Path) -> Iterator[tuple[int, Row]]:
    for n, row, _ in _jsonl_rows(path):
        yield n, row


def _jsonl_rows(path: Path) -> Iterator[tuple[int, Row, bool]]:
    """The rows of a JSONL file, each with whether its line is plain: no backslash (no escape,
    so every string of the row is a stretch of the line as written, and no lone surrogate,
    which in strictly decoded UTF-8 only an escape makes) and nothing key-shaped anywhere on
    the line (so in none of its strings: a key pattern's match inside a string matches on the
    line, whose quotes stand where the string's ends were). A plain row needs neither the
    surrogate scan nor the key-shape scan of every value; any other row gets both."""
    from evalwh.config.secrets import key_shape

    with _open_text(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            row = parse_line(line, path, n)
            yield n, row, "\\" not in line and key_shape(line) is None


def _read_parquet(path: Path) -> Iterator[tuple[int, Row]]:
    import pyarrow.parquet as pq

    fh, _ = open_regular(path)
    with fh:
        n = 0
        try:
            for batch in pq.ParquetFile(fh).iter_batches(batch_size=PARQUET_BATCH):
                for row in batch.to_pylist():
                    n += 1
                    yield n, row
        except (NotRegular, ConfigError):
            raise
        except Exception as exc:
            raise ConfigError(
                f"cannot read Parquet: {exc}",
                file=str(path),
                fix="write a real Parquet file (e.g. polars' write_parquet), or use CSV/JSONL",
            ) from None


PARQUET_BATCH = 1000  # rows decoded at a time: a large file is never held whole


READERS: dict[str, RowReader] = {"csv": _read_csv, "jsonl": _read_jsonl, "parquet": _read_parquet}
SUFFIXES = {
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}


def _case_id(value: Any) -> str:
    return str(value)


def inline_case(
    raw: dict[str, Any],
    source: str,
    *,
    file: str | None = None,
    line: int | None = None,
    quiet: bool = False,
    folder: Path | None = None,
    origin: tuple[str, str] | None = None,
    within: Path | None = None,
) -> Case:
    """A case from a mapping with ``id``, ``vars``, ``expected``, ``metadata``, ``files`` ...

    ``file``/``line`` name where it came from, for errors on a case file's row; ``quiet``
    (a no-look run) keeps the value itself out of the error message; ``folder`` is where its
    ``files:`` paths resolve (the config's or the cases file's folder); ``origin`` (file, key)
    places an inline case's ``files`` in the config for errors; ``within`` confines the files
    of a cases file's row to the config's folder.
    """
    from evalwh.config.attachments import case_files

    for key in ("vars", "metadata"):
        value = raw.get(key)
        if value is not None and not isinstance(value, dict):
            shown = "" if quiet else f" {str(value)[:40]!r}"
            raise ConfigError(
                f"'{key}' must be a mapping of names to values, got {type(value).__name__}{shown}",
                file=file,
                where=None if file else source,
                line=line,
                fix=f'write "{key}": {{"name": value, ...}}',
            )
    if isinstance(raw.get("id"), (dict, list)):
        raise ConfigError(
            "'id' must be a string or a number",
            file=file,
            where=None if file else source,
            line=line,
            fix='write "id": "a-unique-name"',
        )
    return Case(
        id=_case_id(raw["id"]),
        vars=dict(raw.get("vars") or {}),
        expected=raw.get("expected"),
        metadata=dict(raw.get("metadata") or {}),
        human_label=raw.get("human_label"),
        source=source,
        check=raw.get("check"),
        files=case_files(
            raw.get("files"),
            folder or Path.cwd(),
            file=origin[0] if origin else file,
            where=origin[1] if origin else f"line {line} files",
            within=within,
        ),
    )


def _rows(fmt: str, path: Path) -> Iterator[tuple[int, Row, bool]]:
    """The rows of a case file, each with whether it is plain (_jsonl_rows: it holds no key
    shape; only a JSONL line can tell); bytes that are not UTF-8 and lone surrogates are
    errors."""
    from evalwh.config.yamlpos import find_surrogate, format_path

    rows = (
        _jsonl_rows(path)
        if fmt == "jsonl" and READERS[fmt] is _read_jsonl
        else ((n, row, False) for n, row in READERS[fmt](path))
    )
    try:
        for n, row, plain in rows:
            bad = None if plain else find_surrogate(row)
            if bad is not None:
                raise ConfigError(
                    "a value holds a lone surrogate (an escape such as \\ud800), which is not text",
                    file=str(path),
                    line=n if fmt != "parquet" else None,
                    where=format_path(list(bad)) if fmt != "parquet" else f"row {n}",
                    fix="remove the escape or write the character it should stand for",
                )
            yield n, row, plain
    except NotRegular as exc:  # swapped for a FIFO or a device after the check
        raise ConfigError(
            f"cannot read the cases file: {exc}",
            file=str(path),
            fix="name a regular .csv, .jsonl or .parquet file",
        ) from None
    except UnicodeDecodeError as exc:
        raw, line = path.read_bytes(), None
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as whole:  # the place in the whole file, not in a chunk
            line = raw[: whole.start].count(b"\n") + 1
        raise ConfigError(
            f"not UTF-8 text ({exc.reason})",
            file=str(path),
            line=line,
            fix="save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8 in.csv > out.csv`)",
        ) from None


MAX_FOLDER_FILES = 10_000  # files one folder source may hold


def _load_folder(
    spec: dict[str, Any], folder: Path, where: str, config_file: str, *, quiet: bool = False
) -> list[Case]:
    """A folder as one case source: every CSV/JSONL/Parquet file directly in it (only those
    of ``format`` when given), in name order, read with the source's column options; ``limit``
    counts over the whole folder. A file that resolves outside the folder (a symlink) is
    refused: the folder is what the config author pointed at."""
    wanted = spec.get("format")
    files = sorted(
        p
        for p in folder.iterdir()
        if p.is_file()
        and SUFFIXES.get(p.suffix.lower()) is not None
        and (wanted is None or SUFFIXES[p.suffix.lower()] == wanted)
    )
    if not files:
        kinds = wanted or ", ".join(SUFFIXES)
        raise ConfigError(
            f"the folder {folder} holds no case files ({kinds})",
            file=config_file,
            where=f"{where}.file",
            fix="point file: at a folder of .csv, .jsonl or .parquet files, or at one file",
        )
    if len(files) > MAX_FOLDER_FILES:
        raise ConfigError(
            f"the folder {folder} holds {len(files):,} case files, over {MAX_FOLDER_FILES:,}",
            file=config_file,
            where=f"{where}.file",
            fix="merge the shards into fewer files",
        )
    cases: list[Case] = []
    limit = spec.get("limit")
    for path in files:
        real = in_folder(path, folder, file=config_file, where=f"{where}.file")
        part = {**spec, "file": str(real)}
        if limit:
            part["limit"] = limit - len(cases)
        cases.extend(load_file_source(part, folder, where, config_file, quiet=quiet))
        if limit and len(cases) >= limit:
            break
    return cases


def load_file_source(
    spec: dict[str, Any], root: Path, where: str, config_file: str, *, quiet: bool = False
) -> list[Case]:
    """The cases of a file entry; ``quiet`` (a no-look config): errors quote no value."""
    path = readable(root / spec["file"], f"{where}.file")
    if path.is_dir():
        return _load_folder(spec, path, where, config_file, quiet=quiet)
    fmt = file_format(spec, path, where, config_file)
    cases = list(file_cases(spec, root, path, fmt, where, quiet=quiet))
    if not cases:
        raise ConfigError(
            "the file holds no cases (a header only, or empty)",
            file=str(path),
            fix=f"add rows to the file, or remove it from {where} in {config_file}",
        )
    return cases


def file_format(spec: dict[str, Any], path: Path, where: str, config_file: str) -> str:
    """The format of a case file entry's one file (csv, jsonl or parquet), which must be a
    regular file."""
    fmt = spec.get("format") or SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise ConfigError(
            f"cannot tell the format of '{spec['file']}'",
            file=config_file,
            where=f"{where}.file",
            fix=f"use a {', '.join(SUFFIXES)} file or set format: csv|jsonl|parquet",
        )
    if path.exists() and not path.is_file():
        raise ConfigError(
            f"the cases file {path} is {what_it_is(path.stat().st_mode)}, not a regular file",
            file=config_file,
            where=f"{where}.file",
            fix="name a .csv, .jsonl or .parquet file (a device or a FIFO would never end)",
        )
    if not path.is_file():
        raise ConfigError(
            f"cases file not found: {path}",
            file=config_file,
            where=f"{where}.file",
            fix="check the path; it is relative to the config file's folder",
        )
    return str(fmt)


def file_cases(
    spec: dict[str, Any], root: Path, path: Path, fmt: str, where: str, *, quiet: bool = False
) -> Iterator[Case]:
    """The cases of one case file, one at a time as its rows are read (``limit`` counts the
    rows mapped from columns); an invalid row is a ConfigError naming its line."""
    from evalwh.config.attachments import split_file_columns

    meta_cols = list(spec.get("metadata") or [])
    var_cols = spec.get("vars")
    declared = {
        "id": spec.get("id"),
        "expected": spec.get("expected"),
        "human_label": spec.get("human_label"),
    }
    allowed = set(spec.get("allow_secret_like") or ())
    within = root.resolve()  # once, not per row (a resolve is a few syscalls)
    count = 0
    checked = False
    for n, row, plain in _rows(fmt, path):
        source = f"{path.name}:{n}" if fmt != "parquet" else f"{path.name} row {n}"
        if not plain:
            _refuse_key_shaped(row, allowed, path, n, where, fmt)
        if fmt == "jsonl" and "vars" in row:
            if "id" not in row:
                raise ConfigError("a case has no 'id'", file=str(path), line=n, fix='add "id": ...')
            yield inline_case(
                row,
                source,
                file=str(path),
                line=n,
                quiet=quiet,
                folder=path.parent,
                within=within,
            )
            count += 1  # counted toward a limit, which only a row of columns checks
            continue
        if not checked:
            _check_columns(row, declared, meta_cols, var_cols, file=str(path))
            checked = True
        split = partial(
            split_file_columns,
            folder=path.parent,
            file=str(path),
            line=n if fmt != "parquet" else None,
            within=within,
        )
        yield columns_case(row, spec, source, f"{path.stem}-{n}", split=split)
        count += 1
        if spec.get("limit") and count >= spec["limit"]:
            break


def refuse_repeated_ids(cases: Iterable[Case], config_file: str) -> None:
    """A case id given twice is refused, naming both places (the later first)."""
    seen: dict[str, str] = {}
    for case in cases:
        if case.id in seen:
            raise ConfigError(
                f"duplicate case id '{case.id}' ({case.source} and {seen[case.id]})",
                file=config_file,
                where="cases",
                fix="give every case a unique id",
            )
        seen[case.id] = case.source


def _refuse_key_shaped(
    row: Row, allowed: set[str], path: Path, n: int, where: str, fmt: str
) -> None:
    from evalwh.config.secrets import find_key_shaped

    leaked = find_key_shaped({k: v for k, v in row.items() if k not in allowed})
    if leaked:
        from evalwh.config.secrets import redact

        place, kind = leaked[0]
        place = redact(place)  # a header row may be the key itself (a secrets file read as CSV)
        raise ConfigError(
            f"column '{place}' holds a string that looks like an API key ({kind}); keys never "
            "belong in case files",
            file=str(path),
            line=n if fmt != "parquet" else None,
            where=f"row {n}" if fmt == "parquet" else None,
            fix="remove it (rotate the key if the file was shared); if the column holds such "
            f"strings on purpose, add `allow_secret_like: [{place.split('.')[0].split('[')[0]}]` "
            f"to {where} in the config (docs/configuration.md)",
        )


def columns_case(
    row: Row,
    spec: dict[str, Any],
    source: str,
    default_id: str,
    *,
    split: Callable[[Row], tuple[Row, dict[str, Attachment]]] | None = None,
) -> Case:
    """A case from a row of columns, mapped by a file or datasource entry's ``id``,
    ``expected``, ``human_label``, ``metadata`` and ``vars`` (default: every other column).
    ``split`` takes a case file's ``file://`` values out of the vars as attached files."""
    id_col = spec.get("id", "id")
    expected_col = spec.get("expected", "expected")
    label_col = spec.get("human_label", "human_label")
    meta_cols = list(spec.get("metadata") or [])
    var_cols = spec.get("vars")
    reserved = {id_col, expected_col, label_col, *meta_cols}
    names = var_cols if var_cols is not None else [c for c in row if c not in reserved]
    case_id = row.get(id_col)
    values: Row = {c: row.get(c) for c in names}
    values, files = split(values) if split is not None else (values, {})
    return Case(
        id=_case_id(case_id) if case_id not in (None, "") else default_id,
        vars=values,
        files=files,
        expected=row.get(expected_col),
        metadata={c: row.get(c) for c in meta_cols},
        human_label=row.get(label_col),
        source=source,
    )


def _check_columns(
    row: Row,
    declared: dict[str, Any],
    meta_cols: list[str],
    var_cols: list[str] | None,
    *,
    file: str | None,
    line: int | None = 1,
    where: str | None = None,
) -> None:
    columns = list(row)
    wanted = [(f"{k}: {v}", v) for k, v in declared.items() if v]
    wanted += [(f"metadata: {c}", c) for c in meta_cols]
    wanted += [(f"vars: {c}", c) for c in var_cols or []]
    for label, column in wanted:
        if column not in row:
            raise ConfigError(
                f"missing column '{column}' (asked for by '{label}')",
                file=file,
                line=line,
                where=where,
                fix=f"add the column or change the mapping; the {'file has' if file else 'rows have'}: "
                f"{', '.join(columns)}",
            )


def source_spec(raw: dict[str, Any], where: str, config_file: str) -> SourceSpec:
    """A datasource entry of ``cases:``; its class is imported now (an unknown name or a
    broken import path is a config error before anything runs)."""
    from evalwh.datasources import source_class

    source_class(raw["source"], where=where, file=config_file)
    mapping = {k: v for k, v in raw.items() if k not in ("source", "params")}
    return SourceSpec(raw["source"], dict(raw.get("params") or {}), mapping, where)


def open_datasource(spec: SourceSpec, root: Path, config_file: str) -> Any:
    """Build a datasource; its own ConfigErrors are placed at ``cases[i].params...``."""
    from evalwh.datasources import open_source

    try:
        return open_source(spec.name, spec.params, root, file=config_file)
    except ConfigError as exc:
        if exc.file is None:
            exc.file = config_file
            exc.where = f"{spec.where}.{exc.where}" if exc.where else spec.where
            exc.args = (exc._format(),)
        raise


def datasource_cases(
    spec: SourceSpec, rows: list[Any], page: int, *, checked: bool, quiet: bool = False
) -> list[Case]:
    """One page of a datasource's rows as cases. A row holding ``vars`` is a case as written;
    other rows are mapped like a case file's columns. ``checked``: the mapping's columns were
    already found in an earlier page. ``quiet`` (no-look): error messages quote no value."""
    label = f"datasource {spec.name} ({spec.where})"
    allowed = set(spec.mapping.get("allow_secret_like") or ())
    meta_cols = list(spec.mapping.get("metadata") or [])
    var_cols = spec.mapping.get("vars")
    declared = {k: spec.mapping.get(k) for k in ("id", "expected", "human_label")}
    cases = []
    for n, row in enumerate(rows, start=1):
        place = f"page {page} row {n}"
        if not isinstance(row, Mapping):
            raise ConfigError(
                f"a row is a {type(row).__name__}, not a mapping",
                where=f"{label}, {place}",
                fix="pages(cursor) returns (list of dicts, next cursor)",
            )
        row = dict(row)
        _refuse_key_shaped(row, allowed, Path(label), n, f"{spec.where}", "parquet")
        source = f"{label} {place}"
        if isinstance(row.get("vars"), dict):
            if "id" not in row:
                raise ConfigError(
                    "a case has no 'id'", where=f"{label}, {place}", fix='add "id": ...'
                )
            cases.append(inline_case(row, source, quiet=quiet))
            continue
        if not checked:
            _check_columns(row, declared, meta_cols, var_cols, file=None, line=None, where=label)
            checked = True
        cases.append(columns_case(row, spec.mapping, source, f"p{page}-{n}"))
    return cases


def dataset_rows(cases: list[Case]) -> list[dict[str, Any]]:
    return [
        {
            "id": c.id,
            "vars": c.vars,
            "expected": c.expected,
            "metadata": c.metadata,
            "human_label": c.human_label,
            "check": c.check,
            **({"files": {k: f.sha256 for k, f in c.files.items()}} if c.files else {}),
        }
        for c in cases
    ]
