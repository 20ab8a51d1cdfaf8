"""Built-in scorers: exact, contains, not-contains, regex, json-valid, json-schema.

Each factory checks its options once and returns a closure that does only per-case work:
regexes are compiled and schema validators built at build time. A ``value`` or ``pattern``
holding ``{{``/``{%`` is a template rendered per case (:mod:`evalwh.scoring.values`); the
closure's ``prepare(case)`` renders it ahead (check_config does, for every case, so a failing
template stops validate and run before anything is called).
"""

from __future__ import annotations

import re
from itertools import islice
from pathlib import Path
from typing import Any

from evalwh.config.model import Case, Criterion
from evalwh.errors import ConfigError
from evalwh.scoring.base import ScoreResult, ScorerFn, option_error, option_where
from evalwh.scoring.jsonextract import parse_json
from evalwh.scoring.values import CaseValues

CLIP = 200  # characters of matched / expected text kept in details
MAX_SCHEMA_ERRORS = 5
REGEX_FLAGS = {"ignorecase": re.IGNORECASE, "multiline": re.MULTILINE, "dotall": re.DOTALL}

_MISSING = object()


def clip(text: str, limit: int = CLIP) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _bool_option(criterion: Criterion, file: str, name: str, default: bool) -> bool:
    value = criterion.options.get(name, default)
    if not isinstance(value, bool):
        raise option_error(
            criterion,
            file,
            name,
            f"'{name}' must be true or false, got {value!r}",
            f"write `{name}: true` or `{name}: false`",
        )
    return value


def _as_strings(value: Any) -> list[str]:
    """A value or list of values as strings (non-strings compared through ``str``)."""
    items = value if isinstance(value, (list, tuple)) else [value]
    return [item if isinstance(item, str) else str(item) for item in items]


def _no_expected(case: Case) -> ScoreResult:
    return ScoreResult(
        0.0,
        passed=False,
        error=f"case '{case.id}' has no expected value; set `expected` on the case "
        "or `value` on the criterion",
    )


def _empty_expected(case: Case) -> ScoreResult:
    return ScoreResult(
        0.0,
        passed=False,
        error=f"case '{case.id}' has an empty list as expected value; "
        "list at least one value, or set `value` on the criterion",
    )


# --- exact -------------------------------------------------------------------------------


def exact(criterion: Criterion, root: Path, file: str) -> ScorerFn:
    """Output equals ``value`` (or ``case.expected``); a list passes when any element does."""
    strip = _bool_option(criterion, file, "strip", True)
    case_sensitive = _bool_option(criterion, file, "case_sensitive", True)

    def normalise(text: str) -> str:
        if strip:
            text = text.strip()
        if not case_sensitive:
            text = text.casefold()
        return text

    values: CaseValues | None = None
    fixed: list[str] | None = None
    value = criterion.options.get("value")
    if value is not None:
        given = _as_strings(value)
        if not given:
            raise option_error(
                criterion,
                file,
                "value",
                "'value' is an empty list",
                "list at least one accepted answer, or remove `value` to use the case's expected",
            )
        values = CaseValues(criterion, file, "value", given)
        fixed = None if values.fixed is None else [normalise(v) for v in values.fixed]

    def score(output: str, case: Case) -> ScoreResult:
        if values is None:
            if case.expected is None:
                return _no_expected(case)
            raw = _as_strings(case.expected)
            if not raw:
                return _empty_expected(case)
            candidates = [normalise(v) for v in raw]
        else:
            raw = values(case)
            candidates = fixed if fixed is not None else [normalise(v) for v in raw]
        got = normalise(output)
        if got in candidates:
            return ScoreResult(1.0)
        expected: Any = clip(raw[0]) if len(raw) == 1 else [clip(v) for v in raw]
        return ScoreResult(0.0, details={"expected": expected})

    return _with_prepare(score, values)


def _with_prepare(score: ScorerFn, prepare: Any) -> ScorerFn:
    """``score`` with ``prepare(case)``, which renders the criterion's templated values for a
    case ahead of scoring (or does nothing)."""
    score.prepare = prepare or _nothing  # type: ignore[attr-defined]
    return score


def _nothing(case: Case) -> None:
    return None


# --- contains / not-contains -------------------------------------------------------------


def _contains(criterion: Criterion, file: str, negate: bool) -> ScorerFn:
    case_sensitive = _bool_option(criterion, file, "case_sensitive", True)
    match = criterion.options.get("match", "all")
    if match not in ("all", "any"):
        raise option_error(
            criterion,
            file,
            "match",
            f"'match' must be 'all' or 'any', got {match!r}",
            "write `match: all` (every value) or `match: any` (at least one value)",
        )
    match_all = match == "all"

    values: CaseValues | None = None
    fixed: list[tuple[str, str]] | None = None
    value = criterion.options.get("value")
    if value is not None:
        if not (
            isinstance(value, str)
            or (isinstance(value, list) and value and all(isinstance(v, str) for v in value))
        ):
            raise option_error(
                criterion,
                file,
                "value",
                f"'value' must be a string or a non-empty list of strings, got {value!r}",
                "write `value: text` or `value: [one, two]`",
            )
        values = CaseValues(criterion, file, "value", _as_strings(value))
        if values.fixed is not None:
            fixed = [(v, v if case_sensitive else v.casefold()) for v in values.fixed]

    def score(output: str, case: Case) -> ScoreResult:
        if fixed is not None:
            pairs = fixed
        else:
            if values is not None:
                raw = values(case)
            elif case.expected is None:
                return _no_expected(case)
            else:
                raw = _as_strings(case.expected)
                if not raw:
                    return _empty_expected(case)
            pairs = [(v, v if case_sensitive else v.casefold()) for v in raw]
        haystack = output if case_sensitive else output.casefold()
        found: list[str] = []
        missing: list[str] = []
        for shown, needle in pairs:
            (found if needle in haystack else missing).append(clip(shown))
        if negate:
            # all: none of the values may occur; any: at least one must be absent.
            ok = not found if match_all else bool(missing)
        else:
            ok = not missing if match_all else bool(found)
        return ScoreResult(1.0 if ok else 0.0, details={"found": found, "missing": missing})

    return _with_prepare(score, values)


def contains(criterion: Criterion, root: Path, file: str) -> ScorerFn:
    """Output contains every (``match: all``) or some (``match: any``) of the values."""
    return _contains(criterion, file, negate=False)


def not_contains(criterion: Criterion, root: Path, file: str) -> ScorerFn:
    """Output contains none of the values (``match: any``: misses at least one of them)."""
    return _contains(criterion, file, negate=True)


# --- regex -------------------------------------------------------------------------------


def regex(criterion: Criterion, root: Path, file: str) -> ScorerFn:
    """``pattern`` found in the output (``re.search``), or matching all of it (``full_match``)."""
    opts = criterion.options
    pattern = opts.get("pattern")
    if not isinstance(pattern, str):
        raise option_error(
            criterion,
            file,
            "pattern",
            f"'pattern' must be a string, got {pattern!r}",
            "write the regular expression as a string, e.g. pattern: '^\\d+$'",
        )
    flag_names = opts.get("flags") or []
    if isinstance(flag_names, str):
        flag_names = [flag_names]
    flags = 0
    for name in flag_names:
        if name not in REGEX_FLAGS:
            raise option_error(
                criterion,
                file,
                "flags",
                f"unknown regex flag {name!r}",
                f"use any of: {', '.join(REGEX_FLAGS)}",
            )
        flags |= REGEX_FLAGS[name]
    full_match = _bool_option(criterion, file, "full_match", False)

    def matcher_of(pattern: str, case: Case | None = None) -> Any:
        try:
            compiled = re.compile(pattern, flags)
        except re.error as exc:
            position = f" at position {exc.pos}" if exc.pos is not None else ""
            rendered = f" (as rendered for case '{case.id}')" if case is not None else ""
            raise option_error(
                criterion,
                file,
                "pattern",
                f"invalid regular expression {pattern!r}{rendered}: {exc.msg}{position}",
                "fix the pattern (Python `re` syntax); in YAML single-quote it so backslashes "
                "are kept, e.g. pattern: '\\d+'",
            ) from None
        return compiled.fullmatch if full_match else compiled.search

    values = CaseValues(criterion, file, "pattern", [pattern], regex=True)
    fixed = matcher_of(pattern) if values.fixed is not None else None

    def prepare(case: Case) -> Any:
        (rendered,) = values(case)
        return matcher_of(rendered, case)  # re caches the compiled pattern

    def score(output: str, case: Case) -> ScoreResult:
        matcher = fixed if fixed is not None else prepare(case)
        found = matcher(output)
        if found is None:
            return ScoreResult(0.0, details={"match": None})
        return ScoreResult(1.0, details={"match": clip(found.group(0))})

    return _with_prepare(score, None if fixed is not None else prepare)


# --- json-valid / json-schema ------------------------------------------------------------


def json_valid(criterion: Criterion, root: Path, file: str) -> ScorerFn:
    """Output parses as JSON (with ``extract``: the JSON embedded in it)."""
    extract = _bool_option(criterion, file, "extract", False)

    def score(output: str, case: Case) -> ScoreResult:
        ok, _value, info = parse_json(output, extract)
        return ScoreResult(1.0 if ok else 0.0, details=info)

    return score


def _load_schema_file(criterion: Criterion, root: Path, file: str, name: Any) -> Any:
    if not isinstance(name, str) or not name:
        raise option_error(
            criterion,
            file,
            "schema_file",
            f"'schema_file' must be a path, got {name!r}",
            "give the path of a JSON or YAML schema, relative to the config file's folder",
        )
    from evalwh.config.outputs import read_schema_file

    try:
        return read_schema_file(name, root, option_where(criterion, "schema_file"), file)
    except ConfigError as exc:
        message, fix = exc.message, exc.fix or ""
        if exc.file != file:  # the schema file's own YAML: say which file, line and column
            at = f" (line {exc.line}, column {exc.column})" if exc.line is not None else ""
            message = f"schema file {exc.file} is not valid YAML: {message}{at}"
            fix = fix or "fix the YAML syntax of the schema file (or write it as .json)"
        raise option_error(criterion, file, "schema_file", message, fix) from None


def json_schema(criterion: Criterion, root: Path, file: str) -> ScorerFn:
    """Output parses as JSON (see json-valid) and validates against ``schema``/``schema_file``."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    opts = criterion.options
    extract = _bool_option(criterion, file, "extract", False)
    has_inline, has_file = "schema" in opts, "schema_file" in opts
    if has_inline == has_file:
        raise option_error(
            criterion,
            file,
            "schema",
            "set exactly one of 'schema' and 'schema_file'"
            + (" (both are set)" if has_inline else ""),
            "give the schema inline under `schema:` or as a file path under `schema_file:`",
        )
    option = "schema" if has_inline else "schema_file"
    schema = (
        opts["schema"]
        if has_inline
        else _load_schema_file(criterion, root, file, opts["schema_file"])
    )
    if not isinstance(schema, (dict, bool)):
        raise option_error(
            criterion,
            file,
            option,
            f"the JSON schema must be an object (or true/false), got {type(schema).__name__}",
            'write a JSON schema object, e.g. {"type": "object", "required": ["answer"]}',
        )
    try:
        cls = validator_for(schema, default=Draft202012Validator)
        cls.check_schema(schema)
    except SchemaError as exc:
        at = "" if exc.json_path == "$" else f" at {exc.json_path}"
        raise option_error(
            criterion,
            file,
            option,
            f"invalid JSON schema{at}: {exc.message}",
            "fix the schema; it must be a valid JSON Schema (draft 2020-12 unless `$schema` "
            "names another draft)",
        ) from None
    except Exception as exc:  # e.g. an unknown $schema URI
        raise option_error(
            criterion,
            file,
            option,
            f"invalid JSON schema: {type(exc).__name__}: {exc}",
            "fix the schema; it must be a valid JSON Schema",
        ) from None
    validator = cls(schema)

    def score(output: str, case: Case) -> ScoreResult:
        ok, value, info = parse_json(output, extract)
        if not ok:
            return ScoreResult(0.0, details={**(info or {}), "valid_json": False})
        errors = list(islice(validator.iter_errors(value), MAX_SCHEMA_ERRORS + 1))
        if not errors:
            return ScoreResult(1.0, details=info)
        details: dict[str, Any] = {
            "errors": [
                {"path": e.json_path, "message": clip(e.message, 300)}
                for e in errors[:MAX_SCHEMA_ERRORS]
            ],
        }
        if len(errors) > MAX_SCHEMA_ERRORS:
            details["more_errors"] = True
        if info:
            details.update(info)
        return ScoreResult(0.0, details=details)

    return score
