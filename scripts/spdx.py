#!/usr/bin/env python3
"""The license of every source file of the project, in its first lines:
`SPDX-License-Identifier: Apache-2.0` (LICENSE holds the text).

  scripts/spdx.py --check [SOURCE_DIR]   list the files without it (exit 1)
  scripts/spdx.py --add [SOURCE_DIR]     add it to them (after a #! line)

Source files: C and C++ (.c .h .cpp .hpp .cc), Python (.py .pyi), shell
(.sh), CMake (CMakeLists.txt, .cmake), pkg-config, TOML, protobuf, Go and
the .in templates of these, under the project's own folders (build folders
aside).
"""
import pathlib
import sys

TAG = "SPDX-License-Identifier: Apache-2.0"
SLASH = {".c", ".h", ".cpp", ".hpp", ".cc", ".proto", ".go"}
HASH = {".py", ".pyi", ".sh", ".cmake", ".pc", ".toml", ".supp"}
ROOTS = ["include", "src", "tools", "tests", "bindings", "bench", "scripts", "cmake", "proto", "examples", ".ci"]
SKIP_PARTS = {"third_party", "vendor", "__pycache__", "data", "testvectors"}


def comment_of(path):
    if path.name == "CMakeLists.txt":
        return "#"
    if path.suffix == ".in":  # a template: the comment of what it becomes
        path = path.with_suffix("")
    if path.suffix in SLASH:
        return "//"
    if path.suffix in HASH:
        return "#"
    if path.parent.name == ".ci" or path.parent.name == "scripts":
        first = path.read_text(errors="replace").split("\n", 1)[0]
        if first.startswith("#!"):
            return "#"
    return None


def sources(root):
    out = [root / "CMakeLists.txt"] if (root / "CMakeLists.txt").exists() else []
    for top in ROOTS:
        base = root / top
        if not base.is_dir():
            continue
        for p in sorted(base.rglob("*")):
            rel = p.relative_to(root).parts
            if not p.is_file() or any(part in SKIP_PARTS or part.startswith("build") for part in rel):
                continue
            if comment_of(p):
                out.append(p)
    return out


def has_tag(path):
    head = path.read_text(errors="replace").split("\n", 5)[:5]
    return any(TAG in line for line in head)


def add_tag(path, mark):
    text = path.read_text()
    line = f"{mark} {TAG}\n"
    if text.startswith("#!"):
        first, _, rest = text.partition("\n")
        text = first + "\n" + line + rest
    else:
        text = line + text
    path.write_text(text)


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("--check", "--add"):
        sys.exit(__doc__)
    root = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else pathlib.Path(__file__).resolve().parent.parent)
    files = sources(root)
    if not files:
        sys.exit(f"spdx.py: no source file under {root}")
    missing = [p for p in files if not has_tag(p)]
    if sys.argv[1] == "--add":
        for p in missing:
            add_tag(p, comment_of(p))
        print(f"spdx.py: {len(missing)} of {len(files)} files given the tag")
        return
    if missing:
        sys.exit(f"spdx.py: {len(missing)} of {len(files)} source files lack '{TAG}' in their first lines:\n  "
                 + "\n  ".join(str(p.relative_to(root)) for p in missing))
    print(f"spdx.py: {len(files)} source files carry the tag")


main()
