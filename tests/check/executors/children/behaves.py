"""An executor child that greets, then misbehaves on the first `handle` as its argument says:
`exit` (status 3, after a line on stderr), `hang` (reads on, answers nothing), `garbage` (a line
that is not JSON), `wrong` (a snapshot reply to an event), `bad-command` (a command of no known
type), `raise` (reports an exception of its own), `refuse-hello` (refuses the handshake).
Before the first `handle` it opens instances like a real executor."""

from __future__ import annotations

import json
import sys


def say(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    how = sys.argv[1]
    for line in sys.stdin:
        message = json.loads(line)
        op = message["op"]
        if op == "hello":
            if how == "refuse-hello":
                say({"op": "refuse", "reason": "this child speaks protocol 99"})
                return
            say({"op": "hello", "protocol": 1})
        elif op == "open":
            say({"op": "opened"})
        elif op == "close":
            continue
        elif how == "exit":
            print("the child gives up here", file=sys.stderr)
            sys.exit(3)
        elif how == "hang":
            continue
        elif how == "garbage":
            sys.stdout.write("this is not a protocol line\n")
            sys.stdout.flush()
        elif how == "wrong":
            say({"op": "snapshot", "snapshot": {}})
        elif how == "bad-command":
            say({"op": "commands", "commands": [{"type": "LaunchMissiles"}]})
        else:
            say({"op": "raised", "error": "KeyError", "message": "'calls'", "where": "x.py:1"})


if __name__ == "__main__":
    main()
