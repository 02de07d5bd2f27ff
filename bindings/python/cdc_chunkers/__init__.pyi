# Type stubs of cdc_chunkers (the extension module cdc_chunkers._core).
import os
from typing import Any, BinaryIO, Iterable, Iterator, Literal, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str

# Anything with the buffer protocol (bytes, bytearray, memoryview, mmap,
# numpy arrays, ...); typing has no name for it before Python 3.12.
Buffer = Any
Key = Union[str, bytes, bytearray, memoryview]
DigestName = Literal["blake3", "sha256", "xxh3"]
StrPath = Union[str, "os.PathLike[str]"]

class Chunks:
    """The chunks of a buffer: numpy offsets, lengths and optional digests."""
    @property
    def offsets(self) -> npt.NDArray[np.uint64]: ...
    @property
    def lengths(self) -> npt.NDArray[np.uint64]: ...
    @property
    def digests(self) -> Optional[npt.NDArray[np.uint8]]: ...
    @property
    def algorithm(self) -> str: ...
    @property
    def digest(self) -> str: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Tuple[int, int]]: ...

def chunk(
    data: Buffer,
    algorithm: str = "fastcdc-v1.0.0",
    *,
    min_size: int = 0,
    avg_size: int = 0,
    max_size: int = 0,
    key: Optional[Key] = None,
    level: Optional[int] = None,
    seed: Optional[int] = None,
    polynomial: Optional[int] = None,
    window: Optional[int] = None,
    digest: Optional[DigestName] = None,
) -> Chunks: ...

class Chunker(Iterator[Tuple[int, memoryview]]):
    def __init__(
        self,
        algorithm: str = "fastcdc-v1.0.0",
        *,
        min_size: int = 0,
        avg_size: int = 0,
        max_size: int = 0,
        key: Optional[Key] = None,
    level: Optional[int] = None,
    seed: Optional[int] = None,
    polynomial: Optional[int] = None,
    window: Optional[int] = None,
        buffer: Optional[Buffer] = None,
    ) -> None: ...
    def reset(self, source: Union[StrPath, BinaryIO, Buffer, None]) -> "Chunker": ...
    def __iter__(self) -> "Chunker": ...
    def __next__(self) -> Tuple[int, memoryview]: ...
    def chunk(self, data: Buffer, *, digest: Optional[DigestName] = None) -> Chunks: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Chunker": ...
    def __exit__(self, *args: object) -> None: ...
    @property
    def algorithm(self) -> str: ...
    @property
    def min_size(self) -> int: ...
    @property
    def avg_size(self) -> int: ...
    @property
    def max_size(self) -> int: ...
    @property
    def keyed(self) -> bool: ...
    @property
    def parameters(self) -> dict[str, int]: ...
    @property
    def offset(self) -> int: ...
    @property
    def buffer_size(self) -> int: ...

def iter_chunks(
    source: Union[StrPath, BinaryIO, Buffer],
    algorithm: str = "fastcdc-v1.0.0",
    *,
    min_size: int = 0,
    avg_size: int = 0,
    max_size: int = 0,
    key: Optional[Key] = None,
    level: Optional[int] = None,
    seed: Optional[int] = None,
    polynomial: Optional[int] = None,
    window: Optional[int] = None,
    buffer: Optional[Buffer] = None,
) -> Chunker: ...

def algorithms() -> list[dict[str, Any]]: ...

def analyze(
    paths: Union[StrPath, Iterable[StrPath]],
    algorithms: Union[str, Iterable[str]] = "fastcdc",
    *,
    min_size: int = 0,
    avg_size: int = 0,
    max_size: int = 0,
    key: Optional[Key] = None,
    level: Optional[int] = None,
    seed: Optional[int] = None,
    polynomial: Optional[int] = None,
    window: Optional[int] = None,
    digest: DigestName = "blake3",
    jobs: int = 0,
    follow_symlinks: bool = False,
) -> dict[str, Any]: ...

def generate(spec: str) -> bytes: ...

def dupes(
    paths: Union[StrPath, bytes, Iterable[Union[StrPath, bytes]]],
    *,
    min_size: int = 1,
    mode: Literal["auto", "compare", "hash"] = "auto",
    hash: Literal["blake3", "xxh3", "sha256"] = "blake3",
    follow_symlinks: bool = False,
    one_file_system: bool = False,
) -> dict[str, Any]: ...
