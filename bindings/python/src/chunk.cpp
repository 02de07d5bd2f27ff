// SPDX-License-Identifier: Apache-2.0
// chunk(data, ...): every chunk of a buffer at once, as numpy arrays.
#include "chunks.hpp"
#include "module.hpp"
#include "options.hpp"
#include "pinned_buffer.hpp"

#include <cdc/cdc.h>

#include <fmt/format.h>

#include <array>
#include <memory>
#include <vector>

namespace py = pybind11;

namespace cdc::python {

namespace {

int c_digest_kind(DigestKind kind) {
    switch (kind) {
        case DigestKind::blake3: return CDC_DIGEST_BLAKE3;
        case DigestKind::sha256: return CDC_DIGEST_SHA256;
        case DigestKind::xxh3: return CDC_DIGEST_XXH3;
        case DigestKind::none: break;
    }
    throw OptionError("no digest kind");
}

// Cuts a whole buffer and digests its chunks a batch at a time, each batch
// hashed right after it is cut, while its bytes are still in cache (as cdc
// speed and analyze do).
void cut_and_digest(const CutFinder& finder, std::span<const std::byte> bytes, DigestKind kind,
                    std::vector<std::uint32_t>& lengths, std::vector<std::uint8_t>& digests) {
    constexpr std::size_t kBatch = 64;  // fills the BLAKE3 lanes (compute_digests)
    const int ckind = c_digest_kind(kind);
    const std::size_t dsize = digest_size(kind);
    std::array<std::uint32_t, kBatch> batch{};
    lengths.reserve(bytes.size() / finder.profile().normal_size + 1);
    digests.reserve(lengths.capacity() * dsize);
    for (std::size_t pos = 0; pos < bytes.size();) {
        const CutProgress done = cut_lengths(finder, bytes.subspan(pos), true, batch);
        lengths.insert(lengths.end(), batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(done.chunks));
        digests.resize(digests.size() + done.chunks * dsize);
        const int rc = cdc_digests(ckind, bytes.data() + pos, done.bytes, batch.data(), done.chunks,
                                   digests.data() + digests.size() - done.chunks * dsize);
        if (rc != CDC_OK) throw Error(fmt::format("digests failed: {}", cdc_status_name(rc)));
        pos += done.bytes;
    }
}

// A numpy array that owns a vector's memory (no copy).
template <class T>
py::array_t<T> adopt(std::vector<T>&& v, std::vector<py::ssize_t> shape) {
    auto* owned = new std::vector<T>(std::move(v));
    py::capsule owner(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
    return py::array_t<T>(std::move(shape), owned->data(), owner);
}

}  // namespace

Chunks cut_buffer(const CutFinder& finder, py::handle data, DigestKind kind) {
    const PinnedBuffer buffer(data);
    const auto bytes = buffer.bytes();
    std::vector<std::uint32_t> lengths;
    std::vector<std::uint8_t> digests;
    {
        py::gil_scoped_release nogil;
        if (kind == DigestKind::none)
            cut_lengths(finder, bytes, true, lengths);
        else
            cut_and_digest(finder, bytes, kind, lengths, digests);
    }
    const auto n = static_cast<py::ssize_t>(lengths.size());
    Chunks out;
    out.offsets = py::array_t<std::uint64_t>(n);
    out.lengths = py::array_t<std::uint64_t>(n);
    {
        std::uint64_t* offsets = out.offsets.mutable_data();
        std::uint64_t* lens = out.lengths.mutable_data();
        py::gil_scoped_release nogil;
        std::uint64_t offset = 0;
        for (std::size_t i = 0; i < lengths.size(); ++i) {
            offsets[i] = offset;
            lens[i] = lengths[i];
            offset += lengths[i];
        }
    }
    if (kind != DigestKind::none) {
        out.digests = adopt(std::move(digests), {n, static_cast<py::ssize_t>(digest_size(kind))});
        out.digest = std::string(to_string(kind));
    }
    out.algorithm = std::string(finder.name());
    return out;
}

void add_chunk(py::module_& m) {
    py::class_<Chunks>(m, "Chunks", R"doc(
The chunks of a buffer, as returned by chunk() and Chunker.chunk().

offsets  numpy uint64 array: the offset of each chunk in the buffer
lengths  numpy uint64 array: the length of each chunk
digests  numpy uint8 array of shape (n, digest size) when a digest was
         asked for (32 bytes for blake3 and sha256, 16 for xxh3), else None
algorithm, digest  the names used ("" for no digest)

len(chunks) is the number of chunks; iterating gives (offset, length)
pairs, chunks[i] the i-th pair (negative i from the end), and chunks[a:b]
(any slice) a Chunks of those chunks (numpy views, no copy).
)doc")
        .def_readonly("offsets", &Chunks::offsets)
        .def_readonly("lengths", &Chunks::lengths)
        .def_readonly("digests", &Chunks::digests)
        .def_readonly("algorithm", &Chunks::algorithm)
        .def_readonly("digest", &Chunks::digest)
        .def("__len__", [](const Chunks& c) { return c.lengths.size(); })
        .def("__getitem__",
             [](const Chunks& c, const py::object& index) -> py::object {
                 if (PySlice_Check(index.ptr())) {
                     Chunks out = c;
                     out.offsets = py::array_t<std::uint64_t>(c.offsets[index]);
                     out.lengths = py::array_t<std::uint64_t>(c.lengths[index]);
                     if (!c.digests.is_none()) out.digests = c.digests[index];
                     return py::cast(std::move(out));
                 }
                 const py::ssize_t n = c.lengths.size();
                 py::ssize_t i = PyNumber_AsSsize_t(index.ptr(), PyExc_IndexError);
                 if (i == -1 && PyErr_Occurred()) throw py::error_already_set();
                 if (i < 0) i += n;
                 if (i < 0 || i >= n) throw py::index_error("Chunks index out of range");
                 return py::make_tuple(c.offsets.at(i), c.lengths.at(i));
             })
        .def("__iter__",
             [](const Chunks& c) {
                 return py::iter(py::module_::import("builtins")
                                     .attr("zip")(c.offsets.attr("tolist")(), c.lengths.attr("tolist")()));
             })
        .def("__repr__", [](const Chunks& c) {
            std::uint64_t total = 0;
            for (py::ssize_t i = 0; i < c.lengths.size(); ++i) total += c.lengths.at(i);
            return fmt::format("<cdc_chunkers.Chunks {} chunks, {} bytes, {}{}{}>", c.lengths.size(), total,
                               c.algorithm, c.digest.empty() ? "" : ", ", c.digest);
        });

    m.def(
        "chunk",
        [](const py::buffer& data, const std::string& algorithm, std::int64_t min_size, std::int64_t avg_size,
           std::int64_t max_size, py::object key, py::object level, py::object seed, py::object polynomial,
           py::object window, py::object digest) {
            const auto finder = make_finder(algorithm, {min_size, avg_size, max_size, std::move(key), std::move(level),
                                                        std::move(seed), std::move(polynomial), std::move(window)});
            return cut_buffer(*finder, data, parse_digest(digest));
        },
        py::arg("data"), py::arg("algorithm") = "fastcdc-v1.0.0", py::arg("min_size") = 0, py::arg("avg_size") = 0,
        py::arg("max_size") = 0, py::kw_only(), py::arg("key") = py::none(), py::arg("level") = py::none(),
        py::arg("seed") = py::none(), py::arg("polynomial") = py::none(), py::arg("window") = py::none(),
        py::arg("digest") = py::none(),
        R"doc(chunk(data, algorithm='fastcdc-v1.0.0', min_size=0, avg_size=0, max_size=0, *, key=None, level=None, seed=None, polynomial=None, window=None, digest=None)
--

Cuts a whole buffer into content-defined chunks.

    c = chunk(data, "fastcdc", 4096, 16384, 65536, digest="blake3")

data       any object with the buffer protocol (bytes, bytearray, memoryview,
           mmap, numpy array, ...), C-contiguous; it is read in place, never
           copied, and held (a bytearray cannot be resized) during the call.
algorithm  an algorithm name (see algorithms()), e.g. "fastcdc-v1.0.0",
           "fastcdc", "kfastcdc", "jc-v1.1.0", "ultracdc", "fixed-v1.0.0",
           "fastcdc-rs-v2020", "restic-rabin", "borg-buzhash".
min_size, avg_size, max_size
           chunk sizes in bytes (positional, as in fastcdc-py, or by
           name); 0 = the algorithm's default.
key        a 32-byte key (bytes-like, or 64 hex digits) for the keyed Gear
           table of the Gear-based names (required by kfastcdc).
level, seed, polynomial, window
           the parameters of the names that reproduce other projects'
           chunkers (None = the name's default; algorithms() lists who takes
           what): level 0..3 (fastcdc-rs-v2016/v2020), seed (fastcdc-rs-v2020,
           borg-buzhash), polynomial (restic-rabin: irreducible, degree
           8..53), window in bytes (borg-buzhash). A name refuses a parameter
           it does not take (ValueError).
digest     None, "blake3", "sha256" or "xxh3": a digest of every chunk.

Returns a Chunks object: .offsets and .lengths (numpy uint64 arrays) and
.digests (numpy uint8 array of shape (n, 32), or (n, 16) for xxh3).
The boundaries are those of the project each name reproduces (go-cdc-chunkers,
fastcdc-rs, restic, borg, casync), byte for byte. The GIL is
released while cutting and hashing: threads chunk in parallel.
Raises ValueError for an invalid algorithm or option, BufferError for a
non-contiguous buffer.
)doc");
}

}  // namespace cdc::python
