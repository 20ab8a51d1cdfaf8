"""The docs stay true: commands, options, config keys, tables, links and examples are checked.

Conventions the docs follow so that these tests can read them:

- docs/cli.md has a ``## evalwh <command>`` section per command, holding its ``--help``;
- a fenced block whose info string has ``file=<path>`` (```` ```csv file=cases.csv ````) is a
  file that the full eval configs of the same page may reference; the tests write it next to
  the config before loading it (with ``encoding=base64`` its body is base64, written as the
  bytes it decodes to: a small image for a multimodal example);
- a ```yaml block holding ``models:`` and ``scorecard:`` is a full eval config: it must load
  and validate, unless its first line says ``# not-runnable``;
- ``evalwh <command>`` written as code (an inline span, or a command in a fenced block other
  than Python) names a command that exists, and a group's subcommand too.

Pages that run as a whole have tests of their own in tests/docs/: docs/analysis.md
(test_analysis.py), docs/ci.md (test_ci.py), docs/tutorial.md (test_tutorial.py),
docs/python-api.md (test_python_api.py), the "Writing a scorer" guide of docs/scoring.md
(test_scoring.py), docs/reports.md (test_reports.py), docs/mcp.md (test_mcp.py),
docs/datasources.md and docs/no-look.md (test_datasources.py); the command block of
docs/scale-out.md and the sharded matrix recipe of docs/ci.md run in the lake tests, against
PostgreSQL and an S3 endpoint on loopback.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import duckdb
import pytest
import typer.main

import evalwh
from evalwh import api
from evalwh.cli.main import app
from evalwh.errors import MissingKeysError

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
SCHEMA = json.loads((ROOT / "evalwh" / "config" / "eval.schema.json").read_text(encoding="utf-8"))
MIGRATIONS = sorted((ROOT / "migrations").glob("*.sql"))
QUERIES = sorted((ROOT / "sql").glob("*.sql"))

README_COMMANDS = (
    "uv run evalwh run examples/quickstart/eval.yaml   # the main job: embedded default, no key, no network",
    "uv run pytest                                      # the tests, one worker per core (docs/testing.md)",
)

FENCE = re.compile(r"^```([\w+-]*)([^\n]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
NOT_RUNNABLE = "# not-runnable"


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def blocks(text: str) -> list[tuple[str, dict[str, str], str]]:
    """(language, attributes such as file=..., body) of every fenced block."""
    found = []
    for match in FENCE.finditer(text):
        lang, info, body = match.groups()
        attrs = dict(re.findall(r"(\w+)=(\S+)", info))
        found.append((lang, attrs, body))
    return found


def without_blocks(text: str) -> str:
    return FENCE.sub("", text)


def code_text(text: str) -> str:
    """Everything written as code on a page: fenced blocks and inline spans."""
    fenced = [body for _, _, body in blocks(text)]
    inline = INLINE_CODE.findall(without_blocks(text))
    return "\n".join(fenced + inline)


def section(text: str, heading: str) -> str:
    """The text under a ``## heading`` up to the next ``## `` heading."""
    match = re.search(rf"^## {re.escape(heading)}[ \t]*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"no '## {heading}' section"
    return match.group(1)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = without_blocks(read(path))
    return {slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


# --- cli.md --------------------------------------------------------------------------------

ROOT_COMMAND = typer.main.get_command(app)


def all_commands(group, prefix: str = "evalwh") -> dict[str, object]:
    """'evalwh run', 'evalwh cache info', ... -> click command, groups included."""
    found = {}
    for name, command in getattr(group, "commands", {}).items():
        path = f"{prefix} {name}"
        found[path] = command
        found.update(all_commands(command, path))
    return found


COMMANDS = all_commands(ROOT_COMMAND)


def option_names(command) -> list[str]:
    names = []
    for param in command.params:
        names += [o for o in (*param.opts, *param.secondary_opts) if o.startswith("-")]
    return names


def test_the_cli_has_commands():
    assert {"evalwh run", "evalwh validate", "evalwh list", "evalwh show"} <= set(COMMANDS)


@pytest.mark.parametrize("path", ["evalwh", *sorted(COMMANDS)])
def test_cli_doc_has_a_section_with_every_option_of(path):
    command = COMMANDS.get(path, ROOT_COMMAND)
    part = section(read(DOCS / "cli.md"), path)
    missing = [
        o
        for o in option_names(command)
        if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", part)
    ]
    assert not missing, f"docs/cli.md '## {path}' lacks {missing}"


# An `evalwh` at the start of a command: a line (after `$ ` or `uv run `), after `&&`, `||`,
# `;`, `|`, `(` or a CI step's `run:`; then the command and, for a group, its subcommand.
NAMED_COMMAND = re.compile(
    r"(?:^|&&|\|\||[;|(]|\brun:|\$)[ \t]*(?:uv run[ \t]+)?evalwh((?:[ \t]+[a-z][a-z0-9-]*){1,2})",
    re.M,
)


def named_commands(text: str) -> list[str]:
    """Every `evalwh <command> [<subcommand>]` a page writes as code: inline spans and fenced
    blocks other than Python (whose prose, in docstrings, may begin with "evalwh")."""
    fenced = [body for lang, _, body in blocks(text) if lang != "python"]
    code = "\n".join(fenced + INLINE_CODE.findall(without_blocks(text)))
    return [" ".join(m.group(1).split()) for m in NAMED_COMMAND.finditer(code)]


def unknown_commands(text: str) -> list[str]:
    unknown = []
    for words in named_commands(text):
        name, *rest = words.split()
        command = COMMANDS.get(f"evalwh {name}")
        if command is None:
            unknown.append(f"evalwh {name}")
        elif rest and getattr(command, "commands", None) and f"evalwh {words}" not in COMMANDS:
            unknown.append(f"evalwh {words}")
    return unknown


def test_a_nonexistent_command_is_caught_in_every_form_a_page_writes_it():
    # bug: docs/no-look.md named `evalwh render`, a command that does not exist, and no test
    # looked at the commands pages name outside docs/cli.md's headings
    page = (
        "Run `evalwh render` or `uv run evalwh bogus --json`.\n\n```sh\n$ evalwh nope x\n"
        "evalwh run eval.yaml && evalwh cache wipe\n```\n\n```yaml\n    run: evalwh gone\n```\n"
        '\n```python\n"""evalwh calls this."""\n```\n'
    )
    assert unknown_commands(page) == [
        "evalwh nope",
        "evalwh cache wipe",
        "evalwh gone",
        "evalwh render",
        "evalwh bogus",
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_command_a_page_names_exists(page):
    unknown = unknown_commands(read(page))
    assert not unknown, f"{page.name} names {unknown}: no such command (see `evalwh --help`)"


# --- configuration.md ----------------------------------------------------------------------


def schema_keys(node, found: set[str] | None = None) -> set[str]:
    """Every property name anywhere in the schema."""
    found = set() if found is None else found
    if isinstance(node, dict):
        found.update(node.get("properties", {}))
        for value in node.values():
            schema_keys(value, found)
    elif isinstance(node, list):
        for value in node:
            schema_keys(value, found)
    return found


def schema_enums(node, found: set[str] | None = None) -> set[str]:
    found = set() if found is None else found
    if isinstance(node, dict):
        found.update(v for v in node.get("enum", []) if isinstance(v, str))
        for value in node.values():
            schema_enums(value, found)
    elif isinstance(node, list):
        for value in node:
            schema_enums(value, found)
    return found


def missing_from_code(words, text: str) -> list[str]:
    code = code_text(text)
    return sorted(w for w in words if not re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", code))


def test_configuration_doc_has_every_top_level_and_settings_key():
    text = read(DOCS / "configuration.md")
    keys = set(SCHEMA["properties"]) | set(SCHEMA["$defs"]["settings"]["properties"])
    missing = missing_from_code(keys, text)
    assert not missing, f"docs/configuration.md does not show the keys {missing}"


def test_configuration_doc_has_every_key_and_value_of_the_schema():
    text = read(DOCS / "configuration.md")
    missing = missing_from_code(schema_keys(SCHEMA) | schema_enums(SCHEMA), text)
    assert not missing, f"docs/configuration.md does not show the keys or values {missing}"


def test_configuration_doc_has_a_section_per_scorer_type():
    text = read(DOCS / "configuration.md")
    from evalwh.scoring.base import SCORERS

    types = [*SCORERS, *SCHEMA["$defs"]["criterion"]["properties"]["type"]["examples"]]
    missing = [t for t in types if not re.search(rf"^### {re.escape(t)}[ \t]*$", text, re.M)]
    assert not missing, f"docs/configuration.md has no '### <type>' section for {missing}"


def test_configuration_doc_has_every_settings_environment_variable():
    text = read(DOCS / "configuration.md")
    names = [f"EVALWH_{k.upper()}" for k in SCHEMA["$defs"]["settings"]["properties"]]
    missing = missing_from_code(names, text)
    assert not missing, f"docs/configuration.md does not show {missing}"


# --- storage.md ----------------------------------------------------------------------------


def test_storage_doc_lists_every_named_query():
    text = read(DOCS / "storage.md")
    assert QUERIES
    for path in QUERIES:
        title = re.search(r"^--\s*title:\s*(.+)$", read(path), re.M)
        assert path.name in text, f"docs/storage.md does not list sql/{path.name}"
        assert title and title.group(1).strip() in text, f"title of sql/{path.name} missing"


def migrated_relations() -> dict[str, list[str]]:
    """Every table and view the migrations create, with its columns."""
    con = duckdb.connect()
    try:
        for path in MIGRATIONS:
            con.execute(read(path))
        rows = con.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "ORDER BY table_name, ordinal_position"
        ).fetchall()
    finally:
        con.close()
    relations: dict[str, list[str]] = {}
    for table, column in rows:
        relations.setdefault(table, []).append(column)
    return relations


def test_storage_doc_has_every_table_view_and_column():
    text = read(DOCS / "storage.md")
    created = set()
    for path in MIGRATIONS:
        created.update(
            re.findall(
                r"CREATE\s+(?:OR\s+REPLACE\s+)?(?:TABLE|VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)",
                read(path),
                re.I,
            )
        )
    relations = migrated_relations()
    assert created and created <= set(relations)
    missing = [name for name in sorted(relations) if not re.search(rf"\b{name}\b", text)]
    missing += [
        f"{name}.{column}"
        for name, columns in sorted(relations.items())
        for column in missing_from_code(columns, text)
    ]
    assert not missing, f"docs/storage.md does not mention {missing}"
    assert "schema_migrations" in text


# --- links ---------------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_to_existing_files(page):
    broken = []
    for target in LINK.findall(without_blocks(read(page))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        missing_anchor = bool(anchor) and dest.suffix == ".md" and anchor not in anchors(dest)
        if not dest.exists() or missing_anchor:
            broken.append(target)
    assert not broken, f"{page.name}: broken links {broken}"


def test_docs_index_lists_every_page():
    index = read(DOCS / "README.md")
    linked = {target.partition("#")[0] for target in LINK.findall(index)}
    pages = {p.name for p in DOCS.glob("*.md") if p.name != "README.md"}
    assert not pages - linked, f"docs/README.md does not list {sorted(pages - linked)}"


# --- examples ------------------------------------------------------------------------------


def is_config(body: str) -> bool:
    return bool(re.search(r"^models:", body, re.M) and re.search(r"^scorecard:", body, re.M))


def config_examples() -> list[tuple[Path, int, str, dict[str, str | bytes]]]:
    import base64

    found = []
    for page in PAGES:
        page_blocks = blocks(read(page))
        files: dict[str, str | bytes] = {
            a["file"]: base64.b64decode(body) if a.get("encoding") == "base64" else body
            for _, a, body in page_blocks
            if "file" in a
        }
        n = 0
        for lang, attrs, body in page_blocks:
            if lang in ("yaml", "yml") and "file" not in attrs and is_config(body):
                n += 1
                found.append((page, n, body, files))
    return found


EXAMPLES = config_examples()


def runnable(body: str) -> bool:
    return not body.lstrip().startswith(NOT_RUNNABLE)


def test_there_are_runnable_examples():
    pages = {page.name for page, _, body, _ in EXAMPLES if runnable(body)}
    assert {"README.md", "configuration.md"} <= pages


@pytest.fixture
def clean_env(tmp_path, monkeypatch):
    """No user config, no EVALWH_* variables, the current folder a temporary one."""
    for name in list(os.environ):
        if name.startswith("EVALWH_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("EVALWH_CONFIG_DIR", str(tmp_path / "user-config"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_example(folder: Path, body: str, files: dict[str, str | bytes]) -> Path:
    """A page's config as ``folder/eval.yaml``, with the files the page shows beside it
    (text, or bytes for an image the page attaches)."""
    for name, content in files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    config_path = folder / "eval.yaml"
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.write_text(body, encoding="utf-8")
    return config_path


@pytest.mark.parametrize(
    ("page", "n", "body", "files"),
    EXAMPLES,
    ids=[f"{p.relative_to(ROOT)}#{n}" for p, n, _, _ in EXAMPLES],
)
def test_config_example_loads_and_validates(page, n, body, files, clean_env, monkeypatch):
    if not runnable(body):
        pytest.skip("marked # not-runnable")
    config_path = write_example(clean_env / "example", body, files)
    config = evalwh.load_config(config_path)
    try:
        plan = api.validate(config, output_dir=clean_env / "out")
    except MissingKeysError as exc:  # a reader sets their own keys: a stand-in for each
        for entry in exc.missing:
            monkeypatch.setenv(entry["names"][0], "key-for-the-docs-tests")
        plan = api.validate(config, output_dir=clean_env / "out")
    assert plan.requests > 0 or plan.datasources  # a datasource's cases come at run time
    assert not (clean_env / "out").exists(), "validate must not write a warehouse"


# --- README --------------------------------------------------------------------------------


def test_readme_has_the_two_commands_exactly():
    code_lines = {
        line.rstrip() for _, _, body in blocks(read(README)) for line in body.splitlines()
    }
    for command in README_COMMANDS:
        assert command in code_lines, f"README.md lacks the line: {command}"


def test_readme_quickstart_excerpt_is_what_the_run_prints(clean_env):
    from evalwh.cli.render import totals_line

    result = api.run_eval(ROOT / "examples" / "quickstart" / "eval.yaml", output_dir="out")
    line = totals_line(result.totals)
    assert line in read(README), f"README.md shows another overall line than: {line}"
    assert result.exit_code == 0


def pyproject_extras() -> set[str]:
    text = read(ROOT / "pyproject.toml")
    table = re.search(r"^\[project\.optional-dependencies\]\n(.*?)(?=^\[)", text, re.M | re.S)
    assert table, "pyproject.toml has no [project.optional-dependencies]"
    return set(re.findall(r"^([\w-]+)\s*=", table.group(1), re.M))


def test_readme_install_section_lists_the_extras_that_exist():
    part = section(read(README), "Install")
    code = code_text(part)
    # evalwh is not on PyPI: the commands that work name a checkout (tests/features/
    # test_wheel.py installs a wheel outside the repository and runs it there)
    for command in (
        "uv tool install /path/to/evalwh ",
        'uv tool install "evalwh[mcp] @ /path/to/evalwh"',
        'pipx install "/path/to/evalwh[mcp]"',
        "uvx --from /path/to/evalwh evalwh run eval.yaml",
    ):
        assert command in code, f"README.md '## Install' lacks `{command}`"
    assert "It is not on PyPI yet" in part
    for later in ("uvx evalwh run eval.yaml", "uv tool install evalwh", "pipx install evalwh"):
        assert f"`{later}`" in part, f"README.md '## Install' lacks the PyPI form `{later}`"
    extras = pyproject_extras()
    assert "mcp" in extras
    named = set(re.findall(r"evalwh\[([\w,-]+)\]", code))
    unknown = {e for group in named for e in group.split(",")} - extras
    assert not unknown, f"README.md installs extras that pyproject.toml lacks: {unknown}"
    unlisted = [e for e in sorted(extras) if f"`{e}`" not in part]
    assert not unlisted, f"README.md '## Install' does not list the extras {unlisted}"
    headings = re.findall(r"^## (.+)$", read(README), re.M)
    assert headings.index("Install") == headings.index("Try it") + 1


def test_changelog_has_unreleased_and_the_current_version():
    text = read(ROOT / "CHANGELOG.md")
    assert re.search(r"^## Unreleased$", text, re.M)
    version = re.escape(evalwh.__version__)
    assert re.search(rf"^## {version} - \d{{4}}-\d\d-\d\d$", text, re.M), (
        f"CHANGELOG.md has no '## {evalwh.__version__} - YYYY-MM-DD' section"
    )


def test_cli_doc_help_blocks_are_what_the_commands_print():
    # generated by `uv run python -m tests.docs.cli_help docs/cli.md`; a changed option or help text
    # without the page fails here
    from tests.docs.cli_help import blocks, help_text

    found = blocks(read(DOCS / "cli.md"))
    assert len(found) >= len(COMMANDS)
    stale = [path for path, block in found if block != help_text(path)]
    assert not stale, f"regenerate with `uv run python -m tests.docs.cli_help docs/cli.md`: {stale}"


def test_storage_doc_query_list_is_generated_from_the_sql_headers():
    from tests.docs.sql_list import listed, query_lines

    assert listed(read(DOCS / "storage.md")) == query_lines(), (
        "regenerate with `uv run python -m tests.sql_list docs/storage.md`"
    )
