"""The real Toxiproxy server, built with `go install` into the per-user cache, and how to find one.

Owns `<cache>/toxiproxy-<version>/` (the binary `toxiproxy-server` and the `installed.json` manifest):
`install_toxiproxy` builds `github.com/Shopify/toxiproxy/v2/cmd/server@v<version>` with `GOBIN` in a
temporary directory beside it, with the link flags Toxiproxy's own releases use (so the server reports
its version), writes the manifest there and renames the directory into place: a crash leaves only a
`.toxiproxy-*` temporary directory, never a half install that looks finished. Concurrent installers
(two pytest workers) take turns on a lock file; the second finds the first one's install.
`find_toxiproxy` answers which binary the process backend should run: `TOXIPROXY_BIN`, else an
installed one, else None (the embedded server).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from harness.errors import ConfigError
from harness.install.cache import cache_root, locked, read_manifest, write_manifest

MODULE = "github.com/Shopify/toxiproxy/v2"
PACKAGE = MODULE + "/cmd/server"
DEFAULT_VERSION = "2.12.0"
BINARY = "toxiproxy-server"
_BUILT = "server"  # go install names the binary after the package directory
GO_TIMEOUT_S = 1200.0  # a cold build on a loaded 2-core machine takes about a minute


def install_dir(version: str, cache: Path | None = None, environ: Mapping[str, str] | None = None) -> Path:
    return (cache if cache is not None else cache_root(environ)) / f"toxiproxy-{version}"


def installed_toxiproxy(version: str = DEFAULT_VERSION, *, cache: Path | None = None,
                        environ: Mapping[str, str] | None = None) -> Path | None:
    """The cached binary of `version` when its install is finished (manifest and binary present), else None."""
    directory = install_dir(version, cache, environ)
    manifest = read_manifest(directory)
    binary = directory / BINARY
    if manifest is None or manifest.get("version") != version or not binary.is_file():
        return None
    return binary


def install_toxiproxy(version: str = DEFAULT_VERSION, *, cache: Path | None = None,
                      environ: Mapping[str, str] | None = None,
                      progress: Callable[[str], None] | None = None) -> Path:
    """Install Toxiproxy `version` (cached: returns at once when already installed); returns the binary."""
    env = dict(os.environ if environ is None else environ)
    root = cache if cache is not None else cache_root(env)
    say = progress or (lambda _msg: None)
    found = installed_toxiproxy(version, cache=root)
    if found is not None:
        return found
    target = f"{PACKAGE}@v{version}"
    tried = f"installing Toxiproxy {version} with `go install {target}`"
    go = shutil.which("go", path=env.get("PATH", os.defpath))
    if go is None:
        raise ConfigError(f"{tried}: no `go` on PATH ({env.get('PATH', '')!r}); install Go "
                          "(https://go.dev/dl/, or apt-get install golang-go), or set TOXIPROXY_BIN to a "
                          "toxiproxy-server 2.x binary")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{tried}: cannot create the cache directory {root}: {exc}") from exc
    with locked(root / f".toxiproxy-{version}.lock"):
        found = installed_toxiproxy(version, cache=root)
        if found is not None:
            return found
        final = install_dir(version, root)
        work = Path(tempfile.mkdtemp(prefix=f".toxiproxy-{version}-", dir=root))
        try:
            return _build(go, version, env, work, final, say, tried)
        except OSError as exc:
            raise ConfigError(f"{tried}: {exc}") from exc
        finally:
            if work.exists():
                shutil.rmtree(work, ignore_errors=True)


def _build(go: str, version: str, env: dict[str, str], work: Path, final: Path, say: Callable[[str], None],
           tried: str) -> Path:
    """go install into `work`, then publish `work` as `final` (a rename) with its manifest written first."""
    target = f"{PACKAGE}@v{version}"
    env["GOBIN"] = str(work / "gobin")
    # -X ...Version as Toxiproxy's releases (.goreleaser.yml) link it: else the server reports "git"
    argv = [go, "install", f"-ldflags=-s -w -X {MODULE}.Version={version}", target]
    say(f"toxiproxy {version}: running {shlex.join(argv[1:])} (downloads and compiles: about a minute cold)")
    started = time.monotonic()
    _run(argv, env, work, tried)
    built = work / "gobin" / _BUILT
    if not built.is_file():
        raise ConfigError(f"{tried}: go install succeeded but left no {built}")
    binary = work / BINARY
    built.replace(binary)
    shutil.rmtree(work / "gobin")
    say(f"toxiproxy {version}: built in {time.monotonic() - started:.1f}s")
    write_manifest(work, {
        "name": "toxiproxy", "version": version, "source": f"go install {target}",
        "go": _run([go, "env", "GOVERSION"], env, work, tried).strip(), "binary": BINARY, "sha256": _sha256(binary),
    })
    work.chmod(0o755)  # mkdtemp made it 0700; an install is readable by all, like go install's own
    if final.exists():  # no manifest (checked under the lock): left by an interrupted or older installer
        shutil.rmtree(final)
    work.rename(final)
    say(f"toxiproxy {version}: installed {final / BINARY}")
    return final / BINARY


def find_toxiproxy(environ: Mapping[str, str] | None = None, *, cache: Path | None = None) -> Path | None:
    """`TOXIPROXY_BIN` when set, else the newest installed Toxiproxy in the cache, else None."""
    env = os.environ if environ is None else environ
    chosen = env.get("TOXIPROXY_BIN")
    if chosen:
        path = Path(chosen).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise ConfigError(f"TOXIPROXY_BIN={chosen!r} is not an executable file; point it at a "
                              "toxiproxy-server 2.x binary, or unset it")
        return path
    root = cache if cache is not None else cache_root(env)
    versions = [d.name.removeprefix("toxiproxy-") for d in root.glob("toxiproxy-*") if d.is_dir()]
    for version in sorted(versions, key=_version_key, reverse=True):
        found = installed_toxiproxy(version, cache=root)
        if found is not None:
            return found
    return None


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else -1 for part in version.split("."))


def _run(argv: list[str], env: Mapping[str, str], cwd: Path, tried: str) -> str:
    """Run `argv` (its own process group, killed whole on timeout); its stdout, or ConfigError with stderr's tail."""
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
    except OSError as exc:
        raise ConfigError(f"{tried}: cannot run {argv[0]}: {exc}") from exc
    try:
        out, err = proc.communicate(timeout=GO_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise ConfigError(f"{tried}: `{shlex.join(argv)}` did not finish in {GO_TIMEOUT_S:g}s; its stderr ends "
                          f"with:\n{_tail(err)}") from None
    if proc.returncode != 0:
        raise ConfigError(f"{tried}: `{shlex.join(argv)}` exited with {proc.returncode}; its stderr ends with:\n"
                          f"{_tail(err)}")
    return out


def _tail(text: str, lines: int = 20) -> str:
    kept = text.strip().splitlines()[-lines:]
    return "\n".join(kept) if kept else "(nothing on stderr)"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
