#!/usr/bin/env python3
"""One credential's audit page in a trail of a million rows (SQLite, the library the daemon
links): the statement the daemon used before schema 7 (one text with `?2 IS NULL OR`) and the
one it uses now (a text per filter), without and with the `audit_events_credential` index.
Usage: python3 scripts/bench-audit-query.py [rows]"""
import os, random, shutil, sqlite3, sys, tempfile, time

rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
directory = tempfile.mkdtemp()
path = os.path.join(directory, "audit.db")
db = sqlite3.connect(path)
db.execute("PRAGMA journal_mode=WAL")
db.execute("CREATE TABLE audit_events (id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, "
           "operation TEXT NOT NULL, credential_id TEXT, outcome TEXT NOT NULL, detail TEXT)")
db.executemany("INSERT INTO audit_events (at, operation, credential_id, outcome) VALUES (?, ?, ?, ?)",
               ((i, "token.read", f"ns/c{random.randrange(100_000)}", "allowed") for i in range(rows)))
db.commit()
either = ("SELECT * FROM audit_events WHERE id < ?1 AND (?2 IS NULL OR credential_id = ?2) "
          "ORDER BY id DESC LIMIT ?3")
split = "SELECT * FROM audit_events WHERE credential_id = ?2 AND id < ?1 ORDER BY id DESC LIMIT ?3"

def milliseconds(sql, credential, repeats):
    started = time.perf_counter()
    for _ in range(repeats):
        db.execute(sql, (2**62, credential, 100)).fetchall()
    return (time.perf_counter() - started) / repeats * 1000

print(f"SQLite {sqlite3.sqlite_version}, {rows:,} rows")
print(f"before schema 7 (no index, one text):   {milliseconds(either, 'ns/none', 5):9.3f} ms a page")
started = time.perf_counter()
db.execute("CREATE INDEX audit_events_credential ON audit_events(credential_id, id)")
db.commit()
print(f"migration 0007 (the index built):       {time.perf_counter() - started:9.3f} s")
print(f"index, one text (still walks the trail): {milliseconds(either, 'ns/none', 5):9.3f} ms a page")
print(f"schema 7 (index, a text per filter):     {milliseconds(split, 'ns/none', 200):9.3f} ms a page")
print(f"  the same for a credential with rows:   {milliseconds(split, 'ns/c42', 200):9.3f} ms a page")
print(f"  newest page of the whole trail:        {milliseconds(split.replace('credential_id = ?2 AND ', ''), None, 200):9.3f} ms a page")
db.close()
shutil.rmtree(directory)
