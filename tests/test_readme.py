"""Keep the README honest: run every snippet, compare shown output with real output."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from adcompile.api import generate_source
from adcompile.cli import load_target

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"(?:<!-- (?P<note>[^>]*) -->\n)?```(?P<lang>\w*)\n(?P<body>.*?)```", re.S)
BLOCKS = [m.groupdict() for m in BLOCK.finditer(README)]


def _blocks(lang: str, note_prefix: str | None) -> list[dict[str, str]]:
    return [
        b
        for b in BLOCKS
        if b["lang"] == lang
        and ((b["note"] or "").startswith(note_prefix) if note_prefix else b["note"] is None)
    ]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


RUNNABLE = _blocks("python", None)


@pytest.mark.parametrize("index", range(len(RUNNABLE)))
def test_python_snippet_runs(tmp_path, index):
    script = tmp_path / f"readme_snippet_{index}.py"
    script.write_text(RUNNABLE[index]["body"], encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=_env(), check=False
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("block", _blocks("python", "generated:"), ids=lambda b: b["note"])
def test_generated_code_shown_is_real_output(block):
    target = block["note"].removeprefix("generated:").strip()
    text, _ = generate_source(load_target(str(ROOT / target)))
    assert block["body"] == text


@pytest.mark.parametrize("block", _blocks("python", "excerpt:"), ids=lambda b: b["note"])
def test_excerpts_are_verbatim(block):
    path = ROOT / block["note"].removeprefix("excerpt:").strip()
    assert block["body"] in path.read_text(encoding="utf-8")


def test_there_are_snippets_of_each_kind():
    assert len(RUNNABLE) >= 3
    assert _blocks("python", "generated:")
    assert _blocks("python", "excerpt:")


def _shell_lines() -> list[str]:
    lines = []
    for block in _blocks("bash", None):
        for line in block["body"].splitlines():
            command = line.split("#")[0].strip()
            if command:
                lines.append(command)
    return lines


def test_setup_commands_are_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -e . && python examples/seed.py" in _shell_lines()
    assert "pip install -e '.[test]' && python -m pytest" in _shell_lines()
    assert "-e '.[test]'" in ci
    assert "-m pytest" in ci


def test_example_command_prints_gradients_and_code():
    result = subprocess.run(
        [sys.executable, "examples/seed.py"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "(5.0, 5.0, 1.0)" in result.stdout
    assert "def f_grad(x, y, z):" in result.stdout


@pytest.mark.parametrize(
    "command", [c for c in _shell_lines() if c.startswith(("adcompile ", "python -m adcompile"))]
)
def test_cli_snippet_runs(command):
    args = shlex.split(command)
    args = args[1:] if args[0] == "adcompile" else args[3:]
    result = subprocess.run(
        [sys.executable, "-m", "adcompile", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_env(),
        check=False,
    )
    assert result.returncode == 0, result.stderr
