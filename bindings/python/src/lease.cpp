// SPDX-License-Identifier: Apache-2.0
#include "lease.hpp"

namespace py = pybind11;

namespace cdc::python {

namespace {

struct LeaseObject {
    PyObject_HEAD
    PyObject* owner;  // keeps the memory alive while a view of it exists
    void* buf;
    Py_ssize_t len;
    int readonly;
    Py_ssize_t exports;  // views made of this exporter, alive
};

PyTypeObject* lease_type = nullptr;

LeaseObject* as_lease(PyObject* self) { return reinterpret_cast<LeaseObject*>(self); }

int lease_getbuffer(PyObject* self, Py_buffer* view, int flags) {
    LeaseObject* l = as_lease(self);
    if (PyBuffer_FillInfo(view, self, l->buf, l->len, l->readonly, flags) != 0) return -1;
    ++l->exports;
    return 0;
}

void lease_releasebuffer(PyObject* self, Py_buffer*) { --as_lease(self)->exports; }

void lease_dealloc(PyObject* self) {
    PyTypeObject* type = Py_TYPE(self);
    Py_CLEAR(as_lease(self)->owner);
    type->tp_free(self);
    Py_DECREF(type);  // a heap type: each instance holds it
}

}  // namespace

void Lease::register_type(py::module_& m) {
    static PyType_Slot slots[] = {
        {Py_bf_getbuffer, reinterpret_cast<void*>(&lease_getbuffer)},
        {Py_bf_releasebuffer, reinterpret_cast<void*>(&lease_releasebuffer)},
        {Py_tp_dealloc, reinterpret_cast<void*>(&lease_dealloc)},
        {Py_tp_doc, const_cast<char*>("Memory of a chunker lent to Python code (internal).")},
        {0, nullptr},
    };
    static PyType_Spec spec = {"cdc_chunkers._core._Lease", sizeof(LeaseObject), 0, Py_TPFLAGS_DEFAULT, slots};
    PyObject* type = PyType_FromSpec(&spec);
    if (!type) throw py::error_already_set();
    lease_type = reinterpret_cast<PyTypeObject*>(type);
    // Held by the module (and so never freed while an instance may exist).
    m.add_object("_Lease", py::reinterpret_steal<py::object>(type));
}

Lease::Lease(py::handle owner, std::span<std::byte> bytes, bool readonly) {
    PyObject* raw = lease_type->tp_alloc(lease_type, 0);
    if (!raw) throw py::error_already_set();
    exporter_ = py::reinterpret_steal<py::object>(raw);
    LeaseObject* l = as_lease(raw);
    l->owner = owner.inc_ref().ptr();
    l->buf = bytes.data();
    l->len = static_cast<Py_ssize_t>(bytes.size());
    l->readonly = readonly ? 1 : 0;
    l->exports = 0;
    view_ = py::reinterpret_steal<py::object>(PyMemoryView_FromObject(raw));
    if (!view_) throw py::error_already_set();
}

void Lease::end(const char* message, bool strict) {
    if (!exporter_) return;
    if (view_) {
        // Fails (BufferError) while the memoryview itself is exported, e.g.
        // to a numpy array made of it: that counts as a view still alive.
        if (PyObject* r = PyObject_CallMethod(view_.ptr(), "release", nullptr)) {
            Py_DECREF(r);
            view_ = py::object();
        } else {
            PyErr_Clear();
        }
    }
    if (!view_ && as_lease(exporter_.ptr())->exports == 0) {
        exporter_ = py::object();
        return;
    }
    if (strict) {
        PyErr_SetString(PyExc_BufferError, message);
        throw py::error_already_set();
    }
}

}  // namespace cdc::python
