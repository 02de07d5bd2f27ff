// SPDX-License-Identifier: Apache-2.0
#include "mapped_bytes.hpp"

#include <cstdint>
#include <new>

#include <sys/mman.h>

namespace cdc::common {

namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
}

void Unmap::operator()(std::byte* p) const noexcept {
    if (p != nullptr) ::munmap(p, length);
}

MappedBytes map_bytes(std::size_t n, bool huge_pages) {
    const std::size_t length = (n + 4095) & ~std::size_t{4095};
    if (length == 0) return MappedBytes(nullptr, Unmap{0});
    const bool huge = huge_pages && length >= kHugePage;
    // Mapped one huge page longer to align the start; the rest unmapped.
    const std::size_t mapped = huge ? length + kHugePage : length;
    void* raw = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    auto* p = static_cast<std::byte*>(raw);
    if (huge) {
        const auto at = reinterpret_cast<std::uintptr_t>(p);
        const std::size_t head = ((at + kHugePage - 1) & ~(kHugePage - 1)) - at;
        if (head != 0) ::munmap(p, head);
        if (kHugePage - head != 0) ::munmap(p + head + length, kHugePage - head);
        p += head;
        ::madvise(p, length, MADV_HUGEPAGE);
    } else if (!huge_pages) {
        ::madvise(p, length, MADV_NOHUGEPAGE);
    }
    return MappedBytes(p, Unmap{length});
}

}  // namespace cdc::common
