// SPDX-License-Identifier: Apache-2.0
#include "paths.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

namespace py = pybind11;

namespace cdc::python {

namespace {
std::string type_name(py::handle object) {
    return py::str(py::type::of(object).attr("__name__")).cast<std::string>();
}
}  // namespace

bool is_path(py::handle object) {
    return py::isinstance<py::str>(object) || py::hasattr(object, "__fspath__");
}

std::string path_bytes(py::handle path, bool bytes_ok) {
    if (!is_path(path) && !(bytes_ok && py::isinstance<py::bytes>(path)))
        throw py::type_error(fmt::format("a path must be a str{} or an os.PathLike, not {}",
                                         bytes_ok ? ", bytes" : "", type_name(path)));
    // os.fsencode: a str through the file system encoding with
    // surrogateescape, a bytes (or PathLike of bytes) as is.
    const py::object encoded = py::module_::import("os").attr("fsencode")(path);
    std::string name = encoded.cast<std::string>();
    if (name.find('\0') != std::string::npos) throw py::value_error("embedded null byte");
    return name;
}

std::vector<std::string> path_list(py::handle paths) {
    std::vector<std::string> out;
    if (is_path(paths) || py::isinstance<py::bytes>(paths)) {
        out.push_back(path_bytes(paths, true));
    } else {
        if (!py::hasattr(paths, "__iter__"))
            throw py::type_error(fmt::format("paths must be a path or an iterable of paths, not {}", type_name(paths)));
        for (py::handle item : paths) out.push_back(path_bytes(item, true));
    }
    if (out.empty()) throw OptionError("paths is empty");
    return out;
}

namespace {
// None, one item, or an iterable of items (possibly empty), each as bytes.
std::vector<std::string> byte_strings(py::handle value, const char* what) {
    std::vector<std::string> out;
    if (value.is_none()) return out;
    if (is_path(value) || py::isinstance<py::bytes>(value)) {
        out.push_back(path_bytes(value, true));
        return out;
    }
    if (!py::hasattr(value, "__iter__"))
        throw py::type_error(fmt::format("{} must be a str, bytes or an iterable of them, not {}", what,
                                         type_name(value)));
    for (py::handle item : value) out.push_back(path_bytes(item, true));
    return out;
}
}  // namespace

WalkExcludes walk_excludes(py::handle exclude, py::handle exclude_file, bool exclude_caches,
                           py::handle exclude_if_present) {
    WalkExcludes ex;
    for (const auto& f : byte_strings(exclude_file, "exclude_file")) ex.patterns.add_file(f);
    for (const auto& p : byte_strings(exclude, "exclude")) ex.patterns.add(p);
    ex.caches = exclude_caches;
    ex.if_present = byte_strings(exclude_if_present, "exclude_if_present");
    return ex;
}

}  // namespace cdc::python
