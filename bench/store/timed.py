#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs a command and prints its wall seconds, user+system CPU seconds (both
to the microsecond: the store's runs on trees last 0.05-0.2 s, where
/usr/bin/time's 0.01 s was a tenth of the figure) and peak RSS in KiB, from
wait4. Its standard output goes to OUT ("-": discarded), its standard error
passes through. Exits with the command's status.

    bench/store/timed.py OUT command [args...]
"""
import os, subprocess, sys, time

out = sys.argv[1]
stdout = subprocess.DEVNULL if out == "-" else open(out, "wb")
t0 = time.perf_counter()
p = subprocess.Popen(sys.argv[2:], stdout=stdout)
_, status, ru = os.wait4(p.pid, 0)
wall = time.perf_counter() - t0
print(f"{wall:.6f} {ru.ru_utime + ru.ru_stime:.6f} {ru.ru_maxrss}")
sys.exit(os.waitstatus_to_exitcode(status))
