#!/usr/bin/env python3
"""Writes split indexes git itself never writes, for test-snap-fast's
test_split_forged: each case a shared part (.git/sharedindex.ID) and an
index naming it, in the git dir given. Usage: index-forge.py GITDIR CASE

Cases:
  merged   the shared part holds a conflict (stages 1-3 of "a") and "b";
           the split part adds "a" at stage 0 (no deletions) and "c"
           twice, 100644 then 100755 (git keeps a merged entry alone and
           the last of two alike)
  names    a version 4 shared part whose first name is 4,000 bytes and
           whose 40,000 others repeat it (a prefix of the name before):
           160 MB of names in 2.6 MB
  flags    a shared part whose entry's length in its flags (6) is not
           where its NUL is ("keep.oX")
  twolinks the split part holds two link extensions
"""
import hashlib
import os
import struct
import sys

BLOB = bytes.fromhex("e69de29bb2d1d6434b8b29ae5a9f3b8d5e4b2f0b")[:20]


def entry(name, mode=0o100644, stage=0, flen=None, version=2, strip=None):
    fixed = struct.pack(">10I", 0, 0, 0, 0, 0, 0, mode, 0, 0, 0) + BLOB
    if flen is None:
        flen = min(len(name), 0xfff)
    flags = struct.pack(">H", (stage << 12) | flen)
    if version == 4:
        return fixed + flags + varint(strip or 0) + name + b"\0"
    e = fixed + flags + name + b"\0"
    return e + b"\0" * ((8 - len(e) % 8) % 8)


def varint(v):
    out = [v & 127]
    v >>= 7
    while v:
        v -= 1
        out.insert(0, 128 | (v & 127))
        v >>= 7
    return bytes(out)


def index(entries, version=2, exts=b""):
    body = b"DIRC" + struct.pack(">II", version, len(entries)) + \
        b"".join(entries) + exts
    return body + hashlib.sha1(body).digest()


def ext(sig, data):
    return sig + struct.pack(">I", len(data)) + data


EMPTY_EWAH = struct.pack(">III", 0, 0, 0)


def write(gitdir, shared, split_entries, links=1, bitmaps=True):
    sid = shared[-20:]
    with open(os.path.join(gitdir, "sharedindex." + sid.hex()), "wb") as f:
        f.write(shared)
    link = ext(b"link", sid + (EMPTY_EWAH * 2 if bitmaps else b""))
    with open(os.path.join(gitdir, "index"), "wb") as f:
        f.write(index(split_entries, exts=link * links))


def main():
    gitdir, case = sys.argv[1], sys.argv[2]
    for n in os.listdir(gitdir):
        if n.startswith("sharedindex."):
            os.unlink(os.path.join(gitdir, n))
    if case == "merged":
        shared = index([entry(b"a", stage=1), entry(b"a", stage=2),
                        entry(b"a", stage=3), entry(b"b")])
        write(gitdir, shared, [entry(b"a"), entry(b"c"),
                               entry(b"c", mode=0o100755)])
    elif case == "names":
        first = entry(b"a" * 4000, version=4)
        rest = [entry(b"", version=4, strip=0, flen=4000)
                for _ in range(40000)]
        write(gitdir, index([first] + rest, version=4), [entry(b"z")])
    elif case == "flags":
        shared = index([entry(b"a"), entry(b"keep.oX", flen=6)])
        write(gitdir, shared, [entry(b"z")])
    elif case == "twolinks":
        shared = index([entry(b"a"), entry(b"b")])
        write(gitdir, shared, [entry(b"z")], links=2)
    else:
        sys.exit("no case " + case)


main()
