// SPDX-License-Identifier: Apache-2.0
// A Py_buffer held for as long as C++ reads it: the exporter
// cannot resize or free the memory meanwhile (a bytearray refuses to grow
// while exported), so the GIL can be released around the work.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <span>

namespace cdc::python {

class PinnedBuffer {
public:
    /// Requests a C-contiguous buffer of bytes (any item type): BufferError
    /// or TypeError otherwise. Never copies.
    explicit PinnedBuffer(pybind11::handle object);
    ~PinnedBuffer() { release(); }
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;

    /// Releases the buffer (needs the GIL).
    void release() noexcept {
        if (held_) PyBuffer_Release(&view_);
        held_ = false;
    }
    std::span<const std::byte> bytes() const noexcept {
        return {static_cast<const std::byte*>(view_.buf), static_cast<std::size_t>(view_.len)};
    }

private:
    Py_buffer view_{};
    bool held_ = false;
};

}  // namespace cdc::python
