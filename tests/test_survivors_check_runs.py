"""Exec checks at run time, pinned where mutation testing found them loose (docs/testing.md):
the exact report of several fenced blocks, every early error result, the files a check
writes, undecodable and unencodable text, the check's own stdin and pipes, the poll loop."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import types
from pathlib import Path
from typing import Any

import pytest

from evalwh.scoring import checks
from evalwh.scoring.checks import CAPTURE_BYTES, CheckResult, CheckSpec, clip_output, run_check

pytestmark = pytest.mark.skipif(os.name != "posix", reason="checks need a POSIX shell")

ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}


def check(
    spec: CheckSpec,
    answer: str = "42",
    case_vars: dict[str, Any] | None = None,
    *,
    env: dict[str, str] | None = None,
    no_look: bool = False,
) -> CheckResult:
    return asyncio.run(
        run_check(spec, answer, case_vars or {}, env=ENV if env is None else env, no_look=no_look)
    )


def blocks(*bodies: str) -> str:
    return "".join(f"Try:\n```sh\n{body}\n```\n" for body in bodies)


# --- several fenced blocks: the report, line by line ---------------------------------------


def test_the_report_of_three_blocks_names_each_earlier_one_with_its_first_line_of_output() -> None:
    answer = blocks("echo first-line; echo second; exit 4", "true", "echo verdict")
    result = check(CheckSpec(run='sh "$ANSWER"'), answer)
    assert (result.passed, result.exit_code, result.error) == (True, 0, None)
    assert result.output == (
        "block 1 of 3: fail (exit 4): first-line\n"
        "block 2 of 3: pass\n"
        "block 3 of 3 (the verdict):\n"
        "verdict\n"
    )


def test_a_block_that_times_out_is_reported_as_an_error_and_the_last_ones_error_is_the_result() -> (
    None
):
    answer = blocks("sleep 5", "sleep 5")
    result = check(CheckSpec(run='sh "$ANSWER"', timeout_s=0.3), answer)
    assert (result.passed, result.exit_code) == (False, None)
    assert result.error == "timed out after 0.3 s"
    assert result.output == (
        "block 1 of 2: error: timed out after 0.3 s\nblock 2 of 2 (the verdict):\n"
    )


def test_every_block_gets_the_case_variables_the_environment_given_and_no_look() -> None:
    answer = blocks("true", "true")
    spec = CheckSpec(run='test "$CASE_LANG" = de && test "$MARKER" = set && test ! -e answer.txt')
    marked = {**ENV, "MARKER": "set"}
    seen = check(spec, answer, {"lang": "de"}, env=marked, no_look=True)
    assert seen.passed, seen.output
    assert "block 1 of 2: pass" in seen.output
    written = check(spec, answer, {"lang": "de"}, env=marked, no_look=False)
    assert not written.passed  # answer.txt exists when the run may look


# --- the early error results: nothing ran, so no output and no pass -------------------------


def test_a_check_with_files_in_a_no_look_run_is_a_bad_check_that_says_what_to_do() -> None:
    result = check(CheckSpec(run="true", files={"data.txt": "x"}), no_look=True)
    assert result == CheckResult(
        False,
        None,
        "",
        result.duration_ms,
        "bad check: a no-look run writes no case data to disk, so a check's files cannot be"
        " written (put them in the snippet, or run without no-look)",
    )


def test_a_file_name_with_a_nul_is_a_bad_check_and_nothing_is_written() -> None:
    result = check(CheckSpec(run="true", files={"a\x00b": "x"}))
    assert (result.passed, result.exit_code, result.output) == (False, None, "")
    assert result.error == "bad check: file name 'a\\x00b' may not contain a backslash or NUL"


def test_a_file_that_cannot_be_written_is_an_error_naming_the_folder() -> None:
    # "a" is written as a file first, so "a/b" has no folder to go in
    result = check(CheckSpec(run="true", files={"a": "1", "a/b": "2"}))
    assert (result.passed, result.exit_code, result.output) == (False, None, "")
    assert result.error is not None
    assert result.error.startswith("could not prepare the check folder: ")


@pytest.mark.parametrize("setup", [None, "true"])
def test_a_shell_that_cannot_start_is_an_error_with_no_output(
    monkeypatch: pytest.MonkeyPatch, setup: str | None
) -> None:
    monkeypatch.setattr(checks, "SHELL", "/nonexistent/sh")
    result = check(CheckSpec(run="true", setup=setup))
    assert (result.passed, result.exit_code, result.output) == (False, None, "")
    assert result.error is not None
    assert result.error.startswith("could not start /nonexistent/sh: ")


def test_without_a_posix_shell_the_result_is_an_error_with_no_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(checks, "POSIX", False)
    result = check(CheckSpec(run="true"))
    assert (result.passed, result.exit_code, result.output) == (False, None, "")


def test_the_duration_is_the_milliseconds_the_check_took(monkeypatch: pytest.MonkeyPatch) -> None:
    readings = iter([100.0, 100.25])
    clock = types.SimpleNamespace(
        perf_counter=lambda: next(readings, 100.25), monotonic=checks.time.monotonic
    )
    monkeypatch.setattr(checks, "time", clock)
    assert check(CheckSpec(run="true")).duration_ms == 250.0


# --- the folder and the files in it ---------------------------------------------------------


def test_the_folder_is_named_for_evalwh_and_nested_files_get_their_folders() -> None:
    spec = CheckSpec(run='basename "$PWD"; cat a/b/c.txt', files={"a/b/c.txt": "deep"})
    result = check(spec)
    assert result.passed, result.output
    name, content = result.output.splitlines()
    assert name.startswith("evalwh-check-")
    assert content == "deep"


def test_an_answer_that_swaps_its_folder_for_a_link_ends_as_a_result_not_a_crash(
    tmp_path: Path,
) -> None:
    # Attack: code under check replaces its own folder with a symlink, so that cleaning up
    # fails (rmtree refuses links). The check still returns its result, and the link's
    # target is left alone.
    target = tmp_path / "kept"
    target.mkdir()
    (target / "precious").write_text("x")
    spec = CheckSpec(run=f'd="$PWD"; cd /; rm -rf "$d"; ln -s {target} "$d"; echo "$d"')
    result = check(spec)
    link = Path(result.output.strip())
    try:
        assert result.passed and link.is_symlink()
        assert (target / "precious").read_text() == "x"
    finally:
        with contextlib.suppress(FileNotFoundError):
            link.unlink()


def test_text_that_is_not_valid_unicode_is_written_with_replacement_marks() -> None:
    # a lone surrogate (what a JSON "\\ud800" escape decodes to) cannot be encoded as UTF-8
    spec = CheckSpec(
        run='test "$(cat answer.txt)" = "a?b" && test "$(cat data)" = "c?d"'
        ' && test "$ANSWER_TEXT" = "a?b"',
        files={"data": "c\ud800d"},
    )
    result = check(spec, "a\ud800b")
    assert result.passed, result.output


def test_nul_bytes_are_dropped_from_the_answer_text_variable() -> None:
    result = check(CheckSpec(run='test "$ANSWER_TEXT" = ab'), "a\x00b")
    assert result.passed, result.output


# --- output: undecodable bytes, at both ends -----------------------------------------------


def test_output_that_is_not_utf8_is_decoded_with_replacement_marks_in_head_and_tail() -> None:
    # the head, then more than CAPTURE_BYTES so that the tail is kept apart
    run = f"printf 'A\\377'; head -c {CAPTURE_BYTES + 10} /dev/zero | tr '\\0' x; printf '\\377Z'"
    result = check(CheckSpec(run=run))
    assert result.passed, result.error
    assert result.output.startswith("A\ufffdx")
    assert result.output.endswith("x\ufffdZ")


def test_clip_output_keeps_text_of_exactly_the_limit_whole() -> None:
    assert clip_output("y" * 50, limit=50) == "y" * 50


def test_clip_output_keeps_half_of_what_fits_from_each_end() -> None:
    text = "".join(f"{i:03d}" for i in range(200))  # 600 distinct characters
    marker = "\n[... output truncated: 600 characters in all ...]\n"
    clipped = clip_output(text, limit=len(marker) + 10)
    assert clipped == text[:5] + marker + text[-5:]


def test_clip_output_below_the_markers_length_is_the_marker_alone() -> None:
    assert clip_output("abcdef" * 20, limit=5) == (
        "\n[... output truncated: 120 characters in all ...]\n"
    )


# --- the check's own process: stdin, pipes, process groups ----------------------------------


def test_a_check_never_reads_the_stdin_of_evalwh_itself() -> None:
    # Attack: a snippet that reads stdin would swallow what CI pipes into evalwh.
    read_end, write_end = os.pipe()
    os.write(write_end, b"piped into evalwh\n")
    os.close(write_end)
    saved = os.dup(0)
    os.dup2(read_end, 0)
    try:
        result = check(CheckSpec(run="cat; echo end"))
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(read_end)
    assert result.output == "end\n"


def test_a_process_that_escapes_the_group_leaves_no_pipe_open_in_evalwh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Attack: code under check starts its own session, which keeps the write end of the
    # output pipe; without closing our end, each such case would cost evalwh a descriptor.
    if not Path("/proc/self/fd").is_dir() or shutil.which("setsid") is None:
        pytest.skip("needs /proc and setsid")
    monkeypatch.setattr(checks, "DRAIN_S", 0.2)

    def links(pid: str) -> set[str]:
        found = set()
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):  # closed meanwhile
                found.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        return found

    async def check_then_look() -> tuple[str, str, set[str]]:
        result = await run_check(
            CheckSpec(run='setsid sleep 30 & echo "bg=$!"; sleep 0.1'), "x", env=ENV
        )
        await asyncio.sleep(0)  # a closed pipe lets go of its descriptor on the next turn
        pid = re.search(r"bg=(\d+)", result.output).group(1)  # type: ignore[union-attr]
        return pid, os.readlink(f"/proc/{pid}/fd/1"), links("self")

    pid, pipe, ours = asyncio.run(check_then_look())
    os.kill(int(pid), 9)
    assert pipe.startswith("pipe:")  # the escaped process still holds the output pipe
    assert pipe not in ours  # and evalwh has let go of its end


def test_a_process_group_that_cannot_be_signalled_is_left_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(pid: int, sig: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(checks.os, "killpg", refuse)
    checks._kill_group(12345)  # no exception


class _ExitsAfter:
    """A process whose return code is None for its first ``polls`` looks, then 0."""

    def __init__(self, polls: int) -> None:
        self.polls = polls

    @property
    def returncode(self) -> int | None:
        self.polls -= 1
        return None if self.polls >= 0 else 0


def test_the_exit_poll_starts_at_a_millisecond_and_doubles_up_to_its_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pauses: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(seconds: float) -> None:
        pauses.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(checks.asyncio, "sleep", sleep)
    proc: Any = _ExitsAfter(7)
    assert asyncio.run(checks._exited(proc, 60.0)) is True
    assert pauses == pytest.approx([0.001, 0.002, 0.004, 0.008, 0.016, 0.02, 0.02])


def test_no_time_left_means_the_shell_has_not_exited_even_at_exactly_the_end() -> None:
    loop = asyncio.new_event_loop()
    loop.time = lambda: 100.0  # type: ignore[method-assign]
    try:
        proc: Any = _ExitsAfter(1)  # would exit by the second look
        assert loop.run_until_complete(checks._exited(proc, 0.0)) is False
    finally:
        loop.close()
