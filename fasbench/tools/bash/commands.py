"""The allowlist of the read-only ``bash`` tool: per command, the options it may use (parsed as
the program parses them, :mod:`fasbench.tools.bash.options`) and what its operands are.

Operand roles (``OPERANDS``): ``paths`` (every operand is a file the program reads: resolved and
contained), ``pattern+paths`` (the first operand is a pattern unless a pattern option was given),
``script+paths`` (sed), ``strings`` (no file access: echo, basename, dirname, tr), ``none``,
``input`` (uniq: at most one file; a second operand would be written). Options that take a file
the program reads (``:p``) are contained like operands and may not be ``-`` (standard input).

Deliberately absent (refused because they are not listed): options that write (``sort -o``,
``tree -o``, ``file -C``, ``sed -i``), execute programs (``sort --compress-program``, ``rg
--pre``, ``rg -z``, ``git grep -O``, ``file -z``), follow symlinks (``-L``, ``--dereference*``,
``grep -R``, ``find -L``), read file names from a file or standard input (``--files0-from``,
``file -f``, ``find -files0-from``), or read other files (``file -m``, ``du -X``, ``grep
--exclude-from``, ``sort --random-source``, ``git blame --contents``).

sed scripts (:func:`sed_script_ok`) may hold printing commands only; they are read by a scanner
whose time is linear in the script's length.
"""

from __future__ import annotations

from fasbench.tools.bash.options import Spec, spec

_WRITES = "it writes files"
_EXEC = "it runs another program"
_FOLLOW = "it follows symlinks, which may lead out of the workspace"
_NAMES = "it reads file names from a file or standard input"
_READS = "it reads a file named in its value; give files as operands"
_WAITS = "it waits for the file to grow"

SPECS: dict[str, Spec] = {
    "ls": spec(
        "a|all A|almost-all l h|human-readable 1 R|recursive d|directory F classify:: p r|reverse S t X v U "
        "s|size i|inode n|numeric-uid-gid g o G|no-group Q|quote-name N|literal m x C b|escape q|hide-control-chars "
        "k|kibibytes c u f B|ignore-backups color:: group-directories-first full-time si sort: time: "
        "indicator-style: I|ignore: hide: w|width: T|tabsize: block-size: time-style: quoting-style: format: author",
        refused={
            "L": _FOLLOW,
            "dereference": _FOLLOW,
            "H": _FOLLOW,
            "dereference-command-line": _FOLLOW,
            "dereference-command-line-symlink-to-dir": _FOLLOW,
        },
    ),
    "cat": spec(
        "n|number b|number-nonblank s|squeeze-blank A|show-all E|show-ends T|show-tabs v|show-nonprinting e t u"
    ),
    "head": spec("n|lines: c|bytes: q|quiet|silent v|verbose z|zero-terminated"),
    "tail": spec(
        "n|lines: c|bytes: q|quiet|silent v|verbose z|zero-terminated",
        refused={
            "f": _WAITS,
            "F": _WAITS,
            "follow": _WAITS,
            "pid": _WAITS,
            "retry": _WAITS,
            "s": _WAITS,
            "sleep-interval": _WAITS,
        },
    ),
    "grep": spec(
        "i|ignore-case no-ignore-case y v|invert-match w|word-regexp x|line-regexp c|count l|files-with-matches "
        "L|files-without-match n|line-number h|no-filename H|with-filename o|only-matching q|quiet|silent "
        "s|no-messages r|recursive E|extended-regexp F|fixed-strings G|basic-regexp P|perl-regexp I a|text "
        "b|byte-offset T|initial-tab Z|null z|null-data U|binary line-buffered A|after-context: "
        "B|before-context: C|context: m|max-count: e|regexp: f|file:p include: exclude: exclude-dir: "
        "color|colour:: label: binary-files: d|directories: D|devices: no-group-separator group-separator:",
        refused={"R": _FOLLOW, "dereference-recursive": _FOLLOW, "exclude-from": _READS},
    ),
    "rg": spec(
        "i|ignore-case s|case-sensitive S|smart-case v|invert-match w|word-regexp x|line-regexp c|count "
        "count-matches l|files-with-matches files-without-match n|line-number N|no-line-number H|with-filename "
        "I|no-filename o|only-matching q|quiet F|fixed-strings P|pcre2 no-pcre2 U|multiline multiline-dotall "
        "A|after-context: B|before-context: C|context: m|max-count: e|regexp: f|file:p g|glob: iglob: "
        "t|type: T|type-not: type-list files .|hidden no-hidden no-ignore no-ignore-vcs no-ignore-dot "
        "no-ignore-exclude no-ignore-files no-ignore-global no-ignore-parent u|unrestricted a|text binary "
        "no-binary heading no-heading column no-column b|byte-offset trim vimgrep json 0|null null-data "
        "sort: sortr: d|max-depth: maxdepth: max-filesize: M|max-columns: max-columns-preview color: stats "
        "passthru r|replace: context-separator: no-context-separator field-match-separator: "
        "field-context-separator: j|threads: no-messages engine: crlf E|encoding: mmap no-mmap line-buffered "
        "block-buffered one-file-system p|pretty glob-case-insensitive include-zero no-unicode "
        "auto-hybrid-regex no-require-git debug",
        abbrev=False,
        refused={
            "pre": _EXEC,
            "pre-glob": _EXEC,
            "z": _EXEC,
            "search-zip": _EXEC,
            "hostname-bin": _EXEC,
            "L": _FOLLOW,
            "follow": _FOLLOW,
            "ignore-file": _READS,
            "type-add": "it changes file types",
        },
    ),
    "wc": spec("c|bytes m|chars l|lines L|max-line-length w|words total:", refused={"files0-from": _NAMES}),
    "sort": spec(
        "b|ignore-leading-blanks d|dictionary-order f|ignore-case g|general-numeric-sort h|human-numeric-sort "
        "i|ignore-nonprinting M|month-sort n|numeric-sort R|random-sort r|reverse V|version-sort c check:: "
        "C s|stable u|unique z|zero-terminated m|merge k|key: t|field-separator: S|buffer-size: parallel: "
        "sort: debug",
        refused={
            "o": _WRITES,
            "output": _WRITES,
            "T": _WRITES,
            "temporary-directory": _WRITES,
            "compress-program": _EXEC,
            "files0-from": _NAMES,
            "random-source": _READS,
        },
    ),
    "uniq": spec(
        "c|count d|repeated D all-repeated:: f|skip-fields: i|ignore-case s|skip-chars: u|unique "
        "z|zero-terminated w|check-chars: group::"
    ),
    "cut": spec(
        "b|bytes: c|characters: d|delimiter: f|fields: n complement s|only-delimited output-delimiter: "
        "z|zero-terminated"
    ),
    "nl": spec(
        "b|body-numbering: d|section-delimiter: f|footer-numbering: h|header-numbering: i|line-increment: "
        "l|join-blank-lines: n|number-format: p|no-renumber s|number-separator: v|starting-line-number: "
        "w|number-width:"
    ),
    "tree": spec(
        "a d f i x P: I: prune noreport L: filelimit: s h si du D F C n N Q p u g r t c U v dirsfirst "
        "charset: J X timefmt: matchdirs ignore-case gitignore",
        abbrev=False,
        refused={"l": _FOLLOW, "o": _WRITES, "R": _WRITES, "H": _WRITES, "fromfile": _NAMES},
    ),
    "file": spec(
        "b|brief i|mime mime-type mime-encoding k|keep-going h|no-dereference N|no-pad r|raw 0|print0 "
        "s|special-files E e|exclude: P|parameter: n|no-buffer F|separator: extension apple",
        refused={
            "m": _READS,
            "magic-file": _READS,
            "f": _NAMES,
            "files-from": _NAMES,
            "C": _WRITES,
            "compile": _WRITES,
            "z": _EXEC,
            "uncompress": _EXEC,
            "Z": _EXEC,
            "uncompress-noreport": _EXEC,
            "L": _FOLLOW,
            "dereference": _FOLLOW,
            "p": _WRITES,
            "preserve-date": _WRITES,
            "S": "it turns off file's own sandbox",
            "no-sandbox": "it turns off file's own sandbox",
        },
    ),
    "stat": spec("f|file-system c|format: printf: t|terse cached:", refused={"L": _FOLLOW, "dereference": _FOLLOW}),
    "du": spec(
        "a|all s|summarize h|human-readable c|total d|max-depth: b|bytes k m B|block-size: apparent-size "
        "x|one-file-system exclude: inodes 0|null S|separate-dirs si t|threshold: time:: time-style: "
        "l|count-links P|no-dereference",
        refused={
            "L": _FOLLOW,
            "dereference": _FOLLOW,
            "D": _FOLLOW,
            "H": _FOLLOW,
            "dereference-args": _FOLLOW,
            "X": _READS,
            "exclude-from": _READS,
            "files0-from": _NAMES,
        },
    ),
    "pwd": spec("L|logical P|physical"),
    "basename": spec("a|multiple s|suffix: z|zero"),
    "dirname": spec("z|zero"),
    "tr": spec("c|C|complement d|delete s|squeeze-repeats t|truncate-set1"),
    "sed": spec(
        "n|quiet|silent E|r|regexp-extended s|separate u|unbuffered z|null-data posix debug sandbox "
        "e|expression: l|line-length: b|binary",
        refused={"i": _WRITES, "in-place": _WRITES, "f": _READS, "file": _READS, "follow-symlinks": _FOLLOW},
    ),
}

OPERANDS = {
    "ls": "paths", "cat": "paths", "head": "paths", "tail": "paths", "grep": "pattern+paths",
    "rg": "pattern+paths", "wc": "paths", "sort": "paths", "uniq": "input", "cut": "paths", "nl": "paths",
    "tree": "paths", "file": "paths", "stat": "paths", "du": "paths", "pwd": "none", "basename": "strings",
    "dirname": "strings", "tr": "strings", "sed": "script+paths", "echo": "strings",
}  # fmt: skip

#: Options whose presence means the pattern is given by an option, not the first operand.
PATTERN_OPTS = {"regexp", "file", "files", "type-list"}

#: Programs that do not accept ``--`` before operands the way GNU tools do (not emitted).
NO_DASHDASH = {"echo"}

# ---------------------------------------------------------------- find

#: find's primaries and how many arguments each takes ("p": one argument that is a path).
FIND_PRIMARIES = {
    **dict.fromkeys(
        "-name -iname -path -ipath -wholename -iwholename -regex -iregex -regextype -type -size -mtime -mmin "
        "-atime -amin -ctime -cmin -perm -user -group -uid -gid -links -inum -maxdepth -mindepth -printf "
        "-lname -ilname -used".split(), 1),
    **dict.fromkeys("-newer -anewer -cnewer -samefile".split(), "p"),
    **dict.fromkeys(
        "-empty -depth -prune -print -print0 -ls -quit -true -false -readable -writable -executable -not ! "
        "( ) -a -and -o -or , -mount -xdev -noleaf -ignore_readdir_race -noignore_readdir_race -daystart "
        "-nouser -nogroup -nowarn -warn".split(), 0),
}  # fmt: skip
FIND_REFUSED = {
    "-exec": _EXEC, "-execdir": _EXEC, "-ok": _EXEC, "-okdir": _EXEC, "-delete": "it deletes files",
    "-fprint": _WRITES, "-fprint0": _WRITES, "-fprintf": _WRITES, "-fls": _WRITES, "-L": _FOLLOW,
    "-H": _FOLLOW, "-follow": _FOLLOW, "-xtype": _FOLLOW, "-files0-from": _NAMES,
}  # fmt: skip

# ---------------------------------------------------------------- git

#: a submodule's ``.git`` file and repository (its own config) may lie anywhere
_SUBMODULES = "it reads the submodules' repositories, which may lie outside the workspace"

GIT_SUBCOMMANDS = ("ls-files", "ls-tree", "log", "show", "grep", "diff", "blame", "rev-parse")

_GIT_DIFF = (
    "p|u|patch s|no-patch U|unified: output-indicator-new: output-indicator-old: output-indicator-context: raw "
    "patch-with-raw t z numstat shortstat dirstat:: cumulative dirstat-by-file:: summary patch-with-stat "
    "stat:: stat-width: stat-name-width: stat-count: stat-graph-width: compact-summary name-only name-status "
    "color:: no-color color-moved:: no-color-moved color-moved-ws: word-diff:: word-diff-regex: "
    "color-words:: no-renames rename-empty no-rename-empty check full-index binary abbrev:: B|break-rewrites:: "
    "M|find-renames:: C|find-copies:: find-copies-harder D|irreversible-delete l: diff-filter: S: G: "
    "find-object: pickaxe-all pickaxe-regex R text a ignore-cr-at-eol ignore-space-at-eol "
    "b|ignore-space-change w|ignore-all-space ignore-blank-lines I|ignore-matching-lines: inter-hunk-context: "
    "W|function-context exit-code quiet no-textconv no-ext-diff src-prefix: dst-prefix: "
    "no-prefix default-prefix line-prefix: ita-invisible-in-index relative:: no-relative minimal "
    "patience histogram anchored: diff-algorithm: indent-heuristic no-indent-heuristic"
)
_GIT_REV = (
    "n|max-count: skip: since: after: until: before: author: committer: grep: all-match invert-grep "
    "i|regexp-ignore-case E|extended-regexp F|fixed-strings P|perl-regexp merges no-merges min-parents: "
    "max-parents: first-parent all branches:: tags:: remotes:: exclude: reflog walk-reflogs "
    "merge boundary simplify-by-decoration full-history dense sparse simplify-merges ancestry-path "
    "date-order author-date-order topo-order reverse no-walk:: do-walk pretty:: format: abbrev-commit "
    "no-abbrev-commit oneline encoding: expand-tabs:: no-expand-tabs notes:: no-notes show-notes:: "
    "relative-date date: parents children left-right graph show-linear-break:: "
    "c cc dd m diff-merges: combined-all-paths follow decorate:: no-decorate decorate-refs: "
    "decorate-refs-exclude: source use-mailmap log-size L: remerge-diff"
)
GIT_SPECS: dict[str, Spec] = {
    "log": spec(_GIT_REV + " " + _GIT_DIFF),
    "show": spec(_GIT_REV + " " + _GIT_DIFF),
    "diff": spec(_GIT_DIFF + " cached staged merge-base"),
    "grep": spec(
        "cached untracked no-index exclude-standard no-exclude-standard a|text no-textconv "
        "i|ignore-case I max-depth: r|recursive w|word-regexp v|invert-match h H full-name E|extended-regexp "
        "G|basic-regexp P|perl-regexp F|fixed-strings n|line-number column l|files-with-matches|name-only "
        "L|files-without-match z|null o|only-matching c|count color:: no-color break heading p|show-function "
        "C|context: A|after-context: B|before-context: W|function-context m|max-count: threads: e: and or not "
        "all-match q|quiet",
        refused={"O": _EXEC, "open-files-in-pager": _EXEC, "f": _READS, "ext-grep": _EXEC},
    ),
    "blame": spec(
        "b root show-stats score-debug f|show-name n|show-number p|porcelain line-porcelain l t s e|show-email "
        "w L: M:: C:: reverse: first-parent encoding: date: abbrev:: c incremental minimal progress no-progress "
        "color-lines color-by-age",
        refused={"contents": _READS, "S": _READS, "ignore-revs-file": _READS},
    ),
    "ls-files": spec(
        "c|cached d|deleted m|modified o|others i|ignored s|stage u|unmerged k|killed directory no-empty-directory "
        "z t v f full-name abbrev:: debug eol deduplicate x|exclude: exclude-standard "
        "error-unmatch with-tree: sparse format:",
        refused={"X": _READS, "exclude-from": _READS, "exclude-per-directory": _READS},
    ),
    "ls-tree": spec("d r t l|long z name-only name-status object-only full-name full-tree abbrev:: format:"),
    "rev-parse": spec(
        "verify q|quiet short:: abbrev-ref:: symbolic symbolic-full-name all branches:: tags:: remotes:: "
        "show-toplevel show-prefix show-cdup is-inside-work-tree is-inside-git-dir is-bare-repository "
        "is-shallow-repository git-dir git-common-dir absolute-git-dir revs-only no-revs flags no-flags default: "
        "since: after: until: before: sq not"
    ),
}
for _n, _why in (("output", _WRITES), ("ext-diff", _EXEC), ("textconv", _EXEC), ("exec", _EXEC),
                 ("upload-pack", _EXEC), ("open-files-in-pager", _EXEC), ("contents", _READS), ("O", _READS),
                 ("no-index", "it compares files outside the repository"), ("show-signature", "it runs gpg"),
                 ("submodule", _SUBMODULES), ("ignore-submodules", _SUBMODULES),
                 ("recurse-submodules", _SUBMODULES)):  # fmt: skip
    for _s in GIT_SPECS.values():
        _s.refused.setdefault(_n, _why)
# (git diff --no-index compares any two files; git grep --no-index only searches the work tree.)

#: Flags the harness adds so that no diff driver or text conversion program runs and no
#: submodule's repository is read (the repository's config is checked too: fasbench/tools/bash/gitwall.py).
_NO_DRIVERS = ["--no-ext-diff", "--no-textconv", "--ignore-submodules=all"]
GIT_EXTRA = {"log": _NO_DRIVERS, "show": _NO_DRIVERS, "diff": _NO_DRIVERS, "grep": ["--no-textconv"],
             "blame": ["--no-textconv"]}  # fmt: skip

# ---------------------------------------------------------------- sed scripts

_SED_COMMANDS = set("pP=lqQdDnNgGhHxz{}")  # printing and flow commands; no w, W, e, r, R, s///w, s///e
_SED_S_FLAGS = set("gpiI0123456789")


def _space(s: str, i: int) -> int:
    while i < len(s) and s[i].isspace():
        i += 1
    return i


def _digits(s: str, i: int) -> int:
    j = i
    while j < len(s) and "0" <= s[j] <= "9":
        j += 1
    return j


def _delimited(s: str, i: int) -> int | None:
    """The end of ``/text/`` starting at ``s[i] == '/'`` (backslash escapes any character, an
    unescaped newline ends nothing), or None."""
    i += 1
    while i < len(s):
        c = s[i]
        if c == "\\":
            if i + 1 >= len(s):
                return None
            i += 2
        elif c == "/":
            return i + 1
        elif c == "\n":
            return None
        else:
            i += 1
    return None


def _address(s: str, i: int) -> int | None:
    """The end of an address at ``i`` (``N``, ``N~S``, ``$``, ``/re/`` with ``I``/``M``), or None."""
    if i >= len(s):
        return None
    if s[i] == "$":
        return i + 1
    if s[i] == "/":
        j = _delimited(s, i)
        while j is not None and j < len(s) and s[j] in "IM":
            j += 1
        return j
    j = _digits(s, i)
    if j == i:
        return None
    if j < len(s) and s[j] == "~":
        k = _digits(s, j + 1)
        return k if k > j + 1 else j
    return j


def _command(s: str, i: int) -> int | None:
    """The end of one allowed command letter (or ``s/re/text/flags``) at ``i``, or None."""
    if i >= len(s):
        return None
    if s[i] in _SED_COMMANDS:
        return i + 1
    if s[i] == "s" and i + 1 < len(s) and s[i + 1] == "/":
        j = _delimited(s, i + 1)
        j = None if j is None else _delimited(s, j - 1)
        while j is not None and j < len(s) and s[j] in _SED_S_FLAGS:
            j += 1
        return j
    return None


def _sed_one(s: str, i: int) -> int | None:
    """The end of one (possibly empty) command at ``i``: ``[addr[,addr2]] [!] [command]``;
    whitespace after the address or ``!`` belongs to it only when something follows. None when
    an address range is left unfinished."""
    j = _address(s, i)
    if j is not None:
        k = _space(s, j)
        if k < len(s) and s[k] == ",":
            k = _space(s, k + 1)
            e = _address(s, k)
            if e is None and k < len(s) and s[k] in "+~":
                e = _digits(s, k + 1)
                e = e if e > k + 1 else None
            if e is None:
                return None
            j = e
        i = j
    k = _space(s, i)
    if k < len(s) and s[k] == "!":
        i = k + 1
    e = _command(s, _space(s, i))
    return i if e is None else e


def sed_script_ok(s: str) -> bool:
    """Whether ``s`` is a sed script of printing commands only: commands separated by ``;`` or
    newlines, each ``[addr[,addr2]][!]cmd`` with ``cmd`` one of ``p P = l q Q d D n N g G h H x z
    { }`` or ``s/re/text/`` with flags ``g p i I`` and digits (no ``w``, ``W``, ``e``, ``r``,
    ``R``). A single left-to-right scan: its time is linear in the script's length (a regular
    expression with nested optional blanks took minutes on 200 blanks)."""
    i = _space(s, 0)
    while True:
        e = _sed_one(s, i)
        if e is None:
            return False
        k = e
        sep = False
        while k < len(s) and (s[k].isspace() or (s[k] == ";" and not sep)):
            sep = sep or s[k] in ";\n"
            k += 1
        if k >= len(s):
            return True
        if not sep or k == e:
            return False
        i = k
