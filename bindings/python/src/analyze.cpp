// SPDX-License-Identifier: Apache-2.0
// analyze(paths, ...): the dedup figures of `cdc analyze --json`, as a dict
// (the same document: src/report/analyze_json.hpp builds both).
#include "module.hpp"
#include "options.hpp"
#include "paths.hpp"

#include "analyze_json.hpp"

#include <cdc/corpus/analyze.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

namespace py = pybind11;

namespace cdc::python {

void add_analyze(py::module_& m) {
    m.def(
        "analyze",
        [](const py::object& paths, const py::object& algorithms, std::int64_t min_size, std::int64_t avg_size,
           std::int64_t max_size, py::object key, py::object level, py::object seed, py::object polynomial,
           py::object window, const std::string& digest, std::int64_t jobs, bool follow_symlinks,
           const py::object& exclude, const py::object& exclude_file, bool exclude_caches,
           const py::object& exclude_if_present, bool one_file_system) {
            AnalyzeOptions options;
            options.algorithms = resolve_algorithms(algorithms, {min_size, avg_size, max_size, std::move(key),
                                                                 std::move(level), std::move(seed),
                                                                 std::move(polynomial), std::move(window)});
            options.digest = parse_digest_kind(digest);
            if (jobs < 0 || jobs > 4096)
                throw OptionError(fmt::format("jobs = {} is invalid: must be 0 (every core) .. 4096", jobs));
            options.jobs = static_cast<unsigned>(jobs);
            options.follow_symlinks = follow_symlinks;
            options.one_file_system = one_file_system;
            options.exclude = walk_excludes(exclude, exclude_file, exclude_caches, exclude_if_present);
            const std::vector<std::string> inputs = path_list(paths);
            std::string json;
            {
                py::gil_scoped_release nogil;
                json = tools::analyze_report_json(analyze(inputs, options), digest).dump();
            }
            return py::module_::import("json").attr("loads")(json);
        },
        py::arg("paths"), py::arg("algorithms") = "fastcdc", py::arg("min_size") = 0, py::arg("avg_size") = 0,
        py::arg("max_size") = 0, py::kw_only(), py::arg("key") = py::none(),
        py::arg("level") = py::none(), py::arg("seed") = py::none(), py::arg("polynomial") = py::none(),
        py::arg("window") = py::none(), py::arg("digest") = "blake3", py::arg("jobs") = 0, py::arg("follow_symlinks") = false,
        py::arg("exclude") = py::none(), py::arg("exclude_file") = py::none(), py::arg("exclude_caches") = false,
        py::arg("exclude_if_present") = py::none(), py::arg("one_file_system") = false, R"doc(analyze(paths, algorithms='fastcdc', min_size=0, avg_size=0, max_size=0, *, key=None, level=None, seed=None, polynomial=None, window=None, digest='blake3', jobs=0, follow_symlinks=False, exclude=None, exclude_file=None, exclude_caches=False, exclude_if_present=None, one_file_system=False)
--

Dedup figures of files and directory trees, for one or more algorithms in
one pass: the document `cdc analyze --json` prints, as a dict.

paths       a path or a list of paths (str, bytes or os.PathLike): files,
            directories (walked recursively) or "-" (standard input).
algorithms  an algorithm name, a list of names, or "all" (each with the
            same min_size, avg_size, max_size and key; level, seed,
            polynomial and window go to the names that take them, as with
            `cdc analyze -a`).
digest      "blake3", "sha256" or "xxh3" (dedup needs fingerprints).
jobs        worker threads; 0 = every core.
follow_symlinks  follow symbolic links inside directories.
exclude, exclude_file, exclude_caches, exclude_if_present, one_file_system
            what the walk leaves out, as cdc analyze's --exclude PATTERN,
            --exclude-file FILE, --exclude-caches, --exclude-if-present
            NAME and --one-file-system (docs/CLI.md, Excludes): exclude,
            exclude_file and exclude_if_present take one str (or bytes) or
            a list; what is left out is counted in "excluded".

Returns {"algorithms": [{"algorithm", "files", "bytes", "chunks",
"distinct_chunks", "distinct_bytes", "dedup_ratio", "saved_bytes",
"size": {"min", "p50", "mean", "p95", "max", "stddev"}, ...}],
"errors": [{"path", "error"}], "warnings": [...], "files", "bytes",
"excluded", ...}.
A file that cannot be read is listed in "errors" and skipped. The GIL is
released during the run. Raises ValueError for invalid options (a bad
pattern), OSError for a path or an exclude file that does not exist.
)doc");
}

}  // namespace cdc::python
