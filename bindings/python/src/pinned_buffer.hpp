// A Py_buffer held for as long as C++ reads (or writes) it: the exporter
// cannot resize or free the memory meanwhile (a bytearray refuses to grow
// while exported), so the GIL can be released around the work.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <span>
#include <utility>

namespace cdc::python {

class PinnedBuffer {
public:
    PinnedBuffer() = default;
    /// Requests a C-contiguous buffer of bytes (any item type), writable if
    /// asked: BufferError / TypeError otherwise. Never copies.
    PinnedBuffer(pybind11::handle object, bool writable);
    ~PinnedBuffer() { release(); }
    PinnedBuffer(PinnedBuffer&& o) noexcept : view_(o.view_), held_(std::exchange(o.held_, false)) {}
    PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
        if (this != &o) {
            release();
            view_ = o.view_;
            held_ = std::exchange(o.held_, false);
        }
        return *this;
    }
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;

    /// Releases the buffer (needs the GIL).
    void release() noexcept {
        if (held_) PyBuffer_Release(&view_);
        held_ = false;
    }
    bool held() const noexcept { return held_; }
    std::span<const std::byte> bytes() const noexcept {
        return {static_cast<const std::byte*>(view_.buf), static_cast<std::size_t>(view_.len)};
    }
    std::span<std::byte> writable_bytes() const noexcept {
        return {static_cast<std::byte*>(view_.buf), static_cast<std::size_t>(view_.len)};
    }

private:
    Py_buffer view_{};
    bool held_ = false;
};

}  // namespace cdc::python
