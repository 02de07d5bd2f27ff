// SPDX-License-Identifier: Apache-2.0
// Chunker and iter_chunks(): chunks of a stream (a path, a binary file) or
// of a buffer, one at a time, as (offset, memoryview) pairs. A stream is read
// into one bounded scan buffer (the caller's, or a bytearray of
// max(2 x max_size, 256 KiB)) with readinto: memory does not grow with the
// stream.
#include "chunks.hpp"
#include "lease.hpp"
#include "module.hpp"
#include "options.hpp"
#include "paths.hpp"
#include "pinned_buffer.hpp"
#include "python_error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <unistd.h>

namespace py = pybind11;

namespace cdc::python {

namespace {

// A binary file object: readinto() into the scan buffer (no copy), or
// read() for objects that have no readinto. Called without the GIL, from
// Chunker::next: takes it for the call. The part of the scan buffer given to
// readinto() is lent (lease.hpp): a reader that keeps a view of it stops the
// stream with BufferError, and the memory outlives whatever it kept.
class FileReader final : public Reader {
public:
    FileReader(py::object file, py::object scan_owner) : file_(std::move(file)), owner_(std::move(scan_owner)) {
        if (py::hasattr(file_, "readinto"))
            readinto_ = file_.attr("readinto");
        else
            read_ = file_.attr("read");
    }
    ~FileReader() override {
        py::gil_scoped_acquire gil;
        readinto_ = py::object();
        read_ = py::object();
        file_ = py::object();
        owner_ = py::object();
    }
    FileReader(const FileReader&) = delete;
    FileReader& operator=(const FileReader&) = delete;

    ReadResult read(std::span<std::byte> buffer) override {
        py::gil_scoped_acquire gil;
        try {
            return read_locked(buffer);
        } catch (py::error_already_set& e) {
            throw PythonError(e);
        }
    }

private:
    static constexpr const char* kKept =
        "readinto() kept a view of the buffer it was given (a slice, or an array made of it): the chunker "
        "reuses that buffer, so the stream stops here";

    ReadResult read_locked(std::span<std::byte> buffer) {
        if (readinto_) {
            Lease lease(owner_, buffer, false);
            py::object n;
            try {
                n = readinto_(lease.view());
            } catch (...) {
                lease.end(kKept, false);
                throw;
            }
            lease.end(kKept);
            return count_read(n, buffer.size());
        }
        const py::object data = read_(buffer.size());
        if (data.is_none()) return {0, false};
        const PinnedBuffer bytes(data);
        if (bytes.bytes().size() > buffer.size())
            throw IoError(fmt::format("read({}) returned {} bytes", buffer.size(), bytes.bytes().size()));
        std::memcpy(buffer.data(), bytes.bytes().data(), bytes.bytes().size());
        return {bytes.bytes().size(), bytes.bytes().empty()};
    }

    // readinto's result: a count of bytes (0 = the end), or None for a
    // non-blocking stream with no data yet.
    static ReadResult count_read(const py::object& n, std::size_t size) {
        if (n.is_none()) return {0, false};
        if (!py::isinstance<py::int_>(n) || py::isinstance<py::bool_>(n)) {
            PyErr_Format(PyExc_TypeError, "readinto() returned %s, not an int or None", Py_TYPE(n.ptr())->tp_name);
            throw py::error_already_set();
        }
        int overflow = 0;
        const long long got = PyLong_AsLongLongAndOverflow(n.ptr(), &overflow);
        if (overflow != 0 || got < 0 || static_cast<unsigned long long>(got) > size)
            throw IoError(fmt::format("readinto returned {} for a {}-byte buffer", py::str(n).cast<std::string>(), size));
        return {static_cast<std::size_t>(got), got == 0};
    }

    py::object file_, owner_, readinto_, read_;
};

// A C-contiguous memoryview of `object` cast to bytes (a numpy array of any
// dtype is its raw bytes) and its Py_buffer.
struct ByteView {
    py::object view;
    std::span<std::byte> bytes;
};

ByteView byte_view(py::handle object, bool writable) {
    py::object view = py::reinterpret_steal<py::object>(PyMemoryView_FromObject(object.ptr()));
    if (!view) throw py::error_already_set();
    if (writable && PyMemoryView_GET_BUFFER(view.ptr())->readonly)
        throw OptionError("buffer must be writable (a bytearray, a numpy array, a writable mmap...)");
    if (!PyBuffer_IsContiguous(PyMemoryView_GET_BUFFER(view.ptr()), 'C'))
        throw OptionError("the buffer is not C-contiguous: it cannot be read in place");
    view = view.attr("cast")("B");
    const Py_buffer* b = PyMemoryView_GET_BUFFER(view.ptr());
    // Chunks are handed out read-only: they are views of data the caller
    // must not change under the chunker (or of its scan buffer).
    return {view.attr("toreadonly")(), {static_cast<std::byte*>(b->buf), static_cast<std::size_t>(b->len)}};
}

class PyChunker {
public:
    PyChunker(const std::string& algorithm, const ProfileArgs& profile, const py::object& buffer, bool views,
              const py::object& digest)
        : finder_(make_finder(algorithm, profile)), views_(views), digest_(parse_digest(digest)) {
        if (!buffer.is_none()) {
            scan_ = byte_view(buffer, true);
            chunker_.emplace(finder_, Source{}, scan_.bytes);  // checks the size
        }
    }
    ~PyChunker() { close_fd(); }
    PyChunker(const PyChunker&) = delete;
    PyChunker& operator=(const PyChunker&) = delete;

    void reset(const py::object& source) {
        const Busy busy(*this);
        end_view(true);
        close_fd();
        ended_ = false;
        source_ = ByteView{};
        if (source.is_none()) {
            ensure_chunker(false).reset(Source{});
        } else if (PyObject_CheckBuffer(source.ptr())) {
            source_ = byte_view(source, false);
            ensure_chunker(false).reset(MemorySource(std::span<const std::byte>(source_.bytes)));
        } else if (is_path(source)) {
            const std::string name = path_bytes(source, false);
            fd_ = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
            if (fd_ < 0) {
                const py::object path = py::module_::import("os").attr("fspath")(source);
                PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path.ptr());
                throw py::error_already_set();
            }
            ensure_chunker(true).reset(FileSource(fd_, name));
        } else if (py::hasattr(source, "readinto") || py::hasattr(source, "read")) {
            Chunker& chunker = ensure_chunker(true);
            chunker.reset(Source::reader(std::make_unique<FileReader>(source, scan_.view)));
        } else {
            throw py::type_error(fmt::format(
                "source must be a path, a binary file or a bytes-like object, not {}",
                py::str(py::type::of(source).attr("__name__")).cast<std::string>()));
        }
        streaming_ = !source_.view;
    }

    py::object next() {
        const Busy busy(*this);
        if (!chunker_ || ended_) throw py::stop_iteration();
        end_view(true);  // the scan buffer is about to change under it
        Chunk c;
        bool got;
        if (streaming_) {
            // A read can block (a pipe, a slow disk): other threads run meanwhile.
            py::gil_scoped_release nogil;
            got = chunker_->next(c);
        } else {
            // A chunk of memory is cut in microseconds: releasing the GIL
            // for it would cost more in hand-offs than it frees.
            got = chunker_->next(c);
        }
        if (!got) {
            ended_ = true;
            end_offset_ = chunker_->offset();
            close_fd();
            throw py::stop_iteration();
        }
        py::object data;
        if (!views_) {
            data = py::bytes(reinterpret_cast<const char*>(c.bytes.data()), static_cast<py::ssize_t>(c.size()));
        } else if (!streaming_) {
            // A view of the source itself: valid for as long as it is kept.
            const auto start = static_cast<py::ssize_t>(c.bytes.data() - source_.bytes.data());
            data = source_.view[py::slice(start, start + static_cast<py::ssize_t>(c.size()), 1)];
        } else {
            const auto start = static_cast<std::size_t>(c.bytes.data() - scan_.bytes.data());
            view_ = Lease(scan_.view, scan_.bytes.subspan(start, c.size()), true);
            data = view_.view();
        }
        if (digest_ == DigestKind::none) return py::make_tuple(c.offset, std::move(data));
        const Digest d = compute_digest(digest_, c.bytes);
        return py::make_tuple(c.offset, std::move(data),
                              py::bytes(reinterpret_cast<const char*>(d.bytes.data()), d.size));
    }

    Chunks chunk(const py::buffer& data, const py::object& digest) const {
        return cut_buffer(*finder_, data, parse_digest(digest));
    }

    void close() {
        const Busy busy(*this);
        end_view(false);
        close_fd();
        source_ = ByteView{};
        if (chunker_) chunker_->reset(Source{});
        ended_ = true;
        end_offset_ = 0;
    }

    const CutFinder& finder() const noexcept { return *finder_; }
    std::uint64_t offset() const noexcept { return ended_ ? end_offset_ : (chunker_ ? chunker_->offset() : 0); }
    std::size_t buffer_size() const noexcept { return scan_.bytes.size(); }
    bool views() const noexcept { return views_; }
    py::object digest() const {
        return digest_ == DigestKind::none ? py::object(py::none()) : py::object(py::str(std::string(to_string(digest_))));
    }

private:
    // One thread at a time: the GIL is released while a stream is read.
    class Busy {
    public:
        explicit Busy(PyChunker& c) : c_(c) {
            if (c_.busy_) throw std::runtime_error("this Chunker is in use by another thread (or by its own reader)");
            c_.busy_ = true;
        }
        ~Busy() { c_.busy_ = false; }
        Busy(const Busy&) = delete;
        Busy& operator=(const Busy&) = delete;

    private:
        PyChunker& c_;
    };

    // Ends the loan of the last chunk view of a stream (views=True): the
    // view is released, and a slice or array of it still alive stops the
    // step (BufferError) rather than see the next bytes.
    void end_view(bool strict) {
        view_.end("a view of the previous chunk is still in use (a slice, or an array made of it) and its bytes "
                  "are about to be replaced: copy what you keep (bytes(view)) and drop the rest before the next "
                  "step, or iterate without views=True",
                  strict);
    }

    Chunker& ensure_chunker(bool stream) {
        if (stream && scan_.bytes.empty()) {
            // The scan buffer, allocated once, on the first stream.
            const py::object owned = py::reinterpret_steal<py::object>(PyByteArray_FromStringAndSize(
                nullptr, static_cast<py::ssize_t>(default_buffer_size(finder_->profile().max_size))));
            if (!owned) throw py::error_already_set();
            scan_ = byte_view(owned, true);
            chunker_.emplace(finder_, Source{}, scan_.bytes);
        }
        if (!chunker_) chunker_.emplace(finder_);
        return *chunker_;
    }

    void close_fd() noexcept {
        if (fd_ >= 0) {
            if (chunker_) chunker_->reset(Source{});
            ::close(fd_);
            fd_ = -1;
        }
    }

    std::shared_ptr<const CutFinder> finder_;
    bool views_;
    DigestKind digest_;
    ByteView scan_;    // the stream buffer (caller's or ours)
    ByteView source_;  // the memory source, if any
    Lease view_;       // the last chunk view of a stream lent out (views=True)
    std::optional<Chunker> chunker_;
    int fd_ = -1;      // a path source, opened here
    bool streaming_ = false;
    bool ended_ = false;
    std::uint64_t end_offset_ = 0;
    bool busy_ = false;
};

std::unique_ptr<PyChunker> make_chunker(const std::string& algorithm, std::int64_t min_size, std::int64_t avg_size,
                                        std::int64_t max_size, py::object key, py::object level, py::object seed,
                                        py::object polynomial, py::object window, const py::object& buffer,
                                        bool views, const py::object& digest) {
    return std::make_unique<PyChunker>(algorithm,
                                       ProfileArgs{min_size, avg_size, max_size, std::move(key), std::move(level),
                                                   std::move(seed), std::move(polynomial), std::move(window)},
                                       buffer, views, digest);
}

}  // namespace

void add_chunker(py::module_& m) {
    py::class_<PyChunker>(m, "Chunker", R"doc(
A reusable chunker: one algorithm and profile, one scan buffer, many streams.

    c = Chunker("fastcdc-v1.0.0", 4096, 16384, 65536)   # sizes: min, avg, max
    for offset, data in c.reset("big.iso"):     # a path, read with read(2)
        store(offset, data)                     # data: bytes of its own
    for offset, data in c.reset(open("x", "rb")):   # any binary file (readinto)
        ...
    for offset, data in c.reset(b"..."):        # a bytes-like object
        ...
    c.chunk(data, digest="blake3")              # a whole buffer at once (Chunks)

Each step yields (offset, data), or (offset, data, digest) when a digest
is asked for (digest="blake3", "sha256" or "xxh3": the digest of each chunk,
as bytes). data is a bytes object of its own by default.

views=True yields zero-copy, read-only memoryviews instead: of the source
itself for a bytes-like source (valid for as long as they are kept), of the
scan buffer for a stream. A view of the scan buffer is released at the next
step (using it then raises ValueError), and a slice or an array made of it
that is still alive then stops the step with BufferError: no view ever shows
bytes other than its chunk's. Copy what you keep (bytes(view)).

A stream is read into one bounded scan buffer: `buffer`, a writable
bytes-like object of at least max_size bytes that you own (one per worker,
reused), or else a bytearray of max(2 x max_size, 256 KiB) allocated at the
first stream. A chunker is used by one thread at a time; reading a stream
releases the GIL.
)doc")
        .def(py::init(&make_chunker), py::arg("algorithm") = "fastcdc-v1.0.0", py::arg("min_size") = 0,
             py::arg("avg_size") = 0, py::arg("max_size") = 0, py::kw_only(), py::arg("key") = py::none(),
             py::arg("level") = py::none(), py::arg("seed") = py::none(), py::arg("polynomial") = py::none(),
             py::arg("window") = py::none(), py::arg("buffer") = py::none(), py::arg("views") = false,
             py::arg("digest") = py::none(),
             "__init__(self, algorithm='fastcdc-v1.0.0', min_size=0, avg_size=0, max_size=0, *, key=None, "
             "level=None, seed=None, polynomial=None, window=None, buffer=None, views=False, digest=None)\n--\n\n"
             "Creates a chunker (ValueError for an invalid algorithm, option or buffer); see the class help.")
        .def(
            "reset",
            [](py::object self, const py::object& source) {
                self.cast<PyChunker&>().reset(source);
                return self;
            },
            py::arg("source"), R"doc(reset(self, source)
--

Moves the chunker onto a new stream and returns it (an iterator of
(offset, data) pairs). `source`: a path (str or os.PathLike, of str or
bytes: opened here, OSError if it cannot be), a binary file object
(readinto, or read), a bytes-like object (chunked in place; bytes are data,
never a path), or None (an empty stream).
)doc")
        .def("__iter__", [](py::object self) { return self; })
        .def("__next__", &PyChunker::next)
        .def("chunk", &PyChunker::chunk, py::arg("data"), py::kw_only(), py::arg("digest") = py::none(),
             "chunk(self, data, *, digest=None)\n--\n\n"
             "Cuts a whole buffer with this chunker's algorithm: like chunk() (the stream is not touched).")
        .def("close", &PyChunker::close, "close(self)\n--\n\nDrops the current stream (closes a file opened from a path).")
        .def("__enter__", [](py::object self) { return self; })
        .def("__exit__", [](PyChunker& c, const py::args&) { c.close(); })
        .def_property_readonly("algorithm", [](const PyChunker& c) { return std::string(c.finder().name()); })
        .def_property_readonly("min_size", [](const PyChunker& c) { return c.finder().profile().min_size; })
        .def_property_readonly("avg_size", [](const PyChunker& c) { return c.finder().profile().normal_size; })
        .def_property_readonly("max_size", [](const PyChunker& c) { return c.finder().profile().max_size; })
        .def_property_readonly("keyed", [](const PyChunker& c) { return c.finder().profile().keyed; })
        .def_property_readonly(
            "parameters", [](const PyChunker& c) { return parameters_in_use(c.finder()); },
            "The parameters the name takes, with their values in use: {'level': 1, 'seed': 0} for "
            "fastcdc-rs-v2020, {} for fastcdc-v1.0.0 (keys: level, seed, polynomial, window).")
        .def_property_readonly("views", &PyChunker::views, "True if steps yield memoryviews instead of bytes.")
        .def_property_readonly("digest", &PyChunker::digest,
                               "The digest yielded with each chunk ('blake3', 'sha256', 'xxh3'), or None.")
        .def_property_readonly("offset", &PyChunker::offset,
                               "Bytes of the current stream consumed so far (the next chunk's offset).")
        .def_property_readonly("buffer_size", &PyChunker::buffer_size,
                               "Size of the scan buffer (0 until a stream needs one).")
        .def("__repr__", [](const PyChunker& c) {
            const Profile& p = c.finder().profile();
            return fmt::format("<cdc_chunkers.Chunker {} min={} avg={} max={}{}>", c.finder().name(), p.min_size,
                               p.normal_size, p.max_size, p.keyed ? " keyed" : "");
        });

    m.def(
        "iter_chunks",
        [](const py::object& source, const std::string& algorithm, std::int64_t min_size, std::int64_t avg_size,
           std::int64_t max_size, py::object key, py::object level, py::object seed, py::object polynomial,
           py::object window, const py::object& buffer, bool views, const py::object& digest) {
            py::object chunker = py::cast(make_chunker(algorithm, min_size, avg_size, max_size, std::move(key),
                                                       std::move(level), std::move(seed), std::move(polynomial),
                                                       std::move(window), buffer, views, digest));
            chunker.cast<PyChunker&>().reset(source);
            return chunker;
        },
        py::arg("source"), py::arg("algorithm") = "fastcdc-v1.0.0", py::arg("min_size") = 0,
        py::arg("avg_size") = 0, py::arg("max_size") = 0, py::kw_only(), py::arg("key") = py::none(),
        py::arg("level") = py::none(), py::arg("seed") = py::none(), py::arg("polynomial") = py::none(),
        py::arg("window") = py::none(), py::arg("buffer") = py::none(), py::arg("views") = false,
        py::arg("digest") = py::none(), R"doc(iter_chunks(source, algorithm='fastcdc-v1.0.0', min_size=0, avg_size=0, max_size=0, *, key=None, level=None, seed=None, polynomial=None, window=None, buffer=None, views=False, digest=None)
--

Yields (offset, data) for every chunk of a stream of any size, or
(offset, data, digest) when a digest is asked for.

    for offset, data in iter_chunks("big.iso", "fastcdc", 4096, 16384, 65536):
        store(offset, data)
    for offset, data, digest in iter_chunks(f, digest="blake3"): ...

source     a path (str or os.PathLike, of str or bytes), a binary file
           object (read with readinto into one bounded buffer) or a
           bytes-like object (bytes are data, never a path).
algorithm, min_size, avg_size, max_size, key, level, seed, polynomial, window
           as for chunk().
buffer     optional writable bytes-like scan buffer (>= max_size bytes).
views      False (default): data is a bytes object of its own. True:
           zero-copy read-only memoryviews; those of a stream's scan buffer
           are released at the next step (see help(Chunker)).
digest     None, "blake3", "sha256" or "xxh3": each chunk's digest (bytes).

Memory stays bounded by the scan buffer (max(2 x max_size, 256 KiB) by
default). Returns a Chunker (an iterator). Raises ValueError for invalid
options, OSError if the stream fails.
)doc");
}

}  // namespace cdc::python
