"""A scenario file as `simulate --scenario` reads it: MCP annotations and hints become effect
classes as D-11 and D-1 say, a ToolPolicy wins over both, the settings a file leaves out
follow the ones it gives, and anything malformed is a SpecError naming the file and the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from atmostonce.check.history.services import Service
from atmostonce.executor import reference
from atmostonce.sim import mcp, overrides
from atmostonce.sim.distributions import Exponential, Fixed, LogNormal, Uniform
from atmostonce.sim.scenario import ScenarioFile, load
from atmostonce.sim.scenario_run import simulate
from atmostonce.spec.errors import SpecError
from atmostonce.spec.policy import EffectClass, PolicySource, ToolHints

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MCP_SCENARIO = str(EXAMPLES / "mcp_server.toml")
SUPPORT = str(EXAMPLES / "support_agent.toml")
_E = EffectClass


def tools(spec: ScenarioFile) -> dict[str, tuple[EffectClass, PolicySource, bool]]:
    return {t.name: (t.effective.effect, t.effective.source, t.effective.requires_approval)
            for t in spec.tools}


def write(tmp_path: Path, text: str, name: str = "s.toml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_mcp_annotations_map_to_the_effect_classes_d11_gives_them() -> None:
    """D-11: readOnlyHint true is a read; else idempotentHint true an idempotent_write; else
    readOnlyHint false a non_idempotent_write; destructiveHint and openWorldHint alone say
    nothing, so the tool is unclassified (D-1's fallback) and waits for approval (TC-APR-2)."""
    meta = PolicySource.FRAMEWORK_METADATA
    assert tools(load(MCP_SCENARIO)) == {
        "search_issues": (_E.READ, meta, False),
        "get_issue": (_E.READ, meta, False),
        "fetch_url": (_E.READ, meta, False),
        "create_issue": (_E.NON_IDEMPOTENT_WRITE, meta, True),
        "add_comment": (_E.NON_IDEMPOTENT_WRITE, meta, True),
        "set_labels": (_E.IDEMPOTENT_WRITE, meta, False),
        "close_issue": (_E.IDEMPOTENT_WRITE, meta, False),
        "delete_branch": (_E.IDEMPOTENT_WRITE, meta, False),
        "trigger_deploy": (_E.NON_IDEMPOTENT_WRITE, meta, True),
        "notify_channel": (_E.UNCLASSIFIED, PolicySource.FALLBACK, True),
        "run_query": (_E.READ, PolicySource.TOOL_POLICY, False),
    }


def test_every_mcp_annotation_of_the_example_is_read() -> None:
    listed = {t.name: t for t in mcp.read(EXAMPLES / "mcp_tools.json", "mcp_tools.json")}
    assert listed["delete_branch"].hints == ToolHints(False, True, True)
    assert listed["fetch_url"].open_world is True
    assert listed["run_query"].hints is None
    assert listed["notify_channel"].hints == ToolHints()


def test_a_tool_policy_wins_over_mcp_annotations_and_the_session_default(
        tmp_path: Path) -> None:
    """D-1: the ToolPolicy, then framework metadata, then the session's default effect."""
    spec = load(MCP_SCENARIO, [("tools.search_issues.effect", '"non_idempotent_write"'),
                               ("agent.default_effect", "idempotent_write")])
    found = tools(spec)
    assert found["search_issues"] == (_E.NON_IDEMPOTENT_WRITE, PolicySource.TOOL_POLICY, True)
    assert found["notify_channel"] == (_E.IDEMPOTENT_WRITE, PolicySource.SESSION_DEFAULT, False)
    assert found["get_issue"][0] is _E.READ


def test_hints_in_the_file_are_framework_metadata(tmp_path: Path) -> None:
    spec = load(write(tmp_path, '[[tools]]\nname = "t"\nhints = { idempotent = true }\n'))
    (tool,) = spec.tools
    assert tool.hints == ToolHints(idempotent=True)
    assert tool.effective.effect is _E.IDEMPOTENT_WRITE
    assert tool.effective.source is PolicySource.FRAMEWORK_METADATA


def test_a_tools_service_keeps_what_its_effect_class_promises_unless_the_file_says(
        tmp_path: Path) -> None:
    spec = load(SUPPORT)
    service = {t.name: t.service for t in spec.tools}
    assert service["lookup_order"] is Service.NONE
    assert service["refund"] is Service.KEYED
    assert service["send_email"] is Service.PLAIN
    assert service["add_ticket_note"] is Service.PLAIN
    given = load(SUPPORT, [("tools.refund.service", "plain")])
    assert {t.name: t.service for t in given.tools}["refund"] is Service.PLAIN


def test_the_lease_and_the_heartbeat_interval_follow_the_heartbeat_timeout(
        tmp_path: Path) -> None:
    """D-12 wants the lease shorter than the heartbeat timeout; left out, it is half of it,
    and the workers beat twice per lease."""
    spec = load(write(tmp_path, '[executor]\nheartbeat_timeout = 12\n[[tools]]\nname = "t"\n'))
    assert spec.executor.config.heartbeat_timeout == 12.0
    assert spec.executor.config.lease == 6.0
    assert spec.executor.heartbeat_interval == 3.0
    assert spec.executor.config.max_attempts == 3


def test_distributions_take_each_written_form(tmp_path: Path) -> None:
    spec = load(write(tmp_path, """
[approvals]
answer_delay = 7
[faults]
worker_downtime = { min = 1, max = 2 }
connection_loss_duration = { mean = 3 }
[[tools]]
name = "t"
duration = { median = 0.5, p99 = 4.0 }
"""))
    assert spec.approvals.answer_delay == Fixed(7.0)
    assert spec.faults.worker_downtime == Uniform(1.0, 2.0)
    assert spec.faults.connection_loss_duration == Exponential(3.0)
    assert spec.tools[0].duration == LogNormal(0.5, 4.0)


def test_a_log_normal_has_the_median_and_p99_it_was_given() -> None:
    d = LogNormal(0.4, 3.0)
    assert d.at(0.5) == pytest.approx(0.4)
    assert d.at(0.99) == pytest.approx(3.0)
    assert Exponential(2.0).at(1 - 1 / 2.718281828459045) == pytest.approx(2.0)
    assert Uniform(1.0, 3.0).at(0.25) == 1.5


def test_a_sweep_value_is_read_as_toml_reads_it() -> None:
    assert overrides.value("4") == 4
    assert overrides.value("0.5") == 0.5
    assert overrides.value("true") is True
    assert overrides.value("read") == "read"
    assert overrides.value("{ median = 1, p99 = 2 }") == {"median": 1, "p99": 2}
    assert overrides.parse_sweep("executor.heartbeat_timeout=2, 4,8") == (
        "executor.heartbeat_timeout", ("2", "4", "8"))


BAD = [
    ('[executor]\nheartbeat_timout = 5\n[[tools]]\nname = "t"\n',
     "executor.heartbeat_timout: unknown key (known here: approval_deadline, "
     "cancel_records_failed, fence"),
    ('bogus = 1\n[[tools]]\nname = "t"\n', ": bogus: unknown key"),
    ('[[tools]]\nname = "t"\neffect = "writes"\n',
     "tools.t.effect: unknown value 'writes' (known: read, idempotent_write"),
    ('[[tools]]\nname = "t"\nfailure_rate = "often"\n',
     "tools.t.failure_rate: expected a probability, got 'often'"),
    ('[[tools]]\nname = "t"\nfailure_rate = 1.5\n',
     "tools.t.failure_rate: expected a probability between 0 and 1, got 1.5"),
    ('[executor]\nrun_timeout = nan\n[[tools]]\nname = "t"\n',
     "executor.run_timeout: expected a finite number, got nan"),
    ('[executor]\nmax_attempts = 2.5\n[[tools]]\nname = "t"\n',
     "executor.max_attempts: expected a whole number, got 2.5"),
    ('[executor]\nheartbeat_timeout = 4\nlease = 4\n[[tools]]\nname = "t"\n',
     "executor.lease: the lease (4 s) must be shorter than heartbeat_timeout (4 s)"),
    ('[executor]\nheartbeat_interval = 3\nlease = 2\n[[tools]]\nname = "t"\n',
     "executor.heartbeat_interval: heartbeats every 3 s would let the lease (2 s) run out"),
    ('[approvals]\napprove = 0.5\nreject = 0.2\n[[tools]]\nname = "t"\n',
     "approvals: approve + reject + never must add up to 1, got 0.7"),
    ('[[tools]]\nname = "t"\nduration = { median = 2, p90 = 5 }\n',
     "tools.t.duration: expected a number of seconds, {median, p99}, {mean} or {min, max}, "
     "got the keys median, p90"),
    ('[[tools]]\nname = "t"\nduration = { median = 2, p99 = 1 }\n',
     "tools.t.duration: p99 (1) must be above the median (2)"),
    ('[[tools]]\nname = "t"\nrequires_approval = true\n',
     "tools.t.requires_approval: a ToolPolicy needs an effect too"),
    ('[[tools]]\nname = "t"\n[[tools]]\nname = "t"\n', "tools.t: the tool is given twice"),
    ('[[tools]]\nname = "a b"\n', "tools[0].name: expected 1-128 letters"),
    ("[agent]\nsessions = 3\n", ": tools: no tools"),
    ('[agent]\nturns = [5, 2]\n[[tools]]\nname = "t"\n',
     "agent.turns: expected 1 <= min <= max <= 1,000, got [5, 2]"),
    ('mcp_tools = "nowhere.json"\n', "nowhere.json: no such file"),
    ("[executor\n", "not valid TOML: "),
    ('[[tools]]\nname = "t"\nregistered = false\neffect = "read"\n',
     "tools.t.registered: a tool never registered has no ToolPolicy or hints"),
    ('[agent]\nhints_may_lower = false\n[[tools]]\nname = "t"\n',
     "agent.hints_may_lower: a floor needs a default effect"),
    ('[approvals]\nown_deadline = 2\n[[tools]]\nname = "t"\n',
     "approvals.own_deadline: expected a probability between 0 and 1, got 2"),
    ('[faults]\nrestarts_while_waiting = -1\n[[tools]]\nname = "t"\n',
     "faults.restarts_while_waiting: expected a probability between 0 and 1, got -1"),
]


@pytest.mark.parametrize(("text", "says"), BAD, ids=[says for _, says in BAD])
def test_a_malformed_scenario_names_the_file_and_the_key(tmp_path: Path, text: str,
                                                         says: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(SpecError) as raised:
        load(path)
    message = str(raised.value)
    assert message.startswith(path)
    assert says in message
    assert "\n" not in message


@pytest.mark.parametrize(("document", "says"), [
    ("{", "not valid JSON: Expecting property name"),
    ("[]", "expected a JSON object (a tools/list result), got list"),
    ('{"result": {"tools": {}}}', "result.tools: expected an array of tools, got dict"),
    ('{"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no"}}',
     "the file holds a JSON-RPC error"),
    ('{"tools": [{"name": "x", "annotations": {"readOnlyHint": "yes"}}]}',
     'tools[0].annotations.readOnlyHint: expected true or false, got "yes"'),
    ('{"tools": [{"name": "x"}, {"name": "x"}]}', "tools[1].name: tool 'x' is listed twice"),
    ('{"tools": [{"title": "no name"}]}', "tools[0].name: expected 1-128 letters"),
])
def test_an_invalid_mcp_list_names_the_file_and_the_place(tmp_path: Path, document: str,
                                                          says: str) -> None:
    write(tmp_path, document, "tools.json")
    path = write(tmp_path, 'mcp_tools = "tools.json"\n')
    with pytest.raises(SpecError) as raised:
        load(path)
    assert str(raised.value).startswith(f"{path}: mcp_tools: {tmp_path / 'tools.json'}: ")
    assert says in str(raised.value)


def test_an_override_of_a_tool_nobody_lists_is_refused() -> None:
    with pytest.raises(SpecError, match=r"tools\.nope: no tool of that name"):
        load(MCP_SCENARIO, [("tools.nope.failure_rate", "0.5")])
    with pytest.raises(SpecError, match=r"executor\.heartbeat_timeout: expected a number"):
        load(SUPPORT, [("executor.heartbeat_timeout", "soon")])


def test_the_mcp_list_may_be_the_whole_response_or_its_result() -> None:
    document = json.loads((EXAMPLES / "mcp_tools.json").read_text())
    whole = mcp.parse(document, "mcp_tools.json")
    assert len(whole) == 11
    assert mcp.parse(document["result"], "mcp_tools.json") == whole


@pytest.mark.parametrize(("settings", "says"), [
    ([("agent.sessions", "100000"), ("agent.turns", "[1, 1000]")],
     "agent: up to 300,000,000 calls per seed"),
    ([("faults.worker_crashes_per_hour", "3600"), ("agent.turns", "[1, 1000]")],
     "faults: these rates draw about"),
])
def test_a_seed_too_large_to_hold_is_refused_before_it_runs(
        settings: list[tuple[str, str]], says: str) -> None:
    spec = load(SUPPORT, settings)
    with pytest.raises(SpecError, match=says):
        simulate(spec, range(1), reference)


def test_a_fault_rate_is_at_most_one_a_second() -> None:
    with pytest.raises(SpecError, match="per hour between 0 and 3600, got 3601"):
        load(SUPPORT, [("faults.server_restarts_per_hour", "3601")])


BACK_OFFICE = str(EXAMPLES / "back_office.toml")


def test_the_back_office_example_reaches_every_shape_and_passes() -> None:
    spec = load(BACK_OFFICE)
    assert tools(spec)["list_vendors"] == (_E.IDEMPOTENT_WRITE, PolicySource.SESSION_DEFAULT,
                                           False)
    assert tools(spec)["pay_invoice"][:2] == (_E.IDEMPOTENT_WRITE, PolicySource.TOOL_POLICY)
    assert not next(t for t in spec.tools if t.name == "legacy_export").registered
    result = simulate(spec, range(4), reference)
    assert result.ok
    assert all(n > 0 for n in result.campaign.totals.shapes), result.campaign.totals.shapes
