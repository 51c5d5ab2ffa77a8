#!/usr/bin/env python3
"""One credential's page of a million-row audit trail on SQLite (Python's module links the
same library as the daemon): the vault's own schema from migrations/0001-0006, filled with
rows as the daemon writes them (a 32-byte MAC each, one chain), the statement the daemon ran
before schema 7, then migrations/0007 and the statements it runs now.
Usage: python3 scripts/bench-audit-query.py [rows]"""
import glob, os, random, shutil, sqlite3, sys, tempfile, time

rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "migrations")
migrations = sorted(glob.glob(os.path.join(root, "[0-9][0-9][0-9][0-9]_*.sql")))
directory = tempfile.mkdtemp()
db = sqlite3.connect(os.path.join(directory, "vault.db"), isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
for path in migrations[:6]:
    db.executescript(open(path).read())
columns = "id, at, actor_uid, actor_gid, actor_pid, operation, credential_id, outcome, detail, count, last_at, mac, chain, position"


def row(i):
    # One credential in a thousand rows is "ns/busy" (1,000 rows); the rest spread over 100,000.
    credential = "ns/busy" if i % 1000 == 0 else f"ns/c{random.randrange(100_000)}"
    return (i, 1_700_000_000_000 + i, 1000, 1000, 4242, "token.read", credential, "allowed", None, 1, None,
            random.randbytes(32), "", i)


db.execute("BEGIN")
db.executemany(f"INSERT INTO audit_events ({columns}) VALUES ({', '.join('?' * 14)})", (row(i) for i in range(1, rows + 1)))
db.execute("COMMIT")
before = f"SELECT {columns} FROM audit_events WHERE id > ?1 AND (?2 IS NULL OR credential_id = ?2) ORDER BY id LIMIT ?3"
newest = f"SELECT {columns} FROM audit_events WHERE credential_id = ?2 AND id < ?1 ORDER BY id DESC LIMIT ?3"
whole = f"SELECT {columns} FROM audit_events WHERE id < ?1 ORDER BY id DESC LIMIT ?3"


def milliseconds(sql, cursor, credential, repeats):
    started = time.perf_counter()
    for _ in range(repeats):
        db.execute(sql, (cursor, credential, 100)).fetchall()
    return (time.perf_counter() - started) / repeats * 1000


print(f"SQLite {sqlite3.sqlite_version}, {rows:,} audit rows, schema from {len(migrations[:6])} migrations")
print(f"before schema 7, a credential with no rows:   {milliseconds(before, 0, 'ns/none', 5):9.3f} ms a page")
print(f"before schema 7, 100 of 'ns/busy' (oldest):   {milliseconds(before, 0, 'ns/busy', 5):9.3f} ms a page")
started = time.perf_counter()
db.executescript(open(migrations[6]).read())
print(f"{os.path.basename(migrations[6])}:      {time.perf_counter() - started:9.3f} s")
print(f"schema 7, a credential with no rows:          {milliseconds(newest, 2**62, 'ns/none', 200):9.3f} ms a page")
print(f"schema 7, 100 of 'ns/busy' (newest):          {milliseconds(newest, 2**62, 'ns/busy', 200):9.3f} ms a page")
print(f"schema 7, the newest 100 of the whole trail:  {milliseconds(whole, 2**62, None, 200):9.3f} ms a page")
db.close()
shutil.rmtree(directory)
