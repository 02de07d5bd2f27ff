#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Re-put of PATH under a new name, variant against variant, beside `cdc analyze`.

    bench/store/reput_ab.py ROUNDS PATH NAME=[ENV=VALUE,...:]CDC ...
    e.g. bench/store/reput_ab.py 9 /tmp/cdc-store-bench/corpus-sample \\
           main=/tmp/cdc-main new=build/cdc budget96=CDC_STORE_AHEAD_BYTES=100663296:build/cdc

A store holding PATH once (put by the first variant's binary) is made once;
every timed re-put goes into a fresh copy of it, so no variant's run sees
another's manifests and every run finds the same store. Rounds are
interleaved (each variant, then `cdc analyze` of PATH with the same
algorithm and sizes), PATH is read into the page cache before every timed
step, and wall time and user + system CPU (wait4) are reported as medians
with analyze's speed over the variant's. OPTS (default "--min 2K --avg 8K
--max 64K") gives the sizes, WORK (default /tmp/cdc-reput-ab) the stores.
"""
import os
import shutil
import statistics
import subprocess
import sys


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rounds, path, specs = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    opts = os.environ.get("OPTS", "--min 2K --avg 8K --max 64K").split()
    work = os.environ.get("WORK", "/tmp/cdc-reput-ab")
    variants = []
    for spec in specs:
        name, _, rest = spec.partition("=")
        envs, _, binary = rest.rpartition(":")
        env = dict(kv.split("=", 1) for kv in envs.split(",") if kv)
        variants.append((name, env, os.path.realpath(binary)))

    timer = os.path.join(os.path.dirname(os.path.realpath(__file__)), "timed.py")

    def timed(cmd, env=None):  # (wall, CPU) seconds, from timed.py
        full = dict(os.environ)
        full.update(env or {})
        p = subprocess.run([timer, "-", *cmd], capture_output=True, text=True, env=full)
        if p.returncode != 0:
            sys.exit(f"reput_ab: {' '.join(cmd)} failed: {p.stderr}")
        wall, cpu, _ = p.stdout.split()
        return float(wall), float(cpu)

    def warm():
        subprocess.run(["sh", "-c", 'find "$1" -type f -exec cat {} + > /dev/null', "-", path], check=True)

    shutil.rmtree(work, ignore_errors=True)
    template, store = os.path.join(work, "template"), os.path.join(work, "store")
    first = variants[0][2]
    subprocess.run([first, "store", "init", "--no-encryption", template, "-a", "fastcdc", *opts], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([first, "store", "put", "-q", template, path, "--name", "base"], check=True,
                   stdout=subprocess.DEVNULL)
    results = {}
    for _ in range(rounds):
        for name, env, binary in variants:
            shutil.rmtree(store, ignore_errors=True)
            shutil.copytree(template, store)
            warm()
            results.setdefault(name, []).append(timed([binary, "store", "put", "-q", store, path, "--name", "again"], env))
        warm()
        results.setdefault("analyze", []).append(timed([first, "analyze", "-q", "-a", "fastcdc", *opts, path]))
    shutil.rmtree(work, ignore_errors=True)
    aw = statistics.median(w for w, _ in results["analyze"])
    ac = statistics.median(c for _, c in results["analyze"])
    print(f"{path}, {rounds} rounds, medians; analyze/variant = the variant's speed relative to analyze")
    print("| variant | wall s | CPU s | analyze/variant, wall | by CPU |")
    print("|---|---|---|---|---|")
    for name, runs in results.items():
        w = statistics.median(x for x, _ in runs)
        c = statistics.median(y for _, y in runs)
        print(f"| {name} | {w:.4f} | {c:.4f} | {aw / w:.2f}x | {ac / c:.2f}x |")


if __name__ == "__main__":
    main()
