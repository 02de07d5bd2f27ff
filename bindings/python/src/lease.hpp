// SPDX-License-Identifier: Apache-2.0
// Memory of a chunker lent to Python code: the part of the scan buffer a
// reader's readinto() fills, and the chunk views of a stream (views=True).
// That memory is reused at the next step, so a loan must end there, and a
// plain memoryview of raw memory cannot guarantee it: its slices (and the
// arrays made of them) outlive memoryview.release(), and once the chunker
// is gone they would read and write freed memory.
//
// A Lease is a small buffer exporter that holds the owner of the memory
// (the scan buffer) and counts the views made of it. The memoryview handed
// out is one of them. end() releases that memoryview (using it afterwards
// raises ValueError) and then requires the count to be zero: a slice or an
// array still alive raises BufferError instead of later seeing other
// bytes. The owner stays alive as long as any view does, so memory that was
// lent is never freed under a view, whatever the caller does.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <span>

namespace cdc::python {

class Lease {
public:
    Lease() = default;
    /// Lends `bytes` (memory held by `owner`) as a memoryview.
    Lease(pybind11::handle owner, std::span<std::byte> bytes, bool readonly);

    /// The memoryview lent (None when no loan is active).
    pybind11::object view() const { return view_ ? view_ : pybind11::none(); }
    bool active() const noexcept { return static_cast<bool>(exporter_); }

    /// Ends the loan. If views of the memory remain: raises BufferError
    /// with `message` when `strict`, and in every case the loan stays
    /// active (a later end() checks again). Needs the GIL.
    void end(const char* message, bool strict = true);

    /// Registers the exporter type; called once, at module import.
    static void register_type(pybind11::module_& m);

private:
    pybind11::object exporter_;
    pybind11::object view_;
};

}  // namespace cdc::python
