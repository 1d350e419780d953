"""Runs CrossHair over the spec's contracts and requires every postcondition to be confirmed.

CrossHair exits 0 even when it could not confirm a condition, so the runner reads its report
line by line and matches it against the `post:` lines of the source: a postcondition that is
not reported "Confirmed over all paths" fails, and so does one CrossHair never mentions.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path

ANALYSIS_KIND = "PEP316"
SPEC_MODULES: tuple[str, ...] = (
    "atmostonce.spec.policy",
    "atmostonce.spec.records",
    "atmostonce.spec.approval",
    "atmostonce.spec.fence",
)
CONFIRMED = "Confirmed over all paths."
_REPORT = re.compile(r"^(?P<path>.+?):(?P<line>\d+): (?P<level>\w+): (?P<message>.*)$")


@dataclass(frozen=True)
class Condition:
    path: str
    line: int
    text: str

    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass
class ProofReport:
    """What CrossHair said about each postcondition, and what it said that matched none."""

    confirmed: list[Condition] = field(default_factory=list)
    failed: list[tuple[Condition, str]] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    seconds: float = 0.0
    command: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.confirmed) and not self.failed and not self.unmatched


def conditions_in(path: Path) -> list[Condition]:
    """Every `post:` line of a source file: the contracts CrossHair must confirm."""
    found: list[Condition] = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("post:"):
            found.append(Condition(str(path.resolve()), number, stripped))
    return found


def module_path(module: str) -> Path:
    source = import_module(module).__file__
    if source is None:
        raise RuntimeError(f"module {module} has no source file")
    return Path(source)


def prove(
    targets: Sequence[str] = SPEC_MODULES,
    per_condition_timeout: float = 20.0,
    paths: Sequence[Path] | None = None,
) -> ProofReport:
    """Run `crosshair check` on `targets` and judge every postcondition found in `paths`."""
    files = list(paths) if paths is not None else [module_path(m) for m in targets]
    expected = {c.where(): c for f in files for c in conditions_in(f)}
    command = [
        sys.executable, "-m", "crosshair", "check",
        f"--analysis_kind={ANALYSIS_KIND}", "--report_all",
        f"--per_condition_timeout={per_condition_timeout}", *targets,
    ]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    report = ProofReport(seconds=time.monotonic() - started, command=command)
    seen: set[str] = set()
    blocks = _split_reports(done.stdout)
    for head, body in blocks:
        match = _REPORT.match(head)
        if match is None:
            report.unmatched.append(head)
            continue
        where = f"{Path(match['path']).resolve()}:{match['line']}"
        condition = expected.get(where)
        if condition is None:
            report.unmatched.append(head)
            continue
        seen.add(where)
        if match["level"] == "info" and match["message"] == CONFIRMED:
            report.confirmed.append(condition)
        else:
            report.failed.append((condition, (match["message"] + "\n" + body).strip()))
    for where, condition in expected.items():
        if where not in seen:
            report.failed.append((condition, "CrossHair did not report on this condition"))
    if done.returncode not in (0, 1):
        report.unmatched.append(f"crosshair exited {done.returncode}: {done.stderr.strip()}")
    return report


def _split_reports(stdout: str) -> list[tuple[str, str]]:
    """Group CrossHair's output into (report line, following detail lines)."""
    blocks: list[tuple[str, str]] = []
    for line in stdout.splitlines():
        if _REPORT.match(line):
            blocks.append((line, ""))
        elif blocks and line.strip():
            head, body = blocks[-1]
            blocks[-1] = (head, body + line + "\n")
    return blocks
