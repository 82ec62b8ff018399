"""Gold from real SWE-bench patches (line ranges checked by hand) and relocation onto shifted trees."""

import subprocess
from pathlib import Path

import pytest

from fasbench.data import swebench
from fasbench.data.patches import PatchError, parse_diff, relocate


@pytest.fixture(scope="module")
def by_id():
    return {t.id: t for t in swebench.tasks("swebench-lite") + swebench.tasks("swebench-verified")}


def test_counts_and_edited_files_equal_patch_files(by_id):
    lite, ver = swebench.tasks("swebench-lite"), swebench.tasks("swebench-verified")
    assert len(lite) == 300 and len(ver) == 500
    for t in lite + ver:
        files = {
            ln[len("diff --git a/") :].split(" b/")[0]
            for ln in t.meta["patch"].splitlines()
            if ln.startswith("diff --git")
        }
        assert set(t.gold.edited) == files, t.id
        assert set(t.gold.variants) == {"hunk", "changed"}
        assert t.gold.edited == t.gold.variants["hunk"]
    assert all(t.meta.get("difficulty") for t in ver)
    both = [t for t in ver if t.meta["sets"] == ["lite", "verified"]]
    assert len(both) == 93


def test_hand_checked_modification(by_id):
    # django-15202: hunk @@ -108,15 @@ inserts after line 110 and removes 116-119; two one-line edits.
    t = by_id["django__django-15202"]
    assert t.gold.variants["hunk"] == {"django/core/validators.py": [[108, 122], [127, 133], [139, 145]]}
    assert t.gold.variants["changed"] == {"django/core/validators.py": [[110, 110], [116, 119], [130, 130], [142, 142]]}


def test_hand_checked_pure_insertion(by_id):
    # requests-1921: @@ -59,6 +59,8 @@ adds two lines after old line 61 (the blank line).
    t = by_id["psf__requests-1921"]
    assert t.gold.variants["hunk"] == {"requests/sessions.py": [[59, 64]]}
    assert t.gold.variants["changed"] == {"requests/sessions.py": [[61, 61]]}


def test_created_file_has_no_line_gold(by_id):
    t = by_id["astropy__astropy-13398"]
    new = "astropy/coordinates/builtin_frames/itrs_observed_transforms.py"
    assert t.gold.edited[new] == [] and t.gold.variants["changed"][new] == []
    assert all(r for p, r in t.gold.edited.items() if p != new)


def test_bad_diff_is_a_clear_error():
    with pytest.raises(PatchError, match="empty diff"):
        parse_diff("   ")
    with pytest.raises(PatchError):
        parse_diff("this is not a diff\n")


def _old_tree(tmp_path: Path, task) -> Path:
    """Reconstruct the gold file's old text from its hunks only (enough lines to hold them)."""
    files = parse_diff(task.meta["patch"])
    root = tmp_path / "tree"
    for f in files:
        if f.created:
            continue
        n = max(h.source_start + h.source_length for h in f.hunks) + 5
        lines = [f"filler line {i}" for i in range(1, n + 1)]
        for h in f.hunks:
            lines[h.source_start - 1 : h.source_start - 1 + len(h.old_lines)] = h.old_lines
        p = root / f.path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("\n".join(lines) + "\n")
    return root


def test_relocation_exact_then_shifted(tmp_path, by_id):
    t = by_id["django__django-15202"]
    root = _old_tree(tmp_path, t)
    rel = relocate(parse_diff(t.meta["patch"]), root)
    assert rel.status == "clean" and rel.variants == t.gold.variants
    # insert 7 lines at the top: every range moves down by 7 ("offset")
    p = root / "django/core/validators.py"
    p.write_text("".join(f"# new {i}\n" for i in range(7)) + p.read_text())
    rel = relocate(parse_diff(t.meta["patch"]), root)
    assert rel.status == "offset" and rel.offsets == {"django/core/validators.py": [7, 7, 7]}
    assert rel.variants["hunk"]["django/core/validators.py"] == [[115, 129], [134, 140], [146, 152]]
    assert rel.variants["changed"]["django/core/validators.py"] == [[117, 117], [123, 126], [137, 137], [149, 149]]
    # the relocated ranges hold the same text as the original ones
    lines = p.read_text().splitlines()
    files = parse_diff(t.meta["patch"])
    for h, (s, e) in zip(files[0].hunks, rel.variants["hunk"]["django/core/validators.py"]):
        assert lines[s - 1 : e] == h.old_lines


def test_relocation_agrees_with_gnu_patch(tmp_path, by_id):
    t = by_id["django__django-15202"]
    root = _old_tree(tmp_path, t)
    p = root / "django/core/validators.py"
    text = p.read_text().splitlines(keepends=True)
    text.insert(125, "# between hunks 1 and 2\n")  # hunk 1 stays, hunks 2 and 3 shift by 1
    p.write_text("# top\n" * 3 + "".join(text))
    rel = relocate(parse_diff(t.meta["patch"]), root)
    assert rel.offsets["django/core/validators.py"] == [3, 4, 4]
    out = subprocess.run(
        ["patch", "-p1", "--dry-run", "-f"], input=t.meta["patch"], cwd=root, text=True, capture_output=True
    ).stdout
    assert "offset 3 lines" in out and "offset 4 lines" in out


def test_relocation_fuzz_missing_and_applied(tmp_path, by_id):
    t = by_id["psf__requests-1921"]
    files = parse_diff(t.meta["patch"])
    root = _old_tree(tmp_path, t)
    p = root / "requests/sessions.py"
    lines = p.read_text().splitlines()
    lines[58] = "        if v is None:  # first context line changed"
    p.write_text("\n".join(lines) + "\n")
    rel = relocate(files, root)
    assert rel.status == "fuzz" and rel.max_fuzz == 1
    assert rel.variants["hunk"]["requests/sessions.py"] == [[59, 64]]
    # the fix already in the tree
    hunk = files[0].hunks[0]
    p.write_text("\n".join(["x"] * 58 + hunk.new_lines + ["y"] * 5) + "\n")
    assert relocate(files, root).status == "already-applied"
    # the gold file is missing
    p.unlink()
    rel = relocate(files, root)
    assert rel.status == "file-missing" and "requests/sessions.py" in rel.detail and not rel.located
    # unrelated content: the hunk cannot be found
    p.write_text("nothing\nto see\n")
    assert relocate(files, root).status == "hunk-not-found"


def test_git_quoted_file_names_are_unquoted(tmp_path):
    """git writes a name with a control character, a quote or a non-ASCII byte in double quotes with C
    escapes; the gold names the file itself (red team of issue 36: the quoted form named a missing file)."""
    names = ["a\nnew.py", 'q"uote.py', "café.py", "back\\slash.py", "plain.py"]
    env = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}

    def git(*a):
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *a],
            cwd=tmp_path / "r",
            env=env,
            check=True,
            capture_output=True,
        ).stdout.decode()

    (tmp_path / "r").mkdir()
    git("init", "-q")
    for n in names:
        (tmp_path / "r" / n).write_text("one\ntwo\n")
    git("add", "-A")
    git("commit", "-qm", "base")
    for n in names:
        (tmp_path / "r" / n).write_text("one\nTWO\n")
    diff = git("diff")
    assert '"a/a\\nnew.py"' in diff  # git quotes it
    files = parse_diff(diff)
    assert sorted(f.path for f in files) == sorted(names)
    assert all(f.hunks for f in files)
