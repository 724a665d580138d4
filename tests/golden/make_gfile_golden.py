#!/usr/bin/env python3
"""What tf.io.gfile does, recorded for lockstep::io::gfile: tests/golden/gfile_golden.json.

Each scenario builds a few files, directories and links in a fresh temporary directory, runs one tf.io.gfile call
(or a GFile and a list of its methods) there with relative paths, and records its outcome -- the value, or the
class of the error -- and the tree left behind. tests/core/gfile_test.cc runs the same scenarios on lockstep. Where
lockstep deliberately differs, the scenario carries "lockstep": the fields that differ and why; this script checks
that TF still differs there. Scenarios marked non_root need permissions to mean something: run as root, they run
in a child process as user nobody (65534).

Listing order is the directory's own in TF (arbitrary); the script sorts listdir, glob and each walk entry's names
(lockstep sorts them itself), and walk scenarios have at most one subdirectory per directory so that TF's visiting
order is fixed. Directory sizes depend on the file system: stat records a directory's length as null.

Generated with TensorFlow 2.21.0 (tensorflow-cpu wheel, Python 3.11). Rerun from the source root:
    /work/main/build/venv/bin/python3 tests/golden/make_gfile_golden.py
(or any virtualenv with tensorflow-cpu). A rerun writes the same file.
"""
import json
import os
import shutil
import sys
import tempfile
import traceback

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NOBODY = 65534

SCENARIOS = []


def scenario(name, op, *args, files=None, dirs=(), links=None, modes=None, non_root=False, lockstep=None):
    """op and args as gfile takes them; files {path: contents}, dirs [path], links {path: target}, modes {path:
    permission bits} set last; lockstep {error|value|after: ..., why: ...} where lockstep deliberately differs."""
    SCENARIOS.append(dict(name=name, op=op, args=list(args), setup=dict(files=files or {}, dirs=list(dirs),
                                                                        links=links or {}, modes=modes or {}),
                          non_root=non_root, lockstep=lockstep))


TREE = dict(files={"f": "hello\n", "d/a.txt": "A", "d/e/b.txt": "B"}, dirs=["empty"])
# TREE as the scenario's tree records it, for a call that should leave it as it was.
TREE_AFTER = {"d/": None, "d/a.txt": "A", "d/e/": None, "d/e/b.txt": "B", "empty/": None, "f": "hello\n"}
TEXT = "one\ntwo\nthree"

# exists / isdir
scenario("exists_file", "exists", "f", **TREE)
scenario("exists_dir", "exists", "d", **TREE)
scenario("exists_missing", "exists", "nope", **TREE)
scenario("exists_under_a_file", "exists", "f/x", **TREE)
scenario("exists_dangling_link", "exists", "ln", links={"ln": "nope"})
scenario("exists_empty_path", "exists", "")
scenario("exists_cleaned_path", "exists", "nope/../d/", **TREE)
scenario("exists_in_unsearchable_dir", "exists", "closed/f", files={"closed/f": "c"}, modes={"closed": 0o000},
         non_root=True)
scenario("isdir_dir", "isdir", "d", **TREE)
scenario("isdir_file", "isdir", "f", **TREE)
scenario("isdir_missing", "isdir", "nope", **TREE)
scenario("isdir_link_to_dir", "isdir", "ln", dirs=["d"], links={"ln": "d"})

# makedirs / mkdir
scenario("makedirs_new", "makedirs", "a/b/c", **TREE)
scenario("makedirs_existing_dir", "makedirs", "d/e", **TREE)
scenario("makedirs_over_file", "makedirs", "f", **TREE)
scenario("makedirs_under_file", "makedirs", "f/a/b", **TREE)
scenario("makedirs_dotdot_is_lexical", "makedirs", "m/../n/o")
scenario("makedirs_trailing_slash", "makedirs", "p/q/")
scenario("makedirs_empty_path", "makedirs", "")
scenario("makedirs_in_readonly_dir", "makedirs", "ro/q/r", dirs=["ro"], modes={"ro": 0o555}, non_root=True)
scenario("makedirs_existing_in_readonly_dir", "makedirs", "ro/sub", dirs=["ro/sub"], modes={"ro": 0o555},
         non_root=True)
scenario("mkdir_new", "mkdir", "new", **TREE)
scenario("mkdir_existing_dir", "mkdir", "d", **TREE)
scenario("mkdir_over_file", "mkdir", "f", **TREE,
         lockstep=dict(error="FailedPreconditionError",
                       why="TF reports success and leaves a file where the caller asked for a directory"))
scenario("mkdir_missing_parent", "mkdir", "x/y", **TREE)
scenario("mkdir_under_file", "mkdir", "f/y", **TREE)
scenario("mkdir_empty_path", "mkdir", "")
scenario("mkdir_in_readonly_dir", "mkdir", "ro/q", dirs=["ro"], modes={"ro": 0o555}, non_root=True)

# rmtree / remove
scenario("rmtree_tree", "rmtree", "d", **TREE)
scenario("rmtree_file", "rmtree", "f", **TREE)
scenario("rmtree_missing", "rmtree", "nope", **TREE)
scenario("rmtree_empty_path", "rmtree", "", **TREE)
scenario("rmtree_trailing_slash", "rmtree", "d/", **TREE)
scenario("rmtree_readonly_file_inside", "rmtree", "d", files={"d/r": "r"}, modes={"d/r": 0o444})
scenario("rmtree_dangling_link", "rmtree", "ln", links={"ln": "nope"})
scenario("rmtree_link_inside_is_not_followed", "rmtree", "d", files={"d/x": "x", "keep/k": "k"},
         links={"d/ln": "../keep"},
         lockstep=dict(value=None, after={"keep/": None, "keep/k": "k"},
                       why="TF follows the link, deletes keep/k outside the tree, then fails on the link"))
scenario("rmtree_link_to_dir_deletes_the_link", "rmtree", "ln", files={"keep/k": "k"}, links={"ln": "keep"},
         lockstep=dict(value=None, after={"keep/": None, "keep/k": "k"},
                       why="TF empties the target through the link, then fails to rmdir the link"))
scenario("rmtree_in_readonly_dir", "rmtree", "ro/sub", files={"ro/sub/x": "x"}, modes={"ro": 0o555},
         non_root=True)
scenario("rmtree_unreadable_dir", "rmtree", "closed", files={"closed/f": "c"}, modes={"closed": 0o000},
         non_root=True)
scenario("remove_file", "remove", "f", **TREE)
scenario("remove_missing", "remove", "nope", **TREE)
scenario("remove_dir", "remove", "empty", **TREE)
scenario("remove_empty_path", "remove", "")
scenario("remove_dangling_link", "remove", "ln", links={"ln": "nope"})
scenario("remove_proc_file", "remove", "/proc/version")
scenario("remove_in_readonly_dir", "remove", "ro/f", files={"ro/f": "x"}, modes={"ro": 0o555}, non_root=True)

# rename / copy
scenario("rename_file", "rename", "f", "g", False, **TREE)
scenario("rename_missing", "rename", "nope", "g", False, **TREE)
scenario("rename_onto_file", "rename", "d/a.txt", "f", False, **TREE)
scenario("rename_onto_file_overwrite", "rename", "d/a.txt", "f", True, **TREE)
scenario("rename_missing_onto_file", "rename", "nope", "f", False, **TREE)
scenario("rename_file_onto_dir", "rename", "f", "empty", False, **TREE)
scenario("rename_file_onto_dir_overwrite", "rename", "f", "empty", True, **TREE)
scenario("rename_dir", "rename", "d", "d2", False, **TREE)
scenario("rename_dir_onto_empty_dir", "rename", "d", "empty", False, **TREE)
scenario("rename_dir_onto_empty_dir_overwrite", "rename", "d", "empty", True, **TREE)
scenario("rename_dir_onto_full_dir_overwrite", "rename", "empty", "d", True, **TREE)
scenario("rename_dir_onto_file_overwrite", "rename", "d", "f", True, **TREE)
scenario("rename_dir_into_itself", "rename", "d", "d/e/x", False, **TREE)
scenario("rename_into_missing_dir", "rename", "f", "nodir/f", False, **TREE)
scenario("rename_onto_itself_overwrite", "rename", "f", "f", True, **TREE)
scenario("rename_out_of_readonly_dir", "rename", "ro/f", "g", False, files={"ro/f": "x"}, modes={"ro": 0o555},
         non_root=True)
scenario("copy_file", "copy", "f", "g", False, **TREE)
scenario("copy_into_dir", "copy", "f", "d/e/g", False, **TREE)
scenario("copy_missing", "copy", "nope", "g", False, **TREE)
scenario("copy_onto_file", "copy", "d/a.txt", "f", False, **TREE)
scenario("copy_onto_file_overwrite", "copy", "d/a.txt", "f", True, **TREE)
scenario("copy_missing_onto_file", "copy", "nope", "f", False, **TREE)
scenario("copy_dir", "copy", "d", "d2", False, **TREE,
         lockstep=dict(after=TREE_AFTER, why="TF fails only after creating an empty d2; lockstep checks first"))
scenario("copy_onto_dir", "copy", "f", "empty", False, **TREE)
scenario("copy_onto_dir_overwrite", "copy", "f", "empty", True, **TREE)
scenario("copy_into_missing_dir", "copy", "f", "nodir/g", False, **TREE)
scenario("copy_onto_itself_overwrite", "copy", "f", "f", True, **TREE,
         lockstep=dict(after=TREE_AFTER, why="TF truncates the file to nothing"))
scenario("copy_unreadable_file", "copy", "secret", "g", False, files={"secret": "s"}, modes={"secret": 0o000},
         non_root=True)
scenario("copy_into_readonly_dir", "copy", "f", "ro/g", False, files={"f": "x"}, dirs=["ro"],
         modes={"ro": 0o555}, non_root=True)

# glob
GLOB = dict(files={"a": "", "b": "", ".hidden": "", "c.txt": "", "f.txt": "", "s*": "", "d/x.txt": "",
                   "d/.h2": "", "d/y.bin": "", "d/e/z.txt": ""})
scenario("glob_star", "glob", "*", **GLOB)
scenario("glob_suffix", "glob", "*.txt", **GLOB)
scenario("glob_in_dir", "glob", "d/*", **GLOB)
scenario("glob_two_levels", "glob", "*/*.txt", **GLOB)
scenario("glob_three_levels", "glob", "d/*/*", **GLOB)
scenario("glob_question_mark", "glob", "?", **GLOB)
scenario("glob_class", "glob", "[ab]", **GLOB)
scenario("glob_negated_class_bang", "glob", "[!a]", **GLOB)
scenario("glob_negated_class_caret", "glob", "[^a]", **GLOB)
scenario("glob_range", "glob", "[a-c]*", **GLOB)
scenario("glob_hidden", "glob", ".*", **GLOB)
scenario("glob_escaped_star", "glob", "s\\*", **GLOB)
scenario("glob_escaped_letter", "glob", "\\a", **GLOB)
scenario("glob_literal_existing", "glob", "d", **GLOB)
scenario("glob_literal_missing", "glob", "zz", **GLOB)
scenario("glob_literal_uncleaned", "glob", "d//x.txt", **GLOB)
scenario("glob_in_missing_dir", "glob", "nope/*", **GLOB)
scenario("glob_in_a_file", "glob", "a/*", **GLOB)
scenario("glob_dotdot_in_prefix", "glob", "d/../*.txt", **GLOB)
scenario("glob_empty_pattern", "glob", "", **GLOB)
scenario("glob_in_unreadable_dir", "glob", "closed/*", files={"closed/f": "c"}, modes={"closed": 0o000},
         non_root=True)

# listdir / walk
scenario("listdir_dir", "listdir", "d", **GLOB)
scenario("listdir_cwd", "listdir", ".", **TREE)
scenario("listdir_trailing_slash", "listdir", "d/", **TREE)
scenario("listdir_empty_dir", "listdir", "empty", **TREE)
scenario("listdir_file", "listdir", "f", **TREE)
scenario("listdir_missing", "listdir", "nope", **TREE)
scenario("listdir_empty_path", "listdir", "", **TREE)
scenario("listdir_unreadable_dir", "listdir", "closed", files={"closed/f": "c"}, modes={"closed": 0o000},
         non_root=True)
WALK = dict(files={"top/f1": "", "top/f0": "", "top/sub/g": "", "top/sub/deeper/h": ""}, dirs=["top/sub/deeper/x"])
scenario("walk_topdown", "walk", "top", True, **WALK)
scenario("walk_bottomup", "walk", "top", False, **WALK)
scenario("walk_trailing_slash", "walk", "top/", True, **WALK)
scenario("walk_cwd", "walk", ".", True, files={"x": ""}, dirs=["s"])
scenario("walk_missing", "walk", "nope", True, **WALK)
scenario("walk_file", "walk", "top/f1", True, **WALK)
scenario("walk_link_to_dir_is_not_entered", "walk", "top", True, files={"top/f": "", "other/x": ""},
         links={"top/ln": "../other"},
         lockstep=dict(value=[["top", ["ln"], ["f"]]],
                       why="TF enters links to directories, so a link to a parent loops until paths grow too long"))
scenario("walk_unreadable_dir", "walk", "top", True, files={"top/closed/f": "c"}, modes={"top/closed": 0o000},
         non_root=True)

# stat
scenario("stat_file", "stat", "f", **TREE)
scenario("stat_dir", "stat", "d", **TREE)
scenario("stat_empty_file", "stat", "e", files={"e": ""})
scenario("stat_missing", "stat", "nope", **TREE)
scenario("stat_empty_path", "stat", "")
scenario("stat_under_a_file", "stat", "f/x", **TREE)
scenario("stat_trailing_slash_on_file", "stat", "f/", **TREE)
scenario("stat_in_unsearchable_dir", "stat", "closed/f", files={"closed/f": "c"}, modes={"closed": 0o000},
         non_root=True)

# join (no files)
scenario("join_two", "join", "a", "b")
scenario("join_three", "join", "a", "b/", "c")
scenario("join_absolute_restarts", "join", "a/", "/b", "c")
scenario("join_trailing_empty", "join", "a", "")
scenario("join_leading_empty", "join", "", "a")
scenario("join_one", "join", "a/")

# GFile: a file opened with a mode, then a list of method calls; the value is the list of their results.
F = dict(files={"t": TEXT})
# TF opens a GFile at its first read or write; lockstep in the constructor, so mode "w" creates the file at once.
CREATES_N = dict(after={"n": "", "t": TEXT}, why="lockstep opens (creates) the file in the constructor")
scenario("gfile_read_all", "gfile", "t", "r", [["read"]], **F)
scenario("gfile_read_binary", "gfile", "t", "rb", [["read"]], **F)
scenario("gfile_read_n", "gfile", "t", "r", [["read", 0], ["read", 3], ["read", 100], ["read", 5], ["read"]], **F)
scenario("gfile_readline", "gfile", "t", "r", [["readline"], ["readline"], ["readline"], ["readline"]], **F)
scenario("gfile_readlines", "gfile", "t", "r", [["readline"], ["readlines"], ["readlines"]], **F)
scenario("gfile_readline_drops_cr", "gfile", "cr", "rb", [["readlines"]], files={"cr": "a\r\nb\rc\nd\r"})
scenario("gfile_readlines_empty_file", "gfile", "e", "r", [["readlines"], ["read"]], files={"e": ""})
scenario("gfile_tell_and_seek", "gfile", "t", "r",
         [["read", 2], ["tell"], ["seek", 5], ["tell"], ["read"], ["seek", 0], ["seek", 2, 1], ["tell"],
          ["seek", -3, 2], ["read"], ["seek", 13], ["read"], ["size"]], **F)
scenario("gfile_seek_past_end", "gfile", "t", "r", [["seek", 14]], **F)
scenario("gfile_seek_negative", "gfile", "t", "r", [["seek", -1]], **F)
scenario("gfile_seek_bad_whence", "gfile", "t", "r", [["seek", 0, 3]], **F)
scenario("gfile_read_negative", "gfile", "t", "r", [["read", -2]], **F)
scenario("gfile_write_new", "gfile", "n", "w", [["tell"], ["write", "abc"], ["write", "de\n"], ["tell"]], **F)
scenario("gfile_write_binary", "gfile", "n", "wb", [["write", "x\0y"]], **F)
scenario("gfile_write_truncates", "gfile", "t", "w", [["write", "new"]], **F)
scenario("gfile_append", "gfile", "t", "a", [["tell"], ["write", "\nfour"], ["tell"]], **F)
scenario("gfile_append_binary_creates", "gfile", "n", "ab", [["write", "x"]], **F)
scenario("gfile_flush", "gfile", "n", "w", [["write", "a"], ["flush"], ["write", "b"]], **F)
scenario("gfile_size_of_read_file", "gfile", "t", "r", [["size"], ["read", 1], ["size"]], **F)
scenario("gfile_size_while_writing", "gfile", "n", "w", [["write", "abc"], ["size"]], **F,
         lockstep=dict(value=[None, 3], why="size() flushes first; TF's counts only what reached the file"))
scenario("gfile_read_missing", "gfile", "nope", "r", [["read"]], **F)
scenario("gfile_write_in_missing_dir", "gfile", "nodir/n", "w", [["write", "x"]], **F)
scenario("gfile_append_in_missing_dir", "gfile", "nodir/n", "a", [["write", "x"]], **F)
scenario("gfile_read_dir", "gfile", "d", "r", [["read"]], dirs=["d"])
scenario("gfile_write_dir", "gfile", "d", "w", [["write", "x"]], dirs=["d"])
scenario("gfile_read_in_write_mode", "gfile", "n", "w", [["read"]], **F, lockstep=CREATES_N)
scenario("gfile_readline_in_write_mode", "gfile", "n", "w", [["readline"]], **F, lockstep=CREATES_N)
scenario("gfile_seek_in_write_mode", "gfile", "n", "w", [["seek", 0]], **F, lockstep=CREATES_N)
scenario("gfile_write_in_read_mode", "gfile", "t", "r", [["write", "x"]], **F)
scenario("gfile_bad_mode", "gfile", "t", "x", [["read"]], **F)
scenario("gfile_bad_mode_rt", "gfile", "t", "rt", [["read"]], **F)
scenario("gfile_read_write_mode", "gfile", "t", "r+", [["read", 3], ["write", "X"]], **F,
         lockstep=dict(error="InvalidArgumentError", after={"t": TEXT},
                       why="TF's r+ truncates the file at the first write; lockstep refuses the +-modes"))
scenario("gfile_close_without_write", "gfile", "n", "w", [["close"]], **F, lockstep=CREATES_N)
scenario("gfile_read_after_close", "gfile", "t", "r", [["read", 3], ["close"], ["read"]], **F,
         lockstep=dict(error="FailedPreconditionError", why="TF silently reopens the file at position 0"))
scenario("gfile_close_twice", "gfile", "t", "r", [["close"], ["close"]], **F)
scenario("gfile_read_unreadable", "gfile", "secret", "r", [["read"]], files={"secret": "s"},
         modes={"secret": 0o000}, non_root=True)
scenario("gfile_write_readonly_file", "gfile", "ro", "w", [["write", "x"]], files={"ro": "r"},
         modes={"ro": 0o444}, non_root=True)
scenario("gfile_write_in_readonly_dir", "gfile", "rd/n", "w", [["write", "x"]], dirs=["rd"],
         modes={"rd": 0o555}, non_root=True)


def plain(value):
    """A result as JSON: bytes as text (the scenarios' contents are ASCII), FileStatistics as a dict."""
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "is_directory"):
        return {"length": None if value.is_directory else value.length, "is_directory": value.is_directory}
    return value


def run_gfile(path, mode, calls):
    f = tf.io.gfile.GFile(path, mode)
    try:
        return [plain(getattr(f, call[0])(*call[1:])) for call in calls]
    finally:
        f.close()


def run_op(op, args):
    g = tf.io.gfile
    if op == "gfile":
        return run_gfile(*args)
    if op == "walk":
        return [[top, sorted(dirs), sorted(files)] for top, dirs, files in g.walk(args[0], topdown=args[1])]
    if op in ("rename", "copy"):
        return getattr(g, op)(args[0], args[1], overwrite=args[2])
    value = plain(getattr(g, op)(*args))
    return sorted(value) if op in ("glob", "listdir") else value


def build(setup):
    for d in setup["dirs"]:
        os.makedirs(d)
    for path, text in setup["files"].items():
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w", newline="") as f:
            f.write(text)
    for path, target in setup["links"].items():
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        os.symlink(target, path)
    for path, mode in setup["modes"].items():
        os.chmod(path, mode)


def tree(root):
    """Every entry under root: "dir/" -> null, "file" -> contents, "link@" -> target; after the modes are undone."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                os.chmod(path, 0o755 if os.path.isdir(path) else 0o644)
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                out[rel + "@"] = os.readlink(path)
            elif os.path.isdir(path):
                out[rel + "/"] = None
            else:
                with open(path, newline="") as f:
                    out[rel] = f.read()
    return dict(sorted(out.items()))


def run_scenario(s):
    root = tempfile.mkdtemp(prefix="gfile_golden_")
    cwd = os.getcwd()
    os.chdir(root)
    try:
        build(s["setup"])
        try:
            outcome = {"value": run_op(s["op"], s["args"])}
        except tf.errors.OpError as e:
            outcome = {"error": type(e).__name__}
    finally:
        os.chdir(cwd)
    outcome["after"] = tree(root)
    shutil.rmtree(root)
    return outcome


def run_as_nobody(s):
    """run_scenario in a child process as user nobody, so that permissions apply."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        status = 1
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            with os.fdopen(write_end, "w") as w:
                json.dump(run_scenario(s), w)
            status = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end) as r:
        text = r.read()
    _, status = os.waitpid(pid, 0)
    if status != 0:
        sys.exit(f"{s['name']}: the child running it as nobody failed")
    return json.loads(text)


def main():
    names = set()
    out = []
    for s in SCENARIOS:
        assert s["name"] not in names, s["name"]
        names.add(s["name"])
        outcome = run_as_nobody(s) if s["non_root"] and os.getuid() == 0 else run_scenario(s)
        record = {k: s[k] for k in ("name", "op", "args", "setup", "non_root")}
        record["setup"]["modes"] = {p: oct(m) for p, m in record["setup"]["modes"].items()}
        record["tensorflow"] = outcome
        if s["lockstep"]:
            differs = s["lockstep"]
            if "error" in differs or "value" in differs:
                assert ("error" in differs) != ("value" in differs), s["name"]
                new = {"error": differs["error"]} if "error" in differs else {"value": differs["value"]}
                old = {k: outcome[k] for k in ("error", "value") if k in outcome}
                assert new != old, f"{s['name']}: TF now gives what lockstep gives: {old}"
            if "after" in differs:
                assert differs["after"] != outcome["after"], f"{s['name']}: TF now leaves what lockstep leaves"
            record["lockstep"] = differs
        out.append(record)
    doc = {
        "about": "tf.io.gfile outcomes per scenario, from tests/golden/make_gfile_golden.py",
        "tensorflow_version": tf.__version__,
        "scenarios": out,
    }
    path = os.path.join(HERE, "gfile_golden.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {path}: {len(out)} scenarios, {sum(1 for s in out if 'lockstep' in s)} deliberate differences")


if __name__ == "__main__":
    main()
