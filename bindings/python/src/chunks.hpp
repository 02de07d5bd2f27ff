// SPDX-License-Identifier: Apache-2.0
// The result of chunk(): numpy arrays of offsets, lengths and digests.
#pragma once

#include <cdc/cdc.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

namespace cdc::python {

struct Chunks {
    pybind11::array_t<std::uint64_t> offsets;
    pybind11::array_t<std::uint64_t> lengths;
    pybind11::object digests = pybind11::none();  ///< (n, digest size) uint8, or None
    std::string algorithm;
    std::string digest;                           ///< "" when none
};

/// Cuts the whole buffer `data` (held, not copied; the GIL is released
/// while cutting and hashing) and digests each chunk if `kind` is not none.
Chunks cut_buffer(const CutFinder& finder, pybind11::handle data, DigestKind kind);

}  // namespace cdc::python
