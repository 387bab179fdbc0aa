"""Reads a markdown file into the blocks the docs test runs or checks.

The convention (README.md "Documentation" and tests/docs/README.md):
* ```sh blocks are commands, executed in order in one bash process;
* every other block carries a tag (text, toml, ini, json, http, c, cpp) and
  may not contain a line that starts like a command (so none can hide);
* the line right before an sh block may hold a directive
  <!-- doc-test: fixture=a,b timeout=N -->  or
  <!-- doc-test: syntax-only reason="..." -->
"""
import re
import shlex
import subprocess

FIXTURES = ("build", "install", "agent", "slurm")
DIRECTIVE_KEYS = ("fixture", "syntax-only", "reason", "timeout")
# Tags that would be commands by another name: they must be ```sh.
SHELL_TAGS = ("bash", "shell", "console", "shell-session", "zsh")
# First words that make a line of a non-sh block look like a command.
COMMAND_WORDS = {
    "mpirun", "mpiexec", "srun", "sbatch", "salloc", "scancel", "squeue",
    "scontrol", "cmake", "ctest", "systemctl", "module", "curl", "ucx_info",
    "ucx_perftest", "ompi_info", "apt-get", "apt", "make", "export", "eval",
    "source", "sudo", "git", "bash", "sh",
}
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^`\s]*)")
DIRECTIVE = re.compile(r"^\s*<!--\s*doc-test:(.*?)-->\s*$")


class DocError(Exception):
    """A violation of the convention, with the place it was found."""

    def __init__(self, where, message):
        super().__init__(f"{where}: {message}")


class Command:
    def __init__(self, line, text):
        self.line = line    # line number of the command's first line
        self.text = text    # as written in the doc (continuations kept)


class Block:
    def __init__(self, tag, line, body, directive):
        self.tag = tag
        self.line = line            # line of the opening fence
        self.body = body            # [(line number, text)]
        self.fixtures = directive.get("fixture", ["build"])
        self.syntax_only = "syntax-only" in directive
        self.reason = directive.get("reason", "")
        self.timeout = directive.get("timeout")
        self.commands = []


def looksLikeCommand(text):
    """True if a line of a non-sh block starts like a shell command."""
    s = text.strip()
    if s.startswith("$ "):
        s = s[2:].lstrip()
    if s.startswith(". /") or s.startswith(". $") or s.startswith(". ~"):
        return True
    words = s.split()
    if not words:
        return False
    w = words[0]
    if w in COMMAND_WORDS:
        return True
    if re.fullmatch(r"switchagg-[a-z0-9-]+", w):
        return True
    return w.startswith("scripts/") or w.startswith("./scripts/")


def parseDirective(where, text):
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise DocError(where, f"bad doc-test directive: {e}")
    out = {}
    for w in words:
        key, _, value = w.partition("=")
        if key not in DIRECTIVE_KEYS:
            raise DocError(where, f"unknown doc-test directive '{key}' "
                                  f"(known: {', '.join(DIRECTIVE_KEYS)})")
        if key == "fixture":
            names = value.split(",")
            for n in names:
                if n not in FIXTURES:
                    raise DocError(where, f"unknown fixture '{n}' "
                                          f"(known: {', '.join(FIXTURES)})")
            out["fixture"] = names
        elif key == "timeout":
            if not value.isdigit() or int(value) == 0:
                raise DocError(where, f"timeout wants seconds, got '{value}'")
            out["timeout"] = int(value)
        elif key == "syntax-only":
            out[key] = True
        else:
            out[key] = value
    if "syntax-only" in out and not out.get("reason"):
        raise DocError(where, 'syntax-only needs reason="why it cannot run here"')
    if "reason" in out and "syntax-only" not in out:
        raise DocError(where, "reason= belongs to syntax-only")
    return out


def bashComplete(text):
    """True if text parses as complete bash (not an open loop/quote/heredoc)."""
    r = subprocess.run(["bash", "-n"], input=text, text=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return r.returncode == 0


def splitCommands(name, block):
    """Logical commands of an sh block: continuation lines joined, multi-line
    constructs kept together, blank and comment-only lines dropped."""
    pending, start = [], None
    for line, text in block.body:
        if not pending and (not text.strip() or text.lstrip().startswith("#")):
            continue
        if not pending:
            start = line
        pending.append(text)
        if text.endswith("\\"):
            continue
        joined = "\n".join(pending)
        if bashComplete(joined + "\n"):
            block.commands.append(Command(start, joined))
            pending = []
    if pending:
        raise DocError(f"{name}:{start}", "incomplete shell command at the end of the block")


def parse(path, name):
    """Blocks of the markdown file at path; name is how messages call it."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, i, directive_at = [], 0, None
    while i < len(lines):
        text = lines[i]
        m_dir = DIRECTIVE.match(text)
        if m_dir:
            if directive_at is not None:
                raise DocError(f"{name}:{directive_at[0]}", "directive not followed by an sh block")
            directive_at = (i + 1, parseDirective(f"{name}:{i + 1}", m_dir.group(1)))
            i += 1
            continue
        m = FENCE.match(text)
        if not m:
            if directive_at is not None:
                raise DocError(f"{name}:{directive_at[0]}",
                               "a doc-test directive must be the line right before its ```sh block")
            i += 1
            continue
        indent, fence, tag = m.group(1), m.group(2), m.group(3)
        where = f"{name}:{i + 1}"
        body, j = [], i + 1
        while j < len(lines) and not re.match(r"^\s*" + re.escape(fence[0]) + "{%d,}\\s*$" % len(fence), lines[j]):
            body.append((j + 1, lines[j][len(indent):] if lines[j].startswith(indent) else lines[j]))
            j += 1
        if j == len(lines):
            raise DocError(where, "code block is never closed")
        directive = directive_at[1] if directive_at else {}
        if not tag:
            raise DocError(where, "untagged code block: tag it ```sh (commands the docs test runs) "
                                  "or ```text/```toml/... (anything else)")
        if tag in SHELL_TAGS:
            raise DocError(where, f"```{tag}: commands are tagged ```sh so that the docs test runs them")
        if tag != "sh":
            if directive_at:
                raise DocError(f"{name}:{directive_at[0]}", f"doc-test directive on a ```{tag} block")
            for ln, t in body:
                if looksLikeCommand(t):
                    raise DocError(f"{name}:{ln}", f"command-like line in a ```{tag} block "
                                                   f"(commands go in ```sh blocks, which are run): {t.strip()}")
        blocks.append(Block(tag, i + 1, body, directive))
        directive_at = None
        i = j + 1
    if directive_at is not None:
        raise DocError(f"{name}:{directive_at[0]}", "directive not followed by an sh block")
    for b in blocks:
        if b.tag == "sh":
            splitCommands(name, b)
    return blocks
