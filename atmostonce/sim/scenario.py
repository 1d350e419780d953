"""A scenario file: the user's own agent as the simulator runs it. Its tools (a ToolPolicy or
framework metadata each, or an MCP `tools/list` answer the file names), how long each runs and
how often it fails, the executor's settings, how people answer approvals, and how often
workers crash, lose their connection and the server restarts.

`load` reads and checks the whole file (and the settings given over it on the command line)
before anything runs: an unknown key or value, a malformed number, a missing file or an
invalid MCP list is a SpecError naming the file and the dotted key. What it returns is frozen.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from atmostonce.arguments import read_text
from atmostonce.check.history.services import Service
from atmostonce.sim import mcp, overrides
from atmostonce.sim.distributions import Distribution, Exponential, LogNormal, Uniform
from atmostonce.sim.tables import Table
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import (
    EffectClass,
    EffectivePolicy,
    ToolHints,
    ToolPolicy,
    resolve_policy,
)
from atmostonce.spec.protocol import ExecutorConfig

EFFECTS = tuple(e.value for e in EffectClass)
SERVICES = tuple(s.value for s in Service)
SERVICE_BY_EFFECT = {
    EffectClass.READ: Service.NONE,
    EffectClass.IDEMPOTENT_WRITE: Service.KEYED,
    EffectClass.NON_IDEMPOTENT_WRITE: Service.PLAIN,
    EffectClass.UNCLASSIFIED: Service.PLAIN,
}
"""What a tool's service does with a repeat, unless the file says: what its effect class
promises (TC-EFF-*)."""
_HINT_KEYS = (("read_only", "readOnlyHint"), ("idempotent", "idempotentHint"),
              ("destructive", "destructiveHint"))
_DEFAULTS = ExecutorConfig()
OWN_DEADLINE = Uniform(60.0, 600.0)
LATE_TIMERS = Uniform(30.0, 120.0)
"""Long enough that an answer after an approval deadline can come before its timer (D-32)."""
"""How long a deadline an ask sets is, unless the file says."""
MAX_RATE = 3600.0
"""Faults per hour, at most: one a second."""


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    policy: ToolPolicy | None
    hints: ToolHints | None
    effective: EffectivePolicy
    """What its calls get (D-1), with the agent's default effect."""
    service: Service
    """How the service it writes to treats a repeated write: the ground truth."""
    duration: Distribution
    failure_rate: float
    """The chance that a run returns a failure."""
    weight: float
    """How often the model picks it, relative to the other tools."""
    from_mcp: bool
    open_world: bool | None
    registered: bool = True
    """False: the workers run it, but no policy or hints are ever set for it (TC-APR-5)."""
    hang_rate: float = 0.0
    """The chance that a run hangs past the run timeout, so the attempt is timed out."""


@dataclass(frozen=True, slots=True)
class Agent:
    sessions: int
    """Sessions per seed."""
    arrival: float
    """Seconds within which the sessions start, uniformly."""
    turns: tuple[int, int]
    calls_per_turn: tuple[int, int]
    think: Distribution
    """The model's time between a turn's last record and its next turn."""
    reask: float
    """The chance the model asks the same tool again after a failed or unknown record."""
    default_effect: EffectClass | None
    hints_may_lower: bool = True
    """D-22: false keeps the default effect as a floor framework metadata cannot lower."""


@dataclass(frozen=True, slots=True)
class Executor:
    config: ExecutorConfig
    workers: int
    heartbeat_interval: float


@dataclass(frozen=True, slots=True)
class Approvals:
    approve: float
    reject: float
    never: float
    """Never answers: the approval deadline rejects the call."""
    answer_delay: Distribution
    own_deadline: float = 0.0
    """The chance that a call's ask sets its own approval deadline (D-32)."""
    own_deadline_seconds: Distribution = OWN_DEADLINE
    """How long such a deadline is."""


@dataclass(frozen=True, slots=True)
class Faults:
    worker_crashes_per_hour: float
    """Per worker."""
    worker_downtime: Distribution
    connection_losses_per_hour: float
    """Per worker."""
    connection_loss_duration: Distribution
    server_restarts_per_hour: float
    restarts_mid_batch: float
    """The share of server restarts that kill it inside a batch of commands (D-5)."""
    restarts_while_waiting: float = 0.0
    """The share of server restarts that wait until a call waits for approval (D-8)."""
    late_timers_per_hour: float = 0.0
    """Spells in which the server's timers fire late while it goes on handling messages."""
    late_timer_duration: Distribution = LATE_TIMERS
    """How long such a spell lasts."""


@dataclass(frozen=True, slots=True)
class ScenarioFile:
    path: str
    """The file as the user named it."""
    name: str
    tools: tuple[Tool, ...]
    agent: Agent
    executor: Executor
    approvals: Approvals
    faults: Faults
    settings: tuple[overrides.Override, ...]
    """The settings given over the file's, in order."""


def load(path: str, settings: Sequence[overrides.Override] = ()) -> ScenarioFile:
    """The scenario in the TOML file `path`, with `settings` set over it."""
    file = Path(path)
    text = read_text(file, path, "scenario file")
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise SpecError(f"{path}: not valid TOML: {error}") from None
    return parse(overrides.apply(document, settings, path), path, file.parent,
                 tuple(settings))


def parse(document: Mapping[str, object], path: str, base: Path,
          settings: tuple[overrides.Override, ...] = ()) -> ScenarioFile:
    """The scenario a parsed document describes; `base` is where relative paths start."""
    top = Table(document, "", path)
    name = top.text("name") or Path(path).stem
    listed = _mcp_tools(top, base, path)
    agent = _agent(top.table("agent"))
    executor = _executor(top.table("executor"))
    approvals = _approvals(top.table("approvals"))
    faults = _faults(top.table("faults"))
    defaults = top.table("tool_defaults")
    fallback = (defaults.distribution("duration", LogNormal(0.5, 5.0)),
                defaults.share("failure_rate", 0.02),
                defaults.number("weight", 1.0, above=True))
    defaults.done()
    tools = _tools(top, listed, fallback, agent, path)
    top.done()
    return ScenarioFile(path, name, tools, agent, executor, approvals, faults, settings)


def _mcp_tools(top: Table, base: Path, path: str) -> dict[str, mcp.McpTool]:
    given = top.text("mcp_tools")
    if given is None:
        return {}
    if not given.strip():
        raise top.fail("mcp_tools", "expected the path of a tools/list JSON file, got ''")
    shown = str(base / given) if not Path(given).is_absolute() else given
    return {t.name: t for t in mcp.read(base / given, f"{path}: mcp_tools: {shown}")}


def _agent(t: Table) -> Agent:
    default = t.choice("default_effect", EFFECTS)
    agent = Agent(t.whole("sessions", 20, high=100_000), t.seconds("arrival", 600.0, False),
                  t.span("turns", (2, 6)), t.span("calls_per_turn", (1, 2), high=64),
                  t.distribution("think_time", Exponential(5.0)), t.share("reask", 0.7),
                  EffectClass(default) if default is not None else None,
                  bool(t.flag("hints_may_lower", True)))
    if not agent.hints_may_lower and default is None:
        raise t.fail("hints_may_lower", "a floor needs a default effect; give default_effect")
    t.done()
    return agent


def _executor(t: Table) -> Executor:
    d = _DEFAULTS
    heartbeat_timeout = t.seconds("heartbeat_timeout", d.heartbeat_timeout)
    lease = t.seconds("lease", heartbeat_timeout / 2)
    interval = t.seconds("heartbeat_interval", lease / 2)
    config = ExecutorConfig(
        max_attempts=t.whole("max_attempts", d.max_attempts, high=100),
        retry_backoff=t.seconds("retry_backoff", d.retry_backoff, False),
        queue_timeout=t.seconds("queue_timeout", d.queue_timeout),
        run_timeout=t.seconds("run_timeout", d.run_timeout),
        heartbeat_timeout=heartbeat_timeout, lease=lease,
        approval_deadline=t.seconds("approval_deadline", d.approval_deadline),
        fence=bool(t.flag("fence", False)),
        cancel_records_failed=bool(t.flag("cancel_records_failed", False)))
    workers = t.whole("workers", 4, high=256)
    if lease >= heartbeat_timeout:
        raise t.fail("lease", f"the lease ({lease:g} s) must be shorter than heartbeat_timeout "
                     f"({heartbeat_timeout:g} s), so a cut-off worker stops before it is "
                     "declared lost (D-12)")
    if interval >= lease:
        raise t.fail("heartbeat_interval", f"heartbeats every {interval:g} s would let the "
                     f"lease ({lease:g} s) run out between two of them and stop every long run")
    t.done()
    return Executor(config, workers, interval)


def _approvals(t: Table) -> Approvals:
    given = [t.has(k) for k in ("approve", "reject", "never")]
    approve = t.share("approve", 0.0 if any(given) else 1.0)
    reject = t.share("reject", 0.0)
    never = t.share("never", 0.0)
    total = approve + reject + never
    if abs(total - 1.0) > 1e-9:
        raise t.fail("", f"approve + reject + never must add up to 1, got {total:g}")
    delay = t.distribution("answer_delay", LogNormal(30.0, 600.0))
    approvals = Approvals(approve, reject, never, delay, t.share("own_deadline", 0.0),
                          t.distribution("own_deadline_seconds", OWN_DEADLINE))
    t.done()
    return approvals


def _faults(t: Table) -> Faults:
    rate = "a number of faults per hour"
    faults = Faults(
        t.number("worker_crashes_per_hour", 0.0, high=MAX_RATE, unit=rate),
        t.distribution("worker_downtime", Uniform(5.0, 60.0)),
        t.number("connection_losses_per_hour", 0.0, high=MAX_RATE, unit=rate),
        t.distribution("connection_loss_duration", LogNormal(2.0, 60.0)),
        t.number("server_restarts_per_hour", 0.0, high=MAX_RATE, unit=rate),
        t.share("restarts_mid_batch", 0.0), t.share("restarts_while_waiting", 0.0),
        t.number("late_timers_per_hour", 0.0, high=MAX_RATE, unit=rate),
        t.distribution("late_timer_duration", LATE_TIMERS))
    t.done()
    return faults


def _tools(top: Table, listed: Mapping[str, mcp.McpTool],
           fallback: tuple[Distribution, float, float], agent: Agent,
           path: str) -> tuple[Tool, ...]:
    entries: dict[str, Mapping[str, object]] = {}
    for index, entry in enumerate(top.tables("tools")):
        name = entry.get("name")
        if not isinstance(name, str) or not mcp.NAME.fullmatch(name):
            raise SpecError(f"{path}: tools[{index}].name: expected 1-128 letters, digits, "
                            f"'_', '-' or '.', got {name!r}")
        if name in entries:
            raise SpecError(f"{path}: tools.{name}: the tool is given twice")
        if entry.get(overrides.CREATED) and name not in listed:
            raise SpecError(f"{path}: tools.{name}: no tool of that name in the file or its "
                            "MCP list")
        entries[name] = {k: v for k, v in entry.items() if k != overrides.CREATED}
    names = [*listed, *(n for n in entries if n not in listed)]
    if not names:
        raise top.fail("tools", "no tools: give [[tools]] entries or an mcp_tools file")
    return tuple(_tool(Table(entries.get(n, {"name": n}), f"tools.{n}", path), listed.get(n),
                       fallback, agent) for n in names)


def _tool(t: Table, listed: mcp.McpTool | None, fallback: tuple[Distribution, float, float],
          agent: Agent) -> Tool:
    name = t.text("name") or ""
    registered = bool(t.flag("registered", True))
    effect = t.choice("effect", EFFECTS)
    approval = t.flag("requires_approval", None)
    if approval is not None and effect is None:
        raise t.fail("requires_approval", "a ToolPolicy needs an effect too; give effect")
    policy = ToolPolicy(EffectClass(effect), approval) if effect is not None else None
    hints = listed.hints if listed is not None else None
    if t.has("hints"):
        table = t.table("hints")
        hints = ToolHints(*(table.flag(key, None) for key, _ in _HINT_KEYS))
        table.done()
    if not registered and (policy is not None or hints is not None):
        raise t.fail("registered", "a tool never registered has no ToolPolicy or hints; drop "
                     "effect and hints, or registered = false")
    effective = resolve_policy(policy, hints, agent.default_effect, agent.hints_may_lower)
    service = t.choice("service", SERVICES)
    duration, failure_rate, weight = fallback
    tool = Tool(name, policy, hints, effective,
                Service(service) if service is not None else SERVICE_BY_EFFECT[effective.effect],
                t.distribution("duration", duration), t.share("failure_rate", failure_rate),
                t.number("weight", weight, above=True), listed is not None,
                listed.open_world if listed is not None else None, registered,
                t.share("hang_rate", 0.0))
    t.done()
    return tool

