"""Tests that kill mutants mutmut found alive in evalwh/config (issue 21); each test names the user-visible behaviour it pins."""

from __future__ import annotations

import hashlib
import struct
import wave
from pathlib import Path

import pytest

from evalwh.config import attachments, datasets
from evalwh.config.attachments import (
    AttachmentChanged,
    _jpeg_size,
    _wav_seconds,
    filename_for,
    load,
    read,
    remember,
)
from evalwh.config.confinement import (
    ALLOW_CODE_FLAG,
    ConfinementError,
    Violation,
    _code,
    referenced_paths,
)
from evalwh.config.datasets import load_file_source
from evalwh.config.folders import directory_cases
from evalwh.config.model import Case, Variant
from evalwh.config.outputs import OutputSpec, prompted_messages
from evalwh.config.prompts import CompiledVariant, messages_from_config
from evalwh.config.validate import validate_document
from evalwh.config.yamlpos import load_yaml
from evalwh.errors import ConfigError
from tests.conftest import write

WHY_CODE = f"runs code; refused without {ALLOW_CODE_FLAG}"


# ---- confinement: what an MCP client's config is refused --------------------------------------


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


# ---- prompts: rendering errors name the place, the line and what the case has ----------------


def _variant(content: list[dict[str, str]] | str) -> Variant:
    messages = messages_from_config([{"role": "user", "content": content}])
    return Variant(id="v", messages=messages, source="/cfg/eval.yaml", where="variants[1]")


def test_sandbox_error_at_render_names_the_template_line() -> None:
    """An attribute name computed from case data that the sandbox refuses is reported with
    the line of the template it is on."""
    variant = _variant("first line\n{{ q|attr(n) }}\nthird")
    case = Case(id="c1", vars={"q": "a", "n": "__class__"})
    with pytest.raises(ConfigError) as caught:
        CompiledVariant(variant).render(case)
    error = caught.value
    assert "(line 2 of the template)" in error.message
    assert error.file == "/cfg/eval.yaml"
    assert error.where == "variants[1].messages[0].content[0]"


def test_undefined_variable_names_the_file_place_and_the_vars_the_case_has() -> None:
    variant = _variant([{"text": "hello"}, {"text": "{{ questoin }}"}])
    case = Case(id="c1", vars={"question": "q", "answer": "a"}, source="eval.yaml cases[0]")
    with pytest.raises(ConfigError) as caught:
        CompiledVariant(variant).render(case)
    error = caught.value
    assert error.message.startswith("undefined template variable for case 'c1': ")
    assert error.file == "/cfg/eval.yaml"
    assert error.where == "variants[1].messages[0].content[1]"
    assert error.fix == (
        "fix the spelling or add the variable to the case's vars (eval.yaml cases[0]); "
        "available: answer, question"
    )
    bare = Case(id="c2", source="eval.yaml cases[1]")
    with pytest.raises(ConfigError) as caught:
        CompiledVariant(variant).render(bare)
    assert caught.value.fix is not None
    assert caught.value.fix.endswith("; available: (none)")


def test_missing_case_file_in_a_binary_part_names_the_files_the_case_has(tmp_path: Path) -> None:
    png = tmp_path / "a.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 32)
    photo, scan = load(png, "photo"), load(png, "scan")
    variant = _variant([{"image": "{{ files.nope }}"}])
    case = Case(id="c1", files={"scan": scan, "photo": photo}, source="cases.jsonl:2")
    with pytest.raises(ConfigError) as caught:
        CompiledVariant(variant).render(case)
    error = caught.value
    assert error.message.startswith("case 'c1' has no such file: ")
    assert error.file == "/cfg/eval.yaml"
    assert error.where == "variants[1].messages[0].content[0]"
    assert error.fix == "name one of the case's files (cases.jsonl:2): photo, scan"
    with pytest.raises(ConfigError) as caught:
        CompiledVariant(variant).render(Case(id="c2", source="cases.jsonl:3"))
    assert caught.value.fix == "name one of the case's files (cases.jsonl:3): (none)"


# ---- outputs: the prompted JSON instruction --------------------------------------------------


def test_prompted_schema_instruction_is_appended_to_the_last_user_message() -> None:
    spec = OutputSpec(schema={"type": "object", "required": ["b", "a"]})
    instruction = spec.instruction()
    assert instruction.endswith('{"required": ["b", "a"], "type": "object"}')  # sorted keys
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "yo"}]},
    ]
    out = prompted_messages(messages, spec)
    assert out[0]["content"][-1] == {"type": "text", "text": "\n\n" + instruction}
    assert out[1] == messages[1]


def test_prompted_schema_instruction_becomes_a_user_message_when_there_is_none() -> None:
    spec = OutputSpec(schema={"type": "string"})
    system = {"role": "system", "content": [{"type": "text", "text": "be brief"}]}
    assert prompted_messages([system], spec) == [
        system,
        {"role": "user", "content": [{"type": "text", "text": spec.instruction()}]},
    ]


# ---- attachments: what is read from a file's header ------------------------------------------


def _segment(marker: int, body: bytes) -> bytes:
    return bytes([0xFF, marker]) + (len(body) + 2).to_bytes(2, "big") + body


def _sof(marker: int, width: int, height: int) -> bytes:
    return _segment(marker, b"\x08" + struct.pack(">HH", height, width) + b"\x03\x01\x22\x00")


def test_jpeg_size_skips_long_segments_and_tables_then_reads_the_frame() -> None:
    """A 300-byte APP1 (EXIF) segment, the huffman/arithmetic tables (C4, C8, CC) and a
    restart marker (D0) are skipped; the frame header gives width and height."""
    head = (
        b"\xff\xd8"
        + _segment(0xE1, b"E" * 298)
        + _segment(0xC4, b"\x08\x00\x05\x00\x07\x00")
        + _segment(0xC8, b"\x08\x00\x05\x00\x07\x00")
        + _segment(0xCC, b"\x08\x00\x05\x00\x07\x00")
        + _segment(0xD0, b"\x08\x00\x05\x00\x07\x00")
        + _sof(0xC0, 640, 480)
    )
    assert _jpeg_size(head) == (640, 480)


@pytest.mark.parametrize("marker", [0xC1, 0xC5, 0xC9, 0xCD, 0xCF])
def test_every_jpeg_frame_type_gives_the_size(marker: int) -> None:
    assert _jpeg_size(b"\xff\xd8" + _sof(marker, 33, 44)) == (33, 44)


def test_jpeg_width_above_32767_is_not_negative() -> None:
    assert _jpeg_size(b"\xff\xd8" + _sof(0xC0, 40000, 50000)) == (40000, 50000)


def test_jpeg_frame_header_exactly_at_the_end_of_what_was_read() -> None:
    """The frame's size is read when its ten bytes are there, and not when only nine are."""
    sof = _sof(0xC2, 120, 90)
    assert _jpeg_size(b"\xff\xd8" + sof[:10]) == (120, 90)
    assert _jpeg_size(b"\xff\xd8" + sof[:9]) is None


def test_jpeg_with_no_frame_header_has_no_size() -> None:
    assert _jpeg_size(b"\xff\xd8" + _segment(0xE0, b"JFIF\0" + b"\0" * 9)) is None


def _wav(path: Path, frames: int, rate: int = 8000) -> Path:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"\0\0" * frames)
    return path


def _chunk(name: bytes, body: bytes, length: int | None = None) -> bytes:
    size = len(body) if length is None else length
    return name + size.to_bytes(4, "little") + body + (b"\0" if len(body) % 2 else b"")


def _fmt(byte_rate: int) -> bytes:
    return _chunk(b"fmt ", struct.pack("<HHIIHH", 1, 1, byte_rate, byte_rate, 1, 8))


def _riff(*chunks: bytes) -> bytes:
    body = b"WAVE" + b"".join(chunks)
    return b"RIFF" + len(body).to_bytes(4, "little") + body


def test_wav_duration_of_real_files(tmp_path: Path) -> None:
    """A one-second WAV lasts 1.0 s; an empty one (the header only) lasts 0.0 s."""
    one = load(_wav(tmp_path / "one.wav", 8000), "one")
    assert (one.media_type, one.info) == ("audio/wav", {"seconds": 1.0})
    empty = load(_wav(tmp_path / "empty.wav", 0), "empty")
    assert (empty.media_type, empty.info) == ("audio/wav", {"seconds": 0.0})


def test_wav_duration_of_a_truncated_file_counts_the_bytes_present() -> None:
    """A data chunk that claims more bytes than the file holds: the bytes present count."""
    head = _riff(_fmt(100), _chunk(b"data", b"", length=16000))
    assert _wav_seconds(head, len(head) + 150) == 1.5


def test_wav_duration_skips_an_odd_sized_chunk_and_its_pad_byte() -> None:
    head = _riff(_fmt(100), _chunk(b"LIST", b"abc"), _chunk(b"data", b"\0" * 50))
    assert _wav_seconds(head, len(head)) == 0.5


def test_wav_header_cut_inside_the_data_chunk_header_gives_no_duration() -> None:
    head = _riff(_fmt(100)) + b"data\x10\x00"
    assert _wav_seconds(head, len(head)) is None


def test_wav_fmt_chunk_without_a_byte_rate_gives_no_duration() -> None:
    """A later fmt chunk whose byte rate lies at the very end of the header (length 0, then
    an empty data chunk) resets the rate: no duration is claimed."""
    head = _riff(_fmt(100), _chunk(b"fmt ", b""), _chunk(b"data", b""))
    assert _wav_seconds(head, len(head)) is None


def test_missing_attachment_says_where_it_is_relative_to(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path / "nope.png", "photo", file="eval.yaml", where="cases[0].files.photo")
    error = caught.value
    assert error.file == "eval.yaml"
    assert error.where == "cases[0].files.photo"
    assert error.fix == (
        "check the path; it is relative to the config's folder (a file:// value in a "
        "cases file: to that file's folder)"
    )


def test_filename_for_adds_the_media_types_suffix_once() -> None:
    assert filename_for("photo.jpg", "image/jpeg") == "photo.jpg"
    assert filename_for("photo", "image/jpeg") == "photo.jpg"
    assert filename_for("data", "application/json") == "data.json"  # from mimetypes
    assert filename_for("blob", "application/x-evalwh-unknown") == "blob"


def _loaded(tmp_path: Path, name: str, content: bytes) -> tuple[Path, str]:
    path = tmp_path / name
    path.write_bytes(content)
    load(path, name)
    return path, hashlib.sha256(content).hexdigest()


def test_read_of_a_hash_never_loaded_says_so() -> None:
    sha = hashlib.sha256(b"never loaded in this test run").hexdigest()
    with pytest.raises(AttachmentChanged) as caught:
        read(sha)
    assert str(caught.value) == f"no file with SHA-256 {sha[:12]}... was loaded in this run"


def test_read_of_an_edited_file_says_it_changed(tmp_path: Path) -> None:
    path, sha = _loaded(tmp_path, "edited.txt", b"edited file, first version")
    path.write_bytes(b"second version")
    with pytest.raises(AttachmentChanged) as caught:
        read(sha)
    assert str(caught.value) == (
        f"{path} changed after the run was planned (its SHA-256 is no longer "
        f"{sha[:12]}...); run again to use the new content"
    )


def test_read_skips_a_place_that_is_gone_and_reports_it_when_none_is_left(
    tmp_path: Path,
) -> None:
    path, sha = _loaded(tmp_path, "kept.txt", b"kept file: read from its second place")
    gone = tmp_path / "store" / "gone.bin"
    remember(sha, gone)  # the artifact store's copy first, but it is missing
    assert read(sha) == b"kept file: read from its second place"
    path.unlink()
    with pytest.raises(AttachmentChanged) as caught:
        read(sha)
    assert str(caught.value) == f"cannot read {gone}: No such file or directory"


# ---- datasets: folders of case files and Parquet ---------------------------------------------


def test_case_folder_file_limit_is_inclusive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder may hold exactly MAX_FOLDER_FILES case files; one more is refused at the
    source's file: key of the config, with the fix."""
    monkeypatch.setattr(datasets, "MAX_FOLDER_FILES", 3)
    folder = tmp_path / "shards"
    for n in range(3):
        write(folder / f"part{n}.csv", f"id,q\nc{n},x\n")
    cases = load_file_source({"file": "shards"}, tmp_path, "cases[2]", "eval.yaml")
    assert [c.id for c in cases] == ["c0", "c1", "c2"]
    write(folder / "part3.csv", "id,q\nc3,x\n")
    with pytest.raises(ConfigError) as caught:
        load_file_source({"file": "shards"}, tmp_path, "cases[2]", "eval.yaml")
    error = caught.value
    assert error.message == f"the folder {folder} holds 4 case files, over 3"
    assert (error.file, error.where) == ("eval.yaml", "cases[2].file")
    assert error.fix == "merge the shards into fewer files"


def test_no_look_folder_source_quotes_no_value(tmp_path: Path) -> None:
    """quiet (a no-look config) reaches every file of a case folder: the bad value is not
    quoted in the error."""
    write(tmp_path / "rows" / "a.jsonl", '{"id": "c1", "vars": "TOP-SECRET-VALUE"}\n')
    with pytest.raises(ConfigError) as caught:
        load_file_source({"file": "rows"}, tmp_path, "cases[0]", "eval.yaml", quiet=True)
    assert "'vars' must be a mapping" in str(caught.value)
    assert "TOP-SECRET" not in str(caught.value)


def test_parquet_rows_are_numbered_from_one(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"q": ["a", "b"]}), tmp_path / "set.parquet")
    cases = load_file_source({"file": "set.parquet"}, tmp_path, "cases[0]", "eval.yaml")
    assert [(c.id, c.source) for c in cases] == [
        ("set-1", "set.parquet row 1"),
        ("set-2", "set.parquet row 2"),
    ]


def test_unreadable_parquet_names_the_file_and_the_fix(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.parquet", "not parquet at all")
    with pytest.raises(ConfigError) as caught:
        load_file_source({"file": "bad.parquet"}, tmp_path, "cases[0]", "eval.yaml")
    error = caught.value
    assert error.message.startswith("cannot read Parquet: ")
    assert error.file == str(path.resolve())
    assert error.fix == "write a real Parquet file (e.g. polars' write_parquet), or use CSV/JSONL"


# ---- folders: a directory as a case source ---------------------------------------------------


def test_directory_case_source_keeps_the_folder_name_as_written(tmp_path: Path) -> None:
    write(tmp_path / "inboX" / "a.txt", "hello")
    cases = directory_cases({"dir": "inboX/"}, tmp_path, "cases[0]", "eval.yaml")
    assert [(c.id, c.source) for c in cases] == [("a.txt", "inboX/a.txt")]


def test_unreadable_file_of_a_directory_source_names_the_config_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file the OS refuses to read (permission denied) is reported at the source's dir:
    key of the config."""
    write(tmp_path / "imgs" / "a.png", "x")

    def denied(path: Path, size: int) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(attachments, "_hash_file", denied)
    with pytest.raises(ConfigError) as caught:
        directory_cases({"dir": "imgs"}, tmp_path, "cases[3]", "eval.yaml")
    error = caught.value
    assert error.message.endswith("a.png: Permission denied")
    assert (error.file, error.where) == ("eval.yaml", "cases[3].dir")


# ---- validate: schema errors name the key, its line and the fix -----------------------------


def _schema_error(tmp_path: Path, text: str) -> ConfigError:
    path = write(tmp_path / "eval.yaml", text)
    data, node = load_yaml(path)
    with pytest.raises(ConfigError) as caught:
        validate_document(data, node, str(path))
    return caught.value


BASE = """\
models:
  - {id: m, provider: mock}
variants:
  - {id: v, messages: [{role: user, content: hi}]}
cases:
  - {id: c1, expected: x}
scorecard:
  - name: r
    type: regex
"""


def test_unknown_criterion_key_is_named_not_a_known_key_whose_value_is_bad(
    tmp_path: Path,
) -> None:
    """A known option with a bad value makes the schema call it unevaluated too: the error
    still names the unknown key, at its line."""
    error = _schema_error(tmp_path, BASE + "    pattern: 5\n    zzz: 1\n")
    assert error.message == "unknown key 'zzz'"
    assert (error.where, error.line, error.column) == ("scorecard[0]", 11, 5)


def test_unknown_key_with_an_apostrophe_is_named_at_its_line(tmp_path: Path) -> None:
    """jsonschema quotes such a key with double quotes ("it's"): the error still names it and
    its line (it used to say unknown key '?')."""
    error = _schema_error(tmp_path, BASE + "    pattern: a\n    it's: 1\n")
    assert error.message == "unknown key 'it's'"
    assert (error.where, error.line, error.column) == ("scorecard[0]", 11, 5)


def test_a_known_key_with_a_bad_value_in_a_conditional_block_names_its_value(
    tmp_path: Path,
) -> None:
    """`request:` of a json-schema criterion is checked in the schema's `if type: json-schema`
    block; a bad value there failed the block, so jsonschema reported the key itself as
    unevaluated, and the error read "unknown key 'request'", "did you mean 'request'?"."""
    text = BASE.replace("type: regex\n", "type: json-schema\n    schema: {type: object}\n")
    error = _schema_error(tmp_path, text + "    request: natve\n")
    assert error.message == '"natve" is not allowed'
    assert error.fix == 'did you mean \'native\'? use one of: "auto", "native", "prompted"'
    assert (error.where, error.line, error.column) == ("scorecard[0].request", 11, 14)
    # a key that is truly unknown beside it is still reported as one
    error = _schema_error(tmp_path, text + "    request: auto\n    sceham: 1\n")
    assert error.message == "unknown key 'sceham'"
    assert error.fix is not None and error.fix.startswith("did you mean 'schema'?")


def test_unknown_key_that_is_not_text_points_at_its_mapping(tmp_path: Path) -> None:
    """A number as a key is not quoted in the schema's message: the error says '?' and points
    at the mapping that holds it."""
    error = _schema_error(tmp_path, BASE + "    pattern: a\n    1: x\n")
    assert error.message == "unknown key '?'"
    assert (error.where, error.line, error.column) == ("scorecard[0]", 8, 5)


def test_a_variant_that_is_not_a_mapping_is_a_type_error(tmp_path: Path) -> None:
    """A variant written as a string says it must be an object, not that it needs messages or
    prompt (the variant's one-of rule), at its line."""
    text = BASE.replace("  - {id: v, messages: [{role: user, content: hi}]}", "  - hello")
    error = _schema_error(tmp_path, text)
    assert error.message == "expected object, got a string"
    assert (error.where, error.line, error.column) == ("variants[0]", 4, 5)


# ---- labels: which pairwise comparison a label names, and where a bad one is -----------------


def test_a_label_matches_a_comparison_only_when_every_side_it_names_is_that_sides() -> None:
    """A label's baseline and candidate must both name the comparison's sides (each way
    round when swapped); naming one right and one wrong, or only a wrong one, matches
    nothing; naming neither matches every comparison."""
    from evalwh.config.loader import _sides_match
    from evalwh.config.model import Comparison, Side

    c = Comparison("a-vs-b", "j", baseline=Side(model="a"), candidate=Side(model="b"))
    assert _sides_match({"baseline": "a", "candidate": "b"}, c, swapped=False)
    assert not _sides_match({"baseline": "x", "candidate": "b"}, c, swapped=False)
    assert not _sides_match({"baseline": "a", "candidate": "x"}, c, swapped=False)
    assert not _sides_match({"candidate": "x"}, c, swapped=False)  # baseline not named
    assert _sides_match({"candidate": "b"}, c, swapped=False)
    assert _sides_match({"baseline": "b", "candidate": "a"}, c, swapped=True)
    assert not _sides_match({"baseline": "a", "candidate": "b"}, c, swapped=True)
    assert _sides_match({}, c, swapped=False) and _sides_match({}, c, swapped=True)


def test_a_prefer_that_names_neither_side_is_reported_at_its_line(tmp_path: Path) -> None:
    from evalwh.config.loader import _prefer
    from evalwh.config.model import Comparison, Side

    c = Comparison("a-vs-b", "j", baseline=Side(model="a"), candidate=Side(model="b"))
    where = {"file": "eval.yaml", "where": "labels[2].prefer", "line": 31, "column": 14}
    with pytest.raises(ConfigError) as caught:
        _prefer({"prefer": "zzz"}, c, where, flip=False)
    error = caught.value
    assert (error.file, error.where, error.line, error.column) == (
        "eval.yaml",
        "labels[2].prefer",
        31,
        14,
    )
    assert _prefer({"prefer": "A"}, c, where, flip=True) == "candidate"
    assert _prefer({"prefer": "b"}, c, where, flip=True) == "candidate"  # an id is no letter


# ---- YAML: an alias bomb hidden in mapping keys -------------------------------------------------


def test_an_alias_bomb_through_mapping_keys_is_refused_as_one() -> None:
    """Attack: the "billion laughs" written with complex keys (`[*a, 1]: 1`) instead of
    values; what aliases expand to is counted in keys too, and the document is refused at
    the alias that passes the bound."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    previous = "a"
    for name in "bcdefgh":
        keys = ", ".join(f"[*{previous}, {i}]: {i}" for i in range(9))
        lines.append(f"{name}: &{name} {{{keys}}}")
        previous = name
    with pytest.raises(ConfigError) as caught:
        load_yaml_text("\n".join(lines))
    assert caught.value.message == (
        "YAML aliases expand to more than 100,000 nodes (the alias *e and those before it)"
    )
    assert caught.value.line == 6


def load_yaml_text(text: str) -> object:
    from evalwh.config.yamlpos import parse_yaml

    return parse_yaml(text, "eval.yaml")[0]


# ---- labels and positions: a label for a case the config does not have -------------------------


def test_a_label_for_an_unknown_case_is_reported_at_its_case_with_the_fix(tmp_path: Path) -> None:
    import shutil

    from evalwh.config.loader import load_config

    example = Path(__file__).parent.parent / "examples" / "pairwise"
    shutil.copytree(example, tmp_path / "pairwise")
    path = tmp_path / "pairwise" / "eval.yaml"
    text = path.read_text(encoding="utf-8")
    line = text.splitlines().index("  - {case: q03, prefer: B}") + 1
    path.write_text(text.replace("{case: q03,", "{case: nope,"), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    error = caught.value
    assert error.message == "label for unknown case 'nope'"
    assert (error.where, error.line, error.column) == ("labels[2].case", line, 12)
    assert error.fix == "use a case id from `cases:`"


def test_a_position_past_the_end_of_a_list_is_the_lists_own() -> None:
    import yaml

    from evalwh.config.yamlpos import locate

    node = yaml.compose("cases:\n  - a\n  - b\n")
    assert locate(node, ["cases", 1]) == (3, 5)
    assert locate(node, ["cases", 2]) == locate(node, ["cases"])  # one past the last item
    assert locate(node, ["cases", -1]) == locate(node, ["cases"])
