# SPDX-License-Identifier: Apache-2.0
"""The GIL is released while cutting and hashing: a second thread runs."""
import sys
import threading
import time

import cdc_chunkers

DATA = cdc_chunkers.generate("splitmix64:5:33554432")


def progress_during(call, tries=20):
    """Calls `call` until the helper thread made progress during one call
    (True), or `tries` times (False). With a long switch interval, the helper
    can run during the call only if the call releases the GIL: a call that
    held it would let it run never, whatever the machine's load."""
    counter = [0]
    stop = threading.Event()
    started = threading.Event()

    def helper():
        started.set()
        while not stop.is_set():
            counter[0] += 1
            time.sleep(0.0001)  # give the GIL back between steps

    old = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    thread = threading.Thread(target=helper)
    thread.start()
    try:
        started.wait()
        for _ in range(tries):
            before = counter[0]
            call()
            if counter[0] != before:
                return True
        return False
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(old)


def test_chunk_releases_the_gil():
    assert progress_during(lambda: cdc_chunkers.chunk(DATA))


def test_chunk_with_digest_releases_the_gil():
    assert progress_during(lambda: cdc_chunkers.chunk(DATA, digest="blake3"))


def test_a_python_loop_holds_the_gil():
    # The control: a call that never releases the GIL shows no progress.
    def busy():
        x = 0
        for i in range(300000):
            x += i
    assert not progress_during(busy, tries=3)


def test_iter_chunks_from_a_path_releases_the_gil(tmp_path):
    path = tmp_path / "big"
    path.write_bytes(DATA)
    assert progress_during(lambda: sum(1 for _ in cdc_chunkers.iter_chunks(path)))


def test_analyze_releases_the_gil(tmp_path):
    (tmp_path / "big").write_bytes(DATA)
    assert progress_during(lambda: cdc_chunkers.analyze(str(tmp_path), jobs=1))
