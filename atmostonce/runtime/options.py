"""The command-line options the runtime's processes share, in one table each, so that
`processes` builds exactly the argument lists that `commands` parses.

The server's options are the executor's `ExecutorConfig` fields; the worker's tool options
tune the demo tools (`tools.behaviours`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from atmostonce import arguments
from atmostonce.spec.protocol import ExecutorConfig

_DEFAULT = ExecutorConfig()

CONFIG_FLAGS: tuple[tuple[str, str], ...] = (
    ("--max-attempts", "attempts of a CallTool call (read, idempotent_write)"),
    ("--retry-backoff", "seconds before another attempt of a CallTool call"),
    ("--queue-timeout", "seconds an attempt may wait for a worker before it ends as never "
                        "reached"),
    ("--run-timeout", "seconds an attempt may stay out before it is cancelled"),
    ("--heartbeat-timeout", "seconds of silence after which a worker is declared lost"),
    ("--lease", "seconds a cut-off worker keeps running its tools; shorter than the heartbeat "
                "timeout (D-12)"),
    ("--approval-deadline", "seconds a call waits for a person before it is rejected"),
)


_TYPES: Mapping[str, Callable[[str], float]] = {
    "--max-attempts": arguments.count,
    "--retry-backoff": arguments.seconds,
}
"""Each flag's value type; the others are time-outs, a lease and a deadline, above 0 seconds:
a zero one would end every attempt, worker or approval the moment it began."""


def _attribute(flag: str) -> str:
    return flag.removeprefix("--").replace("-", "_")


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("executor options")
    for flag, text in CONFIG_FLAGS:
        name = _attribute(flag)
        default = getattr(_DEFAULT, name)
        kind = _TYPES.get(flag, arguments.positive)
        group.add_argument(flag, type=kind,
                           default=default, metavar="N" if name == "max_attempts" else "S",
                           help=f"{text} (default {default:g})")
    group.add_argument("--fence", action="store_true",
                       help="a new call of a single-attempt tool waits while a run of it the "
                       "executor gave up on may still go on (D-6)")
    group.add_argument("--cancel-records-failed", action="store_true",
                       help="D-4's other choice: a single-attempt call cancelled or timed out "
                       "after it reached a worker records failed, 'may still be running' "
                       "(finding F-7; settle it with reconcile --include-cancelled), not "
                       "outcome_unknown")


def config_from_args(args: argparse.Namespace) -> ExecutorConfig:
    values = {_attribute(flag): getattr(args, _attribute(flag)) for flag, _ in CONFIG_FLAGS}
    return ExecutorConfig(fence=bool(args.fence),
                          cancel_records_failed=bool(args.cancel_records_failed), **values)


def config_argv(config: ExecutorConfig) -> list[str]:
    """The server's command-line options for `config`."""
    argv: list[str] = []
    for flag, _ in CONFIG_FLAGS:
        argv += [flag, repr(getattr(config, _attribute(flag)))]
    if config.fence:
        argv.append("--fence")
    if config.cancel_records_failed:
        argv.append("--cancel-records-failed")
    return argv


@dataclass(frozen=True)
class ToolOptions:
    """How a worker's demo tools behave, per tool: seconds a run takes, seconds into the run
    when it writes, tools that report a failure, tools that stop on a cancel request."""

    duration: Mapping[str, float] = field(default_factory=dict)
    write_at: Mapping[str, float] = field(default_factory=dict)
    fail: Sequence[str] = ()
    stop_on_cancel: Sequence[str] = ()

    def argv(self) -> list[str]:
        out: list[str] = []
        for tool, seconds in self.duration.items():
            out += ["--duration", f"{tool}={seconds!r}"]
        for tool, seconds in self.write_at.items():
            out += ["--write-at", f"{tool}={seconds!r}"]
        for tool in self.fail:
            out += ["--fail", tool]
        for tool in self.stop_on_cancel:
            out += ["--stop-on-cancel", tool]
        return out


def add_tool_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("demo tool behaviour (tools: lookup_order, refund, "
                                      "cancel_order, notify_customer)")
    group.add_argument("--duration", action="append", default=[], metavar="TOOL=S",
                       help="seconds a run of TOOL takes (default 0); a call's 'duration' "
                       "argument overrides it")
    group.add_argument("--write-at", action="append", default=[], metavar="TOOL=S",
                       help="seconds into a run when TOOL writes to its service (default 0)")
    group.add_argument("--fail", action="append", default=[], metavar="TOOL",
                       help="TOOL reports a failure instead of returning")
    group.add_argument("--stop-on-cancel", action="append", default=[], metavar="TOOL",
                       help="TOOL stops before its write when asked to cancel")
