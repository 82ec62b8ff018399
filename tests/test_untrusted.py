"""The sandbox where a corpus's code runs (issue 36, items 3 and 4): attacks from inside it.

Each limit is small here and is read back from inside the sandbox before the attack that needs it runs
(a fork bomb never runs without its process limit in place). Run as root (the case of issue 36: bwrap
started by root), the commands must run as an unprivileged user whose files are never root's; run as
another user they run as that user, and the set-uid checks still hold (the bits are stripped)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from fasbench.base.untrusted import (
    SandboxLimits,
    check_sandbox,
    execute_sandboxed,
    give_to_sandbox,
    run_sandboxed,
    sandbox_env,
    sandbox_ids,
)

ROOT = os.geteuid() == 0


@pytest.fixture(scope="module")
def bwrap():
    return check_sandbox()


@pytest.fixture()
def copy(tmp_path):
    d = tmp_path / "copy"
    d.mkdir()
    (d / "a.py").write_text("x = 1\n")
    give_to_sandbox(d)
    return d


def _run(bwrap, root, command, timeout=20, **limits):
    return execute_sandboxed(bwrap, root, command, sandbox_env(), timeout, limits=SandboxLimits(**limits))


def test_commands_run_as_an_unprivileged_user_with_no_capability(bwrap, copy):
    r = _run(bwrap, copy, "id -u; id -g; grep -E '^Cap(Prm|Eff|Bnd|Amb)' /proc/self/status; echo hi > made")
    assert r["returncode"] == 0, r
    lines = r["output"].split("\n")
    uid = int(lines[0])
    assert uid != 0 and uid == (sandbox_ids() or (os.getuid(), 0))[0], r["output"]
    assert all(line.split()[1] == "0" * 16 for line in lines[2:6]), r["output"]
    st = (copy / "made").stat()
    assert st.st_uid == uid and (not ROOT or st.st_uid != 0)
    # what the agent needs still works as that user: git (reads /etc/gitconfig's folder), python
    r = _run(bwrap, copy, "git init -q g && git -C g status --short && python3 -c 'print(6 * 7)'")
    assert r["returncode"] == 0 and r["output"].strip() == "42", r


def test_a_set_uid_file_made_inside_is_not_set_uid_on_the_host(bwrap):
    """The agent copies a shell and ``id`` and sets their set-uid and set-gid bits: inside, a nosuid mount and
    no_new_privs make them nothing; on the host they lose the bits, are not root's, and an unprivileged
    user of the host who runs them gets no euid 0 (the copy's folder: world-traversable here on purpose)."""
    base = Path(tempfile.mkdtemp(prefix="fasbench-setuid-", dir="/tmp"))
    try:
        base.chmod(0o755)
        corpus = base / "corpus"
        corpus.mkdir(mode=0o755)
        (corpus / "a.py").write_text("x = 1\n")
        from fasbench.e2e.runner import prepare_copy

        repo = prepare_copy(corpus, base / "ep")
        (base / "ep").chmod(0o755)
        r = _run(
            bwrap,
            repo,
            "cp /usr/bin/id ./id && cp /bin/bash ./sh && chmod 6755 ./id ./sh && ./id -u && mkdir -m 2777 d && ls -ln",
        )
        assert r["returncode"] == 0 and "rws" in r["output"], r  # the bits were set inside ...
        assert r["output"].split("\n")[0].strip() != "0"  # ... and did nothing there
        for name in ("id", "sh", "d"):
            st = os.lstat(repo / name)
            assert not st.st_mode & (stat.S_ISUID | stat.S_ISGID), (name, oct(st.st_mode))  # ... nor on the host
            assert not ROOT or st.st_uid != 0, name
        if ROOT:  # an unprivileged user of the host runs it: never euid 0
            p = subprocess.run(
                ["setpriv", "--reuid=54321", "--regid=54321", "--clear-groups", str(repo / "id"), "-u"],
                capture_output=True,
                text=True,
                timeout=30,
            )
            assert p.stdout.strip() != "0", p
            assert stat.S_IMODE(repo.stat().st_mode) == 0o700  # and cannot even reach it
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.slow
def test_a_fork_bomb_ends_at_its_process_limit(bwrap, copy):
    """24 processes at most: the limit is read back first; the bomb then ends at the command's time
    limit, within seconds, while the host answers."""
    r = _run(bwrap, copy, "ulimit -u", processes=24)
    ids = sandbox_ids()
    assert r["returncode"] == 0 and int(r["output"]) <= 24 + 400, r  # the sandbox user's tasks + 24
    if ids is None:  # run as another user, the limit counts that user's processes too: checked, not bombed
        pytest.skip("the bomb runs only where the sandbox has a user of its own (fasbench run as root)")
    lag: list[float] = []
    stop = threading.Event()

    def probe():
        while not stop.is_set():
            t = time.monotonic()
            subprocess.run(["true"], timeout=30)
            lag.append(time.monotonic() - t)
            time.sleep(0.2)

    th = threading.Thread(target=probe)
    th.start()
    t0 = time.monotonic()
    try:
        r = _run(
            bwrap, copy, "b() { b | b & }; b 2>/dev/null; sleep 2; ls /proc | grep -c '^[0-9]'", timeout=6, processes=24
        )
    finally:
        stop.set()
        th.join()
    took = time.monotonic() - t0
    assert took < 15, took
    n = [int(x) for x in r["output"].split() if x.isdigit()]
    assert not n or n[-1] <= 24 + 2, r["output"][-500:]  # pid 1 (bwrap) is root's, the rest the user's
    assert lag and max(lag) < 5, lag


def test_tmp_fill_ends_at_its_size(bwrap, copy):
    r = _run(bwrap, copy, "head -c 64M /dev/zero > /tmp/fill; echo rc=$?; du -k /tmp/fill | cut -f1", tmp_bytes=8 << 20)
    out = r["output"]
    assert "No space left on device" in out and "rc=1" in out, out
    assert int(out.split()[-1]) <= 8 * 1024, out


def test_file_size_address_space_and_cpu_limits(bwrap, copy):
    r = _run(
        bwrap,
        copy,
        "truncate -s 50G big; echo t=$?; head -c 3M /dev/zero > f; echo h=$?; "
        "python3 -c 'b = bytearray(600 << 20)' 2>&1 | tail -1",
        file_size=1 << 20,
        address_space=256 << 20,
    )
    out = r["output"]
    assert "t=1" in out and "h=153" in out and "MemoryError" in out, out  # 153: SIGXFSZ
    assert not (copy / "big").exists() or (copy / "big").stat().st_size <= 1 << 20
    assert (copy / "f").stat().st_size <= 1 << 20
    t0 = time.monotonic()
    r = _run(bwrap, copy, "python3 -c 'while True: pass'; echo rc=$?", timeout=30, cpu_s=1)
    assert time.monotonic() - t0 < 20 and ("rc=152" in r["output"] or "rc=137" in r["output"]), r


def test_the_environment_and_the_network_stay_outside(bwrap, copy, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-SANDBOX-KEY-3d9e1")
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        srv.settimeout(0.1)
        port = srv.getsockname()[1]
        r = _run(bwrap, copy, f"env; cat /proc/1/environ; (exec 3<>/dev/tcp/127.0.0.1/{port} && echo TCP-OPEN)")
        with pytest.raises(OSError):
            srv.accept()[0].close()
    assert "sk-SANDBOX-KEY" not in r["output"] and "TCP-OPEN" not in r["output"], r["output"]


def test_a_read_only_root_and_extra_read_only_paths(bwrap, tmp_path):
    """perturb's check: the corpus read-only, this interpreter importable (its venv and base Python)."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "m.py").write_text("import pytest\nprint('PYTEST', pytest.__name__)\n")
    prefixes = sorted({sys.prefix, sys.base_prefix})
    r = run_sandboxed(
        bwrap,
        corpus,
        [sys.executable, "-c", "import m; open('w', 'w')"],
        sandbox_env(),
        60,
        writable=False,
        ro_paths=prefixes,
        limits=SandboxLimits(address_space=4 << 30),
    )
    assert "PYTEST pytest" in r["output"] and "Read-only file system" in r["output"], r
    assert not (corpus / "w").exists()


@pytest.mark.slow
def test_perturb_check_runs_the_corpus_in_the_sandbox(tmp_path, monkeypatch):
    """A hostile corpus whose module, on import and at test collection, writes out the API key, writes a
    file outside the corpus and opens a socket to this host: none of it succeeds; the check still runs."""
    from fasbench.data.perturb_gold import verify_corpus

    key = "sk-PERTURB-KEY-8c2f0"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    outside = tmp_path / "outside"
    outside.mkdir()
    outside.chmod(0o777)
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(4)
        srv.settimeout(0.1)
        port = srv.getsockname()[1]
        evil = (
            "import os, socket\n"
            "def _leak(tag):\n"
            "    for p in (%r, 'leak.txt', os.path.expanduser('~/leak.txt')):\n"
            "        try:\n"
            "            open(os.path.join(p, tag) if os.path.isdir(p) else p + tag, 'w').write(\n"
            "                os.environ.get('OPENAI_API_KEY', 'none'))\n"
            "        except OSError:\n"
            "            pass\n"
            "    try:\n"
            "        socket.create_connection(('127.0.0.1', %d), timeout=2).sendall(b'HI')\n"
            "    except OSError:\n"
            "        pass\n"
            "_leak('import')\n"
        ) % (str(outside), port)
        for root in (tmp_path / "a", tmp_path / "b"):
            (root / "pkg").mkdir(parents=True)
            (root / "pkg" / "__init__.py").write_text("")
            (root / "pkg" / "evil.py").write_text(evil)
            (root / "pkg" / "test_evil.py").write_text(
                "from pkg.evil import _leak\n_leak('collect')\n\ndef test_x():\n    pass\n"
            )
        rec = {"changed": ["pkg/evil.py", "pkg/test_evil.py"], "moves": {}, "reorders": {}, "renames": []}
        v = verify_corpus(tmp_path / "a", tmp_path / "b", rec)
        with pytest.raises(OSError):
            srv.accept()[0].close()
    leaked = [str(p) for p in tmp_path.rglob("*") if p.is_file() and key in p.read_text(errors="replace")]
    assert leaked == [] and list(outside.iterdir()) == [], (leaked, list(outside.iterdir()))
    assert v["import_original"] == v["import_perturbed"] == 2 and v["tests_original"] == v["tests_perturbed"] == 1, v
    assert v["ok"], json.dumps(v)


def test_sdists_are_fetched_without_running_them_and_pip_gets_no_key(tmp_path, monkeypatch):
    """``auto`` fetches the sdist straight from PyPI first (nothing of it runs); pip, which runs the sdist's
    setup.py for its metadata, comes only after that failed, and gets no key of the caller."""
    from fasbench.data import corpus

    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-PIP-KEY-71a0c")
    calls, envs = [], []

    def direct(name, release, dest):
        calls.append("direct")
        raise OSError("no network here")

    def run(cmd, **kw):
        calls.append("pip")
        envs.append(kw.get("env"))
        return subprocess.CompletedProcess(cmd, 1, "", "pip failed")

    monkeypatch.setattr(corpus, "_direct_download", direct)
    monkeypatch.setattr(corpus.subprocess, "run", run)
    with pytest.raises(corpus.CorpusError):
        corpus.sdist_tree("fasbench-no-such-sdist", "1.0")
    assert calls == ["direct", "pip"], calls
    assert envs[0] is not None and "OPENAI_API_KEY" not in envs[0] and "PATH" in envs[0], envs


def test_strip_setid_follows_no_link(tmp_path):
    """A link in the copy to a set-uid file outside: the file outside keeps its mode; those inside lose the bits."""
    from fasbench.base.untrusted import strip_setid

    outside = tmp_path / "outside"
    outside.write_text("")
    outside.chmod(0o4755)
    copy = tmp_path / "copy"
    (copy / "d").mkdir(parents=True)
    (copy / "d" / "link").symlink_to(outside)
    (copy / "d" / "sh").write_text("")
    (copy / "d" / "sh").chmod(0o6755)
    (copy / "d").chmod(0o2755)
    assert strip_setid(copy) == 2
    assert stat.S_IMODE(outside.stat().st_mode) == 0o4755
    assert stat.S_IMODE((copy / "d" / "sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((copy / "d").stat().st_mode) == 0o755


@pytest.mark.skipif(not ROOT, reason="a corpus only root may read: the case of fasbench run as root")
def test_perturb_check_on_a_corpus_the_sandbox_cannot_read_is_one_named_error(tmp_path):
    """Not a vacuous pass (nothing imported on either tree, so nothing lost): a CheckError naming the corpus."""
    from fasbench.data.perturb_gold import CheckError, verify_corpus

    for root in (tmp_path / "a", tmp_path / "b"):
        (root / "pkg").mkdir(parents=True)
        (root / "pkg" / "__init__.py").write_text("")
        (root / "pkg" / "m.py").write_text("x = 1\n")
        root.chmod(0o700)
    rec = {"changed": ["pkg/m.py"], "moves": {}, "reorders": {}, "renames": []}
    with pytest.raises(CheckError, match="cannot enter the corpus .*a"):
        verify_corpus(tmp_path / "a", tmp_path / "b", rec)
