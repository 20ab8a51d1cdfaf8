"""`evalwh mcp` without the MCP SDK installed says what to install and exits 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_without_the_sdk_the_command_says_what_to_install(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['mcp'] = None\n"
        "from evalwh.cli.main import main\n"
        "sys.exit(main(['mcp']))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert out.returncode == 2
    assert "install evalwh[mcp]" in out.stderr
