// SPDX-License-Identifier: Apache-2.0
// A Python exception raised inside a reader (a file's readinto), carried
// through the C++ chunker as a C++ exception. The chunker keeps a failure and
// rethrows it on every later call, so it must be re-raisable any number of
// times (pybind11's error_already_set restores its error only once).
#pragma once

#include <pybind11/pybind11.h>

#include <exception>
#include <memory>

namespace cdc::python {

class PythonError : public std::exception {
public:
    /// Takes the exception of `e` (the Python error indicator is clear).
    explicit PythonError(pybind11::error_already_set& e)
        : value_(new pybind11::object(e.value()), [](pybind11::object* p) {
              pybind11::gil_scoped_acquire gil;  // the last copy may go anywhere
              delete p;
          }) {}
    const char* what() const noexcept override { return "Python exception from a reader"; }
    /// Sets the Python error indicator to the exception (needs the GIL).
    void restore() const { PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(value_->ptr())), value_->ptr()); }

private:
    std::shared_ptr<pybind11::object> value_;
};

}  // namespace cdc::python
