"""The action classifier on the rubric's examples (issue 4), compound actions and tricky cases."""

import pytest

from fasbench.trajectories.classify import (
    CATEGORIES_BY_PRIORITY,
    CATEGORIES_PLOT_ORDER,
    analyze,
    analyze_call,
    classify,
    code_writes,
    top,
)

RUBRIC = [
    # read: displays located files
    ("cat django/db/models/deletion.py", "read"),
    ("head -50 setup.py", "read"),
    ("tail -n 20 src/x.py", "read"),
    ("sed -n '270,290p' ./django/db/models/deletion.py", "read"),
    ("nl -ba sympy/core/expr.py", "read"),
    ("less README.rst", "read"),
    ("awk 'NR>=10 && NR<=20' file.py", "read"),
    ("open django/forms/models.py 120", "read"),
    ("goto 300", "read"),
    ("scroll_down", "read"),
    # search: locates
    ("grep -rn 'def delete' django/", "search"),
    ("rg -n TODO src", "search"),
    ("ag foo", "search"),
    ("ack --python bar", "search"),
    ("git grep -n Collector", "search"),
    ('find . -name "*.py" -path "*deletion*"', "search"),
    ("ls -la django/db", "search"),
    ("tree -L 2", "search"),
    ('search_dir "def clean"', "search"),
    ("search_file FieldFile", "search"),
    ("find_file deletion.py", "search"),
    # edit: creates/changes/moves/deletes files
    ("sed -i 's/foo/bar/' a.py", "edit"),
    ("perl -pi -e 's/a/b/g' x.py", "edit"),
    ("echo 'x = 1' > conf.py", "edit"),
    ("echo x >> log.txt", "edit"),
    ("printf 'a' | tee out.txt", "edit"),
    ("cat <<'EOF' > reproduce.py\nprint(1)\nEOF", "edit"),
    ("patch -p1 < fix.diff", "edit"),
    ("git apply fix.patch", "edit"),
    ("git checkout -- django/db/models/deletion.py", "edit"),
    ("git restore setup.py", "edit"),
    ("mv a.py b.py", "edit"),
    ("cp a.py a.py.bak", "edit"),
    ("rm -rf build", "edit"),
    ("mkdir -p tests/new", "edit"),
    ("touch __init__.py", "edit"),
    ("chmod +x run.sh", "edit"),
    ("python -c \"open('a.py', 'w').write('x')\"", "edit"),
    ("edit 10:12\n    return None\nend_of_edit", "edit"),
    ("create reproduce.py", "edit"),
    ("insert 5\nimport os\nend_of_insert", "edit"),
    # test: runs code
    ("python reproduce.py", "test"),
    ("python3 -m pytest tests/test_x.py -q", "test"),
    ("python -c 'import django; print(django.VERSION)'", "test"),
    ("pytest -x tests", "test"),
    ("tox -e py39", "test"),
    ("./tests/runtests.py sessions_tests", "test"),
    ("make test", "test"),
    ("java -jar x.jar", "test"),
    ("node index.js", "test"),
    # other
    ("git status", "other"),
    ("git diff", "other"),
    ("git log --oneline -5", "other"),
    ("pip install -e .", "other"),
    ("python -m pip install numpy", "other"),
    ("echo hello", "other"),
    ("cd /testbed", "other"),
    ("submit", "other"),
    ("exit", "other"),
    ("", "other"),
    ("   ", "other"),
]


@pytest.mark.parametrize("action,expected", RUBRIC)
def test_rubric(action, expected):
    assert classify(action) == expected


COMPOUND = [
    ("cd /testbed && grep -rn foo .", "search"),  # a bare cd does not count
    ("cd /testbed && cat a.py", "read"),
    ("grep -rn foo . | head -20", "search"),  # search > read
    ("cat a.py | grep -n def", "search"),
    ("cat a.py; python a.py", "test"),  # test > read
    ("python reproduce.py && sed -i 's/a/b/' x.py", "edit"),  # edit > everything
    ("ls || find . -name x", "search"),
    ("cd /testbed\nls\ncat setup.py", "search"),  # several lines
    ("for f in $(find . -name '*.py'); do head -1 $f; done", "search"),  # loop + command substitution
    ("(cd src && python -m pytest)", "test"),  # subshell
    ("x=$(grep -l foo *.py) && echo $x", "search"),
    ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached", "other"),
    ("timeout 60 python -m pytest -q", "test"),  # wrappers
    ("PYTHONPATH=. python3 tests/runtests.py admin_scripts", "test"),
    ("grep -l foo -r . | xargs sed -i 's/foo/bar/'", "edit"),
    ("find . -name '*.pyc' -delete", "edit"),
    ("find . -name '*.py' -exec grep -n foo {} \\;", "search"),
    ("bash -c 'cat a.py'", "read"),
    ("cat <<'EOF' | python\nopen('a.py', 'w').write('1')\nEOF", "edit"),
]


@pytest.mark.parametrize("action,expected", COMPOUND)
def test_compound(action, expected):
    assert classify(action) == expected


TRICKY = [
    ("cat > file.py <<EOF\nimport os\nEOF", "edit"),  # heredoc into a file
    ("cat <<EOF\nhello\nEOF", "read"),  # heredoc to stdout only
    ("sed -n '10,20p' a.py", "read"),
    ("sed -i.bak -e 's/a/b/' a.py", "edit"),
    ("sed -ne 's/a/b/p' a.py", "read"),
    ("python -c \"open('out.txt','w')\"", "edit"),
    ("python -c \"print(open('a.py').read())\"", "test"),  # reading is not writing
    ("python -c \"import sys; sys.stdout.write('x')\"", "test"),
    ("python - <<'PY'\nfrom pathlib import Path\nPath('a.py').write_text('x')\nPY", "edit"),
    ("python - <<'PY'\nprint(1)\nPY", "test"),
    ("git checkout -- path/to/file.py", "edit"),
    ("git checkout -b fix-branch", "other"),
    ("git stash list", "other"),
    ("git reset --hard HEAD", "edit"),
    ("git show HEAD:setup.py", "read"),
    ("python reproduce.py > /dev/null 2>&1", "test"),  # redirection to /dev/null is not an edit
    ("grep -rn foo . 2>/dev/null", "search"),
    ("ls > /dev/null", "search"),
    ("python reproduce.py > out.txt 2>&1", "edit"),  # …but into a file it is
    ("grep foo a.py &> /dev/null", "search"),
    ("awk -i inplace '{print}' a.py", "edit"),
    ("patch --dry-run -p1 < x.diff", "other"),
    ("cd django", "other"),
]


@pytest.mark.parametrize("action,expected", TRICKY)
def test_tricky(action, expected):
    assert classify(action) == expected


def test_targets_and_effects():
    a = analyze("cd /testbed && sed -i 's/a/b/' django/db/models/deletion.py")
    assert a.category == "edit" and a.targets == ("django/db/models/deletion.py",)
    assert a.parts == ("other", "edit")
    a = analyze("cat > fix.py <<'EOF'\nwith open('src/x.py', 'w') as f:\n    f.write('y')\nEOF\npython fix.py")
    assert a.targets == ("fix.py",)
    assert a.created[0][0] == "fix.py" and "open('src/x.py', 'w')" in a.created[0][1]
    assert a.runs == ("fix.py",)
    assert analyze("cp a.py a.py.bak").targets == ("a.py.bak",)  # only the destination is written
    assert analyze("mv old.py new.py").targets == ("old.py", "new.py")
    assert analyze("git checkout -- a.py b.py").targets == ("a.py", "b.py")
    assert analyze("sed -i -e 's/a/b/' -e 's/c/d/' f.py g.py").targets == ("f.py", "g.py")
    assert analyze("python -c \"open('x','w')\"").code_writes


def test_parsers_are_counted():
    assert analyze("ls -la").parser == "lexer"  # plain words
    assert analyze("grep -rn 'x y' . | head").parser == "lexer"  # the regular subset
    assert analyze("for f in *.py; do cat $f; done").parser == "tree-sitter"
    assert analyze("cat <<'EOF' > a\nx\nEOF").parser == "lexer"  # heredoc bodies are cut out first
    assert analyze("if [ -f a ]; then cat a; fi").parser == "tree-sitter"
    assert analyze("cat <<'EOF' | python\nprint(1)\nEOF").parts == ("read", "test")
    assert analyze("").parser == "empty"
    bad = analyze("python -c \"print('unterminated")
    assert bad.parser in ("fallback", "unparsable") and bad.category == "test"


def test_unknown_commands_are_other_and_reported():
    a = analyze("frobnicate --all")
    assert a.category == "other" and a.unknown == ("frobnicate",)


def test_tool_calls():
    assert analyze_call("Read", {"file_path": "/repo/a.py"}).category == "read"
    assert analyze_call("Grep", {"pattern": "x"}).category == "search"
    assert analyze_call("Glob", {"pattern": "**/*.py"}).category == "search"
    e = analyze_call("Edit", {"file_path": "/repo/a.py", "old_string": "a", "new_string": "b"})
    assert e.category == "edit" and e.targets == ("/repo/a.py",)
    assert analyze_call("Bash", {"command": "pytest -q"}).category == "test"
    assert analyze_call("bash", {"command": "grep -rn x ."}).category == "search"
    assert analyze_call("str_replace_editor", {"command": "view", "path": "/a.py"}).category == "read"
    assert analyze_call("str_replace_editor", {"command": "str_replace", "path": "/a.py"}).category == "edit"
    assert analyze_call("view_file", {"path": "a.py"}).category == "read"  # fasbench relace tools
    assert analyze_call("grep_search", {"query": "x"}).category == "search"
    assert analyze_call("report_back", {}).category == "other"
    assert analyze_call("mystery_tool", {}).unknown == ("mystery_tool",)


def test_top_order():
    assert top(["read", "search"]) == "search"
    assert top(["other", "test", "read"]) == "test"
    assert top([]) == "other"
    assert CATEGORIES_BY_PRIORITY[0] == "edit" and CATEGORIES_BY_PRIORITY[-1] == "other"
    assert set(CATEGORIES_PLOT_ORDER) | {"delegate"} == set(CATEGORIES_BY_PRIORITY)  # one set of words, two orders


def test_code_writes():
    assert code_writes("with open(os.path.join(d, 'a.py'), 'w') as f: pass")
    assert code_writes("open(p, mode='a')")
    assert code_writes("shutil.move(a, b)")
    assert not code_writes("open(p).read()")
    assert not code_writes("open(p, 'rb')")
