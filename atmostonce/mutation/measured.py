"""The last recorded mutation score of the reference executor (`measured.json`, written by
`python benchmarks/mutation.py --record`), as `atmostonce mutants` shows it: the score, its
parts, when, and which executor modules have changed since it was measured.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

MEASURED = Path(__file__).with_name("measured.json")


def measured_lines(path: Path = MEASURED) -> list[str]:
    """What `atmostonce mutants` prints about the generated mutants; a line saying none was
    recorded when there is no score."""
    try:
        data = json.loads(path.read_text())
        modules: dict[str, dict[str, object]] = data["per_module"]
        line = (f"generated mutants of atmostonce/executor/*.py (cosmic-ray, every first-order "
                f"mutant): {data['mutants']} mutants, score {float(data['score']):.1%} "
                f"(killed {data['killed']}, timed out {data['timeout']}, survived "
                f"{data['survived']}, equivalent {data['equivalent']}), measured "
                f"{data['date']} by `{data['command']}`")
    except (OSError, ValueError, KeyError, TypeError):
        return ["generated mutants: no score recorded (python benchmarks/mutation.py --record)"]
    lines = [line, *_changed(modules)]
    outside = data.get("black_box")
    if not isinstance(outside, dict):
        return [*lines, "judged from outside: no black-box score recorded (python "
                "benchmarks/mutation.py --black-box --record)"]
    try:
        lines.append(
            f"judged from outside (simulation and chaos histories and the operator's starts "
            f"only, what a black-box engine is judged by): score "
            f"{float(outside['score']):.1%} (killed {outside['killed']}, "
            f"timed out {outside['timeout']}, survived {outside['survived']} of which "
            f"{outside['unobservable']} argued not observable from outside, equivalent "
            f"{outside['equivalent']}), measured {outside['date']} by `{outside['command']}`")
        per = outside["per_module"]
        lines.append("  per module: " + ", ".join(
            f"{Path(name).name} {float(t['score']):.0%}" for name, t in sorted(per.items())))
        lines += _changed(per)
    except (KeyError, TypeError, ValueError):
        lines.append("judged from outside: the recorded black-box score is unreadable")
    return lines


def _changed(modules: dict[str, dict[str, object]]) -> list[str]:
    """A line naming the executor modules changed since their figures were measured."""
    root = Path(__file__).resolve().parents[2]
    changed = []
    for name, figures in sorted(modules.items()):
        module = root / name
        sha = hashlib.sha256(module.read_bytes()).hexdigest() if module.exists() else ""
        if sha != figures.get("sha256"):
            changed.append(Path(name).name)
    if not changed:
        return []
    return [f"  changed since: {', '.join(changed)} (run it again for their score)"]
