// SPDX-License-Identifier: Apache-2.0
// Large buffers mapped for themselves, in transparent huge pages where the
// kernel gives them: the store's read-ahead segments, `cdc chunk`'s windows
// and `cdc speed`'s buffer.
#pragma once

#include <cstddef>
#include <memory>

namespace cdc::common {

/// Unmaps a buffer of map_bytes (not from malloc, whose arenas keep freed
/// segments resident beyond a buffer budget).
struct Unmap {
    std::size_t length = 0;
    void operator()(std::byte* p) const noexcept;
};
using MappedBytes = std::unique_ptr<std::byte[], Unmap>;

/// `n` bytes (zero-filled by the kernel as first touched; std::bad_alloc if
/// none can be mapped). A buffer of at least one 2 MiB page is aligned to
/// them and asks for transparent huge pages (madvise: a hint, never an
/// error): one page fault per 2 MiB rather than 512, and one TLB entry,
/// where a scan of a 4 KiB-page buffer out of cache pays a page walk every
/// 4 KiB (on a KVM guest, a two-level one: the memory read of a 128 MiB
/// buffer ~7 GB/s with 4 KiB pages, ~12 GB/s with 2 MiB ones on the Intel
/// Xeon of docs/BENCHMARKS.md). With `huge` false, asks for 4 KiB pages
/// (MADV_NOHUGEPAGE, whatever the system's THP default): `cdc speed --pages
/// small` measures that case.
MappedBytes map_bytes(std::size_t n, bool huge = true);

}  // namespace cdc::common
