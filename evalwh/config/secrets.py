"""API keys and other secrets: where they are looked up, and how they are kept out of output.

Lookup order for :func:`get_secret`, first hit wins:

1. the environment (``ANTHROPIC_API_KEY=... evalwh run``);
2. the file ``$EVALWH_SECRETS`` names, when set (it must exist);
3. ``.evalwh.secrets.yaml`` in the current directory;
4. ``secrets.yaml`` in the user config folder (``$EVALWH_CONFIG_DIR``, else
   ``$XDG_CONFIG_HOME/evalwh``, else ``~/.config/evalwh``).

The files are flat YAML mappings, ``NAME: value``. Keep them out of version control.

Every value that was looked up or loaded (the keys a config uses and every entry of a secrets
file, read by :func:`preload` before a run starts), and every environment variable with a
secret-looking name (:func:`is_secret_name`: ``*_KEY``, ``*_TOKEN``, ``*_SECRET``,
``*_PASSWORD``, ``*_CREDENTIALS``, and names holding ``API_KEY``, ``PASSWORD``, ``SECRET``
or ``TOKEN``; so ``AWS_SECRET_ACCESS_KEY`` and ``*_API_KEY`` too), and the value of every
variable handed to a child through ``pass_env`` (:func:`remember_passed`, whatever its name:
``CORP_CRED`` too) is a *known secret*. A child (exec check, command provider) gets only a
minimal base (:data:`BASE_NAMES`) and its ``pass_env`` (:func:`check_environment`).
:func:`redact` replaces known secrets, anything shaped like a well-known API key
(:data:`KEY_PATTERNS`) and the token of ``Bearer <token>`` with ``***``.

:func:`sanitize` is the one function for text that leaves a provider or a subprocess (error
bodies, stderr, headers, a command provider's output): it redacts first and cuts second, so a
key that straddles the cut leaves no prefix behind. :func:`find_key_shaped` finds key-shaped
strings in a config or a case, so configs and case files that hold secrets can be refused.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from evalwh.errors import ConfigError

PROJECT_SECRETS_FILE = ".evalwh.secrets.yaml"
SECRETS_ENV = "EVALWH_SECRETS"  # names a secrets file (a path, not a secret itself)
USER_SECRETS_FILE = "secrets.yaml"
SECRET_NAME_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_CREDENTIALS")
SECRET_NAME_PARTS = ("API_KEY", "PASSWORD", "SECRET", "TOKEN", "CREDENTIAL")
MIN_SECRET_LENGTH = 8
SECRET_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")  # ${NAME} in a header value
MASK = "***"

# A key must not be glued to other key characters on its left ("task-..." is no "sk-...").
_START = r"(?<![A-Za-z0-9_\-])"

#: Name -> regex for strings shaped like well-known API keys. Order matters: the first
#: pattern that matches names the key (Anthropic's ``sk-ant-`` before OpenAI's ``sk-``).
KEY_PATTERNS: dict[str, re.Pattern[str]] = {
    "anthropic": re.compile(_START + r"sk-ant-[A-Za-z0-9_\-]{20,}"),
    "openai": re.compile(_START + r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
    "google": re.compile(_START + r"AIza[0-9A-Za-z_\-]{35}"),
    "aws": re.compile(_START + r"(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Za-z])"),
    "github": re.compile(_START + r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
    "huggingface": re.compile(_START + r"hf_[A-Za-z0-9]{30,}"),
    "slack": re.compile(_START + r"xox[baprs]-[A-Za-z0-9\-]{10,}"),
}
#: Every match of a KEY_PATTERNS pattern holds one of these (they are case-sensitive): a text
#: without any is left alone by all seven, which :func:`redact` then skips (a substring test
#: costs ~0.1 us, the seven searches ~12 us, on every answer a run stores).
KEY_LITERALS = (
    "sk-",
    "AIza",
    "AKIA",
    "ASIA",
    *(f"gh{c}_" for c in "pousr"),
    "github_pat_",
    "hf_",
    "xox",
)
_ANY_LITERAL = re.compile("|".join(map(re.escape, KEY_LITERALS)))
# Any of them: one search tells most strings (case files hold many) they match none.
_ANY_KEY = re.compile("|".join(f"(?:{p.pattern})" for p in KEY_PATTERNS.values()))

#: Redacted in output but not refused in input. The token must hold a digit or one of
#: ``._~+/-``, so prose ("Bearer authentication") is left alone.
BEARER = re.compile(r"(?i)\b(Bearer)\s+(?=[A-Za-z]*[0-9._~+/\-])[A-Za-z0-9._~+/\-]{8,}=*")

_lock = threading.Lock()
_loaded: set[str] = set()  # values handed out by get_secret or read from a secrets file


def _remember(values: Any) -> None:
    with _lock:
        for value in values:
            if isinstance(value, str) and len(value) >= MIN_SECRET_LENGTH:
                _loaded.add(value)


def secret_files(
    *, env: Mapping[str, str] | None = None, cwd: str | Path | None = None
) -> list[Path]:
    """The secrets files, in lookup order (whether or not they exist)."""
    from evalwh.config.settings import user_config_dir

    env = os.environ if env is None else env
    here = Path.cwd() if cwd is None else Path(cwd)
    named = [here / Path(env[SECRETS_ENV]).expanduser()] if env.get(SECRETS_ENV) else []
    return [*named, here / PROJECT_SECRETS_FILE, user_config_dir(env) / USER_SECRETS_FILE]


def _read_file(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    from evalwh.config.yamlpos import load_yaml

    data, _node = load_yaml(path)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            "a secrets file must be a mapping of NAME: value",
            file=str(path),
            fix="write one line per secret, like `ANTHROPIC_API_KEY: sk-ant-...`",
        )
    out = {str(k): str(v) for k, v in data.items() if v is not None}
    _remember(out.values())
    return out


def get_secret(
    name: str, *, env: Mapping[str, str] | None = None, cwd: str | Path | None = None
) -> str | None:
    """The value of secret ``name``: environment, then the project file, then the user file.

    Empty values count as unset. Returns None when no source has it.
    """
    env = os.environ if env is None else env
    value = env.get(name)
    if value:
        _remember([value])
        return value
    for path in secret_files(env=env, cwd=cwd):
        value = _read_file(path).get(name)
        if value:
            return value
    return None


def preload(names: Iterable[str] = ()) -> None:
    """Make the secrets a run may use known before it starts: every entry of both secrets
    files and the value of each name in ``names`` (a config's API key names and ``${NAME}``
    header references). Redaction and the stripped environment of checks and command
    providers then do not depend on whether an answer came fresh or from the cache."""
    # A broken secrets file is reported where a key is actually looked up.
    for path in secret_files():
        with contextlib.suppress(ConfigError):
            _read_file(path)
    for name in names:
        with contextlib.suppress(ConfigError):
            get_secret(name)


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret (see the module doc)."""
    upper = name.upper()
    if upper == SECRETS_ENV:
        return False  # the path of a secrets file, not a secret
    return upper.endswith(SECRET_NAME_SUFFIXES) or any(p in upper for p in SECRET_NAME_PARTS)


def known_secret_values(env: Mapping[str, str] | None = None) -> list[str]:
    """Secrets to hide: loaded values and secret-named environment variables, longest first."""
    env = os.environ if env is None else env
    with _lock:
        values = set(_loaded)
    for name, value in env.items():
        if is_secret_name(name) and len(value) >= MIN_SECRET_LENGTH:
            values.add(value)
    return sorted(values, key=lambda v: (-len(v), v))


def redact(text: str, extra: Iterable[str] = (), *, known: Iterable[str] | None = None) -> str:
    """``text`` with known secrets, the ``extra`` values, key-shaped strings and bearer
    tokens replaced by ***. ``known``: :func:`known_secret_values` taken once by a caller
    that redacts many strings (an import), instead of once per string."""
    if not isinstance(text, str):
        text = str(text)
    for value in [*extra, *(known_secret_values() if known is None else known)]:
        if value and len(value) >= MIN_SECRET_LENGTH and value in text:
            text = text.replace(value, MASK)
    if may_hold_key(text):  # else no pattern can match
        for pattern in KEY_PATTERNS.values():
            text = pattern.sub(MASK, text)
    return BEARER.sub(lambda m: f"{m.group(1)} {MASK}", text)


def redact_tree(value: Any, known: Iterable[str] | None = None) -> Any:
    """``value`` (an answer, a tool call, a raw reply: text, or JSON-shaped lists and
    mappings) with every string in it redacted (:func:`redact`, against ``known`` when
    given); mapping keys are kept as they are."""
    if isinstance(value, str):
        return redact(value, known=known)
    if isinstance(value, Mapping):
        return {k: redact_tree(v, known) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_tree(v, known) for v in value]
    return value


def sanitize(
    text: str, limit: int | None = None, *, extra: Iterable[str] = (), tail: bool = False
) -> str:
    """Text that leaves a provider or a subprocess, safe to store and print: redacted first,
    then cut to ``limit`` characters (its end when ``tail``) with ``...`` marking the cut."""
    text = redact(text, tuple(extra))
    if limit is None or len(text) <= limit:
        return text
    return "..." + text[-limit:] if tail else text[:limit] + "..."


def may_hold_key(text: str) -> bool:
    """Whether ``text`` holds one of KEY_LITERALS, without which no key pattern matches: a
    few substring tests (~1 us on a case file's line), where the patterns' search costs
    ~50 us on a line (their look-behind is tried at every position)."""
    return _ANY_LITERAL.search(text) is not None


def key_shape(value: str) -> str | None:
    """The name of the first key pattern ``value`` contains, or None."""
    if not may_hold_key(value) or not _ANY_KEY.search(value):
        return None
    for name, pattern in KEY_PATTERNS.items():
        if pattern.search(value):
            return name
    return None


def find_key_shaped(data: Any, path: str = "") -> list[tuple[str, str]]:
    """(path, pattern name) for every string in a nested config that looks like an API key.

    Paths read like ``models[0].headers.Authorization``.
    """
    found: list[tuple[str, str]] = []
    if isinstance(data, str):
        name = key_shape(data)
        if name is not None:
            found.append((path, name))
    elif isinstance(data, Mapping):
        for key, value in data.items():
            found.extend(find_key_shaped(value, f"{path}.{key}" if path else str(key)))
    elif isinstance(data, (list, tuple)):
        for i, value in enumerate(data):
            found.extend(find_key_shaped(value, f"{path}[{i}]"))
    return found


def check_secret_files(
    *, env: Mapping[str, str] | None = None, cwd: str | Path | None = None
) -> None:
    """Parse every secrets file that exists, so a malformed one is a ConfigError (naming the
    file and line) before a run starts rather than an auth error on each request."""
    named = (os.environ if env is None else env).get(SECRETS_ENV)
    files = secret_files(env=env, cwd=cwd)
    if named and not files[0].is_file():
        raise ConfigError(
            f"{SECRETS_ENV} names {files[0]}, which is not a file",
            fix=f"point {SECRETS_ENV} at your secrets file (NAME: value lines), or unset it",
        )
    for path in files:
        _read_file(path)


# The environment of a program evalwh starts (exec checks, the command provider): a minimal
# base plus what the user named in ``pass_env``, the same for a fresh and a cached answer.
DROPPED_ALWAYS = frozenset({"PWD", "OLDPWD"})  # would name the caller's folder, not the program's
#: The variables a child gets without being named: where programs are and how text is spelled.
BASE_NAMES = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TERM",
        "TZ",
        "TMPDIR",
        "TEMP",
        "TMP",
        # what a Windows program needs to start at all
        "SYSTEMROOT",
        "SYSTEMDRIVE",
        "WINDIR",
        "COMSPEC",
        "PATHEXT",
    }
)


#: What an environment variable's name may be in a ``pass_env`` list.
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def pass_env_names(value: object) -> tuple[str, ...] | None:
    """A ``pass_env`` option as the names it lists (none when absent), or None when it is not
    a list of environment variable names (the caller refuses it at its place)."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(
        isinstance(name, str) and ENV_NAME.fullmatch(name) for name in value
    ):
        return None
    return tuple(value)


def is_base_name(name: str) -> bool:
    """Whether a child gets ``name`` without it being named in ``pass_env``."""
    upper = name.upper()
    return upper in BASE_NAMES or upper.startswith("LC_")


def remember_passed(env: Mapping[str, str], names: Iterable[str]) -> list[str]:
    """The values of ``names`` in ``env``, made known secrets: what evalwh hands a child on
    purpose (``pass_env``, whatever the variable is called) is redacted in all it prints."""
    values = [env[name] for name in names if env.get(name)]
    _remember(values)
    return values


def check_environment(
    base: Mapping[str, str] | None = None, pass_env: Iterable[str] = ()
) -> tuple[dict[str, str], list[str]]:
    """The environment of a child started from ``base`` (default ``os.environ``): the
    :data:`BASE_NAMES` (and ``LC_*``) without secrets, plus the ``pass_env`` names as they
    are (their values become known secrets, :func:`remember_passed`). Returns it and the
    secret values left out."""
    base = os.environ if base is None else base
    passed = [name for name in pass_env if name in base]
    remember_passed(base, passed)
    known = known_secret_values(base)
    kept: dict[str, str] = {}
    dropped: list[str] = []
    for name, value in base.items():
        if name in DROPPED_ALWAYS:
            continue
        if (
            is_secret_name(name)
            or key_shape(value) is not None
            or any(secret in value for secret in known)
        ):
            dropped.append(value)
            continue
        if is_base_name(name):
            kept[name] = value
    for name in passed:
        kept[name] = base[name]
    return kept, dropped
