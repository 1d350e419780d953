"""How loaded the machine running the tests is: every bound a test puts on wall-clock time is
multiplied by `patience()`, so a suite that shares its cores with other work still waits long
enough, and a hang still fails."""

from __future__ import annotations

import os


def patience() -> float:
    """How much longer than on an idle machine a wait may take here: 1 on an idle machine,
    more when the load average says other work shares the cores. ATMOSTONCE_TEST_PATIENCE sets
    it outright."""
    given = os.environ.get("ATMOSTONCE_TEST_PATIENCE")
    if given:
        return max(1.0, float(given))
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
