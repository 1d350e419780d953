"""How a campaign runs its pieces: in this process, on N processes of this machine, or on
Ray (a local one started for the run, or a cluster at an address). `--processes N` and
`--ray ADDRESS|local` parse into one frozen `Way`; bad combinations are bad input."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass

from atmostonce import arguments
from atmostonce.spec.errors import SpecError

LOCAL = "local"
"""`--ray local`: start a Ray on this machine for the run and shut it down after."""


@dataclass(frozen=True)
class Way:
    """Serial (the default), `processes` worker processes, or Ray at `ray` ("local" or a
    cluster address); with a local Ray, `processes` is the CPUs it may use (None: all)."""

    processes: int | None = None
    ray: str | None = None

    @property
    def serial(self) -> bool:
        return self.ray is None and (self.processes is None or self.processes == 1)

    @property
    def workers(self) -> int:
        """How many pieces run at once, as far as this machine knows (a cluster may run more)."""
        if self.processes is not None:
            return self.processes
        return 1 if self.ray is None else os.cpu_count() or 1

    def describe(self) -> str:
        if self.ray == LOCAL:
            return f"a local Ray ({self.workers} CPUs)"
        if self.ray is not None:
            return f"the Ray cluster at {self.ray}"
        return "1 process" if self.serial else f"{self.processes} processes"


SERIAL = Way()


def way(processes: int | None = None, ray: str | None = None) -> Way:
    """The way `--processes` and `--ray` name; SpecError for a process count below 1, an empty
    Ray address, or a process count with a cluster address (the cluster sets its own CPUs)."""
    if processes is not None and processes < 1:
        raise SpecError(f"--processes expects at least 1, got {processes}")
    if ray is not None:
        ray = ray.strip()
        if not ray:
            raise SpecError("--ray expects an address such as ray://host:10001, auto, or "
                            "'local', got an empty one")
        if processes is not None and ray != LOCAL:
            raise SpecError(f"--processes {processes} with --ray {ray}: a Ray cluster runs as "
                            "many pieces at once as it has CPUs; give --processes only with "
                            "--ray local")
    return Way(processes, ray)


def add_arguments(parser: argparse.ArgumentParser, what: str = "the seeds") -> None:
    """`--processes N` and `--ray ADDRESS|local`, explained in the command's --help; `what`
    names the work they fan out."""
    parser.add_argument("--processes", type=arguments.count, metavar="N",
                        help=f"run {what} on N worker processes of this machine, in chunks; "
                        "the results (statistics, violations, failures and their shrunk "
                        "schedules) are those of a run without it, only the timings differ")
    parser.add_argument("--ray", metavar="ADDRESS|local",
                        help=f"run {what} as Ray tasks: 'local' starts a Ray on this machine "
                        "for the run (with --processes N it uses N CPUs), an address (auto, "
                        "ray://host:10001) joins a running cluster whose workers have "
                        "atmostonce installed; the results are those of a run without it "
                        "(needs the ray extra: pip install 'atmostonce[ray]')")


def chosen(args: argparse.Namespace) -> Way:
    """The way the parsed `--processes` and `--ray` name."""
    return way(args.processes, args.ray)
