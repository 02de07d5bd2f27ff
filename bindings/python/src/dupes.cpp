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
        [](const py::object& paths, std::int64_t min_size, const std::string& mode, const std::string& hash,
           bool follow_symlinks, bool one_file_system) {
            DupesOptions opt;
            opt.mode = parse_dupes_mode(mode);
            opt.hash = parse_digest_kind(hash);
            if (opt.hash == DigestKind::none) throw OptionError("hash = 'none' is invalid: must be blake3 or xxh3");
            if (min_size < 0) throw OptionError(fmt::format("min_size = {} is invalid: must be >= 0", min_size));
            opt.min_size = static_cast<std::uint64_t>(min_size);
            opt.follow_symlinks = follow_symlinks;
            opt.one_file_system = one_file_system;
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
        py::arg("hash") = "blake3", py::arg("follow_symlinks") = false, py::arg("one_file_system") = false, R"doc(dupes(paths, *, min_size=1, mode='auto', hash='blake3', follow_symlinks=False, one_file_system=False)
--

Whole-file duplicates under files and directory trees: the report of
`cdc dupes --json`, as a dict. Nothing is changed on disk (the actions that
merge duplicates are the command line's: cdc dupes --action).

paths      a path or a list of paths (str, bytes or os.PathLike).
min_size   smaller files are ignored (0 also groups empty files).
mode       "auto", "compare" (byte by byte) or "hash".
hash       "blake3" or "xxh3" (hash mode and large classes).
follow_symlinks, one_file_system   as in cdc dupes.

Returns {"groups": [{"size", "files": [path, ...]}] (by wasted bytes),
"linked": [{"size", "files"}] (one inode, several paths), "summary":
{"files_scanned", "bytes_scanned", "candidates", "bytes_read", "groups",
"duplicate_files", "wasted_bytes", "linked_paths", "skipped", "mode"},
"warnings": [message, ...]}. Paths are decoded like os.fsdecode. The GIL is
released during the scan. Raises ValueError for invalid options or a path
that does not exist.
)doc");
}

}  // namespace cdc::python
