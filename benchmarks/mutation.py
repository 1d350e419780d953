"""How strong `atmostonce verify` is on the reference executor: every first-order mutant
cosmic-ray makes of `atmostonce/executor/*.py` (not `mutants.py`, which holds the hand-written
broken variants), each tried cheapest check first (`atmostonce.mutation.stages`) until one
kills it, two at a time, resumable; the survivors of the cheap stages, all together, before
the expensive ones. Prints a table per module, or one JSON object.

    python benchmarks/mutation.py [--processes 2 | --ray ADDRESS|local] [--json] [--out F]
    python benchmarks/mutation.py --module attempts.py --limit 20      # a quick look
    python benchmarks/mutation.py --black-box [--record]     # judged from outside only
    python benchmarks/mutation.py --black-box --argued --stages operator --record
                                      # the argued survivors against a new stage, folded in

`--black-box` runs the same mutants through the stages that read only what an engine shows
from outside (the simulation's histories, the chaos run's on the real runtime, and what its
operator sees starting it with bad options or a foreign journal), the way a
black-box engine is judged, and scores them apart; a survivor there is argued in
`mutation_unobservable.toml`, saying what an observer would need to see to tell it apart;
`--argued` tries those survivors alone against a stage added since, and with `--record` adds
its kills to the recorded black-box score (a kill stays a kill; every other figure stands).

cosmic-ray is chosen over mutmut because it applies one mutation to a source file and runs
any command against it (here: verify's executor layers in a fresh process whose import path
holds the mutated copy), where mutmut 3 drives pytest through its own trampolines.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if not __package__:  # run as a script: mutate this checkout, not an installed copy
    sys.path.insert(0, str(ROOT))

from atmostonce import progress  # noqa: E402
from atmostonce.fanout import way as fanout  # noqa: E402
from atmostonce.mutation.generate import executor_modules, mutants  # noqa: E402
from atmostonce.mutation.pipeline import Outcome, run  # noqa: E402
from atmostonce.mutation.score import Score, load_equivalents, score  # noqa: E402
from atmostonce.mutation.stages import BLACK_BOX, BY_NAME, STAGES  # noqa: E402
from atmostonce.spec.errors import SpecError  # noqa: E402

EQUIVALENT = Path(__file__).with_name("mutation_equivalent.toml")
UNOBSERVABLE = Path(__file__).with_name("mutation_unobservable.toml")
FIRST_PASS = 4
"""Every mutant meets the first four stages before any survivor meets the fifth, and so on:
the few survivors, not the many, pay for the expensive layers (a black-box run: the first
stage, then one more at a time)."""
STATE = ROOT / ".mutation" / "state.jsonl"
BLACK_BOX_STATE = ROOT / ".mutation" / "black-box.jsonl"
MEASURED = ROOT / "atmostonce" / "mutation" / "measured.json"
RECORDED_WITHOUT_OPERATOR = ("simulation-20", "simulation-300", "runtime")
"""The stages of a black-box score recorded before the operator stage, which names none."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/mutation.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, metavar="N",
                        help="trials at a time (default 2; with --ray local, the CPUs of the "
                        "Ray started here)")
    parser.add_argument("--ray", metavar="ADDRESS|local",
                        help="run each trial as a Ray task: 'local' starts a Ray on this "
                        "machine for the run, an address (auto, ray://host:10001) joins a "
                        "running cluster whose workers have this same atmostonce installed "
                        "(its checking code is compared with this checkout's); the outcomes "
                        "are those of a run without it (needs the ray extra)")
    parser.add_argument("--module", action="append", default=[], metavar="NAME",
                        help="only the executor modules whose file name contains NAME "
                        "(repeatable)")
    parser.add_argument("--black-box", action="store_true",
                        help="only the stages that judge from outside "
                        f"({','.join(BLACK_BOX)}), scored apart, with its own state file and "
                        "the survivors' arguments in "
                        f"{UNOBSERVABLE.relative_to(ROOT)}")
    parser.add_argument("--stages", metavar="LIST",
                        help="the stages each mutant meets, in order (default: "
                        f"{','.join(s.name for s in STAGES)}; with --black-box "
                        f"{','.join(BLACK_BOX)})")
    parser.add_argument("--argued", action="store_true",
                        help="with --black-box: only the survivors argued not observable from "
                        "outside (to try them against a new stage, e.g. --stages operator)")
    parser.add_argument("--limit", type=int, default=0, metavar="N",
                        help="only the first N mutants (default: all)")
    parser.add_argument("--timeout", type=float, default=900.0, metavar="S",
                        help="seconds one mutant's trial may take (default 900)")
    parser.add_argument("--state", type=Path, metavar="FILE",
                        help="the results so far, taken up again (default "
                        f"{STATE.relative_to(ROOT)}; with --black-box "
                        f"{BLACK_BOX_STATE.relative_to(ROOT)})")
    parser.add_argument("--fresh", action="store_true", help="forget the results so far")
    parser.add_argument("--equivalent", type=Path, default=EQUIVALENT, metavar="FILE",
                        help="the argued equivalent mutants (default "
                        f"{EQUIVALENT.relative_to(ROOT)})")
    parser.add_argument("--unobservable", type=Path, default=UNOBSERVABLE, metavar="FILE",
                        help="the black-box survivors argued not observable from outside "
                        f"(default {UNOBSERVABLE.relative_to(ROOT)})")
    parser.add_argument("--try-equivalents", action="store_true",
                        help="try the argued equivalent mutants too (a kill shows an argument "
                        "wrong; they count as equivalent either way)")
    parser.add_argument("--out", type=Path, metavar="FILE", help="write the JSON report there")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--record", action="store_true",
                        help="write the score to atmostonce/mutation/measured.json, which "
                        "`atmostonce mutants` shows (only for a run over every module and "
                        "stage; with --black-box, as its black-box score)")
    args = parser.parse_args(argv)
    every = list(BLACK_BOX) if args.black_box else [s.name for s in STAGES]
    state: Path = args.state or (BLACK_BOX_STATE if args.black_box else STATE)
    try:
        stages = args.stages.split(",") if args.stages is not None else every
        unknown = [s for s in stages if s not in {x.name for x in STAGES}]
        if unknown or not stages or not all(stages):
            raise SpecError(f"unknown stage {unknown[0] if unknown else '(none)'!r}: choose "
                            f"from {', '.join(s.name for s in STAGES)}")
        if args.argued and not args.black_box:
            raise SpecError("--argued needs --black-box: the arguments are about outside "
                            "observers")
        way = fanout.way(args.processes, args.ray)
        processes = args.processes or ((os.cpu_count() or 1) if args.ray else 2)
        if args.limit < 0 or args.timeout <= 0:
            raise SpecError("--limit must be >= 0 and --timeout > 0")
        equivalents = load_equivalents(args.equivalent)
        unobservable = (load_equivalents(args.unobservable, "unobservable")
                        if args.black_box else {})
        modules = [m for m in executor_modules(ROOT / "atmostonce" / "executor")
                   if not args.module or any(n in m.name for n in args.module)]
        if not modules:
            raise SpecError(f"no executor module matches {', '.join(args.module)}")
        made = list(mutants(modules, ROOT))
    except SpecError as error:
        print(f"mutation: {error}", file=sys.stderr)
        return 2
    tried = [m for m in made if not m.annotation and (
        args.try_equivalents or getattr(equivalents.get(m.id), "line", None) != m.text)]
    if args.argued:
        tried = [m for m in tried if m.id in unobservable]
        made = [m for m in made if m in set(tried)]
    if args.limit:
        tried = tried[:args.limit]
        made = [m for m in made if m.annotation or m in set(tried)]
    if args.fresh and state.exists():
        state.unlink()
    state.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    outcomes: list[Outcome] = []
    first = 1 if args.black_box else FIRST_PASS
    with progress.board(args.json) as shown:
        for upto in range(min(first, len(stages)), len(stages) + 1):
            meter = shown.meter(f"mutants, stages {','.join(stages[:upto])}",
                                total=len(tried), unit="mutants")
            count = [0]

            def done(outcome: Outcome, meter: progress.Meter = meter,
                     count: list[int] = count) -> None:
                count[0] += 1
                meter.update(count[0], note=f"{outcome.mutant.id}: "
                             f"{outcome.killed_by or 'SURVIVED'}")

            try:
                outcomes = run(tried, ROOT, "atmostonce.executor:reference", stages[:upto],
                               processes, args.timeout, state, done, way.ray)
            except SpecError as error:
                print(f"mutation: {error}", file=sys.stderr)
                return 2
            meter.finish()
    result = score(made, outcomes, equivalents, unobservable)
    report = {**result.as_json(), "black_box": args.black_box, "stages": stages,
              "processes": processes, "ray": args.ray,
              "wall_seconds": round(time.monotonic() - started, 1),
              "command": "python benchmarks/mutation.py " + " ".join(argv or sys.argv[1:])}
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    if args.record and args.argued:
        try:
            fold_argued(outcomes, " ".join(argv or sys.argv[1:]))
        except SpecError as error:
            print(f"mutation: {error}", file=sys.stderr)
            return 2
    elif args.record:
        if args.module or args.limit or stages != every or result.untried:
            print("mutation: --record needs every module and every stage, and every mutant "
                  "tried", file=sys.stderr)
            return 2
        record(result, report, modules, args.black_box)
    if args.json:
        print(json.dumps(report))
    else:
        _table(result, report)
    return 0


def record(result: Score, report: dict[str, object], modules: list[Path],
           black_box: bool) -> None:
    """The measured score, with the sha256 of each module it was measured on, for
    `atmostonce mutants` to show (and to say which modules changed since); a black-box score
    is kept beside the other, under `black_box`."""
    shas = {m.resolve().relative_to(ROOT).as_posix():
            hashlib.sha256(m.read_bytes()).hexdigest() for m in modules}
    per_module = {name: {**t.as_json(), "sha256": shas[name]}
                  for name, t in sorted(result.modules.items())}
    measured = {**result.total.as_json(), "per_module": per_module,
                "killed_by_stage": dict(result.killed_by.most_common()),
                "wall_seconds": report["wall_seconds"], "processes": report["processes"],
                "date": time.strftime("%Y-%m-%d"),
                "command": "python benchmarks/mutation.py --record"
                + (" --black-box" if black_box else "")}
    try:
        kept = json.loads(MEASURED.read_text())
    except (OSError, ValueError):
        kept = {}
    if black_box:
        measured = {**kept, "black_box": measured}
    elif "black_box" in kept:
        measured["black_box"] = kept["black_box"]
    MEASURED.write_text(json.dumps(measured, indent=1) + "\n")


def fold_argued(outcomes: list[Outcome], command: str, measured: Path = MEASURED) -> None:
    """The argued survivors this run killed by a stage the recorded black-box score never ran,
    taken off its survivors and counted as kills: a kill stays a kill, and every other mutant's
    figure stands as recorded. A kill by a stage the record ran is not folded (the record
    counted that mutant already, or its checks changed since: a whole run tells); where a
    module's arguments name more mutants than the record has survivors, only the kills beyond
    that excess count. SpecError when no black-box score is recorded or a module changed since
    it was (its figures would mix two versions)."""
    try:
        kept = json.loads(measured.read_text())
        outside = kept["black_box"]
        per = outside["per_module"]
    except (OSError, ValueError, KeyError, TypeError):
        raise SpecError(f"no black-box score recorded in {measured}") from None
    folded: list[str] = outside.setdefault("killed_after_the_run", [])
    ran: list[str] = outside.setdefault("stages", list(RECORDED_WITHOUT_OPERATOR))  # the run's own
    met = [o for o in outcomes if o.killed_by not in ran and o.mutant.id not in folded]
    killed = [o for o in met if o.killed_by in BY_NAME]
    for outcome in killed:
        name = outcome.mutant.module
        sha = hashlib.sha256((ROOT / name).read_bytes()).hexdigest()
        if per.get(name, {}).get("sha256") != sha:
            raise SpecError(f"{name} changed since the black-box score was recorded: "
                            "record it whole again")
    for name in sorted({o.mutant.module for o in killed}):
        # The arguments may name more mutants than the record has survivors (an argument
        # kept for a mutant the recorded run killed): of the argued mutants met, that many
        # may be the record's kills, so only the kills beyond them are the record's survivors.
        argued = sum(o.mutant.module == name for o in met)
        beyond = max(0, argued - per[name]["unobservable"])
        by_stage = collections.Counter(str(o.killed_by) for o in killed if o.mutant.module == name)
        count = max(0, by_stage.total() - beyond)
        for figures in (per[name], outside):
            figures["killed"] += count
            figures["survived"] -= count
            figures["unobservable"] -= count
        for stage, kills in by_stage.most_common():
            taken = min(kills, count)
            count -= taken
            if taken:
                outside["killed_by_stage"][stage] = outside["killed_by_stage"].get(stage, 0) + taken
    folded += [o.mutant.id for o in killed]
    for figures in (*per.values(), outside):
        judged = figures["mutants"] - figures["equivalent"]
        figures["score"] = round(
            1.0 if judged == 0 else (figures["killed"] + figures["timeout"]) / judged, 4)
    if killed:
        outside["date"] = time.strftime("%Y-%m-%d")
        outside["command"] = f"{outside['command']}, then python benchmarks/mutation.py {command}"
    measured.write_text(json.dumps(kept, indent=1) + "\n")


def _table(result: Score, report: dict[str, object]) -> None:
    from rich.console import Console
    from rich.table import Table

    title = "mutants of atmostonce/executor/*.py" + (
        ", judged from outside (simulation and chaos histories, the operator's starts)"
        if report["black_box"] else "")
    table = Table(title=title)
    for column in ("module", "mutants", "killed", "timeout", "survived", "unobservable",
                   "equivalent", "score"):
        table.add_column(column, justify="left" if column == "module" else "right")
    rows = [*sorted(result.modules.items()), ("all", result.total)]
    for module, t in rows:
        table.add_row(module.removeprefix("atmostonce/executor/"), str(t.mutants),
                      str(t.killed), str(t.timeout), str(t.survived), str(t.unobservable),
                      str(t.equivalent), f"{t.score:.1%}")
    console = Console()
    console.print(table)
    console.print("killed by: " + ", ".join(f"{k} {n}" for k, n in result.killed_by.most_common()))
    argued = {id(o) for o, _ in result.unobservable}
    for o in result.survivors:
        tag = " (argued unobservable)" if id(o) in argued else ""
        console.print(f"survived{tag}: {o.mutant.id} line {o.mutant.line}: {o.mutant.text}",
                      markup=False)
    for e in result.stale:
        console.print(f"stale argument (the line changed): {e.id}", markup=False)
    if result.untried:
        console.print(f"NOT TRIED: {len(result.untried)} mutants (none of the figures above "
                      "counts them; run again)", markup=False)
    console.print(f"{report['wall_seconds']} s wall, {result.seconds:.0f} s of trials")


if __name__ == "__main__":
    sys.exit(main())
