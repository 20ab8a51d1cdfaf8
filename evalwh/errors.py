"""Exceptions that carry their own exit code and a message a user can act on."""

from __future__ import annotations


class EvalwhError(Exception):
    """Base class: every error evalwh raises on purpose."""

    exit_code = 1

    def to_dict(self) -> dict[str, object]:
        return {"error": type(self).__name__, "message": str(self)}


class UsageError(EvalwhError):
    """A bad flag, an unknown run reference, a file that does not exist."""

    exit_code = 2


class ConfigError(UsageError):
    """Bad input in a config, prompt or dataset file.

    Carries the file, the place inside it (a path like ``models[1].params`` and, when known,
    the line and column) and the fix, so the message says where and how to repair it.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        where: str | None = None,
        line: int | None = None,
        column: int | None = None,
        fix: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.where = where
        self.line = line
        self.column = column
        self.fix = fix
        super().__init__(self._format())

    def _format(self) -> str:
        location = ""
        if self.file:
            location = self.file
            if self.line is not None:
                location += f":{self.line}"
                if self.column is not None:
                    location += f":{self.column}"
        head = ": ".join(part for part in (location, self.where, self.message) if part)
        return f"{head}\n  fix: {self.fix}" if self.fix else head

    def to_dict(self) -> dict[str, object]:
        return {
            "error": "ConfigError",
            "message": self.message,
            "file": self.file,
            "where": self.where,
            "line": self.line,
            "column": self.column,
            "fix": self.fix,
        }


class MissingKeysError(ConfigError):
    """Models the run would call whose API key (or ``${NAME}`` header secret) is set nowhere.

    ``missing`` holds one entry per model or judge: ``model`` (its id), ``provider``,
    ``names`` (any one of them will do; the first is the one to set), ``where`` (the place in
    the config that asks for it) and its ``line``/``column`` when known.
    """

    def __init__(self, missing: list[dict[str, object]], *, file: str | None, fix: str) -> None:
        self.missing = missing
        lines = [
            f"  {_place(file, m)}: {m['model']} ({m['provider']}) needs "
            + " or ".join(map(str, m["names"]))  # type: ignore[call-overload]
            for m in missing
        ]
        n = len(missing)
        message = (
            f"{n} model{'s' if n != 1 else ''} of this run need{'' if n != 1 else 's'} an API "
            "key that is not set; nothing was called:\n" + "\n".join(lines)
        )
        super().__init__(message, file=file, fix=fix)

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "missing": self.missing}


def _place(file: str | None, entry: dict[str, object]) -> str:
    """``file:line:col where`` of one entry (``--model provider/model`` has no line)."""
    line, column = entry.get("line"), entry.get("column")
    at = f"{file}:{line}:{column} " if file and line is not None else ""
    return f"{at}{entry['where']}"


class RunNotFoundError(UsageError):
    """A run reference (id, prefix, label, ``latest``) that matches no run or several."""


class WarehouseError(EvalwhError):
    """The warehouse cannot be opened or migrated (for instance: it is newer than this code)."""

    exit_code = 2


class CostRefusedError(EvalwhError):
    """The cost estimate exceeds the allowed maximum: nothing was spent."""

    exit_code = 4

    def __init__(
        self,
        message: str,
        *,
        estimate_usd: float | None = None,
        cap_usd: float | None = None,
        calls: int | None = None,
    ) -> None:
        super().__init__(message)
        self.estimate_usd = estimate_usd
        self.cap_usd = cap_usd
        self.calls = calls

    def to_dict(self) -> dict[str, object]:
        return {
            **super().to_dict(),
            "estimate_usd": self.estimate_usd,
            "cap_usd": self.cap_usd,
            "calls": self.calls,
            "spent_usd": 0.0,
        }
