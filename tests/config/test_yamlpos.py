"""The YAML loader's errors and positions (evalwh/config/yamlpos.py), called in-process.

Every YAML file evalwh reads goes through this module, and most of its error paths were once
tested only through the CLI in a subprocess (tests/features/test_malformed_input.py), where
mutation testing cannot see them. These tests pin each error's message, line, column and fix,
each bound at its limit (nesting depth, alias expansion, also through mapping keys), and the
path helpers that turn a position in the data into a place in the file."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

import evalwh
from evalwh.config import yamlpos
from evalwh.config.yamlpos import (
    BoundedLoader,
    find_surrogate,
    format_path,
    key_location,
    load_yaml,
    locate,
    parse_path,
    parse_yaml,
)
from evalwh.errors import ConfigError
from tests.builders import BASE, expect_error
from tests.conftest import write

SYNTAX_FIX = "fix the YAML syntax at that place (indentation, a missing ':' or an unclosed quote)"


def refusal(text: str, file: str = "t.yaml") -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_yaml(text, file)
    return info.value


def node_of(text: str) -> yaml.Node:
    node = parse_yaml(text, "t.yaml")[1]
    assert node is not None
    return node


def test_a_duplicate_key_names_both_lines_and_points_at_the_second() -> None:
    error = refusal("k: 1\nb:\n  c: 2\n  d: 3\n  c: 4\n")
    assert (error.file, error.line, error.column) == ("t.yaml", 5, 3)
    assert error.message == "duplicate key 'c' (first at line 3)"
    assert error.fix == "remove one of the two keys or merge their values: YAML keeps only one"


def test_keys_of_different_types_with_the_same_text_are_two_keys() -> None:
    # 1 (an int) and "1" (a string) are different keys once constructed
    assert parse_yaml('1: a\n"1": b\n', "t.yaml")[0] == {1: "a", "1": "b"}


def test_merge_keys_may_repeat_and_the_same_key_in_two_mappings_is_no_duplicate() -> None:
    text = "base: &b {x: 1}\nother: &o {y: 2}\nm:\n  <<: *b\n  <<: *o\nn: {x: 3}\n"
    data = parse_yaml(text, "t.yaml")[0]
    assert data["m"] == {"x": 1, "y": 2} and data["n"] == {"x": 3}


def test_keys_after_a_merge_key_or_a_complex_key_are_still_checked() -> None:
    error = refusal("base: &b {x: 1}\nm:\n  <<: *b\n  y: 1\n  y: 2\n")
    assert (error.message, error.line) == ("duplicate key 'y' (first at line 4)", 5)
    error = refusal("? [a]\n: 1\nk: 1\nk: 2\n")
    assert (error.message, error.line) == ("duplicate key 'k' (first at line 3)", 4)


def test_a_loader_made_without_a_file_names_its_errors_yaml() -> None:
    loader = yamlpos.BoundedLoader("a: 1\na: 2\n")
    try:
        with pytest.raises(ConfigError) as info:
            loader.get_single_node()
    finally:
        loader.dispose()
    assert info.value.file == "<yaml>"


def test_a_complex_key_is_not_compared_as_text() -> None:
    # two different sequence keys: skipped by the check (not scalars), then PyYAML refuses them
    error = refusal("? [a]\n: 1\n? [b]\n: 2\n")
    assert "unhashable key" in error.message and "duplicate" not in error.message


def test_nesting_may_reach_exactly_the_bound_and_one_level_more_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # every node counts a level: the top mapping 1, its keys and values 2, theirs 3
    monkeypatch.setattr(yamlpos, "MAX_DEPTH", 3)
    assert parse_yaml("a: {b: 1}\n", "t.yaml")[0] == {"a": {"b": 1}}
    error = refusal("x: 0\na: {b: [1]}\n")
    assert (error.file, error.message) == ("t.yaml", "YAML nested more than 3 levels deep")
    assert (error.line, error.column) == (2, 9)  # the list's item: the fourth level
    assert error.fix == "flatten the data to at most 3 levels of lists and mappings"


def test_depth_is_counted_down_again_after_each_sibling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlpos, "MAX_DEPTH", 3)
    siblings = "a: [1]\nb: [2]\nc: [3]\nd: [4]\n"  # each list is at level 2, its item at 3
    assert parse_yaml(siblings, "t.yaml")[0] == {"a": [1], "b": [2], "c": [3], "d": [4]}


def test_nesting_past_pythons_recursion_limit_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(yamlpos, "MAX_DEPTH", 10**9)  # only the recursion limit stops it
    error = refusal("[" * 5000 + "]" * 5000)
    assert error.message == "YAML nested too deeply" and error.file == "t.yaml"
    assert error.fix == f"flatten the data to at most {10**9} levels of lists and mappings"


def test_a_byte_that_is_not_utf8_is_named_at_its_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_bytes(b"a: 1\nb: 2\nc: caf\xe9\n")  # the column counts from the last newline
    with pytest.raises(ConfigError) as info:
        load_yaml(path)
    error = info.value
    assert error.message == "not UTF-8 text (invalid continuation byte: byte 0xe9)"
    assert (error.file, error.line, error.column) == (str(path), 3, 7)
    assert error.fix == "save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`)"


def test_a_bad_byte_on_the_first_line_counts_columns_from_the_start(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_bytes(b"ab: \xff\n")
    with pytest.raises(ConfigError) as info:
        load_yaml(path)
    assert (info.value.line, info.value.column) == (1, 5)
    assert "byte 0xff" in info.value.message
    path.write_bytes(b"\nab: \xff\n")  # a newline as the very first byte
    with pytest.raises(ConfigError) as info:
        load_yaml(path)
    assert (info.value.line, info.value.column) == (2, 5)


def test_a_missing_file_and_a_folder_are_refused_with_their_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_yaml(tmp_path / "gone.yaml")
    assert (info.value.message, info.value.file) == ("file not found", str(tmp_path / "gone.yaml"))
    assert info.value.fix == "check the path (it is relative to the config)"
    with pytest.raises(ConfigError) as info:
        load_yaml(tmp_path)
    assert (info.value.message, info.value.file) == ("is a folder, not a YAML file", str(tmp_path))
    assert info.value.fix == "point at a .yaml file"


def test_a_file_reads_to_its_data_and_node_tree(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("a:\n  - x\n", encoding="utf-8")
    data, node = load_yaml(path)
    assert data == {"a": ["x"]}
    assert locate(node, ["a", 0]) == (2, 5)


def test_an_empty_document_is_none_with_no_node() -> None:
    assert parse_yaml("", "t.yaml") == (None, None)
    assert parse_yaml("# only a comment\n", "t.yaml") == (None, None)


def test_a_control_character_is_named_by_its_code_at_its_line_and_column() -> None:
    error = refusal("a: 1\nbb: x\x01\n")
    assert error.message == (
        "malformed YAML: unacceptable character #x0001 (special characters are not allowed)"
    )
    assert (error.file, error.line, error.column) == ("t.yaml", 2, 6)
    assert error.fix == (
        "remove the character, or write it as an escape (\\x01) in a double-quoted string"
    )


def test_a_control_character_on_the_first_line() -> None:
    error = refusal("a: \x02\n")
    assert (error.line, error.column) == (1, 4)
    assert "#x0002" in error.message


def test_a_control_characters_place_counts_every_newline_before_it() -> None:
    error = refusal("\na: 1\nb: 2\nbb: x\x01\n")  # the first newline is the first character
    assert (error.file, error.line, error.column) == ("t.yaml", 4, 6)
    error = refusal("\nb: \x01\n")  # the only newline before it is the first character
    assert (error.line, error.column) == (2, 4)


def test_an_error_in_a_file_names_that_file(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("a: 1\na: 2\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_yaml(path)
    assert (info.value.file, info.value.line) == (str(path), 2)


def test_a_syntax_error_gives_the_problem_its_context_and_place() -> None:
    error = refusal("a: 1\nb: [1, 2\n")
    assert error.message == (
        "malformed YAML: expected ',' or ']', but got '<stream end>' "
        "(while parsing a flow sequence)"
    )
    assert (error.file, error.line, error.column, error.fix) == ("t.yaml", 3, 1, SYNTAX_FIX)


def test_a_syntax_error_with_no_context_has_no_parentheses() -> None:
    error = refusal("a: b: c\n")
    assert error.message == "malformed YAML: mapping values are not allowed here"
    assert (error.line, error.column) == (1, 5)


def test_two_documents_in_one_file_are_refused() -> None:
    error = refusal("a: 1\n---\nb: 2\n")
    assert error.message == (
        "malformed YAML: but found another document (expected a single document in the stream)"
    )
    assert (error.line, error.column) == (2, 1)


def test_a_python_tag_is_refused_not_constructed() -> None:
    error = refusal("a: !!python/object/apply:os.system [echo]\n")
    assert error.message.startswith("malformed YAML: could not determine a constructor")
    assert (error.line, error.column) == (1, 4)


def test_a_yaml_error_with_no_position_says_so_without_a_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fails(self: yamlpos.BoundedLoader) -> None:
        raise yaml.YAMLError("the stream broke")

    monkeypatch.setattr(yamlpos.BoundedLoader, "get_single_node", fails)
    error = refusal("a: 1\n")
    assert error.message == "malformed YAML: the stream broke"
    assert (error.file, error.line, error.column) == ("t.yaml", None, None)
    assert error.fix == "fix the YAML syntax of the file"


def test_a_marked_error_without_a_mark_has_no_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def fails(self: yamlpos.BoundedLoader) -> None:
        raise yaml.MarkedYAMLError(problem="something odd")

    monkeypatch.setattr(yamlpos.BoundedLoader, "get_single_node", fails)
    error = refusal("a: 1\n")
    assert error.message == "malformed YAML: something odd"
    assert (error.line, error.column, error.fix) == (None, None, SYNTAX_FIX)


def test_the_loader_is_disposed_after_a_parse_and_after_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    disposed: list[str] = []
    real = yamlpos.BoundedLoader.dispose

    def dispose(self: yamlpos.BoundedLoader) -> None:
        disposed.append(self.file)
        real(self)

    monkeypatch.setattr(yamlpos.BoundedLoader, "dispose", dispose)
    parse_yaml("a: 1\n", "good.yaml")
    with pytest.raises(ConfigError):
        parse_yaml("a: [\n", "bad.yaml")
    assert disposed == ["good.yaml", "bad.yaml"]


def test_a_lone_surrogate_in_a_list_is_named_by_its_path_and_place() -> None:
    error = refusal('a:\n  b: [x, "\\ud800"]\n')
    assert (error.file, error.where) == ("t.yaml", "a.b[1]")
    assert (error.line, error.column) == (2, 10)
    assert error.message == (
        "a string holds a lone surrogate (an escape such as \\ud800), which is not text"
    )
    assert error.fix == "remove the escape or write the character it should stand for"


def test_a_lone_surrogate_in_a_key_is_named_by_its_mapping() -> None:
    error = refusal('a:\n  ok: 1\n  "\\udfff": 2\n')
    assert error.where == "a"
    assert (error.line, error.column) == (2, 3)


def test_find_surrogate_walks_values_keys_and_lists_and_finds_nothing_in_clean_data() -> None:
    assert find_surrogate({"a": [1, "x", {"b": "y"}], 2: None, "c": 1.5}) is None
    assert find_surrogate("\ud800") == ()
    assert find_surrogate(["ok", ["x", "\udc00"]]) == (1, 1)
    assert find_surrogate({"a": {"\ud8ff": 1}}) == ("a",)
    assert find_surrogate({1: {"k": "\udbff"}}) == ("1", "k")
    assert find_surrogate({"a": "x"}, ("top",)) is None
    assert find_surrogate({"a": "\ud800"}, ("top",)) == ("top", "a")
    # the range's ends are surrogates; the characters beside them are not
    assert find_surrogate("\udfff") == () and find_surrogate("\ud7ff\ue000") is None


DOC = "models:\n  - id: a\n    params: {t: 1}\n  - id: b\nname: x\n"


def test_locate_finds_the_deepest_node_along_the_path() -> None:
    node = node_of(DOC)
    assert locate(node, []) == (1, 1)
    assert locate(node, ["models"]) == (2, 3)
    assert locate(node, ["models", 1]) == (4, 5)
    assert locate(node, ["models", 0, "params", "t"]) == (3, 17)
    assert locate(node, ["name"]) == (5, 7)


def test_locate_stops_at_the_last_node_it_finds() -> None:
    node = node_of(DOC)
    assert locate(node, ["models", 2, "id"]) == (2, 3)  # past the end: the list itself
    assert locate(node, ["models", -1]) == (2, 3)  # no counting from the end
    assert locate(node, ["models", "0"]) == (2, 3)  # a list has no keys
    assert locate(node, ["name", "x"]) == (5, 7)  # a scalar has no children
    assert locate(node, ["nope", "deeper"]) == (1, 1)
    assert locate(None, ["models"]) == (None, None)


def test_key_location_points_at_the_key_not_its_value() -> None:
    node = node_of(DOC)
    assert key_location(node, ["models", 0], "params") == (3, 5)
    assert key_location(node, [], "name") == (5, 1)
    # a key that is not there: the mapping's own place; a path that is not there: as locate
    assert key_location(node, ["models", 0], "nope") == (2, 5)
    assert key_location(node, ["models", 5], "x") == (2, 3)
    assert key_location(node, ["models"], "x") == (2, 3)  # a list: no keys


def test_format_path_and_parse_path_are_inverses() -> None:
    cases = {
        "models[1].params": ["models", 1, "params"],
        "cases[0]": ["cases", 0],
        "a.b.c": ["a", "b", "c"],
        "[0].a": [0, "a"],
        "[2][3]": [2, 3],
    }
    for text, path in cases.items():
        assert format_path(path) == text
        assert format_path(tuple(path)) == text
        assert parse_path(text) == path
    assert format_path([]) == "(top level)"
    assert parse_path("") == []


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


def test_a_position_past_the_end_of_a_list_is_the_lists_own() -> None:
    import yaml

    from evalwh.config.yamlpos import locate

    node = yaml.compose("cases:\n  - a\n  - b\n")
    assert locate(node, ["cases", 1]) == (3, 5)
    assert locate(node, ["cases", 2]) == locate(node, ["cases"])  # one past the last item
    assert locate(node, ["cases", -1]) == locate(node, ["cases"])


def test_malformed_yaml(tmp_path: Path) -> None:
    cfg = write(tmp_path / "eval.yaml", BASE.replace("  - id: v\n", "  - id: v\n   bad: [\n"))
    expect_error(cfg, "eval.yaml:", "malformed YAML")


def test_a_config_with_a_control_character_names_its_line_and_column(tmp_path: Path) -> None:
    cfg = write(tmp_path / "eval.yaml", "models:\n  - {id: m, provider: mock}\x07\n")
    with pytest.raises(ConfigError) as info:
        evalwh.load_config(cfg)
    assert (info.value.file, info.value.line, info.value.column) == (str(cfg), 2, 28)
    assert info.value.message.startswith("malformed YAML: unacceptable character #x0007")


SEQ = "a: &a [1, 2]\nb: *a\n"  # the alias adds the list and its two items: 3 nodes


MAP = "m: &m {k: [1, 2]}\nn: *m\n"  # the mapping, its key and its list of two: 5 nodes


def alias_nodes(text: str) -> int:
    loader = BoundedLoader(text, "t.yaml")
    try:
        loader.get_single_node()
        return int(loader.alias_nodes)
    finally:
        loader.dispose()


def test_an_alias_counts_every_node_it_adds_to_the_expanded_document() -> None:
    assert alias_nodes("a: &a x\nb: *a\n") == 1
    assert alias_nodes(SEQ) == 3
    assert alias_nodes(MAP) == 5
    assert alias_nodes("m: &m {k: v}\nn: *m\no: *m\n") == 6
    assert alias_nodes("a: &a [1, 2]\nb: &b [*a, *a]\nc: *b\n") == 3 + 3 + 7


def test_aliases_may_add_exactly_the_bound_and_one_node_more_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(yamlpos, "MAX_ALIAS_NODES", 5)
    assert parse_yaml(MAP, "t.yaml")[0] == {"m": {"k": [1, 2]}, "n": {"k": [1, 2]}}
    monkeypatch.setattr(yamlpos, "MAX_ALIAS_NODES", 4)
    with pytest.raises(ConfigError) as info:
        parse_yaml(MAP, "t.yaml")
    assert str(info.value) == (
        "t.yaml:2:4: YAML aliases expand to more than 4 nodes (the alias *m and those before "
        "it)\n  fix: write the data out instead of nesting anchors and aliases (an alias bomb "
        "is refused)"
    )
    monkeypatch.setattr(yamlpos, "MAX_ALIAS_NODES", 3)
    assert parse_yaml(SEQ, "t.yaml")[0] == {"a": [1, 2], "b": [1, 2]}
    monkeypatch.setattr(yamlpos, "MAX_ALIAS_NODES", 2)
    with pytest.raises(ConfigError, match="more than 2 nodes"):
        parse_yaml(SEQ, "t.yaml")


class CountingLoader(BoundedLoader):
    """Counts the times each node is asked its size."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream, "t.yaml")
        self.asked: Counter[str] = Counter()

    def _size(self, node: yaml.Node) -> int:
        self.asked[str(node.value) if isinstance(node, yaml.ScalarNode) else node.tag] += 1
        return int(super()._size(node))


def test_a_shared_node_is_sized_once_however_many_aliases_name_it() -> None:
    # an alias bomb composes to shared nodes; sizing each one again per alias would take
    # time exponential in its depth before the bound could refuse it
    loader = CountingLoader("a: &a [1, 2]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\n")
    try:
        loader.get_single_node()
        assert loader.alias_nodes == 3 * 3 + 3 * 10
        # the aliases ask a (the list) 3 times and b 3 times; b's first sizing asks a 3
        # times more; a's items are walked once, when a is first sized
        assert loader.asked == {"tag:yaml.org,2002:seq": 9, "1": 1, "2": 1}
    finally:
        loader.dispose()
