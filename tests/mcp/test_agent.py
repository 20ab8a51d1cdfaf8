"""evalwh/mcp/agent.py: the server's root (from EVALWH_MCP_ROOT or the working folder) and the
confinement of every path inside it, symlinks followed."""

from __future__ import annotations

import os

import pytest

from evalwh.errors import UsageError
from evalwh.mcp.agent import confine, mcp_root


def test_root_from_env_or_working_folder(tmp_path):
    assert mcp_root({}, tmp_path) == tmp_path.resolve()
    (tmp_path / "sub").mkdir()
    assert mcp_root({"EVALWH_MCP_ROOT": "sub"}, tmp_path) == (tmp_path / "sub").resolve()
    with pytest.raises(UsageError, match="EVALWH_MCP_ROOT"):
        mcp_root({"EVALWH_MCP_ROOT": str(tmp_path / "missing")}, tmp_path)


def test_confine_keeps_paths_inside_the_root(tmp_path):
    root = (tmp_path / "root").resolve()
    (root / "evals").mkdir(parents=True)
    assert confine("evals/eval.yaml", root) == root / "evals" / "eval.yaml"
    assert confine(root / "evals", root) == root / "evals"
    for outside in ("../secret.yaml", "/etc/passwd", "evals/../../x.yaml"):
        with pytest.raises(UsageError, match="outside the server's root"):
            confine(outside, root)


def test_confine_follows_symlinks_out_of_the_root(tmp_path):
    root = (tmp_path / "root").resolve()
    root.mkdir()
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text("name: x\n", encoding="utf-8")
    os.symlink(elsewhere, root / "link.yaml")
    with pytest.raises(UsageError, match="outside"):
        confine("link.yaml", root)
