"""The Toxiproxy install cache without building anything: reuse, lookup order, and every error path.

Nothing here runs the real `go`. The tests named `..._with_a_fake_go_...` put a shell script called `go`
first on PATH, and only to make an install fail in a given way. The real `go install` is exercised by the
`real_toxiproxy_bin` fixture (tests/integration/toxiproxy/test_real_toxiproxy_install.py).
"""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.install import toxiproxy as tp
from harness.install.cache import write_manifest
from harness.install.toxiproxy import DEFAULT_VERSION, find_toxiproxy, install_toxiproxy, installed_toxiproxy

TARGET = f"github.com/Shopify/toxiproxy/v2/cmd/server@v{DEFAULT_VERSION}"


def _fake_install(cache: Path, version: str, *, manifest: bool = True) -> Path:
    """What a finished install looks like on disk (a stand-in binary, and the manifest unless told not to)."""
    directory = cache / f"toxiproxy-{version}"
    directory.mkdir(parents=True)
    binary = directory / "toxiproxy-server"
    binary.write_text("#!/bin/sh\necho toxiproxy-server version " + version + "\n")
    binary.chmod(0o755)
    if manifest:
        write_manifest(directory, {"name": "toxiproxy", "version": version, "source": f"go install {TARGET}"})
    return binary


def _script(directory: Path, name: str, body: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _leftovers(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir() if p.is_dir()) if cache.exists() else []


def test_an_existing_install_is_returned_at_once_without_go_on_path(tmp_path: Path) -> None:
    binary = _fake_install(tmp_path, DEFAULT_VERSION)
    messages: list[str] = []
    assert install_toxiproxy(DEFAULT_VERSION, cache=tmp_path, environ={"PATH": ""}, progress=messages.append) == binary
    assert messages == []  # nothing was run, so nothing to report


def test_a_directory_without_its_manifest_or_binary_is_not_an_install(tmp_path: Path) -> None:
    _fake_install(tmp_path, DEFAULT_VERSION, manifest=False)
    assert installed_toxiproxy(DEFAULT_VERSION, cache=tmp_path) is None
    (_fake_install(tmp_path, "2.6.0")).unlink()
    assert installed_toxiproxy("2.6.0", cache=tmp_path) is None
    assert find_toxiproxy({}, cache=tmp_path) is None


def test_a_manifest_for_another_version_is_not_reused(tmp_path: Path) -> None:
    binary = _fake_install(tmp_path, DEFAULT_VERSION)
    write_manifest(binary.parent, {"version": "2.4.0"})
    assert installed_toxiproxy(DEFAULT_VERSION, cache=tmp_path) is None


def test_the_cache_root_comes_from_the_environment(tmp_path: Path) -> None:
    binary = _fake_install(tmp_path / "kc", DEFAULT_VERSION)
    assert find_toxiproxy({"KAFKA_CHAOS_CACHE": str(tmp_path / "kc")}) == binary
    under_xdg = _fake_install(tmp_path / "xdg" / "kafka-chaos", DEFAULT_VERSION)
    assert installed_toxiproxy(environ={"XDG_CACHE_HOME": str(tmp_path / "xdg")}) == under_xdg


def test_toxiproxy_bin_wins_over_an_installed_one(tmp_path: Path) -> None:
    _fake_install(tmp_path / "cache", DEFAULT_VERSION)
    chosen = _script(tmp_path / "bin", "my-toxiproxy", "exit 0\n")
    assert find_toxiproxy({"TOXIPROXY_BIN": str(chosen)}, cache=tmp_path / "cache") == chosen


def test_toxiproxy_bin_that_is_not_an_executable_file_is_a_config_error(tmp_path: Path) -> None:
    plain = tmp_path / "toxiproxy-server"
    plain.write_text("not executable")
    for value in (str(plain), str(tmp_path), str(tmp_path / "missing")):
        with pytest.raises(ConfigError, match=r"TOXIPROXY_BIN=.* is not an executable file"):
            find_toxiproxy({"TOXIPROXY_BIN": value}, cache=tmp_path)


def test_find_picks_the_newest_installed_version_by_number_not_by_text(tmp_path: Path) -> None:
    _fake_install(tmp_path, "2.5.0")
    newest = _fake_install(tmp_path, "2.12.0")
    _fake_install(tmp_path, "2.13.0", manifest=False)  # unfinished: ignored
    assert find_toxiproxy({}, cache=tmp_path) == newest


def test_no_go_on_path_says_what_was_tried_and_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        install_toxiproxy(cache=tmp_path / "cache", environ={"PATH": str(tmp_path / "empty")})
    text = str(caught.value)
    assert f"go install {TARGET}" in text and "no `go` on PATH" in text and str(tmp_path / "empty") in text
    assert "TOXIPROXY_BIN" in text
    assert _leftovers(tmp_path / "cache") == []


def test_install_failing_with_a_fake_go_reports_its_stderr_tail_and_leaves_no_install(tmp_path: Path) -> None:
    record = tmp_path / "argv.json"
    _script(tmp_path / "bin", "go", f"""\
printf '%s\\n' "$@" > {tmp_path}/argv.txt
echo "{{\\"gobin\\": \\"$GOBIN\\", \\"cwd\\": \\"$PWD\\"}}" > {record}
for i in $(seq 1 40); do echo "go: noise line $i" >&2; done
echo "go: github.com/Shopify/toxiproxy/v2@v2.5.0: 410 Gone" >&2
exit 1
""")
    cache = tmp_path / "cache"
    with pytest.raises(ConfigError) as caught:
        install_toxiproxy(cache=cache, environ={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"})
    text = str(caught.value)
    assert f"go install {TARGET}" in text and "exited with 1" in text and "410 Gone" in text
    assert "noise line 40" in text and "noise line 1\n" not in text  # the tail, not all of it
    argv = (tmp_path / "argv.txt").read_text().splitlines()
    assert argv == ["install", f"-ldflags=-s -w -X github.com/Shopify/toxiproxy/v2.Version={DEFAULT_VERSION}", TARGET]
    seen = json.loads(record.read_text())
    gobin = Path(seen["gobin"])
    assert gobin.parent.parent == cache and gobin.parent.name.startswith(f".toxiproxy-{DEFAULT_VERSION}-")
    assert _leftovers(cache) == []  # the temporary directory is gone, and no toxiproxy-<version>/ appeared
    assert installed_toxiproxy(cache=cache) is None


def test_install_with_a_fake_go_that_builds_nothing_is_an_error(tmp_path: Path) -> None:
    _script(tmp_path / "bin", "go", 'if [ "$1" = install ]; then exit 0; fi; echo go1.0\n')
    cache = tmp_path / "cache"
    with pytest.raises(ConfigError, match=r"go install succeeded but left no .*/gobin/server"):
        install_toxiproxy(cache=cache, environ={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"})
    assert _leftovers(cache) == []


def test_install_with_a_fake_go_that_hangs_is_stopped_with_its_children(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    pidfile = tmp_path / "child.pid"
    _script(tmp_path / "bin", "go", f"echo compiling >&2\nsleep 300 &\necho $! > {pidfile}\nwait\n")
    monkeypatch.setattr(tp, "GO_TIMEOUT_S", 1.0)
    with pytest.raises(ConfigError, match=r"did not finish in 1s; its stderr ends with:\ncompiling"):
        install_toxiproxy(cache=tmp_path / "cache", environ={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"})
    child = int(pidfile.read_text())
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]
    assert _leftovers(tmp_path / "cache") == []


def test_an_unwritable_cache_is_a_config_error_naming_it(tmp_path: Path) -> None:
    _script(tmp_path / "bin", "go", "exit 1\n")
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ConfigError, match=re.escape(f"cannot create the cache directory {blocker}/cache")):
        install_toxiproxy(cache=blocker / "cache", environ={"PATH": str(tmp_path / "bin")})
