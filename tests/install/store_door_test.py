#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The store has one door (docs/DEVELOPING.md, "The store"):

- src/transfer includes, of the project's own headers below it, only the
  ingest door (store/ingest.hpp), the codec (store/codec.hpp: zstd frames
  travel on the wire) and src/common/; the rest of the store it reaches
  through the public <cdc/store.hpp>;
- no SQL, no SQLite and no name of the store's database file in src/transfer,
  tools/ or bindings/;
- in src/store, SQL only in the catalogs: SQLite's (sqlite_catalog*.cpp)
  and the SQLite layer (sqlite.hpp, sqlite.cpp), PostgreSQL's
  (pg_catalog*.cpp).

Read from the sources, so that a new file is checked as soon as it exists.

  store_door_test.py SOURCE_DIR
"""
import pathlib
import re
import sys

src = pathlib.Path(sys.argv[1]).resolve()
SOURCES = {".cpp", ".hpp", ".h", ".c", ".cc", ".py", ".pyi"}
ALLOWED_BELOW = {"../store/ingest.hpp", "../store/codec.hpp"}
SQL = re.compile(r"\b(SELECT\s|INSERT\s+(OR\s+\w+\s+)?INTO\b|DELETE\s+FROM\b|UPDATE\s+\w+\s+SET\b|"
                 r"CREATE\s+(TEMP\s+)?(TABLE|INDEX)\b|PRAGMA\s)")
ENGINE = re.compile(r"kDbName|index\.db|sqlite3|sqlite\.hpp|sqlite_catalog|\bDb\b\s*[&*(]|detail::(Db|Stmt|Transaction)\b")
INCLUDE = re.compile(r'\s*#\s*include\s*"([^"]+)"')


def files(d):
    return sorted(p for p in (src / d).rglob("*") if p.is_file() and p.suffix in SOURCES)


bad = []
checked = 0
for f in files("src/transfer"):
    checked += 1
    for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
        m = INCLUDE.match(line)
        if not m:
            continue
        name = m.group(1)
        if name.startswith("../") and not name.startswith("../common/") and name not in ALLOWED_BELOW:
            bad.append(f"{f.relative_to(src)}:{n}: includes {name} (only store/ingest.hpp, store/codec.hpp "
                       f"and common/ below the transfer)")
        if "store/" in name and not name.startswith("../") and name not in ALLOWED_BELOW:
            bad.append(f"{f.relative_to(src)}:{n}: includes {name}")
for d in ("src/transfer", "tools", "bindings"):
    for f in files(d):
        checked += 1
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            if SQL.search(line):
                bad.append(f"{f.relative_to(src)}:{n}: SQL outside the catalog: {line.strip()}")
            if ENGINE.search(line):
                bad.append(f"{f.relative_to(src)}:{n}: the store's database outside the store: {line.strip()}")
catalog = re.compile(r"^(sqlite_catalog.*\.cpp|sqlite\.(hpp|cpp)|pg_catalog.*\.cpp)$")
for f in files("src/store"):
    checked += 1
    if catalog.match(f.name):
        continue
    for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
        if SQL.search(line):
            bad.append(f"{f.relative_to(src)}:{n}: SQL outside the catalogs: {line.strip()}")
if checked < 20:
    sys.exit(f"only {checked} files found below {src}: not a source tree?")
if bad:
    sys.exit("the store is reached around its door:\n  " + "\n  ".join(bad))
print(f"{checked} files: the transfer, the tools and the bindings use the store through its door")
