"""Bad input, for every command: exit status 2, exactly one line on stderr starting with
`atmostonce: error: `, no traceback, nothing on stdout, the files it names unchanged, and all of
it decided before any long work starts (a case still running after its time-out started some).

Each case runs the real command as its own process (`python -m atmostonce ...`) in a directory
of its own holding a few files to misuse: `afile` (text), `adir/` (empty), `full/` (holding a
file), `notdb` (text, not SQLite) and `foreign.db` (another application's SQLite database), and
a good `token` file for the worker. The cases run in parallel threads before the first
assertion, so the table costs seconds, not minutes.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from atmostonce import arguments, cli
from atmostonce.spec.errors import SpecError
from tests.load import patience

T = TypeVar("T")
TIMEOUT = 60.0
"""Seconds a case may take; bad input is refused in well under a second of work, so a case
that reaches this started something long."""
THREADS = 4
PREFIX = "atmostonce: error: "
WORKER = ("--server", "127.0.0.1:1", "--ledger", "127.0.0.1:1", "--token-file", "token")
RECONCILE = ("--session", "s1", "--server", "127.0.0.1:1", "--token-file", "token")


@dataclass(frozen=True)
class Case:
    """One bad command line, a piece of the one line it must print, the fixture files it
    names (which must keep their bytes) and paths it must not create."""

    argv: tuple[str, ...]
    says: str
    keeps: tuple[str, ...] = ()
    creates_nothing_at: tuple[str, ...] = ()

    @property
    def command(self) -> str:
        return self.argv[0]

    def __str__(self) -> str:
        return " ".join(repr(a) if not a or " " in a else a for a in self.argv)


def case(*argv: str, says: str, keeps: tuple[str, ...] = (),
         absent: tuple[str, ...] = ()) -> Case:
    return Case(argv, says, keeps, absent)


CHECK_BOUNDS = ("--workers", "--calls", "--reasks", "--max-attempts", "--crashes",
                "--partitions", "--restarts", "--timeouts", "--faults", "--policy-changes",
                "--reconcile-crashes")

CASES: tuple[Case, ...] = (
    case("verify", "--layers", "", says="--layers '' is an empty list (known: spec, model"),
    case("verify", "--layers", " ", says="is an empty list"),
    case("verify", "--layers", "spec,,model", says="has an empty item (known: spec"),
    case("verify", "--layers", "spec,bogus", says="unknown layer 'bogus' (known: spec"),
    case("verify", "--executor", "", says="malformed executor path ''"),
    case("verify", "--engine", "nope:x", says="cannot import engine module 'nope'"),
    case("verify", "--engine", "atmostonce.engines.reference:engine", "--executor",
         "atmostonce.executor:reference", says="give --executor or --engine, not both"),
    case("verify", "--engine", "atmostonce.engines.reference:engine", "--layers",
         "conformance,simulation", says="none of them applies to a black-box engine"),
    case("verify", "--executor", "no_such_module:f", says="cannot import executor module"),
    case("verify", "--executor", "atmostonce.executor:nothing", says="has no attribute"),
    case("verify", "--executor", "builtins:repr", says="does not satisfy"),
    case("verify", "--bogus", says="unrecognized arguments: --bogus"),
    case("verify", "--processes", "0", says="--processes: expected at least 1, got '0'"),
    case("verify", "--ray", "", says="--ray expects an address"),
    case("verify", "--engine", "atmostonce.engines.reference:engine", "--processes", "2",
         says="a black-box engine does not run; give them with --executor"),

    *(case("check", flag, "-1", says=f"{flag} must be between") for flag in CHECK_BOUNDS),
    case("check", "--workers", "99999999999999999999", says="--workers must be between 1 and 3"),
    case("check", "--calls", "two", says="expected a whole number, got 'two'"),
    case("check", "--faults", "", says="expected a whole number, got ''"),
    case("check", "--crashes", "1.5", says="expected a whole number"),
    case("check", "--max-states", "0", says="--max-states: expected at least 1, got '0'"),
    case("check", "--max-states", "-3", says="expected at least 1, got '-3'"),
    case("check", "--max-states", "nan", says="expected a whole number"),
    case("check", "--processes", "0", says="--processes: expected at least 1, got '0'"),
    case("check", "--processes", "two", says="--processes: expected a whole number"),
    case("check", "--visited", "some", says="--visited: invalid choice: 'some'"),
    case("check", "--tools", "", says="--tools '' is an empty list (known: read,"),
    case("check", "--tools", ",", says="--tools ',' has an empty item"),
    case("check", "--tools", "read,,unclassified", says="has an empty item"),
    case("check", "--tools", "read,writes", says="unknown effect class 'writes'"),
    case("check", "--tools", "read,read", says="names a tool twice"),
    case("check", "--mutant", "", says="unknown model mutant ''"),
    case("check", "--mutant", "nope", says="unknown model mutant 'nope'"),
    case("check", "--ledger", "bogus", says="invalid choice: 'bogus'"),
    case("check", "--out", "adir", says="adir is a directory, not a file"),
    case("check", "--out", "nodir/traces.json", says="the directory nodir does not exist",
         absent=("nodir",)),
    case("check", "--out", "afile/traces.json", says="the directory afile is not a directory",
         keeps=("afile",)),
    case("check", "--out", "", says="expected a path, got ''"),

    case("mutants", "extra", says="unrecognized arguments: extra"),
    case("mutants", "--bogus", says="unrecognized arguments: --bogus"),

    case("diagrams", "--out", "afile", says="afile is a file, not a directory", keeps=("afile",)),
    case("diagrams", "--out", "afile/sub", says="afile is a file, not a directory",
         keeps=("afile",)),
    case("diagrams", "--out", "", says="expected a path, got ''"),
    case("diagrams", "extra", says="unrecognized arguments: extra"),

    case("clauses", "extra", says="'extra' is no clause, decision, finding or property id"),
    case("clauses", "--json=yes", says="ignored explicit argument"),

    case("prove", "--per-condition-timeout", "0", says="expected a positive number, got '0'"),
    case("prove", "--per-condition-timeout", "-1", says="expected a positive number"),
    case("prove", "--per-condition-timeout", "nan", says="expected a finite number"),
    case("prove", "--per-condition-timeout", "inf", says="expected a finite number"),
    case("prove", "--per-condition-timeout", "soon", says="expected a number, got 'soon'"),

    case("simulate", "--seeds", "99999999999999999999", says="expected at most 1,000,000"),
    case("simulate", "--seeds", "10000000000", says="expected at most 1,000,000"),
    case("simulate", "--seeds", "1000001", says="expected at most 1,000,000"),
    case("simulate", "--seeds", "0", says="expected at least 1, got '0'"),
    case("simulate", "--seeds", "-1", says="expected at least 1"),
    case("simulate", "--seeds", "", says="expected a whole number, got ''"),
    case("simulate", "--first-seed", "-1", says="expected a seed >= 0"),
    case("simulate", "--first-seed", "x", says="expected a whole number"),
    case("simulate", "--profile", "bogus", says="unknown fault profile 'bogus'"),
    case("simulate", "--profile", "", says="unknown fault profile ''"),
    case("simulate", "--processes", "0", says="--processes: expected at least 1, got '0'"),
    case("simulate", "--processes", "two", says="expected a whole number, got 'two'"),
    case("simulate", "--ray", "", says="--ray expects an address such as ray://host:10001"),
    case("simulate", "--ray", " ", says="got an empty one"),
    case("simulate", "--processes", "2", "--ray", "auto",
         says="give --processes only with --ray local"),
    case("simulate", "--scenario", "nofile.toml", "--processes", "2",
         says="--processes and --ray fan out a profile's campaign"),
    case("simulate", "--executor", "no-colon", says="malformed executor path"),
    case("simulate", "--executor", "atmostonce.nowhere:f", says="cannot import executor"),
    case("simulate", "--executor", "builtins:repr", says="does not satisfy"),

    case("replay", says="replay needs a SEED to rerun, or --trace FILE"),
    case("replay", "-1", says="expected a seed >= 0"),
    case("replay", "x", says="expected a whole number, got 'x'"),
    case("replay", "1", "--faults", "", says="got an empty list"),
    case("replay", "1", "--faults", " ", says="got an empty list"),
    case("replay", "1", "--faults", "0,,1", says="got a list with an empty item"),
    case("replay", "1", "--faults", "-1", says="fault indexes are >= 0"),
    case("replay", "1", "--faults", "a", says="expected fault indexes such as 0,3,5"),
    case("replay", "1", "--faults", "99", says="fault index 99 is out of range"),
    case("replay", "1", "--profile", "bogus", says="unknown fault profile 'bogus'"),
    case("replay", "1", "--executor", "nowhere:f", says="cannot import executor module"),

    case("demo", "extra", says="unrecognized arguments: extra"),
    case("demo", "--bogus", says="unrecognized arguments: --bogus"),

    case("serve", says="the following arguments are required: --journal"),
    case("serve", "--journal", "", says="expected a path, got ''"),
    case("serve", "--journal", "adir", says="adir is a directory, not a file"),
    case("serve", "--journal", "nodir/journal.db", says="the directory nodir does not exist",
         absent=("nodir",)),
    case("serve", "--journal", "afile/journal.db", says="afile is not a directory",
         keeps=("afile",)),
    case("serve", "--journal", "notdb", says="not an SQLite database", keeps=("notdb",),
         absent=("notdb.token", "notdb.approver-token")),
    case("serve", "--journal", "j.db", "--token-file", "opentoken", says="has mode 0644",
         keeps=("opentoken",), absent=("j.db", "j.db.approver-token")),
    case("serve", "--journal", "j.db", "--approver-token-file", "nodir/t",
         says="token file nodir/t: the directory nodir does not exist",
         absent=("j.db", "j.db.token")),
    case("serve", "--journal", "foreign.db", says="so not an atmostonce journal",
         keeps=("foreign.db",)),
    case("serve", "--journal", "j.db", "--port", "99999", says="port 99999 is outside 0-65535",
         absent=("j.db",)),
    case("serve", "--journal", "j.db", "--port", "x", says="port 'x' is not a whole number",
         absent=("j.db",)),
    case("serve", "--journal", "j.db", "--max-attempts", "0", says="expected at least 1",
         absent=("j.db",)),
    case("serve", "--journal", "j.db", "--retry-backoff", "-1", says="expected seconds >= 0",
         absent=("j.db",)),
    case("serve", "--journal", "j.db", "--retry-backoff", "nan", says="expected a finite",
         absent=("j.db",)),
    *(case("serve", "--journal", "j.db", flag, "0", says=f"{flag}: expected a positive number",
           absent=("j.db",))
      for flag in ("--queue-timeout", "--run-timeout", "--heartbeat-timeout", "--lease",
                   "--approval-deadline")),
    case("serve", "--journal", "j.db", "--run-timeout", "inf", says="expected a finite number",
         absent=("j.db",)),
    case("serve", "--journal", "j.db", "--lease", "10", "--heartbeat-timeout", "5",
         says="lease (10.0) must be shorter", absent=("j.db",)),
    case("serve", "--journal", "j.db", "--executor", "atmostonce.executor.mutants:nope",
         says="has no attribute 'nope'", absent=("j.db",)),

    case("worker", says="the following arguments are required: --server, --ledger"),
    case("worker", *WORKER, "--fail", "nosuchtool",
         says="--fail: unknown tool 'nosuchtool' (known: lookup_order, refund"),
    case("worker", *WORKER, "--fail", "", says="--fail: unknown tool ''"),
    case("worker", *WORKER, "--stop-on-cancel", "nosuchtool",
         says="--stop-on-cancel: unknown tool 'nosuchtool' (known: lookup_order"),
    case("worker", *WORKER, "--write-at", "refund=-1",
         says="--write-at refund must be a number of seconds >= 0"),
    case("worker", *WORKER, "--write-at", "refund=nan", says="--write-at refund must be"),
    case("worker", *WORKER, "--duration", "refund=soon",
         says="--duration refund must be a number of seconds >= 0, got 'soon'"),
    case("worker", *WORKER, "--duration", "refund", says="--duration wants TOOL=SECONDS"),
    case("worker", *WORKER, "--duration", "nosuch=1", says="--duration: unknown tool 'nosuch'"),
    case("worker", *WORKER, "--slots", "0", says="--slots: expected at least 1"),
    case("worker", "--server", "127.0.0.1:1", "--ledger", "127.0.0.1:1", "--token-file",
         "opentoken", says="token file opentoken has mode 0644"),
    case("worker", "--server", "127.0.0.1:1", "--ledger", "127.0.0.1:1", "--token-file",
         "nosuchtoken", says="token file nosuchtoken does not exist"),
    case("worker", *WORKER, "--give-up-after", "0", says="--give-up-after: expected a positive"),
    case("worker", *WORKER, "--slots", "99999999999999999999", says="expected at most 256"),
    case("worker", *WORKER, "--slots", "x", says="expected a whole number, got 'x'"),
    case("worker", *WORKER, "--heartbeat-interval", "0", says="expected a positive number"),
    case("worker", *WORKER, "--heartbeat-interval", "nan", says="expected a finite number"),
    case("worker", *WORKER, "--heartbeat-interval", "inf", says="expected a finite number"),
    case("worker", *WORKER, "--name", "", says="worker name '' must be non-empty"),
    case("worker", *WORKER, "--name", "a b", says="without white space"),
    case("worker", "--server", "nohost", "--ledger", "127.0.0.1:1", "--token-file", "token",
         says="--server: address 'nohost' must look like HOST:PORT"),
    case("worker", "--server", "127.0.0.1:0", "--ledger", "127.0.0.1:1", "--token-file", "token",
         says="--server 127.0.0.1:0: port 0 only means 'any free port' when listening"),
    case("worker", "--server", "127.0.0.1:1", "--ledger", "127.0.0.1:99999", "--token-file",
         "token", says="--ledger: port 99999 is outside 0-65535"),

    case("ledger", says="the following arguments are required: --db"),
    case("ledger", "--db", "", says="expected a path, got ''"),
    case("ledger", "--db", "adir", says="adir is a directory, not a file"),
    case("ledger", "--db", "nodir/ledger.db", says="the directory nodir does not exist",
         absent=("nodir",)),
    case("ledger", "--db", "foreign.db", says="not an atmostonce ledger", keeps=("foreign.db",)),
    case("ledger", "--db", "notdb", says="notdb", keeps=("notdb",), absent=("notdb.token",)),
    case("ledger", "--db", "l.db", "--token-file", "opentoken", says="has mode 0644",
         keeps=("opentoken",), absent=("l.db",)),
    case("ledger", "--db", "l.db", "--keyed", "nosuchtool",
         says="--keyed: unknown tool 'nosuchtool' (the ledger serves the demo tools: "
         "lookup_order, refund", absent=("l.db",)),
    case("ledger", "--db", "l.db", "--plain", "nosuchtool", says="--plain: unknown tool",
         absent=("l.db",)),
    case("ledger", "--db", "l.db", "--keyed", "refund", "--plain", "refund",
         says="tool 'refund' is given both --keyed and --plain", absent=("l.db",)),
    case("ledger", "--db", "l.db", "--port", "x", says="port 'x' is not a whole number",
         absent=("l.db",)),
    case("ledger", "--db", "l.db", "--port", "70000", says="port 70000 is outside 0-65535",
         absent=("l.db",)),

    case("chaos", "--nemesis", "", says="--nemesis '' is an empty list (known: kill, pause"),
    case("chaos", "--nemesis", " ", says="--nemesis ' ' is an empty list"),
    case("chaos", "--nemesis", "kill,,pause", says="has an empty item (known: kill"),
    case("chaos", "--nemesis", "kill,flood", says="unknown nemesis 'flood' (known: kill"),
    case("chaos", "--cuts", "", says="--cuts '' is an empty list (known: hold, drop)"),
    case("chaos", "--cuts", "hold,,drop", says="has an empty item (known: hold, drop)"),
    case("chaos", "--cuts", "snip", says="unknown cut 'snip' (known: hold, drop)"),
    case("chaos", "--duration", "0", says="expected a positive number"),
    case("chaos", "--duration", "nan", says="expected a finite number"),
    case("chaos", "--duration", "1e300", says="--duration must be more than 0 and at most"),
    case("chaos", "--workers", "0", says="--workers must be between 1 and 16"),
    case("chaos", "--workers", "17", says="--workers must be between 1 and 16"),
    case("chaos", "--pace", "0", says="expected a positive number"),
    case("chaos", "--pace", "100", says="--pace must be more than 0 and at most 20"),
    case("chaos", "--seed", "-1", says="expected a seed >= 0"),
    case("chaos", "--workdir", "afile", says="afile is a file, not a directory",
         keeps=("afile",)),
    case("chaos", "--workdir", "afile/sub", says="afile is a file, not a directory",
         keeps=("afile",)),
    case("chaos", "--workdir", "", says="expected a path, got ''"),
    case("chaos", "--workdir", "full", says="must be an empty directory",
         keeps=("full/left.txt",)),
    case("chaos", "--engine", "", says="malformed engine path ''"),
    case("chaos", "--engine", "no_such_module:engine", says="cannot import engine module"),
    case("chaos", "--engine", "atmostonce.engines.reference:nothing",
         says="has no attribute 'nothing'"),
    case("chaos", "--executor", "atmostonce.executor.mutants:nope", says="has no attribute 'nope'"),

    case("reconcile", says="the following arguments are required: --session"),
    case("reconcile", "--session", "s1", says="no address: pass --server HOST:PORT"),
    case("reconcile", "--session", "", "--server", "127.0.0.1:1", says="session id '' is empty"),
    case("reconcile", "--session", "a/b", "--server", "127.0.0.1:1", says="contains '/'"),
    case("reconcile", "--session", "a b", "--server", "127.0.0.1:1", says="white space"),
    case("reconcile", "--session", "s1", "--server", "", says="no address: pass --server"),
    case("reconcile", "--session", "s1", "--server", "nowhere",
         says="--server: address 'nowhere' must look like HOST:PORT"),
    case("reconcile", "--session", "s1", "--server", "127.0.0.1:0",
         says="--server 127.0.0.1:0: port 0 only means 'any free port'"),
    case("reconcile", *RECONCILE, says="no address: pass --ledger (or --check)"),
    case("reconcile", "--session", "s1", "--server", "127.0.0.1:1",
         says="no token file: pass --token-file PATH or set $ATMOSTONCE_TOKEN_FILE"),
    case("reconcile", "--session", "s1", "--server", "127.0.0.1:1", "--token-file",
         "opentoken", says="has mode 0644", keeps=("opentoken",)),
    case("reconcile", *RECONCILE, "--ledger", "127.0.0.1:0",
         says="--ledger 127.0.0.1:0: port 0 only means"),
    case("reconcile", *RECONCILE, "--check", "", says="malformed check path ''"),
    case("reconcile", *RECONCILE, "--check", "no_such_module:check",
         says="cannot import check module 'no_such_module'"),
    case("reconcile", *RECONCILE, "--check", "os:sep", says="check 'os:sep' is not callable"),
    case("reconcile", *RECONCILE, "--check", "os:getcwd",
         says="the check getcwd() cannot be called with (key, tool arguments)"),
    case("reconcile", *RECONCILE, "--ledger", "127.0.0.1:1", "--source", " ",
         says="--source must name who the note comes from"),
)


def commands() -> set[str]:
    """Every subcommand the `atmostonce` parser has."""
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def digests(root: Path) -> dict[str, str]:
    """Every file under `root`, by relative path, with the sha256 of its bytes."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def furnish(root: Path) -> None:
    """The files a case may misuse (see the module docstring)."""
    (root / "afile").write_text("a plain text file\n")
    (root / "adir").mkdir()
    (root / "full").mkdir()
    (root / "full" / "left.txt").write_text("left over from an earlier run\n")
    (root / "notdb").write_text("not an SQLite database, just text\n" * 50)
    with sqlite3.connect(root / "foreign.db") as db:
        db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT)")
        db.execute("INSERT INTO orders (status) VALUES ('shipped')")
    db.close()
    (root / "token").write_text("a-deployment-token\n")
    (root / "token").chmod(0o600)
    (root / "opentoken").write_text("a-token-others-may-read\n")
    (root / "opentoken").chmod(0o644)


@dataclass(frozen=True)
class Outcome:
    code: int | None
    """The exit status; None when the case was still running at its time-out."""
    stdout: str
    stderr: str
    before: dict[str, str]
    after: dict[str, str]
    root: Path
    problem: str = ""
    """Why the case could not be run at all, for its own failure rather than every case's."""


def run_case(item: Case, root: Path) -> Outcome:
    """Run one case as its own process group in `root`; a case that outlives its time-out is
    killed with every process it started."""
    furnish(root)
    before = digests(root)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATMOSTONCE_")}
    process = subprocess.Popen([sys.executable, "-m", "atmostonce", *item.argv], cwd=root,
                               env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = process.communicate(timeout=TIMEOUT * patience())
        code: int | None = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        code = None
    return Outcome(code, out, err, before, digests(root), root)


def run_or_say_why(item: Case, root: Path) -> Outcome:
    try:
        return run_case(item, root)
    except Exception as error:
        return Outcome(None, "", "", {}, {}, root, f"{type(error).__name__}: {error}")


@pytest.fixture(scope="module")
def outcomes(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
             ) -> dict[Case, Outcome]:
    """The outcome of every selected case, all run in parallel before the first is judged."""
    name = test_bad_input_is_one_line_and_exit_2.__name__
    selected = [item.callspec.params["item"] for item in request.session.items
                if getattr(item, "originalname", "") == name and hasattr(item, "callspec")]

    base = tmp_path_factory.mktemp("bad-input")
    roots = [base / f"{index:03d}-{item.command}" for index, item in enumerate(selected)]
    for root in roots:
        root.mkdir()
    with ThreadPoolExecutor(THREADS) as pool:
        return dict(zip(selected, pool.map(run_or_say_why, selected, roots), strict=True))


@pytest.mark.parametrize("item", CASES, ids=str)
def test_bad_input_is_one_line_and_exit_2(item: Case, outcomes: dict[Case, Outcome]) -> None:
    """The case exits 2 with one `atmostonce: error:` line naming the problem, no traceback,
    no output, and leaves the files it names as they were."""
    got = outcomes[item]
    assert not got.problem, got.problem
    assert got.code is not None, f"still running after {TIMEOUT:g} s: bad input started work"
    assert "Traceback" not in got.stdout + got.stderr, got.stderr
    assert got.code == 2, got.stdout + got.stderr
    lines = got.stderr.splitlines()
    assert len(lines) == 1, got.stderr
    assert got.stderr.endswith("\n")
    assert lines[0].startswith(PREFIX), lines[0]
    assert item.says in lines[0]
    assert got.stdout == ""
    for name in item.keeps:
        assert got.after.get(name) == got.before[name], f"{name} changed"
    for name in item.creates_nothing_at:
        assert not (got.root / name).exists(), f"{name} was created"


def test_every_command_has_bad_input_cases() -> None:
    """A command the parser has and the table lacks (or the other way round) fails here, so a
    new command comes with its cases."""
    counts = {name: sum(1 for c in CASES if c.command == name) for name in commands()}
    assert not [name for name, n in counts.items() if n == 0]
    assert {c.command for c in CASES} <= set(counts)


def test_the_cases_are_distinct() -> None:
    """Each case is a different command line, so none is judged twice under one id."""
    assert len({c.argv for c in CASES}) == len(CASES)


# -- every numeric flag, given any text --------------------------------------------------------

def attempt(step: Callable[[], T]) -> tuple[T | None, str | None]:
    """The step's result, or the message of the SpecError it raised."""
    try:
        return step(), None
    except SpecError as error:
        return None, str(error)


REQUIRED: dict[str, tuple[str, ...]] = {
    "serve": ("--journal", "j.db"),
    "worker": WORKER,
    "ledger": ("--db", "l.db"),
    "reconcile": ("--session", "s1"),
}
"""Each command's required arguments, so a flag's value is the only thing judged."""


def _accepted(kind: object, value: object) -> bool:
    """Whether `value` is what the value type `kind` may return."""
    if kind is arguments.whole:
        return isinstance(value, int)
    if kind is arguments.count:
        return isinstance(value, int) and value >= 1
    if kind is arguments.seed:
        return isinstance(value, int) and value >= 0
    if isinstance(kind, arguments.CountUpTo):
        return isinstance(value, int) and 1 <= value <= kind.maximum
    if kind is arguments.positive:
        return isinstance(value, float) and math.isfinite(value) and value > 0
    if kind is arguments.seconds:
        return isinstance(value, float) and math.isfinite(value) and value >= 0
    raise AssertionError(f"no rule for the value type {kind!r}")


NUMERIC = (arguments.whole, arguments.count, arguments.seed, arguments.positive,
           arguments.seconds)


def numeric_flags() -> Iterator[tuple[str, argparse.Action]]:
    """Every numeric argument of every command: (command, its argparse action)."""
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        for action in command._actions:
            if action.type in NUMERIC or isinstance(action.type, arguments.CountUpTo):
                yield name, action


FLAGS = sorted(numeric_flags(), key=lambda pair: (pair[0], pair[1].dest))
PARSER = cli.build_parser()

numbers = st.one_of(
    st.text(max_size=30),
    st.integers().map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["", " ", "nan", "-nan", "inf", "-inf", "1e999", "-0", "0x10", "1_000",
                     " 3 ", "1e-400", "99999999999999999999", "٣"]),
)


@pytest.mark.parametrize(("command", "action"), FLAGS,
                         ids=[f"{c} {a.option_strings[0] if a.option_strings else a.dest}"
                              for c, a in FLAGS])
@given(text=numbers)
@example(text="--")  # argparse drops a lone `--` value, so the flag's type never sees it
def test_a_numeric_flag_takes_a_valid_number_or_names_the_flag(
        command: str, action: argparse.Action, text: str) -> None:
    """Any text given to a numeric argument is either a value its type allows or bad input
    naming the argument, never another exception."""
    if action.option_strings:
        flag = action.option_strings[0]
        argv = [command, *REQUIRED.get(command, ()), f"{flag}={text}"]
        named = f"argument {flag}"
    else:
        argv = [command, "--", text]
        named = f"argument {action.metavar or action.dest}"
    parsed, refusal = attempt(lambda: PARSER.parse_args(argv))
    if refusal is not None:
        assert named in refusal
    else:
        assert _accepted(action.type, getattr(parsed, action.dest))


def test_a_double_dash_given_as_a_flags_value_names_the_flag() -> None:
    """`--flag=--` is judged as the value `--`; Python 3.11's argparse would otherwise drop
    it and store an empty list where a number belongs."""
    _, refusal = attempt(lambda: PARSER.parse_args(["check", "--partitions=--"]))
    assert refusal is not None
    assert "argument --partitions: expected a whole number, got '--'" in refusal


@given(text=st.text(alphabet=st.sampled_from("ab, \t"), max_size=12))
def test_a_list_of_names_is_known_names_or_names_the_flag(text: str) -> None:
    """A comma-separated list is one or more known names, each once, or bad input that names
    the flag and the known values; an empty list or item never passes as 'all' or 'none'."""
    chosen, refusal = attempt(lambda: arguments.names(text, "--kinds", "kind", ("a", "b")))
    if refusal is not None:
        assert refusal.startswith("--kinds")
        assert "(known: a, b)" in refusal
    else:
        assert chosen
        assert set(chosen) <= {"a", "b"}
        assert len(set(chosen)) == len(chosen)
        assert all(part.strip() for part in text.split(","))


# -- scenario files (`simulate --scenario`, `replay --scenario`) ---------------------------------

GOOD_SCENARIO = '[agent]\nsessions = 2\n[[tools]]\nname = "lookup"\neffect = "read"\n'
SCENARIO_FILES = {
    "good.toml": GOOD_SCENARIO,
    "syntax.toml": "[executor\nworkers = 2\n",
    "unknown_key.toml": '[executor]\nheartbeat_timout = 5\n[[tools]]\nname = "t"\n',
    "unknown_effect.toml": '[[tools]]\nname = "t"\neffect = "writes"\n',
    "bad_number.toml": '[executor]\nrun_timeout = "soon"\n[[tools]]\nname = "t"\n',
    "no_mcp.toml": 'mcp_tools = "nowhere.json"\n',
    "broken_mcp.toml": 'mcp_tools = "broken.json"\n',
    "broken.json": '{"tools": [',
}
SCENARIO_CASES: tuple[Case, ...] = (
    case("simulate", "--scenario", "nofile.toml", says="nofile.toml: no such scenario file"),
    case("simulate", "--scenario", "adir", says="adir: is a directory, not a scenario file"),
    case("simulate", "--scenario", "syntax.toml", says="syntax.toml: not valid TOML: ",
         keeps=("syntax.toml",)),
    case("simulate", "--scenario", "unknown_key.toml",
         says="unknown_key.toml: executor.heartbeat_timout: unknown key (known here: "),
    case("simulate", "--scenario", "unknown_effect.toml",
         says="unknown_effect.toml: tools.t.effect: unknown value 'writes' (known: read, "),
    case("simulate", "--scenario", "bad_number.toml",
         says="bad_number.toml: executor.run_timeout: expected a number of seconds, got 'soon'"),
    case("simulate", "--scenario", "no_mcp.toml", says="no_mcp.toml: mcp_tools: nowhere.json: "
         "no such file"),
    case("simulate", "--scenario", "broken_mcp.toml", says="broken_mcp.toml: mcp_tools: "
         "broken.json: not valid JSON: ", keeps=("broken.json",)),
    case("simulate", "--scenario", "good.toml", "--profile", "crashy",
         says="give --profile or --scenario, not both", keeps=("good.toml",)),
    case("simulate", "--sweep", "executor.heartbeat_timeout=4,8",
         says="--sweep needs --scenario FILE.toml"),
    case("simulate", "--set", "executor.workers=2", says="--set needs --scenario FILE.toml"),
    case("simulate", "--scenario", "good.toml", "--sweep", "executor.heartbeat_timeout=",
         says="--sweep wants NAME=V1,V2,..."),
    case("simulate", "--scenario", "good.toml", "--sweep", "executor.heartbeat_timeout=4,,8",
         says="no empty value"),
    case("simulate", "--scenario", "good.toml", "--sweep", "executor.heartbeat_timeout=4,4",
         says="a value is given twice"),
    case("simulate", "--scenario", "good.toml", "--sweep", "executor.heartbeat_timeout=4,soon",
         says="--sweep executor.heartbeat_timeout=soon: good.toml: executor.heartbeat_timeout: "
         "expected a number of seconds, got 'soon'", keeps=("good.toml",)),
    case("simulate", "--scenario", "good.toml", "--sweep", "executor.bogus=1,2",
         says="good.toml: executor.bogus: unknown key"),
    case("simulate", "--scenario", "good.toml", "--sweep", "tools.nope.failure_rate=0.1,0.2",
         says="good.toml: tools.nope: no tool of that name"),
    case("simulate", "--scenario", "good.toml", "--sweep", "agent.sessions=1", "--sweep",
         "agent.sessions=2", says="--sweep is given more than once"),
    case("simulate", "--scenario", "good.toml", "--set", "executor.lease=20",
         says="good.toml: executor.lease: the lease (20 s) must be shorter than "
         "heartbeat_timeout (10 s)"),
    case("simulate", "--scenario", "good.toml", "--set", "novalue",
         says="--set wants NAME=VALUE"),
    case("simulate", "--scenario", "good.toml", "--set", "agent.sessions=3", "--sweep",
         "agent.sessions=1,2", says="--set agent.sessions and --sweep agent.sessions"),
    case("simulate", "--scenario", "good.toml", "--executor", "nowhere:f",
         says="cannot import executor module"),
    case("simulate", "--scenario", "good.toml", "--set", "agent.sessions=100000", "--set",
         "agent.turns=[1, 1000]", says="good.toml: agent: up to 100,000,000 calls per seed"),
    case("replay", "1", "--scenario", "nofile.toml", says="nofile.toml: no such scenario file"),
    case("replay", "1", "--scenario", "good.toml", "--faults", "999",
         says="fault index 999 is out of range: seed 1 of good.toml has"),
    case("replay", "1", "--scenario", "good.toml", "--profile", "chaos",
         says="give --profile or --scenario, not both"),
)


@pytest.fixture(scope="module")
def scenario_outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[Case, Outcome]:
    """The outcome of every scenario case, run in parallel, each in a directory holding the
    fixture files and the scenario files."""
    base = tmp_path_factory.mktemp("bad-scenarios")
    roots = [base / f"{index:03d}-{item.command}" for index, item in enumerate(SCENARIO_CASES)]
    for root in roots:
        root.mkdir()
        for name, text in SCENARIO_FILES.items():
            (root / name).write_text(text)
    with ThreadPoolExecutor(THREADS) as pool:
        return dict(zip(SCENARIO_CASES, pool.map(run_or_say_why, SCENARIO_CASES, roots),
                        strict=True))


@pytest.mark.parametrize("item", SCENARIO_CASES, ids=str)
def test_a_bad_scenario_is_one_line_and_exit_2(item: Case,
                                               scenario_outcomes: dict[Case, Outcome]) -> None:
    """Judged exactly as every other case: exit 2, one line naming the file and the key."""
    test_bad_input_is_one_line_and_exit_2(item, scenario_outcomes)


def test_the_scenario_cases_are_distinct_and_the_good_file_runs(tmp_path: Path) -> None:
    assert len({c.argv for c in SCENARIO_CASES}) == len(SCENARIO_CASES)
    (tmp_path / "good.toml").write_text(GOOD_SCENARIO)
    done = subprocess.run([sys.executable, "-m", "atmostonce", "simulate", "--scenario",
                           "good.toml", "--seeds", "1"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=TIMEOUT * patience(), check=False)
    assert done.returncode == 0, done.stdout + done.stderr
