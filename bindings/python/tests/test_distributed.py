# SPDX-License-Identifier: Apache-2.0
"""cdc_chunkers.distributed on a Dask LocalCluster started here (Debian's
python3-distributed): exact mode equals `cdc analyze --json` for every
algorithm name, also when a worker is killed mid-run; the sketch keeps its
stated error bound; unreadable and vanished files are named as cdc analyze
names them; the command line."""
import json
import math
import os
import signal
import subprocess
import sys

import pytest

import cdc_chunkers

try:
    import distributed
except ImportError as e:  # a missing dependency fails, it is never skipped
    raise ImportError("these tests need Dask's distributed (Debian: python3-distributed, "
                      "scripts/install-deps.sh) for this interpreter: " + sys.executable) from e

import cdc_chunkers.distributed as cdd

KEY = "01" * 32
# Figures that are timings or depend on the workers, not on the data.
VOLATILE = {"chunk_mb_s", "wall_mb_s", "cut_seconds", "hash_seconds", "wall_seconds", "jobs", "buffer_bytes",
            "index_bytes", "index_bytes_per_distinct_chunk", "distributed"}


def figures(doc):
    if isinstance(doc, dict):
        return {k: figures(v) for k, v in doc.items() if k not in VOLATILE}
    if isinstance(doc, list):
        return [figures(v) for v in doc]
    return doc


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=50) as cluster, distributed.Client(cluster) as c:
        yield c


def make_tree(root, files=12, size=300_000):
    """Files with copies and shifted versions across directories (and so
    across shards), text, and an empty file."""
    base = cdc_chunkers.generate(f"splitmix64:41:{size}")
    for i in range(files):
        d = root / f"d{i % 3}"
        d.mkdir(exist_ok=True)
        data = base if i % 4 == 0 else base[i * 997:] + cdc_chunkers.generate(f"splitmix64:{i}:{size // 3}")
        (d / f"f{i:02}.bin").write_bytes(data)
    (root / "t.txt").write_bytes(cdc_chunkers.generate("text:3:200000"))
    (root / "empty").write_bytes(b"")
    return root


def cdc_analyze(tool, args):
    done = subprocess.run([tool, "analyze", "--json", "-q", *args], capture_output=True, text=True)
    assert done.returncode in (0, 3), done.stderr
    return json.loads(done.stdout)


def test_exact_mode_equals_cdc_analyze_for_every_algorithm_name(tmp_path, client, cdc_tool):
    tree = make_tree(tmp_path)
    want = cdc_analyze(cdc_tool, ["-a", "all", "--key", KEY, str(tree)])
    names = {a["name"] for a in cdc_chunkers.algorithms()}
    assert {a["algorithm"] for a in want["algorithms"]} == names  # "all" with a key: every name
    got = cdd.analyze(tree, "all", key=KEY, client=client, shard_bytes=600_000, buckets=3)
    assert got["distributed"]["shards"] >= 5 and got["distributed"]["buckets"] == 3
    assert figures(got) == figures(want)
    assert got.keys() - {"distributed"} == want.keys()
    first = got["algorithms"][0]
    assert first["distinct_bytes"] < first["bytes"]  # the copies dedup across shards


def test_exact_mode_with_parameters_digest_and_positional_sizes(tmp_path, client, cdc_tool):
    tree = make_tree(tmp_path, files=5)
    want = cdc_analyze(cdc_tool, ["-a", "fastcdc-v1.0.0,restic-rabin", "--min", "1024", "--avg", "4096",
                                  "--max", "16384", "--poly", "3DA3358B4DC173", "--digest", "xxh3", str(tree)])
    got = cdd.analyze([str(tree)], ["fastcdc-v1.0.0", "restic-rabin"], 1024, 4096, 16384,
                      polynomial=0x3DA3358B4DC173, digest="xxh3", client=client, shard_bytes=1)
    assert figures(got) == figures(want)


def test_a_worker_killed_mid_run_changes_no_figure(tmp_path, client, cdc_tool):
    tree = make_tree(tmp_path, files=30, size=400_000)
    names = "fastcdc,ultracdc,jc-v1.1.0"
    want = cdc_analyze(cdc_tool, ["-a", names, str(tree)])
    pids = client.run(os.getpid)
    killed = []

    def kill_one(info):
        if not killed and info["shards_done"] >= 1:
            victim = sorted(pids)[0]
            os.kill(pids[victim], signal.SIGKILL)
            killed.append((victim, info["shards_done"], info["shards"]))

    got = cdd.analyze(tree, names.split(","), client=client, shard_bytes=400_000, progress=kill_one)
    assert killed and killed[0][1] < killed[0][2], f"the kill came after the last shard: {killed}"
    assert figures(got) == figures(want)
    client.wait_for_workers(2, timeout=120)
    assert pids[killed[0][0]] not in client.run(os.getpid).values()  # it did die (and was replaced)


def test_the_walk_hands_on_shards_while_it_walks(tmp_path, client, cdc_tool):
    tree = make_tree(tmp_path, files=12)
    got = cdd.analyze(tree, "fastcdc", client=client, shard_bytes=600_000)
    d = got["distributed"]
    assert d["shards_during_walk"] >= d["shards"] - 1 >= 5, d  # all but the last, made of what was left
    assert figures(got) == figures(cdc_analyze(cdc_tool, ["-a", "fastcdc", str(tree)]))
    small = cdd.analyze(tree, "fastcdc", client=client)  # default sizes, a tree below 256 MiB: none
    assert small["distributed"]["shards_during_walk"] == 0 and figures(small) == figures(got)
    # The scheduler keeps no queue of a run that ended (its memory would
    # grow with the runs it served).
    queues = client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.extensions["queues"].queues))
    assert not [q for q in queues if q.startswith("cdc-walk-")], queues


class _Queue:
    def __init__(self, messages):
        self.messages = [cdd._tasks.pack(m) for m in messages]

    def get(self, timeout):
        if not self.messages:
            raise TimeoutError
        return self.messages.pop(0)


class _Walk:
    status = "finished"

    def __init__(self, **result):
        self.packed = cdd._tasks.pack(result)

    def result(self):
        return self.packed


def test_a_walk_run_again_replaces_what_its_earlier_run_handed_on():
    log = []

    def walks(messages, result):
        log.clear()
        got = cdd._streamed_walks([_Walk(**result)], _Queue(messages), lambda g, f: log.append((g, f)),
                                  lambda g: log.append(("retired", g)))
        return got[0]["files"], list(log)

    # Run A dies after two batches; run B starts over (A's late batch and its
    # end are ignored).
    files, calls = walks([("files", 0, "A", 0, ["a0"]), ("files", 0, "A", 1, ["a1"]), ("files", 0, "B", 0, ["b0"]),
                          ("files", 0, "A", 2, ["a2"]), ("done", 0, "A", 3, None), ("files", 0, "B", 1, ["b1"]),
                          ("done", 0, "B", 2, None)], {"attempt": "B", "batches": 2, "files": ["rest"]})
    assert calls == [(0, ["a0"]), (0, ["a1"]), ("retired", 0), (0, ["b0"]), (0, ["b1"])] and files == ["rest"]
    # Run A ended, but its result was lost with its worker: the result is
    # run B's, whose batches follow.
    files, calls = walks([("files", 0, "A", 0, ["a0"]), ("done", 0, "A", 1, None), ("files", 0, "B", 0, ["b0"]),
                          ("done", 0, "B", 1, None)], {"attempt": "B", "batches": 1, "files": []})
    assert calls == [(0, ["a0"]), ("retired", 0), (0, ["b0"])] and files == []
    with pytest.raises(RuntimeError, match="batch 1 after 0"):
        walks([("files", 0, "A", 1, ["a1"])], {"attempt": "A", "batches": 2, "files": []})


def test_a_walk_whose_worker_dies_is_run_again_and_nothing_counted_twice(tmp_path, client, cdc_tool, monkeypatch):
    # 120 files, each a batch (shard_bytes=1): the walk puts ~120 messages,
    # long enough to be killed after its first.
    base = cdc_chunkers.generate("splitmix64:9:40000")
    for i in range(120):
        d = tmp_path / f"d{i % 4}"
        d.mkdir(exist_ok=True)
        (d / f"f{i:03}").write_bytes(base if i % 5 == 0 else cdc_chunkers.generate(f"splitmix64:{i}:30000"))
    want = cdc_analyze(cdc_tool, ["-a", "fastcdc", str(tmp_path)])
    pids = client.run(os.getpid)
    killed, retired_groups = [], []
    real = cdd._streamed_walks

    def streamed(walks, queue, batch, retired):
        def kill_the_walker(g, files):
            batch(g, files)
            if not killed:
                walking = [w for w, keys in client.processing().items()
                           if any(str(k).startswith("cdc-walk") for k in keys)]
                os.kill(pids[walking[0]], signal.SIGKILL)
                killed.append(walking[0])

        return real(walks, queue, kill_the_walker, lambda g: (retired_groups.append(g), retired(g)))

    monkeypatch.setattr(cdd, "_streamed_walks", streamed)
    got = cdd.analyze(tmp_path, "fastcdc", client=client, shard_bytes=1)
    assert killed and retired_groups == [0], (killed, retired_groups)
    assert figures(got) == figures(want)
    client.wait_for_workers(2, timeout=120)
    assert pids[killed[0]] not in client.run(os.getpid).values()  # it did die (and was replaced)


def test_sketch_mode_keeps_its_stated_error_bound(tmp_path, client):
    # ~9,000 distinct chunks against a sample of 512 and 2^10 registers:
    # both figures are estimates. Twenty seeds (fixed: the run is
    # deterministic) must scatter around the truth as the stated standard
    # errors say: root mean square within 1.5x, none beyond 4x.
    data = cdc_chunkers.generate("splitmix64:77:24000000")
    for i in range(4):
        (tmp_path / f"part{i}").write_bytes(data[i * 6_000_000:(i + 1) * 6_000_000])
    (tmp_path / "copy").write_bytes(data[:6_000_000])
    sizes = (256, 1024, 4096)
    exact = cdd.analyze(tmp_path, "fastcdc", *sizes, client=client)["algorithms"][0]
    assert exact["distinct_chunks"] > 8_000
    errors = {"distinct_chunks": [], "distinct_bytes": []}
    stated = {"distinct_chunks": [], "distinct_bytes": []}
    seen = set()
    for seed in range(20):
        r = cdd.analyze(tmp_path, "fastcdc", *sizes, client=client, mode="sketch", precision=10, sample=512,
                        sketch_seed=seed)
        a, e = r["algorithms"][0], r["distributed"]["estimates"][0]
        assert not e["exact"] and a["chunks"] == exact["chunks"] and a["size"] == exact["size"]
        seen.add(a["distinct_bytes"])
        for k in errors:
            errors[k].append(a[k] / exact[k] - 1.0)
            stated[k].append(e[f"{k}_rel_stderr"])
    assert len(seen) > 15  # each seed is another sample
    for k in errors:
        sigma = sum(stated[k]) / len(stated[k])
        rms = math.sqrt(sum(x * x for x in errors[k]) / len(errors[k]))
        assert 0 < sigma < 0.1, (k, sigma)
        assert rms <= 1.5 * sigma, (k, rms, sigma, errors[k])
        assert max(abs(x) for x in errors[k]) <= 4 * sigma, (k, errors[k], sigma)


def test_sketch_mode_is_exact_when_the_sample_holds_every_chunk(tmp_path, client):
    tree = make_tree(tmp_path, files=4)
    exact = cdd.analyze(tree, ["fastcdc", "ultracdc"], client=client)
    sketch = cdd.analyze(tree, ["fastcdc", "ultracdc"], client=client, mode="sketch")
    assert figures(sketch) == figures(exact)
    assert all(e["exact"] and e["distinct_bytes_rel_stderr"] == 0 for e in sketch["distributed"]["estimates"])
    moved = sum(sketch["distributed"]["bytes_shipped_by_worker"].values())
    assert 0 < moved <= sketch["distributed"]["shards"] * 2 * ((1 << cdd.DEFAULT_PRECISION) + 12 * cdd.DEFAULT_SAMPLE)


def test_unreadable_and_vanished_files_are_named_as_cdc_analyze_names_them(tmp_path, client, cdc_tool):
    tree = make_tree(tmp_path, files=24)
    # Root reads everything: /proc/self/mem fails read(2) for root too (EIO).
    os.symlink("/proc/self/mem", tree / "d0" / "mem")
    os.symlink(tree / "nowhere", tree / "d1" / "dangling")
    want = cdc_analyze(cdc_tool, ["--follow-symlinks", "-a", "fastcdc", str(tree)])
    assert {e["path"] for e in want["errors"]} == {str(tree / "d0" / "mem"), str(tree / "d1" / "dangling")}
    got = cdd.analyze(tree, "fastcdc", follow_symlinks=True, client=client, shard_bytes=300_000)
    assert figures(got) == figures(want)

    # A file that vanishes after the walk, before its shard reads it (the
    # first progress call comes between the two when the walk hands on no
    # shard while it walks: default shard sizes, a tree below 256 MiB): an
    # error naming it, and the figures of the files that remain.
    last = tree / "zz-last.bin"
    last.write_bytes(cdc_chunkers.generate("splitmix64:5:300000"))
    gone = []

    def remove_last(info):
        if not gone:
            last.unlink()
            gone.append(info["shards_done"] == 0)

    got = cdd.analyze(tree, "fastcdc", follow_symlinks=True, client=client, progress=remove_last)
    assert gone == [True]
    vanished = [e for e in got["errors"] if e["path"] == str(last)]
    assert len(vanished) == 1 and "No such file" in vanished[0]["error"], got["errors"]
    got["errors"].remove(vanished[0])
    assert figures(got) == figures(cdc_analyze(cdc_tool, ["--follow-symlinks", "-a", "fastcdc", str(tree)]))


def test_paths_local_to_one_worker_are_read_there_only(tmp_path, client, cdc_tool):
    tree = make_tree(tmp_path, files=6)
    worker = sorted(client.nthreads())[0]
    got = cdd.analyze({worker: [tree]}, "fastcdc", client=client, shard_bytes=1)
    assert set(got["distributed"]["bytes_shipped_by_worker"]) == {worker}
    assert figures(got) == figures(cdc_analyze(cdc_tool, ["-a", "fastcdc", str(tree)]))
    by_host = cdd.analyze({"127.0.0.1": [str(tree)]}, "fastcdc", client=client)
    assert figures(by_host) == figures(got)
    with pytest.raises(ValueError, match="no worker on '10.255.255.1'"):
        cdd.analyze({"10.255.255.1": [tree]}, client=client)


def test_bad_input_is_refused_before_any_task(tmp_path, client):
    with pytest.raises(ValueError, match="unknown algorithm"):
        cdd.analyze(tmp_path, "nope", client=client)
    with pytest.raises(ValueError, match="mode"):
        cdd.analyze(tmp_path, client=client, mode="fast")
    with pytest.raises(ValueError, match="standard input"):
        cdd.analyze("-", client=client)
    with pytest.raises(ValueError, match="embedded null byte"):
        cdd.analyze(str(tmp_path / "a\0b"), client=client)
    with pytest.raises(OSError, match="missing"):
        cdd.analyze(tmp_path / "missing", client=client)


def test_the_default_plan_makes_large_shards_first_and_small_ones_last():
    sizes = [5, 100, 3, 3, 40, 7, 7, 7, 2, 2, 9, 1, 1, 1, 30, 2, 2, 2, 2, 2]
    files = [(b"f%d" % i, n, True) for i, n in enumerate(sizes)]
    # goal = min(50, max(4, bytes left / 4)): 50, 30, 19, 14, 10, 4, 4, 4
    shards = cdd._plan(files, 4, 4, 50)
    assert [f for part, _ in shards for f in part] == files  # every file once, in walk order
    assert [n for _, n in shards] == [105, 46, 21, 14, 32, 4, 4, 2]
    assert all(n == sum(f[1] for f in part) for part, n in shards)
    assert [n for _, n in cdd._plan(files, 50)] == [105, 53, 60, 10]  # a fixed size (shard_bytes)


def test_without_a_client_it_runs_a_cluster_of_its_own(tmp_path, cdc_tool):
    tree = make_tree(tmp_path, files=4)
    code = "import json, sys\nimport cdc_chunkers.distributed as cdd\nprint(json.dumps(cdd.analyze(sys.argv[1])))"
    done = subprocess.run([sys.executable, "-c", code, str(tree)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert figures(got) == figures(cdc_analyze(cdc_tool, ["-a", "fastcdc", str(tree)]))
    assert got["distributed"]["workers"] == (os.cpu_count() or 1)


def test_many_small_files_bring_no_warning_from_dask(tmp_path):
    # 12,000 empty files with long names: one shard whose packed list is
    # over Dask's 1 MB "large object" limit (it warns once per process, so
    # in a process of its own).
    names = "x" * 80
    for i in range(12_000):
        (tmp_path / f"{names}{i:05}").touch()
    code = ("import sys, warnings\nwarnings.simplefilter('always')\nimport cdc_chunkers.distributed as cdd\n"
            "r = cdd.analyze(sys.argv[1])\nprint(r['files'])")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["12000"]
    assert "Large object" not in done.stderr, done.stderr


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "cdc_chunkers.distributed", *args], capture_output=True, text=True,
                          timeout=300)


def test_the_command_line(tmp_path, cdc_tool):
    tree = make_tree(tmp_path, files=4)
    os.symlink("/proc/self/mem", tree / "mem")
    done = run_cli("--local", "2", "--json", "-q", "--follow-symlinks", "-a", "fastcdc,ultracdc", "--avg", "16K", str(tree))
    assert done.returncode == 3, done.stderr  # as cdc analyze: done, one file skipped
    want = cdc_analyze(cdc_tool, ["--follow-symlinks", "-a", "fastcdc,ultracdc", "--avg", "16K", str(tree)])
    assert figures(json.loads(done.stdout)) == figures(want)
    assert f"cdc: error: {tree / 'mem'}: " in done.stderr and "(skipped)" in done.stderr
    shown = run_cli("--local", "1", "--json", str(tree))  # progress lines on stderr (not a terminal)
    lines = [l for l in shown.stderr.splitlines() if " shards, " in l]
    assert lines and lines[0].startswith("cdc: 0/"), shown.stderr  # after the walk
    n = lines[-1].split()[1]
    assert n.split("/")[0] == n.split("/")[1] and sum(n in l for l in lines) == 1, shown.stderr  # the end, once
    table = run_cli("--local", "1", "-q", str(tree / "d0"))
    assert table.returncode == 0 and "fastcdc" in table.stdout and "DEDUP%" in table.stdout, table.stderr
    missing = run_cli("--local", "1", str(tmp_path / "missing"))
    assert missing.returncode == 2, missing.stderr
    assert missing.stderr.splitlines()[-1].startswith(f"cdc: error: cannot read '{tmp_path / 'missing'}'")
    assert run_cli("--local", "1", "-a", "nope", str(tree)).returncode == 2
    assert "--scheduler" in run_cli("--help").stdout
