"""`fasbench e2e` end to end: the real mini-swe-agent package against a real local OpenAI-compatible
server process (scripted answers), both arms, a run killed mid-way and resumed, and the trajectories
read back by the trajectory analysis; a scripted agent attacking from inside its commands (writes and reads
outside its copy, the environment's secrets, the network, fasbench's own git diff) against the sandbox."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from servers import free_port, server, wait_http
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.e2e.localize import functions_at, localization
from fasbench.records import Gold, Task, write_tasks
from fasbench.trajectories.analysis import analyze_paths

CALC = "def add(a, b):\n    return a - b\n\n\nclass Calc:\n    def sub(self, a, b):\n        return a + b\n"
SCRIPT = {
    "TASK-ADD": [
        {"command": "grep -rn 'def add' src", "explore": True},
        {"command": "sed -n '1,3p' src/calc.py", "explore": True},
        {"command": "sed -i 's/return a - b/return a + b/' src/calc.py"},
        {"command": "git diff -- src/calc.py > patch.txt"},
        {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt"},
    ],
    "TASK-SUB": [
        {"command": "grep -rn 'def sub' src", "explore": True},
        {"command": "sed -i 's/return a + b/return a - b/' src/calc.py"},
        {"command": "git diff -- src/calc.py > patch.txt"},
        {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt"},
    ],
}


@pytest.fixture
def setup(tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "src").mkdir(parents=True)
    (corpus / "src" / "calc.py").write_text(CALC)
    (corpus / "README.md").write_text("calc\n")
    tasks = [
        Task(
            id="demo__calc-1",
            query="TASK-ADD: add() subtracts instead of adding.",
            repo="demo/calc",
            gold=Gold(edited={"src/calc.py": [[1, 2]]}, variants={"changed": {"src/calc.py": [[2, 2]]}}),
            root=str(corpus),
        ),
        Task(
            id="demo__calc-2",
            query="TASK-SUB: Calc.sub adds instead of subtracting.",
            repo="demo/calc",
            gold=Gold(edited={"src/calc.py": [[6, 7]]}, variants={"changed": {"src/calc.py": [[7, 7]]}}),
            root=str(corpus),
        ),
    ]
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    port = free_port()
    log = tmp_path / "server.log"
    with server(
        [
            sys.executable,
            str(Path(__file__).parent / "scripted_openai_server.py"),
            str(port),
            str(tmp_path / "script.json"),
            "0.4",
        ],
        log,
    ) as proc:
        wait_http(f"http://127.0.0.1:{port}/v1/models", proc, 30, log)
        yield tmp_path, f"openai:model=scripted,base_url=http://127.0.0.1:{port}/v1,step_limit=10"


def _cmd(tmp, main, out):
    return [
        sys.executable,
        "-m",
        "fasbench.cli",
        "e2e",
        "--tasks",
        str(tmp / "tasks.jsonl"),
        "--main",
        main,
        "--search",
        "heuristic:turns=2",
        "--out",
        str(out),
        "--handoff",
        "citations",
    ]


@pytest.mark.slow
def test_e2e_both_arms_interrupted_and_resumed(setup):
    tmp, main = setup
    out = tmp / "run"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    proc = subprocess.Popen(
        _cmd(tmp, main, out), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    records = out / "records.jsonl"
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if records.exists() and records.read_text().count("\n") >= 1:
            break
        time.sleep(0.2)
    assert proc.poll() is None, proc.stdout.read().decode()[-3000:]
    os.killpg(proc.pid, signal.SIGKILL)  # interrupted in the middle of the second episode
    proc.wait()
    first = records.read_text().splitlines()
    assert len(first) == 1, first
    r = subprocess.run(_cmd(tmp, main, out), env=env, capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    lines = records.read_text().splitlines()
    assert lines[0] == first[0]  # nothing lost or rewritten
    recs = [json.loads(x) for x in lines]
    why = r.stdout[-2000:] + json.dumps(
        [{k: x.get(k) for k in ("task_id", "arm", "exit_status", "error", "turns")} for x in recs]
    )
    assert sorted((x["task_id"], x["arm"]) for x in recs) == [
        ("demo__calc-1", "none"),
        ("demo__calc-1", "search"),
        ("demo__calc-2", "none"),
        ("demo__calc-2", "search"),
    ], why
    traces = (out / "search_traces.jsonl").read_text().splitlines()
    assert sorted(json.loads(t)["task_id"] for t in traces) == ["demo__calc-1", "demo__calc-2"]  # one each
    by = {(x["task_id"], x["arm"]): x for x in recs}
    for x in recs:
        assert x["exit_status"] == "Submitted" and x["edits_gold_file"] is True and x["tokens"] > 0, why
        assert x["patch_source"] == "submission" and "src/calc.py" in x["diff"]
    assert by[("demo__calc-1", "none")]["gold_function_recall"] == 1.0
    assert by[("demo__calc-2", "none")]["gold_function_recall"] == 1.0
    # the handoff let the scripted agent skip its exploration turns
    assert by[("demo__calc-1", "search")]["turns"] == by[("demo__calc-1", "none")]["turns"] - 2, why
    assert by[("demo__calc-1", "search")]["handoff_tokens"] > 0
    assert '"metric": "turns"' in r.stdout
    assert not (out / "work" / "none" / "demo__calc-1").exists()  # copies removed

    for arm, turns in (("none", [5, 4]), ("search", [3, 3])):
        a = analyze_paths([out / "trajs" / arm], progress=False)
        t = a.trajectories.sort("instance_id")
        assert t["instance_id"].to_list() == ["demo__calc-1", "demo__calc-2"]
        assert t["n_turns"].to_list() == turns, (arm, why)
        assert t["first_edit_turn"].to_list() == ([3, 2] if arm == "none" else [1, 1])


def test_e2e_cli_errors(tmp_path):
    runner = CliRunner()
    r = runner.invoke(
        app,
        [
            "e2e",
            "--tasks",
            "swebench-lite:fasbench-test",
            "--main",
            "heuristic",
            "--search",
            "none",
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert r.exit_code == 2 and "OpenAI-compatible endpoint" in r.output
    r = runner.invoke(
        app,
        [
            "e2e",
            "--tasks",
            str(tmp_path / "nope.jsonl"),
            "--main",
            "openai:model=m,base_url=u",
            "--search",
            "none",
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert r.exit_code == 2 and "nope.jsonl" in r.output and "does not exist" in r.output  # fasbench.data.tasksets
    r = runner.invoke(
        app,
        [
            "e2e",
            "--tasks",
            "swebench-lite:val",
            "--main",
            "openai:model=m,base_url=u",
            "--search",
            "none",
            "--out",
            str(tmp_path / "o"),
        ],
    )
    assert r.exit_code == 2 and "unknown split 'val'" in r.output


def test_localization_functions(tmp_path):
    assert functions_at(CALC, [2]) == {"add"} and functions_at(CALC, [7]) == {"Calc.sub"}
    assert functions_at(CALC, [3]) == {"<module>"}
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "calc.py").write_text(CALC)
    gold = Gold(edited={"src/calc.py": [[6, 7]]}, variants={"changed": {"src/calc.py": [[7, 7]]}})
    wrong = (
        "diff --git a/src/calc.py b/src/calc.py\n--- a/src/calc.py\n+++ b/src/calc.py\n"
        "@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
    )
    m = localization(wrong, gold, tmp_path)
    assert m["edits_gold_file"] is True and m["gold_function_recall"] == 0.0 and m["edits_gold_function"] is False
    assert localization("", gold, tmp_path)["edits_gold_file"] is False


# ---- the main agent's sandbox (issue 25): a scripted model that attacks from inside its commands

CALC_ATTACK = "def add(a, b):\n    return a - b\n"
# what the agent writes, spelled so that no command's text holds it (a file holding it was written by a command)
W = "$(printf 'PW%s' NED)"
USR_PROBE = Path(f"/usr/.fasbench-sandbox-probe-{os.getpid()}")  # removed by the test where it was written
# the rest of the agent's git helper: a failing fsmonitor (git then scans), a filter that passes the text
# through, a textconv that marks its output (so that a run on unsandboxed code completes and shows each leak)
EVIL_TAIL = (
    'case $1 in fsmonitor|included) exit 1;; clean|smudge) cat;; textconv) cat \\"$2\\"; echo TEXTCONV-RAN;; '
    "*) cat > /dev/null;; esac\\n"
)
ALLOWED_ENV = {
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "PAGER",
    "MANPAGER",
    "LESS",
    "PIP_PROGRESS_BAR",
    "TQDM_DISABLE",
    "PWD",
    "SHLVL",
    "OLDPWD",
    "_",
}


def _attack_script(tmp: Path, out: Path, port: int) -> list[dict]:
    episode = out / "work" / "none" / "demo__attack-1"
    return [
        {"command": c}
        for c in [
            # the honest path: edit a file of the copy, run python on it
            "sed -i 's/return a - b/return a + b/' src/calc.py && echo more >> notes.txt && "
            'python3 -c \'import sys; sys.path.insert(0, "src"); import calc; print("HONEST", calc.add(2, 3))\'',
            # (a) write outside the copy: absolute, ../, a symlink it makes, HOME, the cache, the run directory
            f"echo {W} > {tmp}/out_abs.txt; echo {W} > ../../../../out_rel.txt; echo {W} > ../out_parent.txt; "
            f"ln -s {tmp} link_out; echo {W} > link_out/out_link.txt; echo {W} > $HOME/out_home.txt; "
            f"echo {W} > {tmp}/home/out_home2.txt; echo {W} > {tmp}/cache/out_cache.txt; "
            f"echo {W} >> {out}/records.jsonl; echo {W} > {episode}/base.git/config; echo {W} > {USR_PROBE}; "
            f"(sleep 1; echo {W} > late.txt) > /dev/null 2>&1 & "
            "python3 -c \"import os; print('PROCSYS-' + str(os.access('/proc/sys/kernel/core_pattern', os.W_OK)))\"",
            # (b) read a secret outside the copy: a temp dir, through the symlink, the cache, $HOME
            f"cat {tmp}/secret.txt ../../../../secret.txt link_out/secret.txt {tmp}/cache/secret.txt "
            f"{tmp}/home/.netrc $HOME/.netrc; ls / /root {tmp}",
            # (c) the environment: the key, env, pid 1's and the parent's environment
            "echo KEY=$OPENAI_API_KEY; env | sed 's/^/ENV:/'; tr '\\0' '\\n' < /proc/1/environ; "
            "tr '\\0' '\\n' < /proc/$PPID/environ; cat /proc/*/environ | tr '\\0' '\\n' | sort -u",
            # (d) the network: the scripted server itself
            f"python3 -c \"import urllib.request as u; print('NET-' + 'OK', u.urlopen('http://127.0.0.1:{port}/v1/models',"
            f' timeout=5).status)"; (exec 3<>/dev/tcp/127.0.0.1/{port} && echo TCP-$((1+1))-OPEN)',
            # (e) fasbench's own git diff: fsmonitor, hooks, an include, filters, textconv and diff drivers,
            # attributes (the corpus ships .gitattributes naming 'evil'; info/attributes too), a pager
            "E=$PWD/.git/evil.sh; H=$PWD/.git/myhooks; "
            f"printf '#!/bin/sh\\ntouch {tmp}/PWN_$1_$$\\n{EVIL_TAIL}' > $E; chmod +x $E; "
            'git config core.fsmonitor "$E fsmonitor"; git config filter.evil.clean "$E clean"; '
            'git config filter.evil.smudge "$E smudge"; '
            'git config diff.evil.textconv "$E textconv"; git config diff.evil.command "$E diffcmd"; '
            'git config diff.external "$E external"; git config core.pager "$E pager"; '
            "git config include.path $PWD/.git/extra.cfg; "
            "printf '[core]\\n\\tfsmonitor = %s included\\n' $E > .git/extra.cfg; mkdir -p $H .git/hooks; "
            "for h in post-index-change pre-commit post-commit post-checkout reference-transaction; "
            f"do printf '#!/bin/sh\\ntouch {tmp}/PWN_hook_'$h'\\n' > $H/$h; chmod +x $H/$h; done; "
            "git config core.hooksPath $H; cp $H/* .git/hooks/; "
            "printf '* diff=evil filter=evil\\n' > .git/info/attributes; echo configured",
            # (f) a set-uid-root shell left in the copy (issue 36): nothing inside, not set-uid nor root's on the host
            "cp /bin/bash ./rootsh && cp /usr/bin/id ./id && chmod 6755 ./rootsh ./id && ./id -u | sed 's/^/EUID-/'",
            "sleep 2; echo slept",  # the background writer of step 2 would have written late.txt by now
            "sleep 60; echo SLEPT-$((2+2))",  # the time limit kills it (command_timeout_s=3)
            "yes | head -c 60000000; echo DONE-$((3+3))",  # 60 MB of output: stopped at the output bound
            "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",  # no submission: the patch is fasbench's own diff
        ]
    ]


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    """One e2e episode of the attacking script (module-scoped: the tests below read its results)."""
    tmp = tmp_path_factory.mktemp("attack")
    corpus = tmp / "corpus"
    (corpus / "src").mkdir(parents=True)
    (corpus / "src" / "calc.py").write_text(CALC_ATTACK)
    (corpus / "notes.txt").write_text("notes\n")
    (corpus / ".gitattributes").write_text("*.py diff=evil filter=evil\nnotes.txt -diff\n")  # a malicious repository
    secrets = {
        "file": "SECRET-FILE-7f3a9",
        "cache": "SECRET-CACHE-51c2e",
        "home": "SECRET-HOME-c8d01",
        "key": "sk-SECRET-KEY-e94b7",
        "var": "SECRET-VAR-0a6d3",
    }
    (tmp / "secret.txt").write_text(secrets["file"] + "\n")
    for d, k, name in (("cache", "cache", "secret.txt"), ("home", "home", ".netrc")):
        (tmp / d).mkdir()
        (tmp / d / name).write_text(secrets[k] + "\n")
    task = Task(
        id="demo__attack-1",
        query="TASK-ATTACK: add() subtracts.",
        repo="demo/calc",
        gold=Gold(edited={"src/calc.py": [[1, 2]]}, variants={"changed": {"src/calc.py": [[2, 2]]}}),
        root=str(corpus),
    )
    write_tasks(tmp / "tasks.jsonl", [task])
    port, out = free_port(), tmp / "run"
    (tmp / "script.json").write_text(json.dumps({"TASK-ATTACK": _attack_script(tmp, out, port)}))
    log = tmp / "server.log"
    main = f"openai:model=scripted,base_url=http://127.0.0.1:{port}/v1,step_limit=20,command_timeout_s=3"
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).parents[1]),
        "OPENAI_API_KEY": secrets["key"],
        "FASBENCH_CACHE": str(tmp / "cache"),
        "HOME": str(tmp / "home"),
        "FASBENCH_TEST_SECRET": secrets["var"],
    }
    with server(
        [sys.executable, str(Path(__file__).parent / "scripted_openai_server.py"), str(port), str(tmp / "script.json")],
        log,
    ) as proc:
        wait_http(f"http://127.0.0.1:{port}/v1/models", proc, 30, log)
        try:
            r = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "fasbench.cli",
                    "e2e",
                    "--tasks",
                    str(tmp / "tasks.jsonl"),
                    "--main",
                    main,
                    "--search",
                    "none",
                    "--out",
                    str(out),
                    "--keep-work",
                ],
                env=env,
                capture_output=True,
                text=True,
                timeout=400,
            )
        finally:
            usr_written = USR_PROBE.exists()
            USR_PROBE.unlink(missing_ok=True)
    traj_f = out / "trajs" / "none" / "demo__attack-1.traj.json"
    traj = traj_f.read_text() if traj_f.exists() else "{}"
    observations = [m.get("content") for m in json.loads(traj).get("messages", []) if m.get("role") in ("tool", "user")]
    records = (out / "records.jsonl").read_text().splitlines() if (out / "records.jsonl").exists() else []
    return SimpleNamespace(
        tmp=tmp,
        out=out,
        secrets=secrets,
        proc=r,
        traj=traj,
        records=records,
        why=r.stderr[-1500:] + json.dumps(observations)[-6000:],
        repo=out / "work" / "none" / "demo__attack-1" / "repo",
        usr_written=usr_written,
    )


def _files_under(d: Path) -> list[Path]:
    """Every regular file under ``d``, symbolic links not followed."""
    paths = [Path(r) / f for r, _, fs in os.walk(d) for f in fs]
    return [p for p in paths if p.is_file() and not p.is_symlink()]


@pytest.mark.slow
def test_sandbox_honest_path(attacked):
    """The agent edits a file of its copy and runs python on it; the patch is fasbench's diff, as text
    although the corpus's .gitattributes marks the file binary."""
    a = attacked
    assert a.proc.returncode == 0 and len(a.records) == 1, a.why
    rec = json.loads(a.records[-1])
    assert "HONEST 5" in a.traj, a.why
    assert rec["exit_status"] == "Submitted" and rec["patch_source"] == "worktree" and rec.get("diff_error") is None
    assert "+    return a + b" in rec["diff"] and "+more" in rec["diff"] and rec["edits_gold_file"] is True, rec["diff"]
    assert "configured" in a.traj and "slept" in a.traj, a.why  # the agent's own git is its own
    assert "SLEPT-4" not in a.traj and "timed out after 3 seconds" in a.traj, a.why  # the time limit kept


@pytest.mark.slow
def test_sandbox_writes_nothing_outside_the_copy(attacked):
    """Absolute paths, ../, a symlink the agent made, HOME, the cache, the run directory, fasbench's
    git dir, /usr, and a background process outliving its command."""
    a = attacked
    assert not a.usr_written
    written = [str(p) for p in _files_under(a.tmp) if a.repo not in p.parents and b"PWNED" in p.read_bytes()]
    assert written == [], written
    assert not (a.repo / "late.txt").exists()
    assert "PROCSYS-False" in a.traj, a.why  # kernel settings not writable (as root: by mode alone)
    assert "PWNED" not in "".join(a.records) and len(a.records) == 1


@pytest.mark.slow
def test_sandbox_sees_no_secret(attacked):
    """A secret file outside the copy, the cache's, HOME's, the API key and a variable of fasbench's
    environment: in no file fasbench wrote, nor its output; the commands' environment is the sandbox's."""
    a = attacked
    leaks = [
        (name, str(p))
        for p in _files_under(a.out)
        for name, s in a.secrets.items()
        if s in p.read_bytes().decode("utf-8", "replace")
    ]
    leaks += [(name, "stdout/stderr") for name, s in a.secrets.items() if s in a.proc.stdout + a.proc.stderr]
    assert leaks == [], leaks
    assert "KEY=\\n" in a.traj, a.why
    names = set(re.findall(r"ENV:(\w+)=", a.traj))
    assert "PATH" in names and names <= ALLOWED_ENV, names - ALLOWED_ENV


@pytest.mark.slow
def test_sandbox_bounds_a_command_s_output(attacked):
    a = attacked
    assert "passed 2000000 bytes; it was stopped" in a.traj and "DONE-6" not in a.traj, a.why[-1500:]
    assert len(a.traj) < 10_000_000


@pytest.mark.slow
def test_sandbox_leaves_no_set_uid_file_on_the_host(attacked):
    """The agent's set-uid copies of bash and id: no euid 0 inside; on the host, no set-uid or set-gid bit
    on any file of the copy and, when fasbench runs as root, none of them is root's."""
    a = attacked
    assert "EUID-" in a.traj and "EUID-0" not in a.traj, a.why
    assert (a.repo / "rootsh").exists()
    for p in [a.repo, *a.repo.rglob("*")]:
        st = os.lstat(p)
        assert not st.st_mode & 0o6000, (p, oct(st.st_mode))
        assert os.geteuid() != 0 or st.st_uid != 0, p


@pytest.mark.slow
def test_sandbox_has_no_network(attacked):
    assert "NET-OK" not in attacked.traj and "TCP-2-OPEN" not in attacked.traj, attacked.why


@pytest.mark.slow
def test_sandbox_fasbench_git_runs_nothing_of_the_agent(attacked):
    """fsmonitor, hooks, an include, filters, textconv, diff drivers and a pager the agent configured in
    its .git, with the corpus's .gitattributes naming them: fasbench's diff ran none of them."""
    ran = sorted(p.name for p in attacked.tmp.iterdir() if p.name.startswith("PWN_"))
    assert ran == [], ran
    assert attacked.records and "TEXTCONV-RAN" not in json.loads(attacked.records[-1])["diff"]


def test_e2e_without_bubblewrap_stops_before_any_episode(tmp_path, monkeypatch):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.py").write_text("x = 1\n")
    write_tasks(
        tmp_path / "tasks.jsonl",
        [Task(id="t-1", query="q", repo="r", gold=Gold(edited={"a.py": [[1, 1]]}), root=str(corpus))],
    )
    runner = CliRunner()
    args = [
        "e2e",
        "--tasks",
        str(tmp_path / "tasks.jsonl"),
        "--main",
        "openai:model=m,base_url=http://127.0.0.1:9/v1",
        "--search",
        "none",
        "--out",
        str(tmp_path / "o"),
    ]
    for exe, words in (
        ("fasbench-no-such-bwrap", "'bwrap' is not installed"),
        ("/bin/false", "cannot create its sandbox"),
    ):
        monkeypatch.setenv("MSWEA_BUBBLEWRAP_EXECUTABLE", exe)
        r = runner.invoke(app, args)
        lines = [x for x in r.output.splitlines() if x.strip()]
        assert r.exit_code == 2 and len(lines) == 1 and words in lines[0], r.output
        assert "apt-get install bubblewrap" in lines[0]
        assert not (tmp_path / "o" / "work").exists() and not (tmp_path / "o" / "records.jsonl").exists()


def test_fasbench_git_on_an_attacked_copy(tmp_path):
    """fasbench's own git on a copy whose .git the agent rewrote, without the agent: nothing of it runs;
    a tracked file turned into a FIFO is a named SandboxGitError at once (never a hang), not a traceback."""
    # imported here, so that the other tests of this file run against code without these names
    from fasbench.e2e.runner import prepare_copy, worktree_diff

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.py").write_text("x = 1\n")
    (corpus / "b.txt").write_text("b\n")
    (corpus / ".gitattributes").write_text("* diff=evil filter=evil\nb.txt -diff\n")
    episode = tmp_path / "ep"
    repo = prepare_copy(corpus, episode)
    assert (repo / ".git").is_dir() and (episode / "base.git").is_dir() and not (repo / ".git").samefile(episode)
    mark = tmp_path / "ran"
    evil = repo / ".git" / "evil.sh"
    evil.write_text(f"#!/bin/sh\necho $1 >> {mark}\ncat\n")
    evil.chmod(0o755)
    with open(repo / ".git" / "config", "a") as f:
        f.write(
            f'[core]\n\tfsmonitor = "{evil} fsmonitor"\n\thooksPath = {repo}/.git/hooks\n'
            f'[filter "evil"]\n\tclean = "{evil} clean"\n[diff "evil"]\n\ttextconv = "{evil} textconv"\n'
            f'\tcommand = "{evil} command"\n[diff]\n\texternal = "{evil} external"\n'
        )
    (repo / "a.py").write_text("x = 2\n")
    (repo / "b.txt").write_text("c\n")
    d, refused = worktree_diff(episode)
    assert "+x = 2" in d and "+c" in d and refused is None and not mark.exists(), d
    (repo / "b.txt").unlink()
    os.mkfifo(repo / "b.txt")
    t = time.time()
    d, refused = worktree_diff(episode)  # the FIFO is refused by name, never opened; the rest of the diff is kept
    assert time.time() - t < 60 and not mark.exists()
    assert "+x = 2" in d and "b.txt" not in d and refused and "b.txt (not a regular file: p" in refused, (d, refused)


def test_fasbench_diff_refuses_a_huge_sparse_file_by_name(tmp_path):
    """A tracked file made a 50 GB sparse file: refused by name at once (no 300 s stall), the diff of the
    other changes kept; many refused files refuse the whole diff with a named SandboxGitError."""
    from fasbench.e2e.runner import prepare_copy, worktree_diff
    from fasbench.e2e.workcopy import MAX_REFUSED, SandboxGitError

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(MAX_REFUSED + 2):
        (corpus / f"f{i}.txt").write_text(f"{i}\n")
    (corpus / "a.py").write_text("x = 1\n")
    episode = tmp_path / "ep"
    repo = prepare_copy(corpus, episode)
    (repo / "a.py").write_text("x = 2\n")
    os.truncate(repo / "f0.txt", 50 << 30)
    t = time.time()
    d, refused = worktree_diff(episode)
    assert time.time() - t < 30
    assert "+x = 2" in d and "f0.txt" not in d, d[:500]
    assert refused and f"f0.txt ({50 << 30} bytes, over" in refused and "left out 1 path(s)" in refused, refused
    for i in range(MAX_REFUSED + 1):
        os.truncate(repo / f"f{i}.txt", 1 << 40)
    with pytest.raises(SandboxGitError, match=f"{MAX_REFUSED + 1} tracked paths refused"):
        worktree_diff(episode)


def test_e2e_task_ids_stay_inside_their_arm_folder(tmp_path):
    """An id '..' must not name (and so delete) OUT/work; separators, dots and long ids give plain, distinct
    names inside work/<arm>."""
    from fasbench.e2e.runner import task_key

    arm = tmp_path / "work" / "none"
    arm.mkdir(parents=True)
    ids = ["..", ".", "", "../..", "a/../../b", "/etc/passwd", "a/b", "a_b", "x" * 300, "demo__attack-1", "a\nb"]
    keys = [task_key(i) for i in ids]
    assert len(set(keys)) == len(ids), keys
    for k in keys:
        assert "/" not in k and k.strip(".") and len(k) <= 100, k
        assert (arm / k).resolve().parent == arm.resolve(), k
    assert task_key("demo__attack-1") == "demo__attack-1" and task_key("django__django-11099") == "django__django-11099"


# ---- does delegating pay? (issue 39 item 2): the four arms live against fasbench's scripted server

ADDER = "def add_numbers(a, b):\n    return a - b\n\n\n" + "".join(
    f"def helper_{i}(x):\n    return x + {i}\n\n\n" for i in range(12)
)


def test_live_arms_against_the_scripted_server(tmp_path):
    """fasbench's scripted server as the main model (its mini-swe-agent script: explore alone, re-read the
    first cited range of a citations hand-off, trust a hand-off with code): the main agent alone, with the
    free-form, the ID-grounded and the code hand-off on the same tasks; the re-read share of the handed-off
    lines and the main model's input tokens per arm, with intervals, arm − none paired."""
    from servers import scripted_server

    from fasbench.e2e.pays import live_arms_table
    from fasbench.e2e.runner import run_live_arms

    corpus = tmp_path / "corpus"
    (corpus / "src").mkdir(parents=True)
    (corpus / "src" / "adder.py").write_text(ADDER)
    tasks = [
        Task(
            id=f"demo__adder-{i}",
            query=f"add_numbers subtracts instead of adding ({i}).",
            repo="demo/adder",
            gold=Gold(edited={"src/adder.py": [[1, 2]]}),
            root=str(corpus),
        )
        for i in range(2)
    ]
    with scripted_server("--delay-s", "0") as url:
        recs = run_live_arms(
            tasks,
            f"openai:model=scripted,base_url={url},step_limit=8",
            "heuristic:turns=2",
            tmp_path / "live",
            progress=False,
        )
    why = json.dumps(
        [
            {k: r.get(k) for k in ("task_id", "arm", "exit_status", "turns", "reread_share", "report_ranges", "error")}
            for r in recs.iter_rows(named=True)
        ]
    )
    assert sorted(recs["arm"].to_list()) == sorted(["none", "citations", "ids", "code"] * 2), why
    by = {(r["task_id"], r["arm"]): r for r in recs.iter_rows(named=True)}
    for t in tasks:
        none, cit, ids, code = (by[(t.id, a)] for a in ("none", "citations", "ids", "code"))
        assert all(x["exit_status"] == "Submitted" for x in (none, cit, ids, code)), why
        assert (none["turns"], cit["turns"], ids["turns"], code["turns"]) == (3, 2, 2, 1), why
        assert cit["reread_share"] > 0 and ids["reread_share"] > 0 and code["reread_share"] == 0, why
        assert none["reread_share"] is not None, why  # the report's lines the agent read on its own
        assert ids["report_contract"] == "ids" and ids["cited_ids_dropped"] == 0 and cit["report_contract"] == "free"
        assert code["handoff_tokens"] > cit["handoff_tokens"] > 0 and code["input_tokens"] > 0
    table = live_arms_table(recs, n_boot=200)
    got = {(r["arm"], r["measure"]): r for r in table.iter_rows(named=True)}
    for arm in ("citations", "ids", "code"):
        for m in ("reread_share", "input_tokens", "cache_share"):
            r = got[(arm, m)]
            assert r["n"] == 2 and r["lo"] <= r["mean"] <= r["hi"] and r["diff"] is not None, (arm, m, r)
    assert got[("code", "turns")]["diff"] == -2
