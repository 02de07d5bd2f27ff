// Path arguments, as Python's own open() takes them: str (names that are not
// UTF-8 arrive surrogate-escaped and leave as their original bytes, as
// os.fsencode gives them), os.PathLike of str or bytes, and bytes where a
// bytes object cannot mean data.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <vector>

namespace cdc::python {

/// True for a str or an os.PathLike (bytes are data to the chunker).
bool is_path(pybind11::handle object);

/// The file name bytes of `path` (os.fsencode of os.fspath). Accepts bytes
/// when `bytes_ok`. Raises TypeError for another type and ValueError
/// ("embedded null byte", as open()) for a name holding a NUL, which the
/// system would silently cut short.
std::string path_bytes(pybind11::handle path, bool bytes_ok);

/// path_bytes of one path, or of each item of an iterable of them (at least
/// one: ValueError "paths is empty" otherwise).
std::vector<std::string> path_list(pybind11::handle paths);

}  // namespace cdc::python
