# SPDX-License-Identifier: Apache-2.0
"""Content-defined chunking at C++ speed: every algorithm of cdc-chunkers,
with the boundaries of the projects they reproduce byte for byte
(go-cdc-chunkers, fastcdc-rs, restic, borg, casync), zero copies and the
GIL released while cutting and hashing.

    import cdc_chunkers as cdc

    chunks = cdc.chunk(data, "fastcdc-v1.0.0", 4096, 16384, 65536, digest="blake3")
    chunks.offsets, chunks.lengths     # numpy uint64 arrays
    chunks.digests                     # numpy uint8 array, shape (n, 32)
    chunks[0], chunks[-10:]            # (offset, length); a slice is a Chunks

    for offset, data in cdc.iter_chunks("big.iso"):   # bounded memory
        store(offset, data)                           # bytes of its own
    for offset, data, digest in cdc.iter_chunks(f, digest="blake3"): ...

    cdc.chunk(data, "restic-rabin", polynomial=0x3DA3358B4DC173)
    cdc.algorithms()                   # every name, its defaults and parameters
    cdc.analyze(["/backups"], ["fastcdc", "ultracdc"])   # dedup figures
    cdc.dupes(["/photos"])             # whole-file duplicates (report)

Functions: chunk, iter_chunks, analyze, dupes, algorithms, generate.
Classes: Chunker (reusable: reset onto new streams, caller buffer), Chunks.
Errors: ValueError (invalid algorithm or option), OSError (I/O).
"""

from ._core import (
    Chunker,
    Chunks,
    __version__,
    algorithms,
    analyze,
    chunk,
    dupes,
    generate,
    iter_chunks,
)

__all__ = [
    "Chunker",
    "Chunks",
    "__version__",
    "algorithms",
    "analyze",
    "chunk",
    "dupes",
    "generate",
    "iter_chunks",
]

# help() and repr() name the package, not its extension module.
for _name in __all__[:]:
    try:
        globals()[_name].__module__ = __name__
    except (AttributeError, TypeError):
        pass
del _name
