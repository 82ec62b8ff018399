"""What the consumers of fasbench.shell make of lines the previous parsers got wrong (quoted heredoc
delimiters made bashlex fall back to a line split that ran heredoc bodies as commands)."""

import pytest

from fasbench.e2e.looked import Look, call_looks
from fasbench.sft.reference import Unconvertible, convert_actions, pipelines
from fasbench.tools import calls_for, tool_kind
from fasbench.trajectories.raw import ShellCall
from fasbench.trajectories.viewed import viewing

SCRIPT = """cat <<'EOF' > repro.sh
#!/bin/bash
mkdir -p proj && cd proj
echo "x = 1" >> source/conf.py
grep -n "#:" _build/index.pot
EOF
chmod +x repro.sh"""


def test_a_heredoc_body_is_not_run_when_written():
    v = viewing([ShellCall(SCRIPT, ""), ShellCall("cat proj/source/conf.py", "x = 1")], {"pkg/mod.py"})
    assert "proj/_build/index.pot" not in v.displayed  # only written, never shown
    assert "proj/source/conf.py" in v.written and "proj/source/conf.py" not in v.displayed  # the script writes it
    assert call_looks("cat <<'EOF' > notes/a.py\nprint(1)\nEOF", "") == []  # writing is not displaying


def test_a_written_file_is_resolved_where_it_was_written():
    """A redirect target is resolved in its own command's directory, not in the last command's (was: the
    last ``cd``'s, so a write to ./a.py hid a display of sub/a.py)."""
    assert call_looks("echo hi > a.py; cd sub && cat a.py", "") == [Look("sub/a.py", None, "display")]
    assert call_looks("cat a.py; cd sub && echo hi > a.py", "") == [Look("a.py", None, "display")]
    assert call_looks("cd sub && echo hi > a.py; cat a.py", "") == []  # cd carries over to the later command


def test_unterminated_heredoc_swallows_the_rest():
    cmd = "cat > f.py.fix << 'EOF'\n# look\nsed -n '760,780p' /testbed/f.py"
    assert call_looks(cmd, "") == []  # bash reads the sed line as heredoc text
    assert call_looks("sed -n '760,780p' /testbed/f.py", "") == [Look("f.py", ((760, 780),), "display")]


@pytest.mark.parametrize(
    "cmd,why",
    [
        ("for f in a.py b.py; do cat $f; done", "for"),
        ("cd src && (grep -n x y.py)", "(subshell)"),
        ("cat $(find . -name x.py)", "$(...)"),
        ("cat <<EOF > x\ny\nEOF", "cat (heredoc)"),
        ("grep 'unbalanced x.py", "unparsable command"),
    ],
)
def test_reference_refuses_what_a_call_cannot_express(cmd, why):
    with pytest.raises(Unconvertible, match=f"^{why.replace('(', '[(]').replace(')', '[)]').replace('$', '[$]')}$"):
        pipelines(cmd)


def test_reference_pipelines_and_calls():
    assert pipelines('ls -R | grep ":$" | head -n 5 && cat a.py 2>/dev/null') == [
        [["ls", "-R"], ["grep", ":$"], ["head", "-n", "5"]],
        [["cat", "a.py"]],
    ]
    conv = convert_actions(
        [type("A", (), {"command": "sed -n '5,9p' a.py && grep -rn 'x y' src", "output": ""})()], "fastcontext"
    )
    fc = calls_for("fastcontext")
    assert conv.turns == [[as_dict(fc.read("", "a.py", 5, 9)), as_dict(fc.search("", "x y", None, path="src"))]]


def as_dict(c):
    return {"name": c.name, "arguments": c.arguments}


def test_tool_calls_of_a_kind():
    rel, fc = calls_for("relace"), calls_for("fastcontext")
    assert tool_kind("relace", rel.read("", "a.py", 1, 2).name) == "read"
    assert tool_kind("fastcontext", fc.search("", "x", path=".").name) == "search"
    assert tool_kind("relace", rel.list_dir("", "src").name) == "list"
    assert rel.read("", "a.py", 3, None).arguments == {"path": "a.py", "view_range": [3, -1]}
    assert rel.search("", "x", None, path="src/a.py").arguments["include_pattern"] == "src/a.py"
    assert fc.find("", "x.py", "src").arguments == {"pattern": "**/x.py", "directory": "src"}  # find is recursive
    assert tool_kind("relace", "no_such_tool") is None
    with pytest.raises(ValueError, match="tool set"):
        calls_for("nope")
