"""What every importer produces, the options that line imported cells up with other runs, and
the one transaction that stores an imported run.

An importer turns a file into :class:`ImportedRun` (cases with their scores, in the tool's
own names); :func:`import_files` applies :class:`ImportOptions` (suite, label, a case-id
template, variant and model renames) and writes each run with :func:`store_run`: the run row,
its cases and its scores in one transaction that first looks for the file's content hash, so
importing the same file twice adds nothing. Fields the warehouse has no column for are kept
in ``cases.extra`` / ``runs.source_extra`` (JSON), with secret-named keys (``apiKey``,
``token``, ``authorization`` ...) masked. Every string stored (answers, vars, metadata,
expected, messages, rationales, ids, the kept fields) goes through the one redaction of
:func:`evalwh.config.secrets.redact` (:class:`Redactor`), and the result counts the values
it changed.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from evalwh.config.secrets import MASK, known_secret_values, redact
from evalwh.errors import ConfigError, UsageError
from evalwh.warehouse.lake import Location

MAX_FILE_BYTES = 256 * 1024 * 1024  # a results file or log larger than this is refused
MAX_DEPTH = 200  # JSON nested deeper than this is refused (real logs stay under 30)
MAX_DURATION_MS = 10 * 365 * 24 * 3600 * 1000.0  # ten years: longer is a broken file
MAX_CELL_CHARS = 1_000_000  # one stored answer or JSON value of a case; longer is cut
INT_DIGITS = 20  # longer integer literals are refused without converting them
INT64 = 2**63
_SURROGATE = re.compile("[\ud800-\udfff]")  # left by the parser only when unpaired
_JSON_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
TEMPLATE_FIELD = re.compile(r"\{([A-Za-z_]+)(?:\.([^{}]+))?\}")
# key names whose values are masked: apiKey, api_key, accessToken, client_secret, password ...
SECRET_KEY = re.compile(
    r"(api[_-]?key|access[_-]?key|token|secret|password|authorization|cookie)$", re.I
)


@dataclass
class ImportedScore:
    """One criterion of one case row, in [0, 1] (``raw_score`` keeps the tool's own value)."""

    criterion: str
    scorer: str
    score: float
    passed: bool
    weight: float = 1.0
    required: bool = True
    details: Any = None
    rationale: str | None = None
    raw_score: float | None = None

    def __post_init__(self) -> None:
        self.details, self.rationale = fit(self.details), fit(self.rationale)


@dataclass
class ImportedCase:
    """One answer: a variant x model x case x repeat cell of the tool's run."""

    variant: str
    model: str
    tool_id: str  # the tool's own id of the case (``{id}`` in a case-id template)
    index: int  # the case's position in the tool's test list (``{index}``)
    vars: dict[str, Any]
    metadata: dict[str, Any]
    output: str | None
    passed: bool
    score: float | None
    expected: Any = None
    messages: Any = None
    error: str | None = None
    error_kind: str | None = None
    latency_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    cached: bool = False
    repeat: int | None = None  # None: counted in file order per cell
    extra: dict[str, Any] = field(default_factory=dict)
    scores: list[ImportedScore] = field(default_factory=list)

    def __post_init__(self) -> None:
        # bounded as it is built, so the parsed sample behind it is not held past its case
        self.vars, self.metadata, self.expected = (
            fit(self.vars),
            fit(self.metadata),
            fit(self.expected),
        )
        self.messages, self.output, self.error = (
            fit(self.messages),
            fit(self.output),
            fit(self.error),
        )
        self.extra = fit(self.extra)


@dataclass
class ImportedRun:
    tool: str
    version: str | None
    suite: str
    status: str  # completed | failed | interrupted
    started_at: datetime
    finished_at: datetime | None
    cases: list[ImportedCase]
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.extra = fit(self.extra)


def fit(value: Any) -> Any:
    """``value`` when it stores in at most :data:`MAX_CELL_CHARS` characters; a longer text
    is cut (the cut says how long it was), a longer JSON value becomes an object that says
    its size: a small archive of large fields cannot fill the warehouse or the memory."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        if len(value) <= MAX_CELL_CHARS:
            return value
        return f"{value[:MAX_CELL_CHARS]}... [cut by evalwh import: {len(value):,} characters]"
    size = len(json.dumps(value, default=str, ensure_ascii=False))
    if size <= MAX_CELL_CHARS:
        return value
    return {"_cut_by_evalwh_import": f"{size:,} characters of JSON, over {MAX_CELL_CHARS:,}"}


@dataclass
class ImportOptions:
    """How an import lines up with the warehouse's other runs.

    ``case_id`` is a template over ``{id}``, ``{index}``, ``{vars.NAME}`` and
    ``{metadata.NAME}`` (default ``{id}``); ``variants`` / ``models`` map the tool's names
    to evalwh's (key ``"*"``: every name).
    """

    suite: str | None = None
    label: str | None = None
    case_id: str | None = None
    variants: dict[str, str] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)


@dataclass
class ImportResult:
    file: str
    run_id: str
    added: bool  # False: this file was imported before (same content hash)
    n_cases: int
    n_scores: int
    tool: str
    version: str | None
    n_redacted: int = 0  # values whose key-shaped strings or secrets were replaced by ***

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def parse_renames(values: Sequence[str], what: str) -> dict[str, str]:
    """``["old=new", ...]`` or one ``["new"]`` (every name becomes ``new``) as a mapping."""
    out: dict[str, str] = {}
    for value in values:
        old, sep, new = value.rpartition("=")
        if not sep:
            old, new = "*", value
        if not new.strip():
            raise UsageError(f"--{what} {value!r}: give NEW or OLD=NEW (NEW not empty)")
        out[old] = new.strip()
    return out


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@contextmanager
def read_json_streaming(
    path: Path, keys: tuple[str, ...]
) -> Iterator[tuple[Any, Iterator[Any] | None]]:
    """A JSON file bounded by :data:`MAX_FILE_BYTES` whose array under ``keys`` (e.g.
    ``("samples",)``) is read an element at a time: the document without that array (it
    reads ``[]``), and the elements, each parsed and checked by :func:`load_json` with its
    JSON path (``$.samples[3]...``) only when the iterator reaches it
    (:mod:`evalwh.importers.jsonsplit`). The elements are None when the file does not hold
    that array, or it does not read as one: the document is then the whole file, parsed and
    refused with its line and column or path as ever. (An element the split found parses
    again, so what can be wrong with it is a value, named by its path.)"""
    from evalwh.importers.jsonsplit import mapped, split_array

    check_size(path)
    with mapped(path) as data:
        split = split_array(data, keys)
        head = load_json(split.head, path)
        if not split.found:
            yield head, None
            return
        base: Any = None
        for key in keys:
            base = (base, key)

        def elements() -> Iterator[Any]:
            for i, (start, end) in enumerate(split.spans):
                yield load_json(bytes(data[start:end]), path, link=(base, i))

        yield head, elements()


class _LongInt:
    """An integer literal of more than :data:`INT_DIGITS` digits, kept unconverted (Python
    refuses to convert over 4,300 digits, and a long one costs quadratic time) so that
    :func:`check_tree` can refuse it with its place."""

    __slots__ = ("digits",)

    def __init__(self, digits: str) -> None:
        self.digits = digits


def int_or_long(text: str) -> Any:
    return int(text) if len(text) <= INT_DIGITS else _LongInt(text)


def load_json(data: bytes, path: Path, where: str = "", *, link: Any = None) -> Any:
    """``data`` parsed, every bad shape a ConfigError naming ``path`` and the place (``where``
    (a zip member), then a line and column or a JSON path like ``$.samples[3].output``).
    ``data`` may be one element of a larger document: ``link`` is its JSON path there (as
    :func:`check_tree` links it).

    Depth: the stdlib parser has no depth option and recurses in C, so nesting past Python's
    recursion limit ends in RecursionError; that is caught and the place found by a scan of
    the brackets (run only then, so a good file is not scanned twice). Anything that did parse
    is walked once without recursion (:func:`check_tree`) for what stores badly: nesting over
    :data:`MAX_DEPTH`, integers outside 64 bits, NaN and infinities, unpaired surrogates.
    """
    fix = "pass the file the tool wrote, unedited"
    try:
        value = json.loads(data, parse_int=int_or_long)
    except RecursionError:
        raise ConfigError(
            f"JSON nested deeper than {MAX_DEPTH} levels",
            file=str(path),
            where=_join(where, _deep_place(data)),
            fix=fix,
        ) from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"not JSON ({exc.msg})",
            file=str(path),
            where=_join(where, f"line {exc.lineno} column {exc.colno}"),
            fix=fix,
        ) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(
            f"not JSON ({exc})", file=str(path), where=where or None, fix=fix
        ) from None
    check_tree(value, path, where, link)
    return value


def check_tree(value: Any, path: Path, where: str = "", base: Any = None) -> None:
    """Refuse, naming the JSON path, the first value of parsed JSON that the warehouse cannot
    store faithfully: nesting over :data:`MAX_DEPTH`, an integer outside 64 bits, NaN or an
    infinity, a string or key holding an unpaired surrogate. Iterative (no recursion limit),
    and only containers wait on the stack, so a list of millions of numbers costs no more.
    ``base`` is ``value``'s own path when it is an element of a larger document."""

    def fail(link: Any, problem: str) -> ConfigError:
        return ConfigError(
            problem,
            file=str(path),
            where=_join(where, _json_path(link)),
            fix="pass the file the tool wrote, unedited",
        )

    if not isinstance(value, (dict, list)):
        problem = _scalar_problem(value)
        if problem:
            raise fail(base, problem)
        return
    stack: list[tuple[Any, int, Any]] = [(value, 0 if base is None else _depth(base), base)]
    while stack:
        node, depth, link = stack.pop()
        if depth >= MAX_DEPTH:
            raise fail(link, f"JSON nested deeper than {MAX_DEPTH} levels")
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in items:
            if isinstance(key, str) and _SURROGATE.search(key):
                raise fail((link, key), "a key holds an unpaired surrogate (\\ud800-\\udfff)")
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1, (link, key)))
            elif type(child) is not int or not -INT64 <= child < INT64:  # ints: the common case
                problem = _scalar_problem(child)
                if problem:
                    raise fail((link, key), problem)


def _scalar_problem(node: Any) -> str | None:
    if isinstance(node, str):
        return (
            "a string holds an unpaired surrogate (\\ud800-\\udfff)"
            if _SURROGATE.search(node)
            else None
        )
    if isinstance(node, _LongInt):
        return f"an integer of {len(node.digits.lstrip('-')):,} digits (over 64 bits)"
    if isinstance(node, bool):
        return None
    if isinstance(node, int) and not -INT64 <= node < INT64:
        return "an integer over 64 bits"
    if isinstance(node, float) and not math.isfinite(node):
        return f"a number out of range ({node})"
    return None


def _json_path(link: Any) -> str:
    parts: list[str] = []
    while link is not None:
        link, key = link
        text = key.encode("utf-8", "backslashreplace").decode() if isinstance(key, str) else key
        parts.append(f"[{key}]" if isinstance(key, int) else f".{text}")
    path = "$" + "".join(reversed(parts))
    return path if len(path) <= 120 else f"{path[:60]}...{path[-50:]} ({len(parts)} deep)"


def _depth(link: Any) -> int:
    """How many levels down the path ``link`` leads."""
    depth = 0
    while link is not None:
        link, depth = link[0], depth + 1
    return depth


def _deep_place(data: bytes) -> str:
    """``line L column C`` of the bracket that opens level :data:`MAX_DEPTH` + 1."""
    depth = 0
    for m in _JSON_TOKEN.finditer(data):
        token = m.group()
        if token in (b"[", b"{"):
            depth += 1
            if depth > MAX_DEPTH:
                at = m.start()
                line = data.count(b"\n", 0, at) + 1
                column = at - data.rfind(b"\n", 0, at)
                return f"line {line} column {column}"
        elif token in (b"]", b"}"):
            depth -= 1
    return ""


def _join(where: str, place: str) -> str | None:
    return ", ".join(p for p in (where, place) if p) or None


def duration(value: Any, scale: float, path: Path, where: str) -> float | None:
    """A duration in milliseconds (``value`` x ``scale``); a negative one, or one over ten
    years, is a ConfigError naming the place."""
    n = number(value)
    if n is None:
        return None
    ms = n * scale
    if not 0 <= ms <= MAX_DURATION_MS:
        raise ConfigError(
            f"a duration of {n} is {'negative' if ms < 0 else 'over ten years'}",
            file=str(path),
            where=where,
            fix="pass the file the tool wrote, unedited",
        )
    return ms


def check_size(path: Path) -> None:
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ConfigError(
            f"the file is {size:,} bytes, over the import limit of {MAX_FILE_BYTES:,}",
            file=str(path),
            fix="split the run into smaller files",
        )


def shape_error(path: Path, where: str, message: str, fix: str) -> ConfigError:
    return ConfigError(message, file=str(path), where=where, fix=fix)


class Redactor:
    """Every string an import stores, through :func:`evalwh.config.secrets.redact` (key
    shapes, bearer tokens, the secrets evalwh holds), counting the values it changed."""

    def __init__(self) -> None:
        self.known = known_secret_values()  # once per import, not once per string
        self.count = 0

    def text(self, value: str) -> str:
        out = redact(value, known=self.known)
        self.count += out != value
        return out

    def maybe(self, value: str | None) -> str | None:
        return None if value is None else self.text(value)

    def tree(self, value: Any, *, names: bool = False) -> Any:
        """``value`` with every string redacted (nested); ``names``: secret-named keys
        (``apiKey``, ``token`` ...) have their values masked too."""
        if isinstance(value, Mapping):
            out = {}
            for k, v in value.items():
                if names and v and SECRET_KEY.search(str(k)):
                    self.count += 1
                    out[str(k)] = MASK
                else:
                    out[str(k)] = self.tree(v, names=names)
            return out
        if isinstance(value, (list, tuple)):
            return [self.tree(v, names=names) for v in value]
        if isinstance(value, str):
            return self.text(value)
        return value

    def run(self, run: ImportedRun) -> int:
        """Redact ``run`` in place: ids, names, vars, metadata, expected, messages, output,
        errors, scores (details, rationale) and the kept extra fields. The count."""
        t, tree = self.text, self.tree
        run.suite = t(run.suite)
        run.extra = tree(run.extra, names=True)
        for c in run.cases:
            c.variant, c.model, c.tool_id = t(c.variant), t(c.model), t(c.tool_id)
            c.vars, c.metadata = tree(c.vars), tree(c.metadata)
            c.expected, c.messages = tree(c.expected), tree(c.messages)
            c.output, c.error = self.maybe(c.output), self.maybe(c.error)
            c.extra = tree(c.extra, names=True)
            for s in c.scores:
                s.criterion, s.scorer = t(s.criterion), t(s.scorer)
                s.details, s.rationale = tree(s.details), self.maybe(s.rationale)
        return self.count


def parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (a tool's optional fields)."""
    return value if isinstance(value, dict) else {}


def number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def integer(value: Any) -> int | None:
    n = number(value)
    return int(n) if n is not None else None


def case_id_of(template: str, case: ImportedCase, path: Path) -> str:
    def field_value(m: re.Match[str]) -> str:
        name, key = m.group(1), m.group(2)
        if name == "id" and key is None:
            return case.tool_id
        if name == "index" and key is None:
            return str(case.index)
        source = {"vars": case.vars, "metadata": case.metadata}.get(name)
        if source is None or key is None:
            raise UsageError(
                f"--case-id {template!r}: unknown field {m.group(0)} (use {{id}}, {{index}}, "
                "{vars.NAME} or {metadata.NAME})"
            )
        if key not in source:
            raise UsageError(
                f"--case-id {template!r}: case {case.tool_id!r} of {path} has no {name}.{key}"
            )
        value = source[key]
        return value if isinstance(value, str) else json.dumps(value, sort_keys=True)

    return TEMPLATE_FIELD.sub(field_value, template)


def rename(names: Mapping[str, str], value: str) -> str:
    return names.get(value, names.get("*", value))


def store_run(
    warehouse: Location, path: Path, digest: str, run: ImportedRun, options: ImportOptions
) -> ImportResult:
    """Write one imported run (run row, cases, scores) in one transaction; a file whose
    content hash is already stored adds nothing and names the run it became."""
    from evalwh import __version__
    from evalwh.warehouse.connect import write_transaction
    from evalwh.warehouse.store import new_run_id

    n_redacted = Redactor().run(run)
    cases, scores = _rows(run, path, options)
    run_id = new_run_id(run.started_at)
    n_errors = sum(1 for c in run.cases if c.error)
    run_row = {
        "run_id": run_id,
        "label": options.label,
        "suite": options.suite or run.suite,
        "status": run.status,
        "config_path": str(path),
        "config_hash": digest,
        "dataset_hash": hashlib.sha256(
            json.dumps(sorted({c[2] for c in cases})).encode()
        ).hexdigest(),
        "config_snapshot": json.dumps(
            {"name": options.suite or run.suite, "source": {"tool": run.tool}}
        ),
        "n_planned": len(cases),
        "started_at": run.started_at,
        "finished_at": run.finished_at or run.started_at,
        "heartbeat_at": run.finished_at or run.started_at,
        "totals": json.dumps(
            {
                "requests": len(cases),
                "cache_hits": sum(1 for c in run.cases if c.cached),
                "retries": 0,
                "errors": n_errors,
                "judge_requests": 0,
                "rows": len(cases),
            }
        ),
        "evalwh_version": __version__,
        "source_tool": run.tool,
        "source_version": run.version,
        "source_hash": digest,
        "source_extra": json.dumps(run.extra, default=str),
    }

    def body(con: Any) -> ImportResult:
        found = con.execute(
            "SELECT run_id FROM runs WHERE source_hash = ? AND source_tool = ?",
            [digest, run.tool],
        ).fetchone()
        if found:
            return ImportResult(str(path), str(found[0]), False, 0, 0, run.tool, run.version)
        columns = ", ".join(run_row)
        marks = ", ".join("?" for _ in run_row)
        con.execute(f"INSERT INTO runs ({columns}) VALUES ({marks})", list(run_row.values()))
        _insert(con, "cases", _cases_table(run_id, cases))
        if scores:
            _insert(con, "scores", _scores_table(run_id, scores))
        return ImportResult(
            str(path), run_id, True, len(cases), len(scores), run.tool, run.version, n_redacted
        )

    # one transaction (on a lake: retried whole when another writer won the commit)
    return write_transaction(warehouse, body, what=f"import {path.name}")


def _rows(
    run: ImportedRun, path: Path, options: ImportOptions
) -> tuple[list[list[Any]], list[list[Any]]]:
    """Case and score rows (without run_id), names mapped, repeats counted per cell."""
    template = options.case_id or "{id}"
    seen: dict[tuple[str, str, str], int] = {}
    cases: list[list[Any]] = []
    scores: list[list[Any]] = []
    now = datetime.now(timezone.utc)
    for case in run.cases:
        variant = rename(options.variants, case.variant)
        model = rename(options.models, case.model)
        case_id = case_id_of(template, case, path)
        cell = (variant, model, case_id)
        repeat = case.repeat if case.repeat is not None else seen.get(cell, 0)
        seen[cell] = max(seen.get(cell, 0), repeat + 1)
        key = (variant, model, case_id, repeat)
        request = json.dumps([run.tool, model, case.messages, repeat], default=str)
        cases.append(
            [
                *key,
                _json(case.vars),
                _json(case.expected),
                _json(case.metadata),
                _json(case.messages),
                case.output,
                case.error or None,
                case.error_kind if case.error else None,
                case.latency_ms,
                case.input_tokens,
                case.output_tokens,
                case.cost_usd,
                case.cached,
                hashlib.sha256(request.encode()).hexdigest(),
                case.score if case.score is not None else 0.0,
                bool(case.passed and not case.error),
                now,
                _json(case.extra) if case.extra else None,
            ]
        )
        for s in case.scores:
            scores.append(
                [
                    *key,
                    s.criterion,
                    s.scorer,
                    s.score,
                    s.passed,
                    s.weight,
                    s.required,
                    _json(s.details),
                    s.rationale,
                    s.raw_score,
                ]
            )
    _check_unique(cases, path)
    return cases, scores


def _check_unique(cases: list[list[Any]], path: Path) -> None:
    keys = [(c[0], c[1], c[2], c[3]) for c in cases]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise UsageError(
            f"{path}: two answers map to the same cell {dup} (variant, model, case, repeat): "
            "give a --case-id template that tells the cases apart, or drop a --variant/--model "
            "rename that merges two names"
        )


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, default=str, ensure_ascii=False)


def _cases_table(run_id: str, rows: list[list[Any]]) -> Any:
    import pyarrow as pa

    names = [
        *("variant", "model", "case_id", "repeat", "vars", "expected", "metadata", "messages"),
        *("output", "error", "error_kind", "latency_ms", "input_tokens", "output_tokens"),
        *("cost_usd", "cached", "request_hash", "score", "passed", "created_at", "extra"),
    ]
    cols = {n: [r[i] for r in rows] for i, n in enumerate(names)}
    types = {
        "repeat": pa.int32(),
        "latency_ms": pa.float64(),
        "input_tokens": pa.int64(),
        "output_tokens": pa.int64(),
        "cost_usd": pa.float64(),
        "cached": pa.bool_(),
        "score": pa.float64(),
        "passed": pa.bool_(),
        "created_at": pa.timestamp("us", tz="UTC"),
    }
    arrays = {n: pa.array(v, type=types.get(n, pa.string())) for n, v in cols.items()}
    arrays["run_id"] = pa.array([run_id] * len(rows), type=pa.string())
    arrays["attempts"] = pa.array([1] * len(rows), type=pa.int32())
    return pa.table(arrays)


def _scores_table(run_id: str, rows: list[list[Any]]) -> Any:
    import pyarrow as pa

    names = [
        *("variant", "model", "case_id", "repeat", "criterion", "scorer", "score", "passed"),
        *("weight", "required", "details", "rationale", "raw_score"),
    ]
    types = {
        "repeat": pa.int32(),
        "score": pa.float64(),
        "passed": pa.bool_(),
        "weight": pa.float64(),
        "required": pa.bool_(),
        "raw_score": pa.float64(),
    }
    arrays = {
        n: pa.array([r[i] for r in rows], type=types.get(n, pa.string()))
        for i, n in enumerate(names)
    }
    arrays["run_id"] = pa.array([run_id] * len(rows), type=pa.string())
    return pa.table(arrays)


def _insert(con: Any, table: str, data: Any) -> None:
    from evalwh.warehouse.runkeys import insert_rows

    con.register("_evalwh_import", data)
    try:
        insert_rows(con, table, "_evalwh_import")
    finally:
        con.unregister("_evalwh_import")
