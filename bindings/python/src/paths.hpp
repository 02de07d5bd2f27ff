// SPDX-License-Identifier: Apache-2.0
// Path arguments, as Python's own open() takes them: str (names that are not
// UTF-8 arrive surrogate-escaped and leave as their original bytes, as
// os.fsencode gives them), os.PathLike of str or bytes, and bytes where a
// bytes object cannot mean data.
#pragma once

#include <cdc/exclude.hpp>

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

/// The walk's exclusions from the keywords analyze and dupes share (as the
/// command line's --exclude, --exclude-file, --exclude-caches and
/// --exclude-if-present): each of `exclude`, `exclude_file` and
/// `exclude_if_present` is None, one str/bytes (os.PathLike for files) or
/// an iterable of them. Pattern files are read here: OSError if one cannot
/// be, ValueError for a bad pattern or name.
WalkExcludes walk_excludes(pybind11::handle exclude, pybind11::handle exclude_file, bool exclude_caches,
                           pybind11::handle exclude_if_present);

}  // namespace cdc::python
