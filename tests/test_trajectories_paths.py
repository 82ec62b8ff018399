"""The one agent-path normaliser and the three strictnesses its callers keep (trajectories/agent_paths.py)."""

import pytest

from fasbench.trajectories.agent_paths import ROOT, agent_path


@pytest.mark.parametrize(
    "path, cwd, file, any_, text",
    [
        ("/testbed/./a/../b.py", ROOT, "b.py", "b.py", "a/../b.py"),  # only `text` leaves the path unresolved
        ("x.py", "/testbed/pkg", "pkg/x.py", "pkg/x.py", "x.py"),  # `text` ignores the cd
        ("'x.py',", ROOT, "x.py", "'x.py',", "x.py',"),  # quotes and `,;` stripped by `file` only
        ("/tmp/x.py", ROOT, None, None, "/tmp/x.py"),  # outside: None, but `text` keeps it (temp-file test)
        (".", ROOT, None, ".", "."),  # the root: `any` says "."
        ("src", ROOT, None, "src", "src"),  # no suffix: not a file for `file`
        ("Makefile", ROOT, "Makefile", "Makefile", "Makefile"),
        (".git/config", ROOT, None, ".git/config", ".git/config"),  # hidden: `file` leaves it out
        ("*.py", ROOT, None, "*.py", "*.py"),
    ],
)
def test_three_kinds(path, cwd, file, any_, text):
    assert agent_path(path, cwd) == file
    assert agent_path(path, cwd, "any") == any_
    assert agent_path(path, cwd, "text") == text


def test_unknown_kind_is_a_named_error():
    with pytest.raises(ValueError, match="unknown kind 'strict'"):
        agent_path("a.py", ROOT, "strict")
