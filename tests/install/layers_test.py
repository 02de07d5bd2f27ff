#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The layers include downwards only: no file of the library (src/) or of
the bindings (bindings/) is compiled with a header folder of the programs
(tools/) on its include path, or includes a tools/ path directly. Read from
the build's compile_commands.json, so that it holds for the flags CMake
really passes, whatever the include names look like.

  layers_test.py SOURCE_DIR BUILD_DIR
"""
import json
import pathlib
import re
import shlex
import sys

src, build = (pathlib.Path(a).resolve() for a in sys.argv[1:3])
tools = src / "tools"
lower = [src / "src", src / "bindings"]
bad = []
checked = 0
for entry in json.loads((build / "compile_commands.json").read_text()):
    file = pathlib.Path(entry["directory"], entry["file"]).resolve()
    if not any(d in file.parents for d in lower):
        continue
    checked += 1
    args = shlex.split(entry["command"]) if "command" in entry else entry["arguments"]
    for i, a in enumerate(args):
        for flag in ("-I", "-isystem", "-iquote"):
            if a.startswith(flag):
                d = a[len(flag):] or args[i + 1]
                d = pathlib.Path(entry["directory"], d).resolve()
                if d == tools or tools in d.parents:
                    bad.append(f"{file.relative_to(src)}: compiled with {flag} {d.relative_to(src)}")
    for n, line in enumerate(file.read_text(errors="replace").splitlines(), 1):
        if re.match(r'\s*#\s*include\s*["<][^">]*\btools/', line):
            bad.append(f"{file.relative_to(src)}:{n}: {line.strip()}")
if checked == 0:
    sys.exit(f"no file of src/ or bindings/ in {build}/compile_commands.json")
if bad:
    sys.exit("a lower layer includes the programs (tools/):\n  " + "\n  ".join(bad))
print(f"{checked} files of src/ and bindings/: none includes tools/")
