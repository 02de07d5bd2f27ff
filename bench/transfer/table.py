#!/usr/bin/env python3
"""Tables of bench/transfer/run.sh: results.jsonl SIZE bench-transfer.json."""
import json, statistics, sys

results = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
size = int(sys.argv[2])
bench = json.load(open(sys.argv[3]))
MB = 1e6


def rows(step, kind):
    return [r for r in results if r["step"] == step and r["kind"] == kind]


def rate(r, n=size):
    return n / r["wall"] / MB if r["wall"] > 0 else 0


print(f"### New data: push vs local store put ({size / MB:.0f} MB, half text, half random)\n")
print("| round | store put | push | push / put (speed) | push client CPU | server CPU | store put CPU |")
print("|---|---|---|---|---|---|---|")
ratios = []
for i, (put, push) in enumerate(zip(rows("new", "store put"), rows("new", "push")), 1):
    ratio = put["wall"] / push["wall"]
    ratios.append(ratio)
    print(f"| {i} | {put['wall']:.2f} s ({rate(put):.0f} MB/s) | {push['wall']:.2f} s ({rate(push):.0f} MB/s) | "
          f"{ratio:.2f} | {push['cpu']:.2f} s | {push['server_cpu']:.2f} s | {put['cpu']:.2f} s |")
if ratios:
    print(f"\nmedian push / put: **{statistics.median(ratios):.2f}** (target >= 0.70)\n")

print("### Unchanged data: the same file again\n")
print("| round | push, same name | wire bytes / size | push, other name | store put again |")
print("|---|---|---|---|---|")
for i, (same, other, put) in enumerate(zip(rows("unchanged", "push (same name)"), rows("unchanged", "push (other name)"),
                                           rows("unchanged", "store put")), 1):
    wire = same["report"].get("wire_bytes_sent", 0) + same["report"].get("wire_bytes_received", 0)
    print(f"| {i} | {same['wall']:.2f} s ({rate(same):.0f} MB/s; server CPU {same['server_cpu']:.2f} s) | "
          f"{100 * wire / size:.3f}% | {other['wall']:.2f} s ({rate(other):.0f} MB/s) | {put['wall']:.2f} s ({rate(put):.0f} MB/s) |")
print()

print("### Pull vs store get\n")
print("| round | pull | pull, OUT exists (all reused) | store get |")
print("|---|---|---|---|")
for i, (pull, again, get) in enumerate(zip(rows("pull", "pull"), rows("pull", "pull (OUT exists)"), rows("pull", "store get")), 1):
    print(f"| {i} | {pull['wall']:.2f} s ({rate(pull):.0f} MB/s) | {again['wall']:.2f} s ({rate(again):.0f} MB/s) | "
          f"{get['wall']:.2f} s ({rate(get):.0f} MB/s) |")
print()

days = sorted({r["step"].split(":", 1)[1] for r in results if r["step"].startswith("versions:")})
if days:
    print("### Versions corpus (10 daily tars, in order): cdc push vs rsync to an rsync daemon\n")
    print("| day | size | push: wire bytes | push: s | rsync: wire bytes | rsync: s | rsync -z: wire bytes | rsync -z: s |")
    print("|---|---|---|---|---|---|---|---|")
    tot = {"push": [0, 0.0], "rsync": [0, 0.0], "rsync -z": [0, 0.0]}
    for d in days:
        step = f"versions:{d}"
        push = rows(step, "push")[0]
        pw = push["report"]["wire_bytes_sent"] + push["report"]["wire_bytes_received"]
        cells = [f"{push['report']['bytes_read'] / MB:.0f} MB", f"{pw / MB:.2f} MB", f"{push['wall']:.2f}"]
        figures = {"push": (pw, push["wall"])}
        for kind in ("rsync", "rsync -z"):
            t = rows(step, kind)[0]
            b = sum(r.get("sent", 0) + r.get("received", 0) for r in rows(step, kind + " bytes"))
            cells += [f"{b / MB:.2f} MB", f"{t['wall']:.2f}"]
            figures[kind] = (b, t["wall"])
        print(f"| {d} | " + " | ".join(cells) + " |")
        if d != days[0]:
            for k, (b, w) in figures.items():
                tot[k][0] += b
                tot[k][1] += w
    print(f"\ndays 2..{len(days)}: push **{tot['push'][0] / MB:.1f} MB in {tot['push'][1]:.1f} s**; "
          f"rsync {tot['rsync'][0] / MB:.1f} MB in {tot['rsync'][1]:.1f} s; "
          f"rsync -z {tot['rsync -z'][0] / MB:.1f} MB in {tot['rsync -z'][1]:.1f} s "
          f"(push / rsync -z: bytes {tot['push'][0] / max(1, tot['rsync -z'][0]):.2f}, time {tot['push'][1] / max(1e-9, tot['rsync -z'][1]):.2f})\n")

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
