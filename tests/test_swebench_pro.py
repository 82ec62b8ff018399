"""SWE-bench Pro as a task source (issue 31 item 3): ``fasbench data import swebench-pro FILE``.

No SWE-bench Pro record with its gold patch can be had on this machine (the Hugging Face set is
out of reach; the evaluator repository's sweap_eval_full_v2.jsonl is over the snapshot's size
limit; its run_scripts/*/instance_info.txt carry no patch), so the records here are written in the
published schema (every field a string, the lists JSON in strings, as the evaluator's rows) on a
real git repository built here: Python's own ``textwrap.py`` (the stdlib file of the running
interpreter), a JavaScript and a Go file, with the gold and test patches as ``git diff`` writes them.
The corpus is the online one: a git checkout at ``base_commit`` from a local remote
(``FASBENCH_GIT_URL``).
"""

import json
import subprocess
import textwrap as stdlib_textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fasbench.cli import app
from fasbench.data.corpus import materialize
from fasbench.data.importers import import_gold, usability
from fasbench.records import read_tasks

runner = CliRunner()

JS = """'use strict';

function slugify(text) {
  return text.toLowerCase().replace(/\\s+/g, '-');
}

function truncate(text, n) {
  if (text.length <= n) {
    return text;
  }
  return text.slice(0, n);
}

module.exports = { slugify, truncate };
"""

GO = """package wrap

import "strings"

// Indent prefixes every line of s with prefix.
func Indent(s, prefix string) string {
\tlines := strings.Split(s, "\\n")
\tfor i, l := range lines {
\t\tlines[i] = prefix + l
\t}
\treturn strings.Join(lines, "\\n")
}
"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def _repo(root: Path) -> tuple[Path, str, str, str]:
    """acme/widgets: base commit, gold patch (textwrap.py, src/text.js, wrap/wrap.go + a new file), test patch."""
    r = root / "acme" / "widgets"
    r.mkdir(parents=True)
    git(r, "init", "-q", "-b", "main")
    git(r, "config", "user.email", "t@example.com")
    git(r, "config", "user.name", "T")
    (r / "lib").mkdir()
    (r / "src").mkdir()
    (r / "wrap").mkdir()
    (r / "test").mkdir()
    (r / "lib" / "textwrap.py").write_text(Path(stdlib_textwrap.__file__).read_text(encoding="utf-8"))
    (r / "src" / "text.js").write_text(JS)
    (r / "wrap" / "wrap.go").write_text(GO)
    (r / "test" / "text.test.js").write_text("const t = require('../src/text');\n")
    git(r, "add", ".")
    git(r, "commit", "-qm", "base")
    base = git(r, "rev-parse", "HEAD").strip()
    py = (r / "lib" / "textwrap.py").read_text()
    assert "def dedent(text):" in py
    (r / "lib" / "textwrap.py").write_text(
        py.replace("def dedent(text):", "def dedent(text):\n    text = text or ''", 1)
    )
    (r / "src" / "text.js").write_text(JS.replace("return text.slice(0, n);", "return text.slice(0, n) + '…';"))
    (r / "wrap" / "wrap.go").write_text(
        GO.replace("lines[i] = prefix + l", 'if l != "" {\n\t\t\tlines[i] = prefix + l\n\t\t}')
    )
    (r / "src" / "new.js").write_text("module.exports = {};\n")
    git(r, "add", "lib", "src", "wrap")
    patch = git(r, "diff", "--cached", base)
    (r / "test" / "text.test.js").write_text("const t = require('../src/text');\ntest('truncate', () => {});\n")
    git(r, "add", "test")
    test_patch = git(r, "diff", "--cached", base, "--", "test")
    git(r, "commit", "-qm", "fix")
    return r, base, patch, test_patch


def _record(iid: str, base: str, patch: str, test_patch: str, **kw) -> dict:
    rec = {
        "repo": "acme/widgets",
        "instance_id": iid,
        "base_commit": base,
        "patch": patch,
        "test_patch": test_patch,
        "problem_statement": "## Title\n\ntruncate and dedent misbehave",
        "requirements": "- `truncate` must mark a cut",
        "interface": "No new interfaces are introduced",
        "repo_language": "js",
        "fail_to_pass": json.dumps(["test/text.test.js | truncate"]),
        "pass_to_pass": "[]",
        "issue_specificity": json.dumps(["minor_bug"]),
        "issue_categories": json.dumps(["back_end_knowledge"]),
        "before_repo_set_cmd": f"git reset --hard {base}",
        "selected_test_files_to_run": json.dumps(["test/text.test.js"]),
        "dockerhub_tag": "acme.widgets-acme__widgets-1",
    }
    rec.update(kw)
    return rec


@pytest.fixture
def pro(tmp_path, monkeypatch):
    remote = tmp_path / "remote"
    r, base, patch, test_patch = _repo(remote)
    monkeypatch.setenv("FASBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("FASBENCH_GIT_URL", str(remote) + "/{repo}")
    created_only = (
        "diff --git a/src/new.js b/src/new.js\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n"
        "+++ b/src/new.js\n@@ -0,0 +1 @@\n+module.exports = {};\n"
    )
    recs = [
        _record("instance_acme__widgets-1a2b3c-vnan", base, patch, test_patch),
        _record("instance_acme__widgets-no-patch", base, "", test_patch),
        _record("instance_acme__widgets-bad-patch", base, "diff --git a/x b/x\n@@ -1 +1 @@\nnot a hunk\n", test_patch),
        _record("instance_acme__widgets-created", base, created_only, test_patch),
        _record("instance_acme__widgets-bad-list", base, patch, test_patch, fail_to_pass="[unclosed"),
    ]
    f = tmp_path / "pro.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in recs))
    return f, base, patch


def test_import_gold_every_language_at_file_and_line_level_and_drops_with_reasons(pro):
    f, base, patch = pro
    tasks, dropped = import_gold("swebench-pro", f)
    assert {d["id"]: d["reason"] for d in dropped} == {
        "instance_acme__widgets-no-patch": "missing-field",
        "instance_acme__widgets-bad-patch": "bad-patch",
        "instance_acme__widgets-created": "no-line-gold",
        "instance_acme__widgets-bad-list": "missing-field",
    }
    (t,) = tasks
    assert t.query.startswith("## Title") and "Requirements:\n- `truncate` must mark a cut" in t.query
    assert "New interfaces introduced:\nNo new interfaces are introduced" in t.query
    assert t.repo == "acme/widgets" and t.base_commit == base and t.split in ("train", "dev", "test")
    assert set(t.gold.edited) == {"lib/textwrap.py", "src/text.js", "wrap/wrap.go", "src/new.js"}
    assert t.gold.edited["src/new.js"] == [] and all(
        t.gold.edited[p] for p in ("lib/textwrap.py", "src/text.js", "wrap/wrap.go")
    )
    assert t.meta["gold_import"]["languages"] == {
        "lib/textwrap.py": "python",
        "src/text.js": "js",
        "wrap/wrap.go": "go",
        "src/new.js": "js",
    }
    assert t.meta["fail_to_pass"] == ["test/text.test.js | truncate"] and t.meta["pass_to_pass"] == []
    assert t.meta["patch"] == patch and t.meta["test_patch"].startswith("diff --git a/test/text.test.js")


def test_online_checkout_places_the_gold_on_the_base_commit(pro):
    f, base, patch = pro
    (t,) = import_gold("swebench-pro", f)[0]
    u = usability(t)
    assert u["offline"].startswith("no-pick") and u["online"].startswith(f"usable at the exact commit {base[:12]}")
    m = materialize(t, mode="online")
    root = Path(m.root)
    assert git(root, "rev-parse", "HEAD").strip() == base
    for path, line in (
        ("lib/textwrap.py", "def dedent(text):"),
        ("src/text.js", "  return text.slice(0, n);"),
        ("wrap/wrap.go", "\t\tlines[i] = prefix + l"),
    ):  # each file's hunk covers the changed code
        lines = (root / path).read_text().splitlines()
        assert line in {lines[i - 1] for s, e in m.gold.edited[path] for i in range(s, e + 1)}, path
    js = (root / "src/text.js").read_text().splitlines()
    ((s, e),) = m.gold.variants["changed"]["src/text.js"]
    assert js[s - 1].strip() == "return text.slice(0, n);"
    ents = m.gold.entities
    assert "lib/textwrap.py:dedent" in ents["function"]  # Python: entity gold
    assert not [n for lv in ("module", "class", "function") for n in ents[lv] if not n.startswith("lib/")]
    assert {"src/text.js", "wrap/wrap.go"} <= set(ents["file"])  # JS/Go: file (and line) gold only
    assert usability(t)["online"] == "usable"  # the checkout is cached now: checked, not assumed


def test_cli_import_says_per_task_usable_offline_and_online(pro, tmp_path):
    f, base, _ = pro
    out = tmp_path / "tasks.jsonl"
    r = runner.invoke(app, ["data", "import", "swebench-pro", str(f), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "instance_acme__widgets-1a2b3c-vnan\toffline: no-pick" in r.output
    assert f"online: usable at the exact commit {base[:12]}" in r.output
    assert "1 tasks ->" in r.output and "dropped 4" in r.output and "'no-line-gold': 1" in r.output
    (t,) = read_tasks(out)
    assert t.meta["gold_import"]["format"] == "swebench-pro" and t.meta["gold_import"]["usable"]["offline"]


def test_cli_a_file_with_no_usable_record_fails_with_one_line(tmp_path):
    f = tmp_path / "pro.json"
    f.write_text(json.dumps([{"instance_id": "instance_a__b-1", "repo": "a/b"}]))
    r = runner.invoke(app, ["data", "import", "swebench-pro", str(f), "--out", str(tmp_path / "o.jsonl")])
    assert r.exit_code == 2 and r.stderr.count("error:") == 1 and "missing-field" in r.stderr
    f.write_text("[{broken")
    r = runner.invoke(app, ["data", "import", "swebench-pro", str(f), "--out", str(tmp_path / "o.jsonl")])
    assert r.exit_code == 2 and r.stderr.startswith("error:") and "Traceback" not in r.stderr
