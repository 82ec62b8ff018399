"""The small repository and the calls of tests/data/fastcontext_release/ (the recorded outputs of
Microsoft's released FastContext tools): shared by the recorder (record.py there, run with the
release's code) and tests/test_fastcontext_release.py (run with fasbench's). Plain Python, no
fasbench import, so the release's own interpreter can run it."""

from __future__ import annotations

from pathlib import Path

AUTH = """import os


def check(user):
    return user.token is not None


def login(user):
    # login checks the token
    if not check(user):
        raise PermissionError("login failed")
    return user


class Auth:
    TOKEN_TTL = 3600

    def refresh(self, user):
        return login(user)
"""


def build(root: Path) -> Path:
    """Write the repository under ``root`` (a few files: long lines, many matches, nested
    directories, a binary file, odd line ends) and return it."""

    def w(rel: str, data: str | bytes) -> None:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))

    w("README.md", "# demo\nlogin docs\n")
    w("src/pkg/__init__.py", "")
    w("src/pkg/auth.py", AUTH)
    w("src/pkg/util.py", "def helper():\n    return 'login'\n")
    w(
        "src/long_lines.py",
        "short = 1\n" + "a" * 600 + "\n" + "b" * 1999 + "\n" + "c" * 2000 + "\n" + "d" * 2500 + " login\n" + "e" * 2100,
    )  # no final newline
    w("big.txt", "".join(f"line {i} login\n" for i in range(1, 2301)))
    w("nested/a/b/c/deep.py", "DEEP = 'login'\n")
    w("nested/a/b/other.txt", "nothing here\n")
    w("empty.txt", "")
    w("notail.txt", "first\nlast login")
    w("crlf.txt", b"one\r\nlogin here\r\nthree\r\n")
    w("formfeed.py", b"x = 1\n\x0clogin = 2\nlogin = 3\nlogin = 4\n")
    w("latin1.txt", b"caf\xe9 login\n")
    w("bin/image.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR login\x00\x01")
    w("bin/nul.dat", b"head\x00tail\nlogin\n")
    w(".hidden.py", "login = 'hidden'\n")
    for i in range(120):
        w(f"many/f{i:03d}.py", f"N = {i}\n")
    return root


R = "/repo"

#: (name, tool, arguments); ``/repo`` stands for the workspace path. ``order``: the release printed
#: ripgrep's unsorted order, so these outputs are compared as sets of lines / file groups.
CASES = [
    # Read
    ("read_whole", "Read", {"path": f"{R}/src/pkg/auth.py"}),
    ("read_relative", "Read", {"path": "src/pkg/auth.py"}),
    ("read_offset_limit", "Read", {"path": f"{R}/src/pkg/auth.py", "offset": 8, "limit": 3}),
    ("read_offset_beyond_end", "Read", {"path": f"{R}/src/pkg/auth.py", "offset": 50}),
    ("read_offset_beyond_end_limit", "Read", {"path": f"{R}/src/pkg/auth.py", "offset": 50, "limit": 5}),
    ("read_offset_zero", "Read", {"path": f"{R}/src/pkg/util.py", "offset": 0}),
    ("read_offset_negative", "Read", {"path": f"{R}/src/pkg/auth.py", "offset": -2}),
    ("read_offset_negative_limit", "Read", {"path": f"{R}/src/pkg/auth.py", "offset": -5, "limit": 2}),
    ("read_limit_zero", "Read", {"path": f"{R}/src/pkg/auth.py", "limit": 0}),
    ("read_limit_minus_one", "Read", {"path": f"{R}/src/pkg/auth.py", "limit": -1}),
    ("read_limit_negative", "Read", {"path": f"{R}/src/pkg/auth.py", "limit": -3}),
    ("read_long_lines", "Read", {"path": f"{R}/src/long_lines.py"}),
    ("read_2000_line_cut", "Read", {"path": f"{R}/big.txt"}),
    ("read_2000_line_cut_offset", "Read", {"path": f"{R}/big.txt", "offset": 200, "limit": 2050}),
    ("read_tail", "Read", {"path": f"{R}/big.txt", "offset": 2298}),
    ("read_empty", "Read", {"path": f"{R}/empty.txt"}),
    ("read_missing", "Read", {"path": f"{R}/nope.py"}),
    ("read_empty_path", "Read", {"path": ""}),
    ("read_directory", "Read", {"path": f"{R}/src"}),
    ("read_binary_png", "Read", {"path": f"{R}/bin/image.png"}),
    ("read_nul_bytes", "Read", {"path": f"{R}/bin/nul.dat"}),
    ("read_crlf", "Read", {"path": f"{R}/crlf.txt"}),
    ("read_no_final_newline", "Read", {"path": f"{R}/notail.txt"}),
    ("read_latin1", "Read", {"path": f"{R}/latin1.txt"}),
    ("read_formfeed", "Read", {"path": f"{R}/formfeed.py"}),
    # Glob
    ("glob_default_dir", "Glob", {"pattern": "*.py"}),
    ("glob_dir", "Glob", {"pattern": "**/*.py", "directory": f"{R}/src"}),
    ("glob_dir_trailing_slash", "Glob", {"pattern": "*.py", "directory": f"{R}/nested/"}),
    ("glob_relative_dir", "Glob", {"pattern": "*.py", "directory": "src/pkg"}),
    ("glob_path_pattern", "Glob", {"pattern": "src/**/*.py"}),
    ("glob_no_match", "Glob", {"pattern": "*.rs"}),
    ("glob_truncated", "Glob", {"pattern": "*.py", "directory": f"{R}/many"}),
    ("glob_missing_dir", "Glob", {"pattern": "*", "directory": f"{R}/nope"}),
    ("glob_file_as_dir", "Glob", {"pattern": "*", "directory": f"{R}/README.md"}),
    ("glob_outside", "Glob", {"pattern": "*", "directory": "/etc"}),
    ("glob_bad_pattern", "Glob", {"pattern": "{a"}),
    # Grep
    ("grep_no_mode_dir", "Grep", {"pattern": "login", "path": f"{R}/src"}),
    ("grep_no_mode_file", "Grep", {"pattern": "login", "path": f"{R}/src/pkg/auth.py"}),
    (
        "grep_content_forced_context",
        "Grep",
        {"pattern": "login", "path": f"{R}/src/pkg/auth.py", "output_mode": "content"},
    ),
    ("grep_content_dir", "Grep", {"pattern": "TOKEN_TTL|helper", "path": f"{R}/src", "output_mode": "content"}),
    (
        "grep_content_C0",
        "Grep",
        {"pattern": "login", "path": f"{R}/src/pkg/auth.py", "output_mode": "content", "-C": 0},
    ),
    (
        "grep_content_A1_overridden",
        "Grep",
        {"pattern": "class Auth", "path": f"{R}/src/pkg/auth.py", "output_mode": "content", "-A": 1},
    ),
    (
        "grep_content_B1_C0",
        "Grep",
        {"pattern": "class Auth", "path": f"{R}/src/pkg/auth.py", "output_mode": "content", "-B": 1, "-C": 0},
    ),
    (
        "grep_content_no_numbers",
        "Grep",
        {"pattern": "login", "path": f"{R}/src/pkg/auth.py", "output_mode": "content", "-n": False, "-C": 0},
    ),
    ("grep_files_with_matches", "Grep", {"pattern": "login", "path": f"{R}/src", "output_mode": "files_with_matches"}),
    ("grep_count", "Grep", {"pattern": "login", "path": f"{R}/src/pkg", "output_mode": "count"}),
    ("grep_count_file", "Grep", {"pattern": "login", "path": f"{R}/src/pkg/auth.py", "output_mode": "count"}),
    ("grep_default_cap", "Grep", {"pattern": "login", "path": f"{R}/big.txt"}),
    ("grep_content_cap", "Grep", {"pattern": "login", "path": f"{R}/big.txt", "output_mode": "content"}),
    ("grep_head_limit_5", "Grep", {"pattern": "login", "path": f"{R}/big.txt", "head_limit": 5}),
    ("grep_head_limit_150", "Grep", {"pattern": "login", "path": f"{R}/big.txt", "head_limit": 150}),
    ("grep_head_limit_0", "Grep", {"pattern": "login", "path": f"{R}/big.txt", "head_limit": 0}),
    ("grep_head_limit_float", "Grep", {"pattern": "login", "path": f"{R}/big.txt", "head_limit": 5.0}),
    ("grep_head_limit_float_no_cut", "Grep", {"pattern": "TOKEN", "path": f"{R}/src/pkg/auth.py", "head_limit": 5.0}),
    (
        "grep_head_limit_content",
        "Grep",
        {"pattern": "login", "path": f"{R}/src/pkg/auth.py", "output_mode": "content", "head_limit": 4},
    ),
    ("grep_ignore_case", "Grep", {"pattern": "LOGIN FAILED", "path": f"{R}/src", "-i": True}),
    ("grep_type", "Grep", {"pattern": "login", "path": f"{R}/nested", "type": "py"}),
    ("grep_glob", "Grep", {"pattern": "login", "path": f"{R}/nested", "glob": "*.txt"}),
    (
        "grep_multiline",
        "Grep",
        {
            "pattern": r"class Auth:\s+TOKEN",
            "path": f"{R}/src/pkg/auth.py",
            "multiline": True,
            "output_mode": "content",
            "-C": 0,
        },
    ),
    ("grep_no_match", "Grep", {"pattern": "zzz_none", "path": f"{R}/src"}),
    ("grep_bad_regex", "Grep", {"pattern": "(", "path": f"{R}/src"}),
    ("grep_bad_type", "Grep", {"pattern": "x", "path": f"{R}/src", "type": "nosuchtype"}),
    (
        "grep_float_context",
        "Grep",
        {"pattern": "login", "path": f"{R}/src/pkg/auth.py", "output_mode": "content", "-C": 2.0},
    ),
    ("grep_missing_path", "Grep", {"pattern": "x", "path": f"{R}/nope"}),
    ("grep_outside", "Grep", {"pattern": "x", "path": "/etc"}),
    ("grep_relative_path", "Grep", {"pattern": "helper", "path": "src/pkg"}),
    ("grep_crlf", "Grep", {"pattern": "login", "path": f"{R}/crlf.txt", "output_mode": "content", "-C": 1}),
    ("grep_formfeed_cut", "Grep", {"pattern": "login", "path": f"{R}/formfeed.py", "head_limit": 2}),
    ("grep_latin1", "Grep", {"pattern": "login", "path": f"{R}/latin1.txt"}),
    ("grep_binary_file", "Grep", {"pattern": "login", "path": f"{R}/bin/image.png"}),
    ("grep_binary_in_dir", "Grep", {"pattern": "login", "path": f"{R}/bin", "output_mode": "files_with_matches"}),
    (
        "grep_long_line",
        "Grep",
        {"pattern": "login", "path": f"{R}/src/long_lines.py", "output_mode": "content", "-C": 0},
    ),
]

#: Cases whose release output lists several files in ripgrep's parallel (unsorted) order.
UNORDERED = {
    "glob_default_dir",
    "glob_dir",
    "glob_dir_trailing_slash",
    "glob_relative_dir",
    "glob_path_pattern",
    "grep_no_mode_dir",
    "grep_content_dir",
    "grep_files_with_matches",
    "grep_count",
    "grep_ignore_case",
    "grep_relative_path",
    "grep_binary_in_dir",
    "glob_truncated",
}
