#!/usr/bin/env python3
"""Summarises `strace -f -C -o LOG -p <agentd-api>` taken while tests/bench/rest_create made N
sessions (python3 standard library only).

  rest_strace.py LOG N

Prints, per session created: the programs agentd-api and its children executed (tmux
subcommands, the creation worker), and the system calls made by each kind of process (request
threads, creation worker, tmux clients), the most frequent first. A creation's worker was started
ahead of need, for the next one: the counts per session hold once the first was traced. Counts are exact; strace's times
are not (ptrace slows every call), so none are printed.
"""

import collections
import re
import sys

LINE = re.compile(r"^(\d+)\s+(?:\d+\.\d+\s+)?(.*)$")
CALL = re.compile(r"^([a-z_0-9]+)\(")
CHILD = re.compile(r"^(?:<\.\.\. )?(?:clone3?|vfork|fork)[( ].*=\s*(\d+)")
OK = re.compile(r"= 0(?:\s+<[\d.]+>)?$")
EXECVE = re.compile(r'^execve\("([^"]*)", \[(.*?)\]')
WORD = re.compile(r'"((?:[^"\\]|\\.)*)"')


def kind_of(exe, argv):
    """A short name for what a process runs: "tmux new-session", "worker", ..."""
    prog = exe.rsplit("/", 1)[-1] or "?"
    if prog == "agentd-api" and ("--create" in argv or "--standby" in argv):
        # Started ahead of need (--standby), or for the POST when none waited (--create).
        return "creation worker (agentd-api --standby / --create)"
    if prog == "tmux":
        skip = {"-S", "-f", "-L"}
        i = 1
        while i < len(argv):
            if argv[i] in skip:
                i += 2
            elif argv[i].startswith("-"):
                i += 1
            else:
                return "tmux " + argv[i]
        return "tmux"
    return prog


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    path, n = sys.argv[1], max(1, int(sys.argv[2]))
    kind = {}  # pid -> kind
    parent = {}
    execs = collections.Counter()
    calls = collections.defaultdict(collections.Counter)
    pending_exec = {}
    # First pass: who forked whom (a child often runs before its parent's clone returns).
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            m = LINE.match(raw.rstrip("\n"))
            ch = CHILD.match(m.group(2)) if m else None
            if ch:
                parent[int(ch.group(1))] = int(m.group(1))
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            m = LINE.match(raw.rstrip("\n"))
            if not m:
                continue  # the -C summary table and strace's own notes
            pid, rest = int(m.group(1)), m.group(2)
            if rest.startswith("<... execve resumed>"):
                if OK.search(rest.rstrip()) and pid in pending_exec:
                    kind[pid] = pending_exec.pop(pid)
                    execs[kind[pid]] += 1
                continue
            if rest.startswith("<...") or rest.startswith("+++") or rest.startswith("---"):
                continue
            c = CALL.match(rest)
            if not c:
                continue
            name = c.group(1)
            k = kind.get(pid)
            if k is None:
                k = kind[pid] = kind.get(parent.get(pid), "agentd-api (request threads)")
            calls[k][name] += 1
            if name == "execve":
                e = EXECVE.match(rest)
                exe = e.group(1) if e else "?"
                argv = [w.encode().decode("unicode_escape", "replace")
                        for w in WORD.findall(e.group(2))] if e else []
                if OK.search(rest.rstrip()):
                    kind[pid] = kind_of(exe, argv)
                    execs[kind[pid]] += 1
                elif "<unfinished" in rest:
                    pending_exec[pid] = kind_of(exe, argv)
    print("profile: strace -f on agentd-api while it made %d session(s); per session:" % n)
    print("    programs executed: " + ", ".join(
        "%s %.1f" % (k, v / n) for k, v in execs.most_common()))
    for k, cnt in sorted(calls.items(), key=lambda kv: -sum(kv[1].values())):
        total = sum(cnt.values())
        top = ", ".join("%s %d" % (s, v / n) for s, v in cnt.most_common(6))
        print("    syscalls of %-40s %7d  (%s)" % (k, total / n, top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
