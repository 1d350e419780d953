"""An asyncio event loop on a thread of its own, for code that runs on the main thread.

The blocking `Client` runs its `AsyncClient` on one. The chaos harness controls processes from
its main thread (a child dies with the thread that started it, so that thread must live as long
as the run) and runs its clients and proxies on one. `drain()` is the barrier a server restart
needs: once it returns, every message that reached this process's sockets before the call has
been handled and stamped.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

DRAIN_PASSES = 3
DRAIN_PAUSE = 0.03


class LoopThread:
    """A running event loop; `run` a coroutine on it and wait, or `submit` it and go on."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()
        self._closed = False

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    @property
    def closed(self) -> bool:
        return self._closed

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run `coro` on the loop and wait for its result (TimeoutError after `timeout`)."""
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"no result within {timeout} s") from None

    def call(self, function: Callable[[], T], timeout: float | None = 10.0) -> T:
        """Call `function` on the loop's thread and return what it returned."""
        async def wrapped() -> T:
            return function()

        return self.run(wrapped(), timeout)

    def drain(self) -> None:
        """Let the loop handle everything its sockets already received."""
        async def passes() -> None:
            for _ in range(DRAIN_PASSES):
                await asyncio.sleep(DRAIN_PAUSE)

        self.run(passes(), timeout=30.0)

    def close(self) -> None:
        """Cancel what still runs on the loop, stop it and wait for its thread."""
        if self._closed:
            return
        self._closed = True

        async def cancel_all() -> None:
            current = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not current]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        if self.loop.is_running():
            with contextlib.suppress(TimeoutError, RuntimeError):
                self.run(cancel_all(), timeout=10.0)
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10.0)
        if not self._thread.is_alive():
            self.loop.close()
