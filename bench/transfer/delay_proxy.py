#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A TCP proxy that delays every byte by a fixed time each way: a long link
(round trip 2 x DELAY) on the loopback interface, without netem.

    bench/transfer/delay_proxy.py LISTEN_PORT TARGET_HOST:PORT DELAY_MS [--port-file F]

(LISTEN_PORT 0: any free port, written to --port-file.) Bytes are read as
they come and written DELAY_MS later, in order; the link holds at most
64 MiB each way (beyond that the proxy stops reading, as a full buffer
would). Its own speed (a few hundred MB/s) bounds what it measures: use it
to compare flow-control windows (window / round trip), not top speeds.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import time

LINK_BYTES = 64 << 20


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    queue: collections.deque[tuple[float, bytes]] = collections.deque()
    held = 0
    more = asyncio.Event()
    room = asyncio.Event()
    room.set()
    done = False

    async def read() -> None:
        nonlocal held, done
        try:
            while True:
                await room.wait()
                data = await reader.read(256 * 1024)
                if not data:
                    break
                queue.append((time.monotonic() + delay, data))
                held += len(data)
                if held >= LINK_BYTES:
                    room.clear()
                more.set()
        finally:
            done = True
            more.set()

    async def write() -> None:
        nonlocal held
        while True:
            if not queue:
                if done:
                    break
                more.clear()
                await more.wait()
                continue
            due, data = queue[0]
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            queue.popleft()
            writer.write(data)
            await writer.drain()
            held -= len(data)
            if held < LINK_BYTES:
                room.set()
        writer.close()

    await asyncio.gather(read(), write(), return_exceptions=True)


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("listen_port", type=int)
    p.add_argument("target")
    p.add_argument("delay_ms", type=float)
    p.add_argument("--port-file")
    a = p.parse_args()
    host, _, port = a.target.rpartition(":")
    delay = a.delay_ms / 1000

    async def handle(cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        sr, sw = await asyncio.open_connection(host, int(port))
        await asyncio.gather(pump(cr, sw, delay), pump(sr, cw, delay), return_exceptions=True)

    server = await asyncio.start_server(handle, "127.0.0.1", a.listen_port, limit=1 << 20)
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write(f"{server.sockets[0].getsockname()[1]}\n")
        os.replace(a.port_file + ".tmp", a.port_file)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
