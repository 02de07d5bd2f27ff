#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tables of bench/transfer/run.sh: results.jsonl SIZE bench-transfer.json.

A section is printed only when run.sh ran its step (STEPS)."""
import json, statistics, sys

results = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
size = int(sys.argv[2])
bench = json.load(open(sys.argv[3]))
MB = 1e6


def rows(step, kind):
    return [r for r in results if r["step"] == step and r["kind"] == kind]


def rate(r, n=size):
    return n / r["wall"] / MB if r["wall"] > 0 else 0


def wire(r):
    return r["report"].get("wire_bytes_sent", 0) + r["report"].get("wire_bytes_received", 0)


def new_data():
    print(f"### New data: push vs local store put ({size / MB:.0f} MB, half text, half random)\n")
    print("| round | store put | push | push / put (speed) | push client CPU | server CPU | client + server CPU | store put CPU |")
    print("|---|---|---|---|---|---|---|---|")
    ratios, cpu_ratios = [], []
    for i, (put, push) in enumerate(zip(rows("new", "store put"), rows("new", "push")), 1):
        ratio = put["wall"] / push["wall"]
        ratios.append(ratio)
        both = push["cpu"] + push["server_cpu"]
        cpu_ratios.append(both / put["cpu"] if put["cpu"] > 0 else 0)
        print(f"| {i} | {put['wall']:.2f} s ({rate(put):.0f} MB/s) | {push['wall']:.2f} s ({rate(push):.0f} MB/s) | "
              f"{ratio:.2f} | {push['cpu']:.2f} s | {push['server_cpu']:.2f} s | {both:.2f} s | {put['cpu']:.2f} s |")
    if ratios:
        print(f"\nmedian push / put (speed): **{statistics.median(ratios):.2f}** (target >= 0.70); "
              f"median CPU of push (client + server) / CPU of put: {statistics.median(cpu_ratios):.2f}\n")

    print("### Unchanged data: the same file again\n")
    print("| round | push, same name | wire bytes / size | client CPU | server CPU | push, other name | wire bytes / size | store put again |")
    print("|---|---|---|---|---|---|---|---|")
    for i, (same, other, put) in enumerate(zip(rows("unchanged", "push (same name)"), rows("unchanged", "push (other name)"),
                                               rows("unchanged", "store put")), 1):
        print(f"| {i} | {same['wall']:.2f} s ({rate(same):.0f} MB/s) | {100 * wire(same) / size:.3f}% | {same['cpu']:.2f} s | "
              f"{same['server_cpu']:.2f} s | {other['wall']:.2f} s ({rate(other):.0f} MB/s) | {100 * wire(other) / size:.3f}% | "
              f"{put['wall']:.2f} s ({rate(put):.0f} MB/s) |")
    print()

    print("### Pull vs store get\n")
    print("| round | pull | client / server CPU | pull, OUT exists (all reused) | store get | get CPU |")
    print("|---|---|---|---|---|---|")
    for i, (pull, again, get) in enumerate(zip(rows("pull", "pull"), rows("pull", "pull (OUT exists)"), rows("pull", "store get")), 1):
        print(f"| {i} | {pull['wall']:.2f} s ({rate(pull):.0f} MB/s) | {pull['cpu']:.2f} / {pull['server_cpu']:.2f} s | "
              f"{again['wall']:.2f} s ({rate(again):.0f} MB/s) | {get['wall']:.2f} s ({rate(get):.0f} MB/s) | {get['cpu']:.2f} s |")
    print()


def versions():
    days = sorted({r["step"].split(":", 1)[1] for r in results if r["step"].startswith("versions:")})
    if not days:
        return
    print("### Versions corpus (10 daily tars, in order): cdc push vs rsync to an rsync daemon\n")
    print("Wire bytes: push counts gRPC payload both ways (`wire_bytes_sent` + `wire_bytes_received`), rsync its "
          "`--stats` total bytes sent + received. CPU: client / server (user + system).\n")
    print("| day | size | push: wire | push: s | push CPU | rsync: wire | rsync: s | rsync CPU | rsync -z: wire | rsync -z: s | rsync -z CPU |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    tot = {k: [0, 0.0, 0.0] for k in ("push", "rsync", "rsync -z")}
    for d in days:
        step = f"versions:{d}"
        push = rows(step, "push")[0]
        figures = {"push": (wire(push), push)}
        for kind in ("rsync", "rsync -z"):
            t = rows(step, kind)[0]
            b = sum(r.get("sent", 0) + r.get("received", 0) for r in rows(step, kind + " bytes"))
            figures[kind] = (b, t)
        cells = [f"{push['report']['bytes_read'] / MB:.0f} MB"]
        for k in ("push", "rsync", "rsync -z"):
            b, t = figures[k]
            cells += [f"{b / MB:.2f} MB", f"{t['wall']:.2f}", f"{t['cpu']:.2f} / {t['server_cpu']:.2f}"]
            if d != days[0]:
                tot[k][0] += b
                tot[k][1] += t["wall"]
                tot[k][2] += t["cpu"] + t["server_cpu"]
        print(f"| {d} | " + " | ".join(cells) + " |")
    p, z = tot["push"], tot["rsync -z"]
    print(f"\ndays 2..{len(days)}: push **{p[0] / MB:.1f} MB in {p[1]:.1f} s** (CPU {p[2]:.1f} s); "
          f"rsync {tot['rsync'][0] / MB:.1f} MB in {tot['rsync'][1]:.1f} s (CPU {tot['rsync'][2]:.1f} s); "
          f"rsync -z {z[0] / MB:.1f} MB in {z[1]:.1f} s (CPU {z[2]:.1f} s). "
          f"push / rsync -z: bytes **{p[0] / max(1, z[0]):.2f}**, time **{p[1] / max(1e-9, z[1]):.2f}**, "
          f"CPU {p[2] / max(1e-9, z[2]):.2f}; push / rsync: bytes {p[0] / max(1, tot['rsync'][0]):.2f}, "
          f"time {p[1] / max(1e-9, tot['rsync'][1]):.2f}\n")


def memory():
    if bench.get("runs"):
        print("### Memory: cdc bench transfer (a fresh server per run; peaks from wait4)\n")
        print("| input | way | seconds | client peak RSS | server peak RSS |")
        print("|---|---|---|---|---|")
        for r in bench["runs"]:
            if not r["ok"]:
                print(f"| {r['bytes'] / MB:.0f} MB | {r['way']} | {r['note']} | | |")
                continue
            print(f"| {r['bytes'] / MB:.0f} MB | {r['way']} | {r['seconds']:.2f} | {r['client_peak_rss_mb']:.1f} MB | "
                  f"{r['server_peak_rss_mb']:.1f} MB |")
        print()
    big = {k: rows("big", k) for k in ("push", "pull", "push server", "pull server")}
    if big["push"] and big["pull"]:
        n = big["push server"][0]["bytes"]
        print(f"### Memory: push and pull of {n / 2**30:.2f} GiB of splitmix64 data (`cdc gen`), a fresh server each\n")
        print("| way | seconds | MB/s | client CPU | server CPU | client peak RSS (/usr/bin/time %M) | server peak RSS (VmHWM) |")
        print("|---|---|---|---|---|---|---|")
        for k in ("push", "pull"):
            r, s = big[k][0], big[k + " server"][0]
            print(f"| {k} | {r['wall']:.2f} | {n / r['wall'] / MB:.0f} | {r['cpu']:.2f} s | {r['server_cpu']:.2f} s | "
                  f"{r['rss_kb'] / 1024:.1f} MiB | {s['server_rss_kb'] / 1024:.1f} MiB |")
        print()


if rows("new", "push"):
    new_data()
versions()
memory()
