"""A case in context on the viewer (evalwh/viewer/attachments.py, pages.case_context): the
case page shows what the case asked — its vars, expected answer, the prompt sent, and its
attachments (images served from the artifact store by hash, other files by name and hash) —
and the image route reads nothing but images inside the store."""

from __future__ import annotations

import hashlib
import html
from pathlib import Path
from typing import Any

import pytest

from evalwh import api
from tests.conftest import write
from tests.fakes import media
from tests.viewer.serving import client


@pytest.fixture(scope="module")
def shown(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A run of one case with a PNG and a text file attached, a secret file beside the
    warehouse, and the viewer over it."""
    root = tmp_path_factory.mktemp("attached")
    (root / "media").mkdir()
    picture, notes = media.png(4, 3), b"plain notes\n"
    (root / "media" / "dog.png").write_bytes(picture)
    (root / "media" / "notes.txt").write_bytes(notes)
    config = write(
        root / "eval.yaml",
        "models:\n  - {id: m, provider: mock, mock: {default: a dog}}\n"
        "variants:\n  - id: v\n    messages:\n      - role: user\n        content:\n"
        "          - {text: 'What animal is this, {{ who }}?'}\n"
        '          - {image: "{{ files.photo }}"}\n'
        "cases:\n  - id: c1\n    vars: {who: reader}\n    expected: a dog\n"
        "    files: {photo: media/dog.png, notes: media/notes.txt}\n"
        "scorecard:\n  - {name: ok, type: contains}\n",
    )
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root))
        mp.setenv("EVALWH_CONFIG_DIR", str(root / "config"))
        api.run_eval(config, output_dir=root / ".evalwh")
    out = root / ".evalwh"
    (out / "secret.txt").write_text("not for the browser", encoding="utf-8")
    view = api.open_warehouse(out / "warehouse.duckdb")
    return {
        "view": view,
        "out": out,
        "png": picture,
        "png_sha": hashlib.sha256(picture).hexdigest(),
        "notes_sha": hashlib.sha256(notes).hexdigest(),
    }


def test_the_case_page_shows_the_question_expected_answer_prompt_and_attachments(
    shown: dict[str, Any],
) -> None:
    c = client(shown["view"])
    context = c.get("/cases/c1.json").json()["context"]
    assert context["vars"] == {"who": "reader"}
    assert context["expected"] == "a dog"
    assert context["prompt"][0]["role"] == "user"
    assert "What animal is this, reader?" in context["prompt"][0]["text"]
    files = {f["name"]: f for f in context["attachments"]}
    assert files["photo"]["src"] == f"/artifacts/{shown['png_sha']}"
    assert files["notes"]["src"] is None and files["notes"]["sha256"] == shown["notes_sha"]
    page = html.unescape(c.get("/cases/c1").text)
    assert "What animal is this, reader?" in page and "a dog" in page
    assert f'<img src="/artifacts/{shown["png_sha"]}"' in page
    assert "notes" in page and shown["notes_sha"] in page  # named with its hash, not served
    image = c.get(f"/artifacts/{shown['png_sha']}")
    assert image.status_code == 200 and image.content == shown["png"]
    assert image.headers["content-type"] == "image/png"


def test_the_image_route_refuses_traversal_and_every_file_that_is_not_a_stored_image(
    shown: dict[str, Any],
) -> None:
    """Attack: read a file outside the artifact store through the image route (path
    traversal, encoded or not, an absolute path, a symlink planted in the store), or a stored
    file that is not an image. Each is the same plain 404."""
    c = client(shown["view"])
    out: Path = shown["out"]
    store = out / "artifacts"
    # a symlink inside the store, named like a hash, pointing at a file outside it
    fake = hashlib.sha256(b"fake").hexdigest()
    (store / fake[:2]).mkdir(exist_ok=True)
    (store / fake[:2] / fake[2:]).symlink_to(out / "secret.txt")
    for path in (
        "/artifacts/../secret.txt",
        "/artifacts/..%2Fsecret.txt",
        "/artifacts/%2E%2E%2F%2E%2E%2Fsecret.txt",
        "/artifacts/..%2F..%2Fwarehouse.duckdb",
        f"/artifacts/{shown['png_sha'][:2]}%2F..%2F..%2Fsecret.txt",
        "/artifacts/%2Fetc%2Fpasswd",
        "/artifacts/" + "A" * 64,  # not lowercase hex
        "/artifacts/" + "0" * 64,  # no such file
        f"/artifacts/{fake}",  # the planted symlink
        f"/artifacts/{shown['notes_sha']}",  # stored, but not an image
    ):
        response = c.get(path)
        assert response.status_code == 404, path
        assert b"not for the browser" not in response.content, path
        assert b"plain notes" not in response.content, path
