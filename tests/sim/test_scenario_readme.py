"""The README's scenario excerpt is what the command it names prints today: each paragraph of
the excerpt under "from the first command" is a passage of `atmostonce simulate --scenario
examples/support_agent.toml`'s output, so the figures the text explains cannot drift."""

from __future__ import annotations

from pathlib import Path

import pytest

from atmostonce import cli

ROOT = Path(__file__).resolve().parents[2]


def excerpt() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("\n## Simulating your own agent\n"):]
    block = section[section.index("from the first command:"):]
    block = block[block.index("```\n") + 4:]
    return block[:block.index("```")].strip("\n").split("\n\n")


@pytest.mark.slow
def test_the_readmes_scenario_excerpt_is_what_the_command_prints(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert cli.main(["simulate", "--scenario", "examples/support_agent.toml"]) == 0
    out = capsys.readouterr().out
    paragraphs = excerpt()
    assert len(paragraphs) == 3
    for paragraph in paragraphs:
        assert paragraph in out, paragraph
