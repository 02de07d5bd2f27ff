// SPDX-License-Identifier: Apache-2.0
// The pieces of cdc_chunkers.distributed that run inside a task: the walk of
// the paths local to a worker, the analysis of a shard of files (the
// library's analyze(), several algorithms in one read) with its distinct
// chunk ids exported, either hash-partitioned into packed arrays (exact
// mode) or folded into a sketch (HyperLogLog registers and a bottom-k
// sample), the count of one partition's distinct ids, and the final report,
// built by the same code as `cdc analyze --json` (src/report).
//
// An id is the part of a digest that DedupIndex compares (its first 12
// bytes) and the chunk's size: 16 bytes, shipped as rows of a uint32 array
// (key0, key1, key2, size). Two ids are the same chunk for a reducer exactly
// when they are for `cdc analyze`, so the counts are equal, not close.
#include "module.hpp"
#include "options.hpp"

#include "analyze_json.hpp"

#include <cdc/corpus/analyze.hpp>
#include <cdc/corpus/dedup_index.hpp>
#include <cdc/corpus/splitmix64.hpp>

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace py = pybind11;

namespace cdc::python {

namespace {

using IdRow = std::array<std::uint32_t, 4>;  // key0, key1, key2, size

py::bytes as_bytes(std::string_view s) { return py::bytes(s.data(), s.size()); }

py::list issues_list(const std::vector<InputIssue>& issues) {
    py::list out;
    for (const InputIssue& i : issues) out.append(py::make_tuple(as_bytes(i.path), as_bytes(i.message)));
    return out;
}

std::vector<InputIssue> issues_from(const py::handle& list) {
    std::vector<InputIssue> out;
    for (py::handle item : list) {
        const auto pair = item.cast<py::tuple>();
        out.push_back({pair[0].cast<std::string>(), pair[1].cast<std::string>()});
    }
    return out;
}

template <class T>
py::array_t<T> array_of(const std::vector<T>& v, std::vector<py::ssize_t> shape) {
    py::array_t<T> a(std::move(shape));
    if (!v.empty()) std::memcpy(a.mutable_data(), v.data(), v.size() * sizeof(T));
    return a;
}

// An array handed in by a task, as a C-contiguous aligned array of T. Dask
// moves arrays in frames that can start at any byte, and pybind11's
// ensure() does not ask numpy for alignment: numpy.require copies only the
// arrays that are not aligned for T (or not of T, or not contiguous).
template <class T>
py::array_t<T, py::array::c_style> aligned_array(const py::handle& h) {
    py::object a = py::module_::import("numpy").attr("require")(h, py::dtype::of<T>(), "CA");
    return a.cast<py::array_t<T, py::array::c_style>>();
}

// (size, count) rows of an exact size distribution, and back.
py::array_t<std::uint64_t> histogram_array(const SizeStats& s) {
    std::vector<std::uint64_t> flat;
    for (const auto& [size, n] : s.histogram()) {
        flat.push_back(size);
        flat.push_back(n);
    }
    return array_of(flat, {static_cast<py::ssize_t>(flat.size() / 2), 2});
}

void add_histogram(SizeStats& s, const py::handle& array) {
    const auto a = aligned_array<std::uint64_t>(array);
    if (a.ndim() != 2 || a.shape(1) != 2) throw OptionError("a size histogram must be an (n, 2) uint64 array");
    const auto r = a.unchecked<2>();
    for (py::ssize_t i = 0; i < r.shape(0); ++i) s.add(r(i, 0), r(i, 1));
}

IdRow id_row(const DedupIndex::Entry& e) {
    IdRow row{};
    std::memcpy(row.data(), e.key.data(), DedupIndex::kKeyBytes);
    row[3] = e.size;
    return row;
}

// The partition of an id: bits of its key that neither DedupIndex's slot
// (bytes 0..7) nor its shard (the low bits of bytes 8..11) use, so that a
// reducer's index is not skewed by the partition it holds.
std::size_t bucket_of(const IdRow& row, std::size_t buckets) { return (row[2] >> 16) % buckets; }

// SplitMix64's output function as a 64-bit mixer.
std::uint64_t mix(std::uint64_t x) { return SplitMix64(x).next(); }

// A 64-bit hash of an id for the sketches, uniform because the digest is;
// the seed picks another hash function (another sample).
std::uint64_t sketch_hash(const IdRow& row, std::uint64_t seed) {
    const std::uint64_t lo = row[0] | (std::uint64_t{row[1]} << 32);
    return mix(mix(lo ^ mix(seed)) ^ row[2]);
}

py::dict exact_part(const DedupIndex& index, std::size_t buckets) {
    std::vector<std::vector<std::uint32_t>> parts(buckets);
    index.for_each([&](const DedupIndex::Entry& e) {
        const IdRow row = id_row(e);
        auto& p = parts[bucket_of(row, buckets)];
        p.insert(p.end(), row.begin(), row.end());
    });
    py::list arrays;
    for (const auto& p : parts) arrays.append(array_of(p, {static_cast<py::ssize_t>(p.size() / 4), 4}));
    py::dict d;
    d["buckets"] = std::move(arrays);
    return d;
}

// HyperLogLog registers (2^precision, each the largest rank seen, as in
// Flajolet et al. 2007 with a 64-bit hash) and the bottom-k sample: the
// `sample` smallest hashes with their sizes.
py::dict sketch_part(const DedupIndex& index, unsigned precision, std::size_t sample, std::uint64_t seed) {
    std::vector<std::uint8_t> registers(std::size_t{1} << precision, 0);
    std::vector<std::pair<std::uint64_t, std::uint32_t>> all;
    all.reserve(static_cast<std::size_t>(index.distinct_chunks()));
    index.for_each([&](const DedupIndex::Entry& e) {
        const IdRow row = id_row(e);
        const std::uint64_t h = sketch_hash(row, seed);
        const std::size_t reg = static_cast<std::size_t>(h >> (64 - precision));
        const std::uint64_t rest = (h << precision) | (std::uint64_t{1} << (precision - 1));
        registers[reg] = std::max(registers[reg], static_cast<std::uint8_t>(std::countl_zero(rest) + 1));
        all.emplace_back(h, row[3]);
    });
    const bool truncated = all.size() > sample;
    if (truncated) {
        std::nth_element(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(sample), all.end());
        all.resize(sample);
    }
    std::vector<std::uint64_t> hashes(all.size());
    std::vector<std::uint32_t> sizes(all.size());
    for (std::size_t i = 0; i < all.size(); ++i) std::tie(hashes[i], sizes[i]) = all[i];
    py::dict d;
    d["registers"] = array_of(registers, {static_cast<py::ssize_t>(registers.size())});
    d["sample_hashes"] = array_of(hashes, {static_cast<py::ssize_t>(hashes.size())});
    d["sample_sizes"] = array_of(sizes, {static_cast<py::ssize_t>(sizes.size())});
    d["truncated"] = truncated;
    return d;
}

ProfileArgs profile_args(const py::dict& spec) {
    auto get = [&](const char* k) { return spec.contains(k) ? py::reinterpret_borrow<py::object>(spec[k]) : py::object(py::none()); };
    auto size = [&](const char* k) { return spec.contains(k) ? spec[k].cast<std::int64_t>() : std::int64_t{0}; };
    return {size("min_size"), size("avg_size"), size("max_size"), get("key"), get("level"), get("seed"),
            get("polynomial"), get("window")};
}

AnalyzeOptions analyze_options(const py::dict& spec) {
    AnalyzeOptions o;
    o.algorithms = resolve_algorithms(spec["algorithms"], profile_args(spec));
    o.digest = parse_digest_kind(spec.contains("digest") ? spec["digest"].cast<std::string>() : "blake3");
    o.follow_symlinks = spec.contains("follow_symlinks") && spec["follow_symlinks"].cast<bool>();
    if (spec.contains("read_size") && !spec["read_size"].is_none()) o.read_size = spec["read_size"].cast<std::size_t>();
    return o;
}

}  // namespace

void add_distributed(py::module_& m) {
    m.def(
        "_dist_check",
        [](const py::dict& spec) {
            const AnalyzeOptions o = analyze_options(spec);
            py::list names;
            for (const auto& a : o.algorithms) names.append(std::string(a->name()));
            return names;
        },
        py::arg("spec"), "_dist_check(spec)\n--\n\nValidates an analysis spec; returns the resolved names.");

    m.def(
        "_dist_walk",
        [](const std::vector<std::string>& paths, bool follow_symlinks, std::uint64_t batch_bytes,
           const py::object& emit) {
            WalkOptions w;
            w.follow_symlinks = follow_symlinks;
            const auto listed = [](const WalkResult& r) {
                py::list files;
                for (const FileEntry& f : r.files) files.append(py::make_tuple(as_bytes(f.path), f.size, f.in_tree));
                return files;
            };
            // With `emit`: the files walked since the last batch, each time
            // they add up to batch_bytes, handed on while the walk goes on
            // (and dropped here); the result holds the rest.
            std::uint64_t sent_bytes = 0;
            std::function<void(WalkResult&)> on_file;
            if (!emit.is_none() && batch_bytes > 0)
                on_file = [&](WalkResult& r) {
                    if (r.total_bytes - sent_bytes < batch_bytes) return;
                    py::gil_scoped_acquire gil;
                    emit(listed(r));
                    r.files.clear();
                    sent_bytes = r.total_bytes;
                };
            WalkResult r;
            {
                py::gil_scoped_release nogil;
                r = walk_inputs(paths, w, on_file);
            }
            py::dict d;
            d["files"] = listed(r);
            d["errors"] = issues_list(r.errors);
            d["warnings"] = issues_list(r.warnings);
            d["symlinks_skipped"] = r.symlinks_skipped;
            d["duplicates_skipped"] = r.duplicates_skipped;
            return d;
        },
        py::arg("paths"), py::arg("follow_symlinks"), py::arg("batch_bytes") = 0, py::arg("emit") = py::none(),
        "_dist_walk(paths, follow_symlinks, batch_bytes=0, emit=None)\n--\n\n"
        "The walk of `cdc analyze` over paths local to this process; with emit, emit(files) is called with the\n"
        "files walked since the last call each time they add up to batch_bytes, and the result holds the rest.");

    m.def(
        "_dist_shard",
        [](const py::list& files, const py::dict& spec, std::size_t buckets, unsigned precision, std::size_t sample,
           std::uint64_t sketch_seed, unsigned jobs) {
            AnalyzeOptions o = analyze_options(spec);
            o.jobs = jobs;
            o.keep_indexes = true;
            if (precision == 0 && buckets == 0) throw OptionError("buckets must be >= 1");
            if (precision != 0 && (precision < 4 || precision > 18))
                throw OptionError(fmt::format("precision = {} is invalid: must be 4..18", precision));
            if (precision != 0 && sample < 2) throw OptionError("sample must be >= 2");
            WalkResult walk;
            for (py::handle f : files) {
                const auto t = f.cast<py::tuple>();
                walk.files.push_back({t[0].cast<std::string>(), t[1].cast<std::uint64_t>(), t[2].cast<bool>()});
                walk.total_bytes += walk.files.back().size;
            }
            AnalyzeReport r;
            {
                py::gil_scoped_release nogil;
                r = analyze(walk, o);
            }
            py::list algorithms;
            for (const AlgorithmResult& a : r.algorithms) {
                py::dict d = precision == 0 ? exact_part(*a.index, buckets) : sketch_part(*a.index, precision, sample, sketch_seed);
                d["files"] = a.files;
                d["bytes"] = a.bytes;
                d["chunks"] = a.chunks;
                d["shard_distinct_chunks"] = a.distinct_chunks;
                d["cut_seconds"] = a.cut_seconds;
                d["hash_seconds"] = a.hash_seconds;
                d["sizes"] = histogram_array(a.sizes);
                algorithms.append(std::move(d));
            }
            py::dict out;
            out["algorithms"] = std::move(algorithms);
            out["errors"] = issues_list(r.errors);
            out["files"] = r.files;
            out["bytes"] = r.bytes;
            out["buffer_bytes"] = r.buffer_bytes;
            out["wall_seconds"] = r.wall_seconds;
            return out;
        },
        py::arg("files"), py::arg("spec"), py::arg("buckets"), py::arg("precision"), py::arg("sample"),
        py::arg("sketch_seed"), py::arg("jobs"),
        "_dist_shard(files, spec, buckets, precision, sample, sketch_seed, jobs)\n--\n\n"
        "Analyzes a shard of walked files; exports its distinct ids (precision 0) or their sketch.");

    m.def(
        "_dist_distinct",
        [](const py::list& parts) {
            std::vector<py::array_t<std::uint32_t, py::array::c_style>> arrays;
            std::uint64_t rows = 0;
            for (py::handle p : parts) {
                arrays.push_back(aligned_array<std::uint32_t>(p));
                const auto& a = arrays.back();
                if (a.ndim() != 2 || a.shape(1) != 4) throw OptionError("an id array must be (n, 4) uint32");
                rows += static_cast<std::uint64_t>(a.shape(0));
            }
            std::uint64_t chunks = 0, bytes = 0;
            std::size_t memory = 0;
            {
                py::gil_scoped_release nogil;
                DedupIndex index(rows);
                for (const auto& a : arrays) {
                    const std::uint32_t* row = a.data();
                    for (py::ssize_t i = 0; i < a.shape(0); ++i, row += 4) {
                        Digest d;
                        std::memcpy(d.bytes.data(), row, DedupIndex::kKeyBytes);
                        d.size = DedupIndex::kKeyBytes;
                        index.insert(d, row[3]);
                    }
                }
                chunks = index.distinct_chunks();
                bytes = index.distinct_bytes();
                memory = index.memory_bytes();
            }
            return py::make_tuple(chunks, bytes, memory);
        },
        py::arg("parts"),
        "_dist_distinct(parts)\n--\n\nDistinct chunks, distinct bytes and index memory of id arrays.");

    m.def(
        "_dist_report",
        [](const py::dict& spec, const py::dict& parts) {
            const AnalyzeOptions o = analyze_options(spec);
            AnalyzeReport r;
            const py::list algos = parts["algorithms"];
            if (algos.size() != o.algorithms.size()) throw OptionError("one part per algorithm is needed");
            for (std::size_t k = 0; k < o.algorithms.size(); ++k) {
                const py::dict p = algos[k];
                AlgorithmResult a;
                a.algorithm = std::string(o.algorithms[k]->name());
                a.profile = o.algorithms[k]->profile();
                a.files = p["files"].cast<std::uint64_t>();
                a.bytes = p["bytes"].cast<std::uint64_t>();
                a.chunks = p["chunks"].cast<std::uint64_t>();
                a.distinct_chunks = p["distinct_chunks"].cast<std::uint64_t>();
                a.distinct_bytes = p["distinct_bytes"].cast<std::uint64_t>();
                a.cut_seconds = p["cut_seconds"].cast<double>();
                a.hash_seconds = p["hash_seconds"].cast<double>();
                a.index_memory_bytes = p["index_bytes"].cast<std::size_t>();
                a.wall_seconds = parts["wall_seconds"].cast<double>();
                for (py::handle h : p["sizes"].cast<py::list>()) add_histogram(a.sizes, h);
                r.algorithms.push_back(std::move(a));
            }
            r.errors = issues_from(parts["errors"]);
            r.warnings = issues_from(parts["warnings"]);
            // The order of `cdc analyze`: by path, then message.
            auto by_path = [](const InputIssue& a, const InputIssue& b) {
                return a.path != b.path ? a.path < b.path : a.message < b.message;
            };
            std::sort(r.errors.begin(), r.errors.end(), by_path);
            std::sort(r.warnings.begin(), r.warnings.end(), by_path);
            r.symlinks_skipped = parts["symlinks_skipped"].cast<std::uint64_t>();
            r.duplicates_skipped = parts["duplicates_skipped"].cast<std::uint64_t>();
            r.jobs = parts["jobs"].cast<unsigned>();
            r.buffer_bytes = parts["buffer_bytes"].cast<std::size_t>();
            r.wall_seconds = parts["wall_seconds"].cast<double>();
            if (!r.algorithms.empty()) {
                r.files = r.algorithms.front().files;
                r.bytes = r.algorithms.front().bytes;
            }
            const std::string json = tools::analyze_report_json(r, to_string(o.digest)).dump();
            return py::module_::import("json").attr("loads")(json);
        },
        py::arg("spec"), py::arg("parts"),
        "_dist_report(spec, parts)\n--\n\nThe document of `cdc analyze --json` from merged parts.");
}

}  // namespace cdc::python
