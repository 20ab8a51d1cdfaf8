"""evalwh/reports/attachments.py: which attached files a page shows inline and which by name
and hash: raster images up to the size limit and the page budget, only with the bytes the
case stored, never SVG, never a path a hostile hash would name."""

from __future__ import annotations

import hashlib
from pathlib import Path

from evalwh.reports import attachments
from evalwh.reports.attachments import Inliner, message_files
from tests.fakes import media


def _stored(folder: Path, data: bytes) -> str:
    sha = hashlib.sha256(data).hexdigest()
    path = folder / "artifacts" / sha[:2] / sha[2:]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return sha


def _part(sha: str, media_type: str = "image/png", name: str = "photo") -> dict[str, object]:
    return {"type": "image", "name": name, "sha256": sha, "media_type": media_type, "bytes": 79}


def _messages(*parts: dict[str, object]) -> list[dict[str, object]]:
    return [{"role": "user", "content": [{"type": "text", "text": "Which colour?"}, *parts]}]


def test_a_stored_image_is_inlined_once_and_named_with_its_hash(tmp_path: Path) -> None:
    sha = _stored(tmp_path, media.png(4, 3))
    inline = Inliner(tmp_path)
    files = inline.files(_messages(_part(sha), _part(sha)))  # the same file twice: listed once
    assert files == [{"name": "photo", "type": "image/png", "bytes": 79, "sha256": sha}]
    uri = inline.inlined()[sha]
    assert uri.startswith("data:image/png;base64,iVBORw0KGgo")  # the PNG signature


def test_files_that_are_not_inlined_are_still_listed_by_name_and_hash(tmp_path: Path) -> None:
    pdf = _stored(tmp_path, media.pdf())
    svg = _stored(tmp_path, b'<svg xmlns="http://www.w3.org/2000/svg"><script>x</script></svg>')
    big = _stored(tmp_path, b"\x89PNG" + b"\0" * attachments.INLINE_BYTES)  # one past the limit
    fits = _stored(tmp_path, b"\x89PNG" + b"\0" * (attachments.INLINE_BYTES - 4))  # exactly at it
    missing = "0" * 64
    inline = Inliner(tmp_path)
    files = inline.files(
        _messages(
            _part(pdf, "application/pdf", "doc"),
            _part(svg, "image/svg+xml", "logo"),
            _part(big, name="big"),
            _part(fits, name="fits"),
            _part(missing, name="gone"),
        )
    )
    assert [f["name"] for f in files] == ["doc", "logo", "big", "fits", "gone"]
    assert list(inline.inlined()) == [fits]


def test_a_changed_stored_file_is_not_shown_as_the_cases_image(tmp_path: Path) -> None:
    sha = _stored(tmp_path, media.png(4, 3))
    (tmp_path / "artifacts" / sha[:2] / sha[2:]).write_bytes(media.png(9, 9))
    inline = Inliner(tmp_path)
    assert inline.files(_messages(_part(sha)))[0]["sha256"] == sha
    assert inline.inlined() == {}


def test_path_traversal_a_hostile_hash_reads_no_file_outside_the_store(tmp_path: Path) -> None:
    """An imported case naming `../../secret.png` (or any non-hex text) as its file's hash
    makes the page read nothing: only 64 lowercase hex digits name a stored file."""
    store = tmp_path / "out"
    (store / "artifacts").mkdir(parents=True)
    (tmp_path / "secret.png").write_bytes(media.png(4, 3))
    hostile = "../../../secret.png".rjust(64, "a")
    inline = Inliner(store)
    assert inline.files(_messages(_part(hostile)))[0]["sha256"] == hostile
    assert inline.inlined() == {}


def test_the_page_budget_stops_inlining_and_a_lake_has_no_folder(tmp_path: Path) -> None:
    first = _stored(tmp_path, media.png(4, 3))
    second = _stored(tmp_path, media.png(5, 5))
    inline = Inliner(tmp_path, budget=len(media.png(4, 3)))
    inline.files(_messages(_part(first, name="a"), _part(second, name="b")))
    assert list(inline.inlined()) == [first]  # the second did not fit what was left
    assert Inliner(None).files(_messages(_part(first))) and Inliner(None).inlined() == {}
    assert message_files([{"role": "user", "content": "plain text"}]) == []
