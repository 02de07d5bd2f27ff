# SPDX-License-Identifier: Apache-2.0
# Type stubs of cdc_chunkers (the extension module cdc_chunkers._core).
import os
from typing import Any, BinaryIO, Iterable, Iterator, Literal, Optional, SupportsIndex, Tuple, Union, overload

import numpy as np
import numpy.typing as npt

__version__: str

# Anything with the buffer protocol (bytes, bytearray, memoryview, mmap,
# numpy arrays, ...); typing has no name for it before Python 3.12.
Buffer = Any
Key = Union[str, bytes, bytearray, memoryview]
DigestName = Literal["blake3", "sha256", "xxh3"]
Path = Union[str, "os.PathLike[str]", "os.PathLike[bytes]"]

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
    @overload
    def __getitem__(self, index: SupportsIndex) -> Tuple[int, int]: ...
    @overload
    def __getitem__(self, index: slice) -> "Chunks": ...

def chunk(
    data: Buffer,
    algorithm: str = "fastcdc-v1.0.0",
    min_size: int = 0,
    avg_size: int = 0,
    max_size: int = 0,
    *,
    key: Optional[Key] = None,
    level: Optional[int] = None,
    seed: Optional[int] = None,
    polynomial: Optional[int] = None,
    window: Optional[int] = None,
    digest: Optional[DigestName] = None,
) -> Chunks: ...

# A step of iter_chunks()/Chunker: (offset, data), or (offset, data, digest)
# when a digest was asked for; data is bytes, or a memoryview with views=True.
Step = Union[Tuple[int, Union[bytes, memoryview]], Tuple[int, Union[bytes, memoryview], bytes]]

class Chunker(Iterator[Step]):
    def __init__(
        self,
        algorithm: str = "fastcdc-v1.0.0",
        min_size: int = 0,
        avg_size: int = 0,
        max_size: int = 0,
        *,
        key: Optional[Key] = None,
        level: Optional[int] = None,
        seed: Optional[int] = None,
        polynomial: Optional[int] = None,
        window: Optional[int] = None,
        buffer: Optional[Buffer] = None,
        views: bool = False,
        digest: Optional[DigestName] = None,
    ) -> None: ...
    def reset(self, source: Union[Path, BinaryIO, Buffer, None]) -> "Chunker": ...
    def __iter__(self) -> "Chunker": ...
    def __next__(self) -> Step: ...
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
    def views(self) -> bool: ...
    @property
    def digest(self) -> Optional[str]: ...
    @property
    def offset(self) -> int: ...
    @property
    def buffer_size(self) -> int: ...

def iter_chunks(
    source: Union[Path, BinaryIO, Buffer],
    algorithm: str = "fastcdc-v1.0.0",
    min_size: int = 0,
    avg_size: int = 0,
    max_size: int = 0,
    *,
    key: Optional[Key] = None,
    level: Optional[int] = None,
    seed: Optional[int] = None,
    polynomial: Optional[int] = None,
    window: Optional[int] = None,
    buffer: Optional[Buffer] = None,
    views: bool = False,
    digest: Optional[DigestName] = None,
) -> Chunker: ...

def algorithms() -> list[dict[str, Any]]: ...

def analyze(
    paths: Union[Path, bytes, Iterable[Union[Path, bytes]]],
    algorithms: Union[str, Iterable[str]] = "fastcdc",
    min_size: int = 0,
    avg_size: int = 0,
    max_size: int = 0,
    *,
    key: Optional[Key] = None,
    level: Optional[int] = None,
    seed: Optional[int] = None,
    polynomial: Optional[int] = None,
    window: Optional[int] = None,
    digest: DigestName = "blake3",
    jobs: int = 0,
    follow_symlinks: bool = False,
    exclude: Union[str, bytes, Iterable[Union[str, bytes]], None] = None,
    exclude_file: Union[Path, bytes, Iterable[Union[Path, bytes]], None] = None,
    exclude_caches: bool = False,
    exclude_if_present: Union[str, bytes, Iterable[Union[str, bytes]], None] = None,
    one_file_system: bool = False,
) -> dict[str, Any]: ...

def generate(spec: str) -> bytes: ...

def dupes(
    paths: Union[Path, bytes, Iterable[Union[Path, bytes]]],
    *,
    min_size: int = 1,
    mode: Literal["auto", "compare", "hash"] = "auto",
    digest: Literal["blake3", "xxh3", "sha256"] = "blake3",
    follow_symlinks: bool = False,
    one_file_system: bool = False,
    exclude: Union[str, bytes, Iterable[Union[str, bytes]], None] = None,
    exclude_file: Union[Path, bytes, Iterable[Union[Path, bytes]], None] = None,
    exclude_caches: bool = False,
    exclude_if_present: Union[str, bytes, Iterable[Union[str, bytes]], None] = None,
    hash: Optional[Literal["blake3", "xxh3", "sha256"]] = None,
) -> dict[str, Any]: ...
