"""The confinement of an MCP client's eval.yaml to the server's root (evalwh/config/
confinement.py, docs/security.md): every file a config can name is found at its key, each one
outside the root is refused unread, code (command models and judges, datasources, exec checks,
plug-in functions) is refused without the allow-code flag, a lake target is refused, and the
refusal lists each violation with what to fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalwh.config.confinement import (
    ALLOW_CODE_FLAG,
    ConfinementError,
    Violation,
    _code,
    _function_file,
    _lake,
    load_confined,
    raw_violations,
    referenced_paths,
    violations,
)
from evalwh.config.loader import load_config
from evalwh.config.model import Case
from evalwh.errors import ConfigError
from tests.builders import DATASOURCE_HEAD
from tests.conftest import write

# One config that names a file in every place a file can be named, each written once.
EVERY_REFERENCE = {
    "settings": {"output_dir": "out", "warehouse": "wh.duckdb", "cache_dir": "cache"},
    "variants": [
        "not-a-mapping",
        {
            "id": "v",
            "prompt": "prompt.txt",
            "messages": [
                "not-a-mapping",  # malformed: the schema reports it later; no crash here
                {"role": "user", "content": ["plain text", {"path": "photo.png"}]},
            ],
            "output_schema": {"schema_file": "answer.schema.json"},
        },
    ],
    "cases": [
        "not-a-mapping",
        {"file": "cases.jsonl"},
        {"dir": "cases/"},
        {"files": {"doc": "docs/a.pdf", "n": 3}},
        {"source": "sources/rows.py:Rows", "params": {"pattern": "data/*.csv"}},
        {"source": "mypkg.rows:Rows"},  # a module: no file of the config
    ],
    "scorecard": [
        "not-a-mapping",
        {"type": "python", "function": "scorers/mine.py:score"},
        {"type": "semantic", "embedder": "emb.py:embed"},
        {"type": "json_schema", "schema_file": "schema.json"},
    ],
    "judges": [
        "not-a-mapping",
        {
            "id": "j",
            "model": {"provider": "command", "command": "./judge.py"},
            "messages": [{"role": "user", "content": [{"image": "judge.png"}]}],
        },
    ],
}


def test_every_file_a_config_names_is_found_once_at_its_key() -> None:
    """Settings folders, the prompt file, a variant's output schema, a message attachment, case files and folders, a
    datasource's file, a glob, scorer and embedder files, a schema, a judge's command and a
    judge's attachment: each one an MCP client could aim at /etc; non-mappings are skipped."""
    assert referenced_paths(EVERY_REFERENCE) == [
        ("settings.output_dir", "out"),
        ("settings.warehouse", "wh.duckdb"),
        ("settings.cache_dir", "cache"),
        ("variants[1].prompt", "prompt.txt"),
        ("variants[1].output_schema.schema_file", "answer.schema.json"),
        ("variants[1].messages[1].content[1].path", "photo.png"),
        ("cases[1].file", "cases.jsonl"),
        ("cases[2].dir", "cases/"),
        ("cases[3].files.doc", "docs/a.pdf"),
        ("cases[4].source", "sources/rows.py"),
        ("cases[4].params.pattern", "data/*.csv"),
        ("scorecard[1].function", "scorers/mine.py"),
        ("scorecard[2].embedder", "emb.py"),
        ("scorecard[3].schema_file", "schema.json"),
        ("judges[1].model.command[0]", "./judge.py"),
        ("judges[1].messages[0].content[0].image", "judge.png"),
    ]
    assert referenced_paths({"settings": None, "models": None}) == []


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("settings.output_dir", "../out"),
        ("settings.warehouse", "/tmp/elsewhere.duckdb"),
        ("settings.cache_dir", "../../cache"),
        ("judges[0].model.command[1]", "/etc/passwd"),
        ("judges[0].messages[0].content[0].path", "../secret.png"),
    ],
)
def test_a_settings_folder_or_a_judges_file_outside_the_root_is_refused_unread(
    tmp_path: Path, key: str, value: str
) -> None:
    """Attack: a client's config writes the cache, the store or the exports outside the
    server's root, or has a judge read a file outside it; each is refused by its key."""
    data: dict[str, object] = {}
    if key.startswith("settings."):
        data["settings"] = {key.split(".")[1]: value}
    elif ".command" in key:
        data["judges"] = [{"id": "j", "model": {"provider": "mock", "command": ["sh", value]}}]
    else:
        content = [{"path": value}]
        data["judges"] = [{"id": "j", "messages": [{"role": "user", "content": content}]}]
    config = tmp_path / "root" / "eval.yaml"
    found = raw_violations(data, config, tmp_path / "root", allow_code=True)
    resolved = (config.parent / value).resolve()
    assert found == [
        Violation(key, value, f"resolves to {resolved}, outside the root {tmp_path / 'root'}")
    ]


@pytest.mark.parametrize(
    ("spec", "file"),
    [
        ("mypkg.scorers:score", None),  # a module on sys.path, not a file of the config
        ("scorers.py:score", "scorers.py"),
        ("lib/scorers:score", "lib/scorers"),
        ("lib\\scorers:score", "lib\\scorers"),
        ("C:/evals/scorers.py:score", "C:/evals/scorers.py"),  # the last colon splits
        ("scorers.py", None),  # no function named: not a spec
        (42, None),
        ("pkg.PY:score", None),  # the suffix is matched as written, like the loader does
    ],
)
def test_the_file_of_a_function_spec(spec: object, file: str | None) -> None:
    assert _function_file(spec) == file


def test_a_lake_target_or_lake_settings_in_a_clients_config_are_refused_saying_why() -> None:
    """Attack: a client's config points the run at a DuckLake, which would connect with the
    server's PostgreSQL and S3 credentials to wherever it says."""
    settings = {"warehouse": "ducklake:postgres:dbname=x", "lake": {"data_path": "s3://b/"}}
    assert _lake({"settings": settings}) == [
        Violation(
            "settings.warehouse",
            "ducklake:postgres:dbname=x",
            "a DuckLake target in a client's config is refused: the server's warehouse is used",
        ),
        Violation("settings.lake", "lake", "lake settings belong to the server"),
    ]
    assert _lake({"settings": {"warehouse": "wh.duckdb"}}) == []
    assert _lake({"settings": "not-a-mapping"}) == []


def test_a_missing_config_says_which_file_and_how_to_fix_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_confined(tmp_path / "nope.yaml", tmp_path, allow_code=False)
    error = caught.value
    assert (error.message, error.file, error.fix) == (
        "config file not found",
        str(tmp_path / "nope.yaml"),
        "pass an eval.yaml",
    )


def test_a_config_that_is_no_mapping_says_which_file_and_how_to_start(tmp_path: Path) -> None:
    path = write(tmp_path / "eval.yaml", "- just\n- a list\n")
    with pytest.raises(ConfigError) as caught:
        load_confined(path, tmp_path, allow_code=False)
    error = caught.value
    assert (error.message, error.file, error.fix) == (
        "the config must be a YAML mapping",
        str(path.resolve()),
        "start with `models:`",
    )


def test_a_confined_config_error_names_its_line_as_an_unconfined_one_does(tmp_path: Path) -> None:
    """The YAML positions reach the loader: a bad value is reported at its line."""
    path = write(
        tmp_path / "eval.yaml",
        "models:\n  - id: m\n    provider: mock\n"
        "variants:\n  - id: v\n    prompt: hi\n"
        "cases:\n  - id: c\n"
        "scorecard:\n  - name: s\n    type: exact\n    weight: -1\n",
    )
    with pytest.raises(ConfigError) as unconfined:
        load_config(path)
    with pytest.raises(ConfigError) as confined:
        load_confined(path, tmp_path, allow_code=False)
    assert confined.value.line == unconfined.value.line == 12


def test_loaded_attachments_and_a_config_outside_the_root_are_refused(tmp_path: Path) -> None:
    """Attack: a prompt file (read only once the config loads) attaches ../secret.png. A
    template part, a text part and a file inside are no refusal. Seen from a narrower root,
    a case file's attachment and the config itself are outside too, each listed once."""
    root = tmp_path / "root"
    write(tmp_path / "secret.png", "x")
    write(root / "doc.pdf", "x")
    write(root / "ok.png", "x")
    write(
        root / "prompt.yaml",
        "messages:\n  - role: user\n    content:\n"
        "      - type: text\n        text: hi\n"
        "      - image: ../secret.png\n"
        "      - image: ok.png\n"
        "      - image: '{{ files.doc }}'\n",
    )
    write(root / "cases.jsonl", '{"id": "c", "doc": "file://doc.pdf"}\n')
    path = write(
        root / "eval.yaml",
        "models:\n  - id: m\n    provider: mock\n"
        "variants:\n  - id: v\n    prompt: prompt.yaml\n"
        "cases:\n  - file: cases.jsonl\n"
        "scorecard:\n  - name: s\n    type: exact\n",
    )
    config = load_config(path)
    where = config.variants[0].where
    secret = Violation(
        f"{where}.messages[0].content[1].image",
        "../secret.png",
        f"resolves to {tmp_path / 'secret.png'}, outside the root {root}",
    )
    assert violations(config, root, allow_code=True) == [secret]
    inner = root / "inner"
    inner.mkdir()

    def out(key: str, written: str, resolved: Path) -> Violation:
        return Violation(key, written, f"resolves to {resolved}, outside the root {inner}")

    # what the config names, then what its files brought in (the template part is no file),
    # then the config itself
    assert violations(config, inner, allow_code=True) == [
        out("variants[0].prompt", "prompt.yaml", root / "prompt.yaml"),
        out("cases[0].file", "cases.jsonl", root / "cases.jsonl"),
        out(f"{where}.messages[0].content[1].image", "../secret.png", tmp_path / "secret.png"),
        out(f"{where}.messages[0].content[2].image", "ok.png", root / "ok.png"),
        out(f"{config.cases[0].source} files.doc", str(root / "doc.pdf"), root / "doc.pdf"),
        Violation("config_path", str(config.path), f"is outside the root {inner}"),
    ]


WHY_CODE = f"runs code; refused without {ALLOW_CODE_FLAG}"


def test_command_models_and_judges_are_refused_naming_the_provider_key() -> None:
    """A command model and a command judge are each refused as 'command' at their own key;
    a judge written as a bare string (not a mapping) is not one, and does not crash the check."""
    data = {
        "models": [{"id": "m", "provider": "command", "command": "./agent"}],
        "judges": [
            "not-a-mapping",
            {"id": "j", "model": {"provider": "mock"}},
            {"id": "k", "model": {"provider": "command", "command": "./judge"}},
        ],
    }
    assert _code(data, []) == [
        Violation("models[0].provider", "command", WHY_CODE),
        Violation("judges[2].model.provider", "command", WHY_CODE),
    ]
    assert str(_code(data, [])[1]) == f"judges[2].model.provider: 'command' {WHY_CODE}"


def test_a_datasource_and_an_exec_check_are_refused_with_what_they_name() -> None:
    """A datasource is refused showing the source as written; a case's exec check is refused
    at the case's place, shown as 'exec check'."""
    data = {"cases": [{"source": "mypkg.sources:Rows", "params": {}}]}
    case = Case(id="c1", source="cases.jsonl:3", check=object())
    assert _code(data, [case]) == [
        Violation("cases[0].source", "mypkg.sources:Rows", WHY_CODE),
        Violation("cases.jsonl:3 check", "exec check", WHY_CODE),
    ]


def test_command_arguments_that_name_files_are_checked_and_bare_names_are_not() -> None:
    """In a model's command, arguments with a slash, a backslash or a suffix are files of the
    config (so they must stay inside the root); a bare program name or flag is not."""
    data = {
        "models": [
            {"id": "a", "command": "python ./agent.py --flag x.py plain /bin/sh"},
            {
                "id": "b",
                "command": ["node", 3, "lib/main", "tools\\run"],
            },  # a list; a number is no path
            {"id": "c", "command": 5},  # not a command at all: nothing to check
            {"id": "d", "command": {"./x.py": 1}},  # neither
        ]
    }
    assert referenced_paths(data) == [
        ("models[0].command[1]", "./agent.py"),
        ("models[0].command[3]", "x.py"),
        ("models[0].command[5]", "/bin/sh"),
        ("models[1].command[2]", "lib/main"),
        ("models[1].command[3]", "tools\\run"),
    ]


def test_only_literal_attachment_paths_of_a_prompt_are_checked() -> None:
    """A short-form binary part names a file when it is a literal path; a template
    ({{ files.x }}) and an http(s) URL are not files of the config."""
    parts = [
        {"image": "img.png"},
        {"image": "{{ files.photo }}"},
        {"audio": "http://example.com/a.wav"},
        {"video": "https://example.com/b.mp4"},
        {"file": "docs/c.pdf"},
    ]
    data = {"variants": [{"id": "v", "messages": [{"role": "user", "content": parts}]}]}
    assert referenced_paths(data) == [
        ("variants[0].messages[0].content[0].image", "img.png"),
        ("variants[0].messages[0].content[4].file", "docs/c.pdf"),
    ]


def test_confinement_error_lists_every_refusal_one_per_line_and_as_json() -> None:
    """The refusal message has one '  - ' line per violation; --json gives key, path, why."""
    found = [
        Violation("cases[0].file", "../x.csv", "resolves outside"),
        Violation("models[0].provider", "command", WHY_CODE),
    ]
    error = ConfinementError(Path("/srv/eval.yaml"), found)
    assert str(error).startswith(
        "/srv/eval.yaml: refused, this server does not reach these:\n"
        "  - cases[0].file: '../x.csv' resolves outside\n"
        f"  - models[0].provider: 'command' {WHY_CODE}\n"
        "  fix: "
    )
    assert error.to_dict()["violations"] == [
        {"key": "cases[0].file", "path": "../x.csv", "why": "resolves outside"},
        {"key": "models[0].provider", "path": "command", "why": WHY_CODE},
    ]


def test_an_mcp_client_may_not_use_a_datasource(tmp_path: Path) -> None:
    from evalwh.config.confinement import ConfinementError, load_confined

    write(tmp_path / "s" / "0.jsonl", '{"id": 1, "q": "x"}\n')
    cfg = write(
        tmp_path / "eval.yaml",
        DATASOURCE_HEAD + "cases: [{source: jsonl-glob, params: {pattern: '../*/s/*.jsonl'}}]\n",
    )
    with pytest.raises(ConfinementError) as caught:
        load_confined(cfg, tmp_path, allow_code=False)
    keys = {v.key for v in caught.value.violations}
    assert keys == {"cases[0].source", "cases[0].params.pattern"}
    inside = write(
        tmp_path / "in.yaml",
        DATASOURCE_HEAD + "cases: [{source: jsonl-glob, params: {pattern: 's/*'}}]\n",
    )
    assert load_confined(inside, tmp_path, allow_code=True).sources[0].name == "jsonl-glob"


def test_python_and_command_tools_are_refused_and_their_files_checked_mock_tools_are_not() -> None:
    """attack: an MCP client's eval.yaml whose tool runs a program or a python function (the
    model's calls would run code on the server); a mock tool runs nothing and stays allowed."""
    data = {
        "tools": [
            {"name": "a", "mock": [{"result": 1}]},
            {"name": "b", "python": "../elsewhere/tools.py:run"},
            {"name": "c", "command": ["python", "./tool.py"]},
            "not-a-mapping",
        ]
    }
    assert _code(data, []) == [
        Violation("tools[1].python", "../elsewhere/tools.py:run", WHY_CODE),
        Violation("tools[2].command", "['python', './tool.py']", WHY_CODE),
    ]
    assert referenced_paths(data) == [
        ("tools[1].python", "../elsewhere/tools.py"),
        ("tools[2].command[1]", "./tool.py"),
    ]


def test_an_embedder_function_is_code_and_an_embedding_model_is_not() -> None:
    """An MCP client without --allow-code may score by an embedding model's endpoint (a
    request, priced and capped like an answer) but not by an embedder function (code)."""
    data = {
        "scorecard": [
            {"type": "semantic", "embedder": "emb.py:embed"},
            {"type": "semantic", "embedder": {"model": "embed"}},
            {"type": "python", "function": "score.py:check"},
        ]
    }
    assert _code(data, []) == [
        Violation("scorecard[0].embedder", "emb.py:embed", WHY_CODE),
        Violation("scorecard[2].function", "score.py:check", WHY_CODE),
    ]
