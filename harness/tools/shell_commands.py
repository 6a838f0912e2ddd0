"""The programs a shell command line would run, read so that permission rules can judge each one.

``a && b``, ``a; b``, ``a | b``, ``a &``, subshells, ``{ ...; }``, ``if``/``for``/``while``
bodies, function bodies, ``$(...)``, backticks and ``<(...)`` all hide commands; bashlex parses
the line as bash does and every simple command in it is returned, quotes removed (``g"i"t`` is
``git``). A program is named by its last path part (``/usr/bin/git`` is ``git``), and what a
wrapper runs is read through it: ``env X=1 cmd``, ``command``, ``exec``, ``nohup``, ``nice``,
``timeout``, ``time``, ``setsid``, ``stdbuf``, ``sudo``, ``busybox``, ``find -exec``, ``git
bisect run``, ``git submodule foreach``, and the script of ``sh -c`` / ``bash -c`` / ``eval`` /
``watch`` / ``trap`` / ``su -c`` (``runuser -c``) and of git's options that run one (``git
rebase -x``, ``filter-branch --tree-filter``, ``--upload-pack``, ...: :data:`_GIT_SCRIPTS`),
parsed in turn.

What cannot be read for certain raises :class:`Unreadable`, so a caller fails closed: a line bash
would not parse, a program named by an expansion or a brace list (``$CMD push``, ``{git,push}``),
a shell or ``source`` reading its commands from standard input or a process substitution
(``... | sh``, ``sh -``, ``bash /dev/stdin``, ``. <(...)``), ``xargs`` (its command takes words
from its input), an alias or a ``hash -p`` name defined on the line, a wrapper option not known
here, a program known to run another that is not read here (``script -c``, ``flock``,
``taskset``, ...), a command substitution inside a here-document, a ``${...}`` expansion or an
array subscript that bash evaluates (``printf -v 'a[$(cmd)]'``, ``read``, ``let``), ``mapfile
-C``, one of git's options that run a script bundled with others (``git rebase -ix``), git
configuration given on the line (``git -c``, ``--config-env``, ``--git-dir``, ``git
config`` writing) and variables that change what runs set on the line (:data:`CONFIGURING`:
``HOME=``, ``GIT_CONFIG_*``, ``PATH=``, ``BASH_FUNC_x%%=``, ...).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Sequence
from itertools import dropwhile

Command = tuple[str, ...]
"""One simple command's words: the program's name (its last path part), then its arguments."""

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh"})
MAX_NESTING = 8
"""How deep ``sh -c "sh -c ..."`` and ``$( $( ... ) )`` are followed before the line is unreadable."""

# Wrappers that run the rest of their words as a command: the options each takes with a value,
# and the options that take none. An option outside both makes the line unreadable.
_WRAPPERS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "command": (frozenset(), frozenset({"-p", "-v", "-V"})),
    "builtin": (frozenset(), frozenset()),
    "exec": (frozenset({"-a"}), frozenset({"-c", "-l"})),
    "nohup": (frozenset(), frozenset()),
    "time": (frozenset({"-f", "-o"}), frozenset({"-p", "-v", "-a"})),
    "nice": (frozenset({"-n", "--adjustment"}), frozenset()),
    "ionice": (frozenset({"-c", "-n", "-p"}), frozenset({"-t"})),
    "setsid": (frozenset(), frozenset({"-f", "-w", "-c"})),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), frozenset()),
    "timeout": (frozenset({"-s", "-k", "--signal", "--kill-after"}),
                frozenset({"-v", "--verbose", "--preserve-status", "--foreground"})),
    "sudo": (frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"}),
             frozenset({"-E", "-H", "-n", "-P", "-S", "-b", "-i", "-s", "-k", "-K", "-A", "-B"})),
    "doas": (frozenset({"-u", "-C"}), frozenset({"-n", "-s"})),
    "env": (frozenset({"-u", "--unset", "-C", "--chdir"}),
            frozenset({"-i", "--ignore-environment", "-0", "--null", "-v", "--debug", "-"})),
    "watch": (frozenset({"-n", "--interval", "-q", "--equexit"}),  # its words are a script
              frozenset({"-b", "--beep", "-c", "--color", "-d", "--differences", "-e", "--errexit",
                         "-g", "--chgexit", "-p", "--precise", "-t", "--no-title", "-w",
                         "--no-wrap", "-x", "--exec"})),
    "su": (frozenset({"-c", "--command", "--session-command", "-g", "--group", "-G",  # and runuser
                      "--supp-group", "-w", "--whitelist-environment"}),
           frozenset({"-", "-l", "--login", "-m", "-p", "--preserve-environment", "-f", "--fast",
                      "-P", "--pty"})),
}  # fmt: skip
_SHELL_VALUED = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
_STDIN = ("-", "/dev/stdin", "/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/")
"""Script names that are the shell's own standard input (a prefix where it ends in ``/``)."""
_OPAQUE = frozenset({
    "script", "flock", "taskset", "chrt", "prlimit", "setpriv", "ssh-agent", "unshare", "nsenter",
    "chroot", "systemd-run", "strace", "ltrace", "valgrind", "numactl", "cgexec", "faketime",
    "unbuffer", "rlwrap", "torsocks", "proxychains", "proxychains4", "fakeroot", "firejail",
    "bwrap", "parallel", "sem", "tmux", "screen", "dtach", "expect", "run-parts", "gdb", "perf",
    "daemonize", "start-stop-daemon", "pkexec", "sg", "newgrp", "dbus-launch", "xvfb-run",
    "catchsegv", "ssh", "sshpass", "setarch", "linux32", "linux64", "cpulimit", "trickle",
    "chpst", "direnv", "nix-shell", "coproc", "enable", "xargs",
})  # fmt: skip
"""Programs that run a command given in their words (or read from their input) in a way not
read here: the line is unreadable."""
CONFIGURING = frozenset({
    "HOME", "XDG_CONFIG_HOME", "PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV",
    "ENV", "PROMPT_COMMAND", "PS4", "SHELLOPTS", "BASHOPTS", "IFS", "EDITOR", "VISUAL", "PAGER",
    "SSH_ASKPASS", "CDPATH", "GLOBIGNORE",
})  # fmt: skip
"""Variables whose value on the line changes what a later program runs or reads as its
configuration; every ``GIT_*`` and ``BASH_FUNC_*`` name counts too."""
_DECLARING = frozenset({"export", "declare", "typeset", "local", "readonly", "env"})
_GIT_VALUED = frozenset({"-C", "--namespace", "--super-prefix", "--list-cmds"})
_GIT_READS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l",
                        "get", "list", "--show-origin", "--show-scope", "--name-only"})  # fmt: skip
_EVALUATED = re.compile(r"\[[^\]]*(?:\$\(|`)")
"""An array subscript holding a command substitution: bash runs it when it evaluates the
subscript (``printf -v``, ``read``, ``let``, ``declare``, ``test -v``, ...), quotes or not."""
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_UPLOAD = ("--upload-pack", "--exec")
_GIT_SCRIPTS: dict[str, tuple[str, ...]] = {
    "rebase": ("-x", "--exec"), "difftool": ("-x", "--extcmd"), "archive": ("--exec",),
    "filter-branch": ("--setup", "--tree-filter", "--index-filter", "--msg-filter",
                      "--commit-filter", "--env-filter", "--parent-filter", "--tag-name-filter"),
    "grep": ("-O", "--open-files-in-pager"), "fetch": _UPLOAD, "pull": _UPLOAD,
    "ls-remote": ("-u", *_UPLOAD), "clone": ("-u", *_UPLOAD),
    "push": ("--receive-pack", "--exec"), "send-pack": ("--receive-pack", "--exec"),
}  # fmt: skip
"""Git's commands whose options take a shell command they run, by those options (short and
long; a long one may be cut to any prefix, as git allows)."""


_RUNS_STRINGS = frozenset({"`", "$("})


class Unreadable(ValueError):
    """The line cannot be read for certain; the message says why."""


def commands(line: str, *, depth: int = 0) -> list[Command]:
    """Every simple command ``line`` would run, wrappers and nested shells looked through."""
    if depth > MAX_NESTING:
        raise Unreadable(f"shells nest more than {MAX_NESTING} deep")
    import bashlex  # loaded on first use: most runs judge no command line

    try:
        trees = bashlex.parse(line)
    except Exception as exc:  # bashlex raises its own errors and NotImplementedError
        raise Unreadable(f"not parsed as a shell line ({type(exc).__name__}: {exc})") from None
    found: list[Command] = []
    for tree in trees:
        for node in _simple_commands(tree):
            found.extend(_read(node, depth))
    return found


def _simple_commands(node: object) -> Iterator[object]:
    """The command nodes under ``node`` (function bodies and substitutions included)."""
    kind = getattr(node, "kind", "")
    if kind == "command":
        yield node
    if kind in ("parameter", "heredoc") and any(
        mark in str(getattr(node, "value", "")) for mark in _RUNS_STRINGS
    ):
        what = "a here-document" if kind == "heredoc" else "a parameter expansion"
        raise Unreadable(f"{what} holds a command substitution")
    for attribute in ("parts", "list"):
        for child in getattr(node, attribute, None) or ():
            yield from _simple_commands(child)
    for attribute in ("command", "output", "heredoc"):
        child = getattr(node, attribute, None)
        if child is not None and not isinstance(child, int | str):
            yield from _simple_commands(child)


def _read(node: object, depth: int) -> list[Command]:
    """The commands one command node runs: itself, through any wrapper."""
    parts = getattr(node, "parts", ())
    for part in parts:
        if getattr(part, "kind", "") == "assignment":
            _check_assignment(str(part.word))
    words = [part for part in parts if getattr(part, "kind", "") == "word"]
    if not words:
        return []  # assignments or redirections alone; their substitutions are walked apart
    name = words[0]
    if any(getattr(part, "kind", "") != "tilde" for part in getattr(name, "parts", ()) or ()):
        raise Unreadable(f"the program is named by an expansion: {name.word!r}")
    if any(char in name.word for char in "*?[{"):
        raise Unreadable(f"the program is named by a pattern or a brace list: {name.word!r}")
    for word in words[1:]:
        substituted = any(getattr(p, "kind", "") == "processsubstitution" for p in word.parts or ())
        if substituted and posixpath.basename(name.word) in (*SHELLS, ".", "source"):
            raise Unreadable(f"{name.word} reads its commands from a process substitution")
        if _EVALUATED.search(str(word.word)):
            raise Unreadable(f"an array subscript runs a command: {word.word!r}")
    return _unwrap([str(word.word) for word in words], depth)


def _check_assignment(word: str) -> None:
    """A variable set on the line that changes what runs is unreadable (:data:`CONFIGURING`)."""
    name = word.split("=", 1)[0].rstrip("+")
    if name in CONFIGURING or name.startswith(("GIT_", "BASH_FUNC_")):
        raise Unreadable(f"{name} is set on the line: it changes what a program runs")


def _unwrap(words: Sequence[str], depth: int) -> list[Command]:
    program = posixpath.basename(words[0]) or words[0]
    args = list(words[1:])
    command: Command = (program, *args)
    if program == "busybox" and args:
        return [command, *_unwrap(args, depth)]
    if program in SHELLS:
        return [command, *_shell_script(program, args, depth)]
    _refuse(program, args)
    if program == "eval" or (program == "watch" and args):
        script = " ".join(args if program == "eval" else _after_options(program, args))
        return [command, *commands(script, depth=depth + 1)]
    if program == "trap":
        return [command, *_trap(args, depth)]
    if program in ("su", "runuser"):
        return [command, *commands(_su_script(program, args), depth=depth + 1)]
    if program == "alias" and any("=" in arg for arg in args):
        raise Unreadable("an alias is defined on the line")
    if program == "git":
        return [command, *_git_scripts(_check_git(args), depth)]
    if program == "find":
        return [command, *_find_exec(args, depth)]
    if program in _WRAPPERS:
        rest = _after_options(program, args)
        return [command, *(_unwrap(rest, depth) if rest else [])]
    return [command]


def _shell_script(program: str, args: list[str], depth: int) -> list[Command]:
    """What ``sh -c SCRIPT`` runs; a script file is judged as the command it is; a shell
    reading standard input is unreadable."""
    options: list[str] = []
    rest: list[str] = []
    words = iter(args)
    for arg in words:
        if arg == "--":
            rest = list(words)
            break
        if not arg.startswith(("-", "+")) or arg == "-":  # a lone + is an empty option
            rest = [arg, *words]
            break
        if arg in ("-s", "--stdin"):
            raise Unreadable(f"{program} reads its commands from standard input")
        if arg in _SHELL_VALUED:
            next(words, None)
        else:
            options.append(arg)
    if any(not option.startswith("--") and "c" in option for option in options):
        if not rest:
            raise Unreadable(f"{program} -c has no script")
        return commands(rest[0], depth=depth + 1)
    if rest and rest[0].startswith(_STDIN):
        raise Unreadable(f"{program} reads its commands from standard input ({rest[0]})")
    if rest:
        return []
    raise Unreadable(f"{program} reads its commands from standard input")


def _refuse(program: str, args: list[str]) -> None:
    """Raise :class:`Unreadable` when ``program`` with ``args`` runs what is not read here."""
    if program in _OPAQUE:
        raise Unreadable(f"{program} runs a command in a way not read here")
    if program in _DECLARING:
        for arg in args:
            if "=" in arg and not arg.startswith("-"):
                _check_assignment(arg)
    if program in (".", "source") and args and args[0].startswith(_STDIN):
        raise Unreadable(f"{program} reads its commands from standard input")
    if program in ("mapfile", "readarray") and any(a.startswith("-C") for a in args):
        raise Unreadable(f"{program} -C runs a command for its lines")
    if program == "hash" and any(a.startswith("-") and "p" in a for a in args):
        raise Unreadable("hash -p names a program on the line")


def _trap(args: list[str], depth: int) -> list[Command]:
    """What ``trap [--] ACTION SIGNAL...`` runs (``-p`` and ``-l`` only print)."""
    if args and args[0] == "--":
        args = args[1:]
    elif args and args[0].startswith("-"):
        if all(arg in ("-p", "-l", "-lp", "-pl") for arg in args if arg.startswith("-")):
            return []
        raise Unreadable(f"trap: option {args[0]!r} is not known here")
    return commands(args[0], depth=depth + 1) if len(args) > 1 else []


def _check_git(args: list[str]) -> list[str]:
    """Git's command and its words; git whose configuration is given on the line (its options,
    or ``git config`` writing) is unreadable: an alias, an include or a program setting would
    change what runs."""
    index = 0
    while index < len(args) and args[index].startswith("-"):
        option = args[index].split("=", 1)[0]
        if option in ("-c", "--config-env", "--exec-path", "--git-dir", "--work-tree"):
            raise Unreadable(f"git {option}: configuration given on the line")
        index += 2 if args[index] in _GIT_VALUED else 1
    rest = args[index:]
    if any(arg.lower().startswith(("alias.", "include")) for arg in rest):
        raise Unreadable("a git alias or include is named on the line")
    named = [arg for arg in rest[1:] if not arg.startswith("-")]
    if rest[:1] == ["config"] and not any(arg in _GIT_READS for arg in rest) and len(named) != 1:
        raise Unreadable("git config writes configuration on the line")
    return rest


def _git_scripts(rest: list[str], depth: int) -> list[Command]:
    """What git's command ``rest`` runs of its words: ``bisect run`` and ``submodule foreach``
    their command (one word: a shell script), an option of :data:`_GIT_SCRIPTS` its script; a
    bundle of short options holding one of those is unreadable."""
    if rest[:1] in (["bisect"], ["submodule"]):
        run = list(dropwhile(_QUIET.__contains__, rest[1:]))
        if run[:1] in (["run"], ["foreach"]):
            run = list(dropwhile(_QUIET.__contains__, run[1:]))
            if len(run) == 1:
                return commands(run[0], depth=depth + 1)
            return _unwrap(run, depth) if run else []
    options = _GIT_SCRIPTS.get(rest[0], ()) if rest else ()
    short = {option[1] for option in options if not option.startswith("--")}
    scripts: list[str] = []
    words = iter(rest[1:])
    for word in words:
        name, given, value = word.partition("=")
        if word.startswith("--") and len(name) > 2:
            if any(option.startswith(name) for option in options):
                scripts.append(value if given else next(words, ""))
        elif word.startswith("-") and word[1:] in short:
            scripts.append(next(words, ""))
        elif word.startswith("-") and not word.startswith("--") and short & set(word[1:]):
            raise Unreadable(f"git {rest[0]} {word}: an option that runs a command, bundled")
    return [found for script in scripts if script for found in commands(script, depth=depth + 1)]


_QUIET = frozenset({"-q", "--quiet", "--recursive", "--"})


def _su_script(program: str, args: list[str]) -> str:
    """The script ``su``/``runuser`` give the user's shell with ``-c``; without one it reads
    standard input, and a shell chosen or a command given another way (``-s``, ``runuser -u``,
    ``-lc``, shell arguments) is not read here."""
    valued, flags = _WRAPPERS["su"]
    scripts: list[str] = []
    users: list[str] = []
    words = iter(args)
    for arg in words:
        option, given, value = arg.partition("=")
        if option in valued:
            value = value if given else next(words, "")
            if option in ("-c", "--command", "--session-command"):
                scripts.append(value)
        elif arg.startswith("-") and arg not in flags:
            raise Unreadable(f"{program}: option {arg!r} is not known here")
        elif not arg.startswith("-"):
            users.append(arg)
    if len(scripts) != 1 or len(users) > 1:
        raise Unreadable(f"{program} runs what is not one -c script (standard input, arguments)")
    return scripts[0]


def _find_exec(args: list[str], depth: int) -> list[Command]:
    found: list[Command] = []
    for index, arg in enumerate(args):
        if arg in _FIND_EXEC:
            run = args[index + 1 :]
            end = next((i for i, word in enumerate(run) if word in (";", "+")), len(run))
            if end:  # an action naming no command (``-exec ;``) runs nothing
                found.extend(_unwrap(run[:end], depth))
    return found


def _after_options(program: str, args: list[str]) -> list[str]:
    """The words of the command a wrapper runs; an unknown option is unreadable."""
    valued, flags = _WRAPPERS[program]
    index = 0
    while index < len(args):
        arg = args[index]
        if program == "env" and "=" in arg and not arg.startswith("-"):
            index += 1  # NAME=value
            continue
        if arg == "--":
            return args[index + 1 :]
        if not arg.startswith("-") or arg == "-" and program != "env":
            break
        option, has_value, _ = arg.partition("=")
        if arg in flags or (program == "nice" and arg[1:].lstrip("-").isdigit()):
            index += 1
        elif option in valued:
            index += 1 if has_value else 2
        elif arg[:2] in valued and len(arg) > 2:  # -n10, -oL
            index += 1
        else:
            raise Unreadable(f"{program}: option {arg!r} is not known here")
    rest = args[index:]
    if program == "timeout" and rest:
        rest = rest[1:]  # the duration
    return rest
