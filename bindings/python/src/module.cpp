// SPDX-License-Identifier: Apache-2.0
// The _core extension module of the cdc_chunkers package: errors, the
// algorithm list, test data, and the pieces in chunk.cpp, chunker.cpp,
// analyze.cpp and dupes.cpp.
#include "lease.hpp"
#include "module.hpp"
#include "python_error.hpp"

#include "algorithms_json.hpp"

#include <cdc/cdc.hpp>
#include <cdc/corpus/datagen.hpp>

#include <pybind11/stl.h>

namespace py = pybind11;

PYBIND11_MODULE(_core, m) {
    // Each docstring starts with its signature in the form CPython reads
    // into __text_signature__ ("name(args)\n--\n\n"), so that
    // inspect.signature(), help(), IDEs and Jupyter show the parameters;
    // pybind11's own first line would hide it.
    py::options options;
    options.disable_function_signatures();

    m.doc() = "cdc_chunkers._core: the C++ extension behind cdc_chunkers (import cdc_chunkers instead).";

    // cdc::OptionError -> ValueError, cdc::IoError -> OSError, and a reader's
    // own exception as it was raised.
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const cdc::OptionError& e) {
            PyErr_SetString(PyExc_ValueError, e.what());
        } catch (const cdc::IoError& e) {
            PyErr_SetString(PyExc_OSError, e.what());
        } catch (const cdc::python::PythonError& e) {
            e.restore();
        }
    });

    m.attr("__version__") = cdc::kVersionString;
    cdc::python::Lease::register_type(m);

    m.def(
        "algorithms", [] { return py::module_::import("json").attr("loads")(cdc::tools::algorithms_json().dump()); },
        R"doc(algorithms()
--

Every algorithm name, in a stable order, as a list of dicts: the document
`cdc algorithms --json` prints. Each has name, min, avg, max (the default
sizes), key ("required", "optional" or "no"), parameters (the parameters it
takes beyond the sizes, each {"default", "low", "high"}, keyed by the cdc
tool's flag: "level", "seed", "poly" (the polynomial= keyword), "window"),
sizes (each size's default and range), content_defined, origin (whose cut
points it reproduces) and a one-line summary.
)doc");

    m.def(
        "generate",
        [](const std::string& spec) {
            std::vector<std::uint8_t> data;
            {
                py::gil_scoped_release nogil;
                data = cdc::generate_input(spec);
            }
            return py::bytes(reinterpret_cast<const char*>(data.data()), data.size());
        },
        py::arg("spec"), R"doc(generate(spec)
--

The bytes of a test-vector input spec (tests/vectors/README.md):
"empty", "byte42", "zeros:LEN", "repeat:WORD:LEN", "splitmix64:SEED:LEN",
"text:SEED:LEN". Raises ValueError for a malformed spec.
)doc");

    cdc::python::add_chunk(m);
    cdc::python::add_chunker(m);
    cdc::python::add_analyze(m);
    cdc::python::add_dupes(m);
    cdc::python::add_distributed(m);
}
