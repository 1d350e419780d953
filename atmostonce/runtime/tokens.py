"""The secrets a deployment's processes prove themselves with: a token file per deployment
(workers and clients present it to the server, and workers and readers to the effect ledger)
and an approver token file whose holder alone may approve or reject a call, since a person's
approval is the only guard on a non-idempotent write.

A token file holds one line of random text and is readable by its owner only (mode 0600); a
server or ledger creates a missing one, and refuses one that group or others may read.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from atmostonce.spec.errors import SpecError

TOKEN_BYTES = 32


def read_token(path: Path) -> str:
    """The token in the file at `path`; SpecError (one line) when it is missing, readable by
    group or others, or empty."""
    path = Path(path)
    try:
        info = path.stat()
        text = path.read_text().strip()
    except FileNotFoundError:
        raise SpecError(f"token file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as error:
        raise SpecError(f"token file {path}: cannot read it: {error}") from None
    if not stat.S_ISREG(info.st_mode):
        raise SpecError(f"token file {path} is not a regular file")
    if info.st_mode & 0o077:
        raise SpecError(f"token file {path} has mode {stat.S_IMODE(info.st_mode):04o}: group "
                        f"or others may read it; make it 0600 (chmod 600 {path})")
    if not text or any(c.isspace() for c in text):
        raise SpecError(f"token file {path} must hold one token without white space")
    return text


def check_token(path: Path) -> None:
    """Refuse, before anything is created, a token file `ensure_token` would refuse: one that
    exists but is unusable, or a missing one whose directory does not exist."""
    path = Path(path)
    if path.exists():
        read_token(path)
    elif not path.parent.is_dir():
        raise SpecError(f"token file {path}: the directory {path.parent} does not exist")


def ensure_token(path: Path) -> str:
    """The token at `path`, made first when the file is missing: random, mode 0600, written
    aside and linked into place, so nobody ever reads half a token."""
    path = Path(path)
    if not path.exists():
        if not path.parent.is_dir():
            raise SpecError(f"token file {path}: the directory {path.parent} does not exist")
        temp = path.with_name(f".{path.name}.{os.getpid()}.new")
        try:
            temp.unlink(missing_ok=True)
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_urlsafe(TOKEN_BYTES) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.link(temp, path)
        except FileExistsError:
            pass
        except OSError as error:
            raise SpecError(f"token file {path}: cannot create it: {error}") from None
        finally:
            temp.unlink(missing_ok=True)
    return read_token(path)


def matches(given: object, token: str) -> bool:
    """Whether `given` is `token`, compared in constant time."""
    return isinstance(given, str) and hmac.compare_digest(given.encode(), token.encode())


@dataclass(frozen=True)
class ServerTokens:
    """What the server accepts: the deployment's token (workers, clients) and the approver's."""

    deployment: str
    approver: str

    def __post_init__(self) -> None:
        if hmac.compare_digest(self.deployment.encode(), self.approver.encode()):
            raise SpecError("the approver token must differ from the deployment token")
