"""The harness's one exception hierarchy: every error the harness raises is a `HarnessError`.

Errors about user input name the file, the line, the field path and the bad value; timeouts
say what was being waited for, what was seen last, and a hint.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path


class HarnessError(Exception):
    """Root of every error the harness raises on purpose."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with an input file: where it is, which field, what was found, what is expected."""

    file: str
    line: int | None
    column: int | None
    field: str
    message: str
    value: object = None
    hint: str | None = None

    def render(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        text = f"{where}: {self.field or '<document>'}: {self.message}"
        if self.value is not None:
            text += f" (got {self.value!r})"
        if self.hint:
            text += f"; {self.hint}"
        return text


class ValidationError(HarnessError):
    """An input file (experiment, config) is invalid; carries every problem found, not just the first."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(p.render() for p in self.problems))


class ConfigError(HarnessError):
    """A configuration value (server.properties, environment, CLI flag) is unusable."""


class BackendError(HarnessError):
    """A cluster backend could not do what was asked (start, stop, fault, teardown)."""


class TeardownError(BackendError):
    """One or more teardown steps failed; every step was still attempted."""

    def __init__(self, failures: list[tuple[str, BaseException]]) -> None:
        self.failures = list(failures)
        lines = [f"{step}: {type(exc).__name__}: {exc}" for step, exc in self.failures]
        super().__init__(f"teardown failed in {len(lines)} step(s):\n  " + "\n  ".join(lines))


class HarnessTimeout(HarnessError):
    """Waiting for something took too long. Says what, what was seen last, and a hint."""

    def __init__(self, waiting_for: str, timeout_s: float, last_seen: object = None, hint: str = "") -> None:
        self.waiting_for = waiting_for
        self.timeout_s = timeout_s
        self.last_seen = last_seen
        self.hint = hint
        text = f"timed out after {timeout_s:g}s waiting for {waiting_for}; last seen: {last_seen!r}"
        if hint:
            text += f"; hint: {hint}"
        super().__init__(text)


class ProtocolError(HarnessError):
    """A peer spoke the Kafka (or Toxiproxy) protocol wrongly, or asked for something unsupported."""



class StorageError(HarnessError):
    """The harness could not write its own record (the run's history, run.json, the run directory): a full disk, a
    quota, a read-only or failing filesystem. Says which path, why, and for a full disk how many bytes are free."""

    def __init__(self, path: object, cause: OSError, free_bytes: int | None = None, hint: str = "") -> None:
        self.path = str(path)
        self.cause = cause
        self.free_bytes = free_bytes
        self.no_space = cause.errno in (errno.ENOSPC, errno.EDQUOT)
        if self.no_space:
            free = "an unknown number of" if free_bytes is None else str(free_bytes)
            text = f"no space left on {self.path}: {free} bytes free"
        else:
            text = f"cannot write {self.path}: {cause.strerror or cause}"
        super().__init__(f"{text}; {hint}" if hint else text)

    @classmethod
    def at(cls, path: object, cause: OSError) -> StorageError:
        """The error for a failed write under `path`, with the free bytes of its filesystem measured now."""
        return cls(path, cause, free_bytes_at(path))


def free_bytes_at(path: object) -> int | None:
    """Bytes free to an unprivileged writer on the filesystem holding `path` (its nearest existing parent); None
    when that cannot be measured."""
    here = Path(str(path))
    while not here.exists() and here != here.parent:
        here = here.parent
    try:
        stats = os.statvfs(here)
    except OSError:
        return None
    return stats.f_bavail * stats.f_frsize
