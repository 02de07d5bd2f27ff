// SPDX-License-Identifier: Apache-2.0
#include "pinned_buffer.hpp"

namespace cdc::python {

PinnedBuffer::PinnedBuffer(pybind11::handle object) {
    // PyBUF_SIMPLE: contiguous bytes, no format: a numpy array of any dtype
    // is its raw bytes; a strided view is refused rather than copied.
    if (PyObject_GetBuffer(object.ptr(), &view_, PyBUF_SIMPLE) != 0)
        throw pybind11::error_already_set();
    held_ = true;
}

}  // namespace cdc::python
