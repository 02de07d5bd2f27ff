#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Memory of one long-lived `cdc serve` over a scripted session.

One server answers, in a mixed order, pushes, pulls, `hash --via` and `ls`
of files from a few KiB up to --max (random `cdc gen splitmix64` data, an
edited version of a file, a sparse file of zeros, a tree of small files),
some steps by several clients at once. After each step the server's
/proc/PID/status is read: VmRSS (now; RssAnon: its heap and stacks, the
rest is mostly the code of the libraries), VmHWM (the peak so far), Threads.
The bound for a server that runs for months is 64 MB (issue 39), whatever
it served before; docs/BENCHMARKS.md has the figures.

    bench/transfer/server_memory.py [--cdc build/cdc] [--max 1G] [--clients 4]
        [--work /tmp/cdc-server-memory] [--rounds 2] [--bound-mb 64] [--json FILE]
        [--server-env NAME=VALUE]... [--init-arg ARG]...

--max 1G runs in a few minutes on two loaded cores; --max 4G is the full
session (~25 GB of disk in --work, removed at the end unless --keep).
Round 1 runs the steps in the order below, every later round in an order
shuffled by --seed. Exits 1 if the server's VmHWM passed --bound-mb (0: no
check), 2 on a usage error or a step that failed.
--init-arg passes its ARG to `cdc store init` (a store whose packs are in S3:
--init-arg=--packs --init-arg=s3://BUCKET/P --init-arg=--s3-endpoint
--init-arg=URL, the credentials in the environment).
CDC_TRANSFER picks the helper as for `cdc` (SRV, if set, the server's own:
compare two builds' servers with the same clients).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

MIB = 1 << 20


def parse_size(text: str) -> int:
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = t[-1:] if t[-1:] in units and not t[-1:].isdigit() else ""
    return int(float(t[: len(t) - len(unit)]) * units[unit])


def status(pid: int) -> dict[str, int]:
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "Threads"):
                out[key] = int(value.split()[0])
    return out


class Session:
    def __init__(self, args: argparse.Namespace) -> None:
        self.a = args
        self.cdc = str(Path(args.cdc).resolve())
        self.work = Path(args.work)
        self.env = dict(os.environ, XDG_CONFIG_HOME=str(self.work / "config"))
        self.rows: list[dict] = []
        self.server: subprocess.Popen | None = None
        self.addr = ""
        self.files: dict[str, Path] = {}

    # ----- processes -----
    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        p = subprocess.run([self.cdc, *argv], env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if check and p.returncode != 0:
            raise RuntimeError(f"cdc {' '.join(argv)} exited {p.returncode}: {p.stderr.strip()[-2000:]}")
        return p

    def run_all(self, commands: list[list[str]]) -> None:
        """Several clients at once."""
        procs = [
            (c, subprocess.Popen([self.cdc, *c], env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
            for c in commands
        ]
        failed = []
        for c, p in procs:
            _, err = p.communicate()
            if p.returncode != 0:
                failed.append(f"cdc {' '.join(c)} exited {p.returncode}: {err.strip()[-1000:]}")
        if failed:
            raise RuntimeError("\n".join(failed))

    def start_server(self) -> None:
        port_file = self.work / "port"
        port_file.unlink(missing_ok=True)
        env = dict(self.env)
        if os.environ.get("SRV"):
            env["CDC_TRANSFER"] = os.environ["SRV"]
        for kv in self.a.server_env:
            k, _, v = kv.partition("=")
            env[k] = v
        self.server = subprocess.Popen(
            [self.cdc, "serve", "--store", str(self.work / "store"), "--listen", "127.0.0.1:0", "--port-file",
             str(port_file), "-q"],
            env=env,
        )
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            if self.server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("cdc serve did not start")
            time.sleep(0.05)
        self.addr = f"127.0.0.1:{port_file.read_text().strip()}"
        self.pid = self.server.pid  # cdc execs the helper: the same process
        if os.environ.get("SRV"):  # a wrapper (heaptrack, valgrind) may run the helper as its child
            self.pid = _process_with_args("serve", str(port_file)) or self.pid

    def stop_server(self) -> None:
        if self.server and getattr(self, "pid", self.server.pid) != self.server.pid:
            os.kill(self.pid, 15)  # the helper under a wrapper
        if self.server and self.server.poll() is None:
            self.server.terminate()
            try:
                self.server.wait(20)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait()

    # ----- inputs -----
    def gen(self, name: str, seed: int, size: int) -> Path:
        path = self.work / "in" / name
        if not path.exists():
            self.run("gen", f"splitmix64:{seed}:{size}", "-o", str(path))
        self.files[name] = path
        return path

    def zeros(self, name: str, size: int) -> Path:
        path = self.work / "in" / name
        with open(path, "wb") as f:
            f.truncate(size)
        self.files[name] = path
        return path

    def edited(self, name: str, source: str, seed: int) -> Path:
        """A version of `source`: a few 64 KiB blocks overwritten, 1 MiB inserted in the middle."""
        src = self.files[source]
        path = self.work / "in" / name
        size = src.stat().st_size
        r = random.Random(seed)
        with open(src, "rb") as fi, open(path, "wb") as fo:
            half = size // 2
            shutil.copyfileobj(_Limited(fi, half), fo, 4 * MIB)
            fo.write(r.randbytes(MIB))
            shutil.copyfileobj(fi, fo, 4 * MIB)
            for _ in range(8):
                fo.seek(r.randrange(0, max(1, size - 65536)))
                fo.write(r.randbytes(65536))
        self.files[name] = path
        return path

    def tree(self, name: str, count: int, size: int) -> Path:
        root = self.work / "in" / name
        root.mkdir(exist_ok=True)
        r = random.Random(count)
        for i in range(count):
            d = root / f"d{i % 7}"
            d.mkdir(exist_ok=True)
            (d / f"f{i}").write_bytes(r.randbytes(r.randrange(1, size)))
        self.files[name] = root
        return root

    # ----- steps -----
    def push(self, *names: str) -> list[list[str]]:
        return [["push", "--to", self.addr, str(self.files[n]), "--name", n, "-q"] for n in names]

    def pull(self, *names: str) -> list[list[str]]:
        out = []
        for n in names:
            dest = self.work / "out" / n
            dest.unlink(missing_ok=True)
            out.append(["pull", "--from", self.addr, n, "-o", str(dest), "-q"])
        return out

    def hash(self, *names: str) -> list[list[str]]:
        return [["hash", "--via", self.addr, str(self.files[n])] for n in names]

    def ls(self) -> list[list[str]]:
        return [["ls", "--from", self.addr, "--names", "--json"]]

    def record(self, label: str, commands: list[list[str]], round_: int) -> None:
        t0 = time.monotonic()
        self.run_all(commands)
        wall = time.monotonic() - t0
        st = status(self.pid)
        row = {"round": round_, "step": label, "clients": len(commands), "wall_s": round(wall, 2),
               "rss_kib": st["VmRSS"], "anon_kib": st["RssAnon"], "hwm_kib": st["VmHWM"], "threads": st["Threads"]}
        self.rows.append(row)
        print(f"| {round_} | {label} | {len(commands)} | {wall:.1f} | {st['VmRSS'] / 1024:.1f} | "
              f"{st['RssAnon'] / 1024:.1f} | {st['VmHWM'] / 1024:.1f} | {st['Threads']} |", flush=True)

    def verify_pulls(self, names: list[str]) -> None:
        for n in names:
            got, want = self.work / "out" / n, self.files[n]
            if got.exists() and want.is_file() and not _same(got, want):
                raise RuntimeError(f"pulled {n} differs from what was pushed")

    def main(self) -> int:
        a = self.a
        big, mid = a.max, max(a.max // 4, 4 * MIB)
        small = max(a.max // 64, MIB)
        if self.work.exists():
            shutil.rmtree(self.work)
        for d in ("in", "out", "config"):
            (self.work / d).mkdir(parents=True)
        self.run("store", "init", "--no-encryption", *self.a.init_arg, str(self.work / "store"))
        t_gen = time.monotonic()
        # the sequence first: 64 MiB push, pull, hash, then the big push
        self.gen("a64", 1, 64 * MIB)
        self.gen("big", 2, big)
        self.gen("mid", 3, mid)
        for i in range(a.clients):
            self.gen(f"s{i}", 10 + i, small + i * 4097)
        self.gen("tiny", 20, 5000)
        self.zeros("zeros", big)
        self.tree("tree", 300, 64 * 1024)
        print(f"(inputs made in {time.monotonic() - t_gen:.1f} s: max {big} bytes, {a.clients} clients)", flush=True)

        self.start_server()
        try:
            st = status(self.pid)
            print("| round | step | clients | wall s | VmRSS MiB | RssAnon MiB | VmHWM MiB | threads |")
            print("|---|---|---|---|---|---|---|---|")
            print(f"| 0 | started | 0 | 0 | {st['VmRSS'] / 1024:.1f} | {st['RssAnon'] / 1024:.1f} | "
                  f"{st['VmHWM'] / 1024:.1f} | {st['Threads']} |", flush=True)
            for round_ in range(1, a.rounds + 1):
                # Each round edits the files it pushes again, so later rounds
                # push versions (lists compared with the stored file) too.
                self.edited(f"a64v{round_}", "a64", 100 + round_)
                self.edited(f"midv{round_}", "mid", 200 + round_)
                steps = [
                    ("ls (store so far)", lambda: self.ls()),
                    ("push 64 MiB", lambda: self.push("a64")),
                    ("pull 64 MiB", lambda: self.pull("a64")),
                    ("hash --via 64 MiB", lambda: self.hash("a64")),
                    (f"push {_h(big)} (new data in round 1)", lambda: self.push("big")),
                    (f"push {a.clients} x {_h(small)} at once",
                     lambda: self.push(*[f"s{i}" for i in range(a.clients)])),
                    (f"push {_h(mid)}", lambda: self.push("mid")),
                    (f"pull {_h(big)}", lambda: self.pull("big")),
                    (f"push {_h(mid)} edited", lambda: self.push(f"midv{round_}")),
                    (f"push {_h(big)} zeros (sparse)", lambda: self.push("zeros")),
                    ("push tree (300 files)", lambda: self.push("tree")),
                    (f"hash --via {_h(big)} + pull {_h(mid)} + push 64 MiB edited at once",
                     lambda: self.hash("big") + self.pull("mid") + self.push(f"a64v{round_}")),
                    (f"pull {a.clients} files at once",
                     lambda: self.pull(*[f"s{i}" for i in range(a.clients)])),
                    (f"push {_h(big)} again (unchanged)", lambda: self.push("big")),
                    (f"pull {_h(big)} zeros", lambda: self.pull("zeros")),
                    ("push tiny + ls + hash tiny at once", lambda: self.push("tiny") + self.ls() + self.hash("tiny")),
                    (f"hash --via {a.clients} files at once", lambda: self.hash(*[f"s{i}" for i in range(a.clients)])),
                ]
                if round_ > 1:
                    random.Random(a.seed * 1000 + round_).shuffle(steps)
                for label, make in steps:
                    self.record(label, make(), round_)
                    if label.startswith("pull"):
                        self.verify_pulls([n for n in self.files if (self.work / "out" / n).exists()])
                        for f in (self.work / "out").iterdir():
                            f.unlink()
        finally:
            self.stop_server()
        peak = max(r["hwm_kib"] for r in self.rows)
        print(f"server VmHWM after the session: {peak / 1024:.1f} MiB ({peak * 1024 / 1e6:.1f} MB)")
        if a.json:
            Path(a.json).write_text(json.dumps({"max": big, "clients": a.clients, "rounds": a.rounds,
                                                "rows": self.rows}, indent=1))
        if not a.keep:
            shutil.rmtree(self.work)
        if a.bound_mb and peak * 1024 > a.bound_mb * 1e6:
            print(f"server_memory: VmHWM {peak * 1024 / 1e6:.1f} MB passed the bound of {a.bound_mb} MB",
                  file=sys.stderr)
            return 1
        return 0


class _Limited:
    """A reader of the first `n` bytes of `f`."""

    def __init__(self, f, n: int) -> None:
        self.f, self.n = f, n

    def read(self, k: int = -1) -> bytes:
        if self.n <= 0:
            return b""
        b = self.f.read(self.n if k < 0 else min(k, self.n))
        self.n -= len(b)
        return b


def _process_with_args(*args: str) -> int | None:
    """The newest process whose arguments include every one of `args`."""
    found = None
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if all(a.encode() in argv for a in args):
            found = max(found or 0, int(d.name))
    return found


def _same(x: Path, y: Path) -> bool:
    if x.stat().st_size != y.stat().st_size:
        return False
    with open(x, "rb") as fx, open(y, "rb") as fy:
        while True:
            bx, by = fx.read(4 * MIB), fy.read(4 * MIB)
            if bx != by:
                return False
            if not bx:
                return True


def _h(n: int) -> str:
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k and n % k == 0:
            return f"{n // k} {unit}"
    return f"{n} B"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cdc", default="build/cdc")
    p.add_argument("--max", type=parse_size, default=parse_size("1G"), help="the largest file (default 1G)")
    p.add_argument("--clients", type=int, default=4, help="clients at once in the concurrent steps")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--seed", type=int, default=1, help="shuffles the rounds after the first")
    p.add_argument("--work", default="/tmp/cdc-server-memory")
    p.add_argument("--bound-mb", type=float, default=64, help="exit 1 past this VmHWM (MB, 10^6 bytes; 0: none)")
    p.add_argument("--json", help="write the rows here")
    p.add_argument("--keep", action="store_true", help="keep --work")
    p.add_argument("--server-env", action="append", default=[], metavar="NAME=VALUE",
                   help="set in the server's environment only (e.g. MALLOC_ARENA_MAX=1)")
    p.add_argument("--init-arg", action="append", default=[], metavar="ARG",
                   help="passed to `cdc store init` (e.g. --init-arg=--packs --init-arg=s3://BUCKET/P)")
    a = p.parse_args()
    if a.max < 4 * MIB or a.clients < 1 or a.rounds < 1:
        p.error("--max is at least 4M, --clients and --rounds at least 1")
    if not Path(a.cdc).is_file():
        p.error(f"no cdc at {a.cdc} (scripts/build.sh release)")
    try:
        return Session(a).main()
    except RuntimeError as e:
        print(f"server_memory: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
