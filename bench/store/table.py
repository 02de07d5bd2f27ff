#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints the tables of bench/store/run.sh from its results.jsonl."""
import json, sys
from collections import defaultdict

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for corpus in dict.fromkeys(r["corpus"] for r in rows):
    rs = [r for r in rows if r["corpus"] == corpus]
    tools = list(dict.fromkeys(r["tool"] for r in rs))
    agg = defaultdict(lambda: defaultdict(float))
    for r in rs:
        a = agg[r["tool"]]
        step = r["step"]
        if step == "size":
            a["size"] = r["bytes"]
            continue
        a[step + "_wall"] += r["wall"]
        a[step + "_cpu"] += r["cpu"]
        a[step + "_bytes"] += r["bytes"]
        a["rss"] = max(a["rss"], r["rss_kb"] / 1024)
    total = agg[tools[0]]["put_bytes"]
    peers = [t for t in tools if not t.startswith("cdc")]
    fastest = min(agg[t]["put_wall"] for t in peers)
    smallest = min(agg[t]["size"] for t in peers)
    print(f"\n### {corpus}: {total / 1e6:.0f} MB stored in {sum(1 for r in rs if r['tool'] == tools[0] and r['step'] == 'put')} puts\n")
    print("| tool | put all: wall s | x fastest peer | CPU s | store MB | x smallest peer | re-put MB/s | get MB/s (file) | get MB/s (/dev/null) | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for t in tools:
        a = agg[t]
        mbs = lambda step: (f"{a[step + '_bytes'] / a[step + '_wall'] / 1e6:.0f}" if a[step + "_wall"] else "-")
        print(f"| {t} | {a['put_wall']:.1f} | {a['put_wall'] / fastest:.2f} | {a['put_cpu']:.1f} | {a['size'] / 1e6:.0f} | "
              f"{a['size'] / smallest:.3f} | {mbs('reput')} | {mbs('get')} | {mbs('get-devnull')} | {a['rss']:.0f} |")
    print()
    for t in tools:
        a = agg[t]
        if a["analyze_wall"]:
            print(f"- {t}: re-put {a['reput_bytes'] / a['reput_wall'] / 1e6:.0f} MB/s vs cdc analyze "
                  f"{a['analyze_bytes'] / a['analyze_wall'] / 1e6:.0f} MB/s (same algorithm and sizes) = "
                  f"{a['analyze_wall'] / a['reput_wall']:.2f}x wall, {a['analyze_cpu'] / a['reput_cpu']:.2f}x by CPU time")
        if a["get-devnull_cpu"]:
            print(f"- {t}: get {a['get-devnull_bytes'] / a['get-devnull_cpu'] / 1e6:.0f} MB per CPU second "
                  f"(to /dev/null), {a['get_bytes'] / a['get_cpu'] / 1e6:.0f} to a file")
