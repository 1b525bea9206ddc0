#!/usr/bin/env python3
"""What a process's open fds are, for the soak's report (tests/bench/soak); standard library only.

  fds.py PID            one line per fd: "<fd> <what>", where <what> is the file, pipe, pidfd,
                        anon inode, or for a unix or TCP socket its own address and the peer
                        process ("unix /run/agentd/bridge.sock <-> nginx"), without inode
                        numbers, so that two listings of the same process can be compared.
  fds.py --diff A B     the multiset difference of two such listings: "+ <what>" for each fd
                        only in B, "- <what>" for each only in A.
"""
import collections
import os
import re
import subprocess
import sys


def sockets():
    """inode -> (kind, local address, peer inode or None, the names of its owners)."""
    out = {}
    for kind, args in (("unix", ["-xapn"]), ("tcp", ["-tapne"])):
        try:
            text = subprocess.run(["ss"] + args, capture_output=True, text=True).stdout
        except OSError:
            continue
        for line in text.splitlines()[1:]:
            users = ",".join(sorted(set(re.findall(r'\("([^"]*)",pid=\d+', line))))
            w = line.split()
            if kind == "unix" and len(w) >= 8:
                out[w[5]] = ("unix listening" if w[1] == "LISTEN" else kind, w[4],
                             None if w[1] == "LISTEN" else w[7], users)
            elif kind == "tcp":
                m = re.search(r"\bino:(\d+)", line)
                if m and len(w) >= 5:
                    out[m.group(1)] = (kind, "%s->%s" % (w[3], w[4]), None, users)
    return out


def describe(pid):
    socks = sockets()
    rows = []
    d = "/proc/%s/fd" % pid
    for fd in sorted(os.listdir(d), key=int):
        try:
            t = os.readlink(os.path.join(d, fd))
        except OSError:
            continue
        m = re.match(r"socket:\[(\d+)\]$", t)
        if m:
            kind, addr, peer, _ = socks.get(m.group(1), ("socket", "?", None, ""))
            what = "%s %s" % (kind, addr)
            if peer and peer in socks:
                what += " <-> " + (socks[peer][3] or "?")
            elif peer and peer not in ("0", "*"):
                what += " <-> ?"
        else:
            what = re.sub(r"\[\d+\]$", "", t)  # pipe:[123] -> pipe:
        rows.append("%s %s" % (fd, what))
    return rows


def diff(a, b):
    def load(p):
        with open(p, encoding="utf-8") as f:
            return collections.Counter(line.rstrip("\n").split(" ", 1)[1]
                                       for line in f if " " in line)
    ca, cb = load(a), load(b)
    for what in sorted(set(ca) | set(cb)):
        n = cb[what] - ca[what]
        for _ in range(abs(n)):
            print(("+ " if n > 0 else "- ") + what)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--diff":
        diff(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 2:
        print("\n".join(describe(sys.argv[1])))
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
