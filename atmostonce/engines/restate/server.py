"""The Restate server's process: found on disk (never downloaded), started on loopback ports of
its own with a base directory in the run's directory, killed with SIGKILL and started again on
the same ports and directory; and its admin API: registering a deployment, SQL queries.

The binary comes from npm's `@restatedev/restate-server` (its platform package
`@restatedev/restate-server-linux-x64` carries it). It is looked for at `$RESTATE_SERVER_BIN`,
then under the npm prefix `.restate/` of the checkout (`npm install --prefix .restate
@restatedev/restate-server@1.7.12`, what `.ci/run` does), then on the PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from atmostonce.runtime.processes import Managed, start
from atmostonce.spec.errors import SpecError

ENV = "RESTATE_SERVER_BIN"
PREFIX = Path(__file__).resolve().parents[3] / ".restate"
"""The npm prefix `.ci/run` installs the server into."""
REGISTER_WITHIN = 60.0
"""Seconds a deployment's registration is asked again while the server answers 5xx."""
PACKAGED = "node_modules/@restatedev/restate-server-linux-x64/bin/restate-server"
INSTALL = "npm install --prefix .restate @restatedev/restate-server@1.7.12"
READY = 60.0
"""Seconds the server may take to answer on its admin port."""
PARTITIONS = 2
"""Partitions of the server's log: few, since one machine runs it beside everything else."""


def binary() -> Path:
    """Where the Restate server binary is; SpecError (one line) when it is nowhere."""
    given = os.environ.get(ENV)
    if given:
        if not Path(given).is_file():
            raise SpecError(f"${ENV} names {given}, which is no file")
        return Path(given)
    packaged = PREFIX / PACKAGED
    if packaged.is_file():
        return packaged
    found = shutil.which("restate-server")
    if found:
        return Path(found)
    raise SpecError(f"the Restate engine needs the restate-server binary: set ${ENV}, or run "
                    f"`{INSTALL}` in the checkout")


def free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


class RestateServer:
    """One Restate server on `host` (see the module docstring)."""

    def __init__(self, workdir: Path, host: str, inactivity_timeout: float) -> None:
        self.workdir = workdir
        self.host = host
        self.base = workdir / "restate"
        self.inactivity_timeout = inactivity_timeout
        self.ingress_port = free_port(host)
        self.admin_port = free_port(host)
        self.node_port = free_port(host)
        self.process: Managed | None = None
        self._starts = 0
        self.binary = binary()

    @property
    def ingress(self) -> str:
        return f"http://{self.host}:{self.ingress_port}"

    @property
    def admin(self) -> str:
        return f"http://{self.host}:{self.admin_port}"

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.alive

    def pids(self) -> list[int]:
        return [] if self.process is None else [self.process.pid]

    def start(self) -> None:
        """Start the server unless it runs; return once its admin API answers."""
        if self.alive:
            return
        self._starts += 1
        config = self.workdir / "restate-server.toml"
        config.write_text(
            'disable-telemetry = true\n'
            'log-format = "compact"\n'
            'log-disable-ansi-codes = true\n'
            f'default-num-partitions = {PARTITIONS}\n'
            f'[ingress]\nbind-address = "{self.host}:{self.ingress_port}"\n'
            f'[admin]\nbind-address = "{self.host}:{self.admin_port}"\n'
            f'[worker.invoker]\ninactivity-timeout = "{self.inactivity_timeout:g}s"\n')
        tmp = self.workdir / "restate-tmp"
        tmp.mkdir(exist_ok=True)
        argv = [sys.executable, "-m", "atmostonce.engines.restate.exec_child", str(tmp),
                str(self.binary),
                "--config-file", str(config), "--bind-ip", self.host, "--advertised-host",
                self.host, "--base-dir", str(self.base), "--listen-mode", "tcp",
                "--bind-port", str(self.node_port), "--no-logo"]
        log = self.workdir / f"restate-server-{self._starts}.log"
        self.process = start("restate-server", argv, log)
        self._wait_ready(log)

    def _wait_ready(self, log: Path) -> None:
        deadline = time.monotonic() + READY
        while time.monotonic() < deadline:
            if not self.alive:
                raise SpecError(f"the Restate server stopped at its start (log {log})")
            try:
                self.query("SELECT 1")
                return
            except (OSError, SpecError):
                time.sleep(0.1)
        raise SpecError(f"the Restate server did not answer within {READY:g} s (log {log})")

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    def register(self, uri: str) -> None:
        """Register the deployment at `uri` (forced: the same uri again replaces it).

        A 5xx answer is asked again until `REGISTER_WITHIN` has passed: under load the server
        answers 500 while its schema registry is still busy ("retries for operation on key
        'schema_registry' exhausted"), which goes away on its own.
        """
        deadline = time.monotonic() + REGISTER_WITHIN
        while True:
            try:
                self._post("/deployments", {"uri": uri, "force": True}, timeout=30.0)
                return
            except _Busy as busy:
                if time.monotonic() >= deadline:
                    raise SpecError(str(busy)) from None
                time.sleep(0.5)

    def query(self, sql: str, timeout: float = 10.0) -> list[dict[str, Any]]:
        """The rows of one SQL query of the admin API."""
        answer = self._post("/query", {"query": sql}, timeout)
        rows = answer.get("rows", [])
        return rows if isinstance(rows, list) else []

    def _post(self, path: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
        request = urllib.request.Request(
            self.admin + path, json.dumps(body).encode(), method="POST",
            headers={"content-type": "application/json", "accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                answer = json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            refused = (f"the Restate admin API refused {path}: {error.code} "
                       f"{error.read()[:300]!r}")
            raise (_Busy(refused) if error.code >= 500 else SpecError(refused)) from None
        return answer if isinstance(answer, dict) else {}


class _Busy(SpecError):
    """The admin API answered 5xx: the server could not do it now."""
