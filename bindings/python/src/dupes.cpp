// SPDX-License-Identifier: Apache-2.0
// dupes(paths, ...): whole-file duplicates, the report of `cdc dupes --json`
// (groups, linked files, summary) as a dict. Report only: the actions that
// change files (hard link, reflink, delete) stay with the command line.
#include "module.hpp"
#include "paths.hpp"

#include <cdc/dupes.hpp>
#include <cdc/error.hpp>

#include <pybind11/stl.h>

#include <fmt/format.h>

#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace py = pybind11;

namespace cdc::python {

namespace {

// A path as os.fsdecode gives it: bytes that are not UTF-8 survive
// (surrogateescape), so os.fsencode(path) opens the same file.
py::str path_str(std::string_view p) {
    return py::reinterpret_steal<py::str>(PyUnicode_DecodeFSDefaultAndSize(p.data(), static_cast<py::ssize_t>(p.size())));
}

py::dict summary_dict(const DupesSummary& s, const std::string& mode) {
    py::dict d;
    d["files_scanned"] = s.files_scanned;
    d["bytes_scanned"] = s.bytes_scanned;
    d["candidates"] = s.candidates;
    d["bytes_read"] = s.bytes_read;
    d["groups"] = s.groups;
    d["duplicate_files"] = s.duplicate_files;
    d["wasted_bytes"] = s.wasted_bytes;
    d["linked_paths"] = s.linked_paths;
    d["skipped"] = s.skipped;
    d["mode"] = mode;  // as given, like cdc dupes
    return d;
}

}  // namespace

void add_dupes(py::module_& m) {
    m.def(
        "dupes",
        [](const py::object& paths, std::int64_t min_size, const std::string& mode, std::string digest,
           bool follow_symlinks, bool one_file_system, const py::object& exclude, const py::object& exclude_file,
           bool exclude_caches, const py::object& exclude_if_present, const py::object& hash) {
            // `hash=` was this argument's first name; `digest=` is the name of
            // chunk() and of cdc dupes --digest. The old name still works, with
            // a warning, unless both disagree.
            if (!hash.is_none()) {
                const auto old = hash.cast<std::string>();
                if (digest != "blake3" && digest != old)
                    throw OptionError(fmt::format("hash = '{}' and digest = '{}' disagree: give digest only", old, digest));
                if (PyErr_WarnEx(PyExc_DeprecationWarning, "dupes(hash=...) is deprecated: use digest=...", 1) < 0)
                    throw py::error_already_set();
                digest = old;
            }
            DupesOptions opt;
            opt.mode = parse_dupes_mode(mode);
            opt.hash = parse_digest_kind(digest);
            if (opt.hash == DigestKind::none)
                throw OptionError("digest = 'none' is invalid: must be blake3, sha256 or xxh3");
            if (min_size < 0) throw OptionError(fmt::format("min_size = {} is invalid: must be >= 0", min_size));
            opt.min_size = static_cast<std::uint64_t>(min_size);
            opt.follow_symlinks = follow_symlinks;
            opt.one_file_system = one_file_system;
            opt.exclude = walk_excludes(exclude, exclude_file, exclude_caches, exclude_if_present);
            const std::vector<std::string> roots = path_list(paths);

            std::mutex warnings_mutex;
            std::vector<std::string> warnings;
            opt.warning = [&](const std::string& w) {
                const std::lock_guard lock(warnings_mutex);
                warnings.push_back(w);
            };
            std::optional<DupesResult> result;
            {
                py::gil_scoped_release nogil;
                result.emplace(find_dupes(roots, opt));
            }
            py::list groups, linked;
            for (std::size_t i = 0; i < result->group_count(); ++i) {
                const DupesGroup g = result->group(i);
                py::list files;
                for (const DupesFile& f : g.files) files.append(path_str(f.first_path()));
                py::dict d;
                d["size"] = g.size;
                d["files"] = std::move(files);
                groups.append(std::move(d));
            }
            for (std::size_t i = 0; i < result->linked_count(); ++i) {
                const DupesFile l = result->linked(i);
                py::list files;
                for (const std::string_view p : l.paths) files.append(path_str(p));
                py::dict d;
                d["size"] = l.size;
                d["files"] = std::move(files);
                linked.append(std::move(d));
            }
            py::dict out;
            out["groups"] = std::move(groups);
            out["linked"] = std::move(linked);
            out["summary"] = summary_dict(result->summary, mode);
            out["warnings"] = warnings;
            return out;
        },
        py::arg("paths"), py::kw_only(), py::arg("min_size") = 1, py::arg("mode") = "auto",
        py::arg("digest") = "blake3", py::arg("follow_symlinks") = false, py::arg("one_file_system") = false,
        py::arg("exclude") = py::none(), py::arg("exclude_file") = py::none(), py::arg("exclude_caches") = false,
        py::arg("exclude_if_present") = py::none(), py::arg("hash") = py::none(),
        R"doc(dupes(paths, *, min_size=1, mode='auto', digest='blake3', follow_symlinks=False, one_file_system=False, exclude=None, exclude_file=None, exclude_caches=False, exclude_if_present=None, hash=None)
--

Whole-file duplicates under files and directory trees: the report of
`cdc dupes --json`, as a dict. Nothing is changed on disk (the actions that
merge duplicates are the command line's: cdc dupes --action).

paths      a path or a list of paths (str, bytes or os.PathLike).
min_size   smaller files are ignored (0 also groups empty files).
mode       "auto", "compare" (byte by byte) or "hash".
digest     "blake3", "sha256" or "xxh3" (hash mode and large classes), as
           cdc dupes --digest. (hash= is its deprecated former name.)
follow_symlinks, one_file_system, exclude, exclude_file, exclude_caches,
exclude_if_present   as in cdc dupes (--exclude PATTERN ...: docs/CLI.md,
           Excludes); exclude, exclude_file and exclude_if_present take one
           str (or bytes) or a list.

Returns {"groups": [{"size", "files": [path, ...]}] (by wasted bytes),
"linked": [{"size", "files"}] (one inode, several paths), "summary":
{"files_scanned", "bytes_scanned", "candidates", "bytes_read", "groups",
"duplicate_files", "wasted_bytes", "linked_paths", "skipped", "mode"},
"warnings": [message, ...]}. Paths are decoded like os.fsdecode. The GIL is
released during the scan. Raises ValueError for invalid options (a bad
pattern) or a path that does not exist, OSError for an exclude file that
cannot be read.
)doc");
}

}  // namespace cdc::python
