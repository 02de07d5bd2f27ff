# SPDX-License-Identifier: Apache-2.0
"""python3 -m cdc_chunkers.distributed: `cdc analyze` over a Dask cluster.

  python3 -m cdc_chunkers.distributed --scheduler tcp://HOST:8786 PATH...
  python3 -m cdc_chunkers.distributed --local 2 -a fastcdc,ultracdc --json PATH...
  python3 -m cdc_chunkers.distributed --scheduler ADDR --at node1 /srv/a --at node2 /srv/b

Exit status as cdc analyze: 0 done, 2 bad option or top-level path,
3 done but some files could not be read (listed), 4 the run failed.
"""
import argparse
import json
import logging
import os
import re
import sys

from . import DEFAULT_PRECISION, DEFAULT_SAMPLE, analyze

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def size(text):
    m = re.fullmatch(r"\s*(\d+)\s*([KMGT]?)(i?B)?\s*", text, re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"'{text}' is not a size (e.g. 8192, 16K, 4M)")
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


def integer(text):
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None


def parser():
    p = argparse.ArgumentParser(
        prog="python3 -m cdc_chunkers.distributed",
        description="Dedup figures of files spread over a Dask cluster: the report of `cdc analyze`, exact or "
                    "sketched, computed by the workers where the files are.",
        epilog="examples:\n"
               "  python3 -m cdc_chunkers.distributed --scheduler tcp://10.0.0.1:8786 -a all /data\n"
               "  python3 -m cdc_chunkers.distributed --local 2 --mode sketch --json /data\n"
               "  python3 -m cdc_chunkers.distributed --scheduler ADDR --at node1 /srv/a --at node2 /srv/b\n"
               "exit status: 0 done; 2 bad option or top-level path; 3 done, some files could not be read; "
               "4 the run failed",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDR", help="the Dask scheduler (tcp://HOST:8786)")
    where.add_argument("--local", metavar="N", type=int,
                       help="start a local cluster of N single-threaded workers (default: one per core)")
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or directories any worker can read")
    p.add_argument("--at", nargs=2, action="append", default=[], metavar=("HOST", "PATH"),
                   help="a path read on that host (or worker address) only; repeatable")
    p.add_argument("-a", "--algorithm", action="append", metavar="NAME",
                   help="algorithm name(s), comma separated or repeated, or 'all' (default: fastcdc)")
    p.add_argument("--min", type=size, default=0, help="minimum chunk size (default: the algorithm's)")
    p.add_argument("--avg", type=size, default=0, help="average chunk size")
    p.add_argument("--max", type=size, default=0, help="maximum chunk size")
    p.add_argument("--key", help="a 32-byte key in hex (keyed Gear tables)")
    p.add_argument("--level", type=integer)
    p.add_argument("--seed", type=integer)
    p.add_argument("--poly", type=integer, help="restic-rabin's polynomial")
    p.add_argument("--window", type=size)
    p.add_argument("--digest", default="blake3", choices=["blake3", "sha256", "xxh3"])
    p.add_argument("--follow-symlinks", action="store_true",
                   help="follow symbolic links inside directories (as cdc analyze)")
    p.add_argument("--mode", choices=["exact", "sketch"], default="exact")
    p.add_argument("--buckets", type=int, default=0, help="exact mode: id partitions (default: one per thread)")
    p.add_argument("--shard-size", type=size, default=0, help="bytes of files per task (default: automatic)")
    p.add_argument("--precision", type=int, default=DEFAULT_PRECISION, help="sketch mode: HyperLogLog precision")
    p.add_argument("--sample", type=int, default=DEFAULT_SAMPLE, help="sketch mode: bottom-k sample size")
    p.add_argument("--sketch-seed", type=integer, default=0)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress and no warnings")
    return p


def error(text, status):
    print(f"cdc: error: {text}", file=sys.stderr)
    return status


def print_table(report):
    d = report["distributed"]
    print(f"{report['files']} files, {report['bytes']:,} bytes in {report['wall_seconds']:.2f} s; "
          f"{d['workers']} workers ({d['threads']} threads), {d['shards']} shards, {d['mode']} mode, "
          f"digest {report['digest']}")
    print(f"{'ALGORITHM':<18} {'CHUNKS':>12} {'DISTINCT':>12} {'DISTINCT BYTES':>16} {'DEDUP%':>7} "
          f"{'P50':>7} {'MEAN':>8} {'P95':>7}")
    for a in report["algorithms"]:
        s = a["size"]
        print(f"{a['algorithm']:<18} {a['chunks']:>12} {a['distinct_chunks']:>12} {a['distinct_bytes']:>16} "
              f"{100 * a['dedup_ratio']:>7.2f} {s['p50']:>7} {s['mean']:>8.0f} {s['p95']:>7}")
    print("DEDUP% = distinct bytes / total bytes (lower is better).")
    if d["mode"] == "sketch":
        for e in d["estimates"]:
            print(f"{e['algorithm']}: " + ("exact (the sample held every distinct chunk)" if e["exact"] else
                  f"distinct chunks +-{300 * e['distinct_chunks_rel_stderr']:.2f}%, distinct bytes "
                  f"+-{300 * e['distinct_bytes_rel_stderr']:.2f}% (3 standard errors, ~99.7%)"))


def main(argv=None):
    args = parser().parse_args(argv)
    if not args.paths and not args.at:
        return error("no path given", 2)
    paths = args.paths
    if args.at:
        hosts = {}
        for host, path in args.at:
            hosts.setdefault(host, []).append(path)
        paths = hosts
        if args.paths:
            return error("give PATH arguments or --at HOST PATH, not both", 2)
    names = ",".join(args.algorithm or ["fastcdc"]).split(",")
    import distributed
    client = cluster = None
    try:
        if args.scheduler:
            client = distributed.Client(args.scheduler)
        else:
            cluster = distributed.LocalCluster(n_workers=args.local or os.cpu_count() or 1, threads_per_worker=1,
                                               dashboard_address=":0", silence_logs=logging.ERROR)
            client = distributed.Client(cluster)
        if not args.quiet:
            print(f"cdc: Dask dashboard: {client.dashboard_link}", file=sys.stderr)
        report = analyze(paths, names, args.min, args.avg, args.max, key=args.key, level=args.level,
                         seed=args.seed, polynomial=args.poly, window=args.window, digest=args.digest,
                         follow_symlinks=args.follow_symlinks, client=client, mode=args.mode, buckets=args.buckets,
                         shard_bytes=args.shard_size, precision=args.precision, sample=args.sample,
                         sketch_seed=args.sketch_seed, progress=not args.quiet)
    except (ValueError, TypeError) as e:
        return error(str(e), 2)
    except OSError as e:
        return error(f"{e.filename or ''}: {e.strerror or e}" if e.filename else str(e), 2)
    except Exception as e:  # the cluster failed (lost workers, scheduler gone...)
        return error(f"the run failed: {type(e).__name__}: {e}", 4)
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
    # As cdc analyze reports them (escape.hpp: the "error" text is escaped there already).
    for e in report["errors"]:
        print(f"cdc: error: {e['path']}: {e['error']} (skipped)", file=sys.stderr)
    if not args.quiet:
        for w in report["warnings"]:
            print(f"cdc: warning: {w['path']}: {w['error']}", file=sys.stderr)
    if report["errors"]:
        print(f"cdc: {len(report['errors'])} input(s) skipped after errors", file=sys.stderr)
    if args.json:
        print(json.dumps(report))
    else:
        print_table(report)
    return 3 if report["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
