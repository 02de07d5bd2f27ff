// SPDX-License-Identifier: Apache-2.0
// cdc/source.hpp — where a chunker's bytes come from, and where copies go.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include <sys/stat.h>

namespace cdc {

/// The outcome of one Reader::read call.
struct ReadResult {
    std::size_t bytes = 0;  ///< bytes written to the front of the buffer
    bool end = false;       ///< the stream has ended (may come with bytes > 0)
};

/// A pull-based byte stream. Implement it to feed a chunker from anything.
/// A read may return fewer bytes than asked for, zero bytes without the end
/// (the chunker asks again, up to a bound), or bytes together with the end.
/// Failures are reported by throwing (IoError or any exception): the chunker
/// then fails too, and never returns the bytes it had buffered as a chunk.
class Reader {
public:
    virtual ~Reader() = default;
    virtual ReadResult read(std::span<std::byte> buffer) = 0;
};

/// What read_at_least delivered.
struct FillResult {
    std::size_t bytes = 0;  ///< bytes written to the front of the buffer
    bool end = false;       ///< the reader reported the end of its data
};

/// The one read loop: reads from `reader` into `buffer` until at least
/// min(at_least, buffer.size()) bytes have arrived or the reader reports the
/// end. Short reads, empty reads and data-with-end are all fine; a reader
/// that returns no data 1000 times in a row (stuck, not slow) or claims more
/// bytes than it was given room for is an IoError.
FillResult read_at_least(Reader& reader, std::span<std::byte> buffer, std::size_t at_least);

/// Reads a file descriptor with read(2). Short reads and EINTR are handled;
/// a non-blocking descriptor is waited for with poll(2). Does not own `fd`.
class FdReader final : public Reader {
public:
    /// `name` appears in error messages (a path, "stdin", ...).
    explicit FdReader(int fd, std::string name = {});
    ReadResult read(std::span<std::byte> buffer) override;
    int fd() const noexcept { return fd_; }

private:
    int fd_;
    std::string name_;
};

/// Reads a regular file the caller opened (and keeps open) and checks, at
/// its end, that the bytes read are the file as it was when opened: as many
/// as its size then, and its size, mtime and ctime unchanged after the last
/// read (fstat). A file that shrank, grew or was written to meanwhile would
/// give old bytes followed by new ones, a state it never had: its end is an
/// IoError ("changed while it was read") instead, so that no copy of it is
/// taken for the file. Does not own `fd`.
class SteadyFileReader final : public Reader {
public:
    /// `at_open`: the file's fstat from when it was opened, before any read.
    SteadyFileReader(int fd, const struct stat& at_open, std::string name = {});
    ReadResult read(std::span<std::byte> buffer) override;
    int fd() const noexcept { return inner_.fd(); }

private:
    FdReader inner_;
    struct stat at_open_;
    std::uint64_t bytes_read_ = 0;
};

/// Adapts a callable `ReadResult(std::span<std::byte>)` to a Reader.
class FunctionReader final : public Reader {
public:
    using Function = std::function<ReadResult(std::span<std::byte>)>;
    explicit FunctionReader(Function f) : f_(std::move(f)) {}
    ReadResult read(std::span<std::byte> buffer) override { return f_(buffer); }

private:
    Function f_;
};

/// A source for a Chunker: either a memory range (chunked in place, no copy)
/// or a Reader (buffered). Cheap to move. Build one with the helpers below.
class Source {
public:
    Source() = default;  ///< an empty stream

    /// A memory range; it must outlive every chunk returned from it.
    static Source memory(std::span<const std::byte> bytes) noexcept;
    /// A reader the caller keeps alive while the chunker uses it.
    static Source reader(Reader& reader) noexcept;
    /// A reader the source owns.
    static Source reader(std::unique_ptr<Reader> reader) noexcept;

    bool is_memory() const noexcept { return reader_ == nullptr; }
    std::span<const std::byte> memory_bytes() const noexcept { return memory_; }
    Reader* reader_ptr() const noexcept { return reader_; }

private:
    std::span<const std::byte> memory_{};
    Reader* reader_ = nullptr;
    std::shared_ptr<Reader> owned_;
};

/// A memory range, chunked in place (zero copy).
inline Source MemorySource(std::span<const std::byte> bytes) noexcept { return Source::memory(bytes); }
/// Any byte range, e.g. a std::string or std::vector<std::uint8_t>.
template <class T>
Source MemorySource(std::span<const T> bytes) noexcept {
    return Source::memory(std::as_bytes(bytes));
}
/// An open file descriptor (not closed by the source).
Source FileSource(int fd, std::string name = {});
/// A file opened by path for reading (closed when the source is destroyed).
/// Throws IoError if it cannot be opened.
Source FileSource(const std::filesystem::path& path);
/// A user reader, not owned.
inline Source ReaderSource(Reader& reader) noexcept { return Source::reader(reader); }

/// Receives the chunks of Chunker::copy_to, one call per chunk, in order.
class Writer {
public:
    virtual ~Writer() = default;
    virtual void write(std::span<const std::byte> chunk) = 0;
};

/// Writes everything to a file descriptor (handles short writes and EINTR);
/// throws IoError on failure. Does not own `fd`.
class FdWriter final : public Writer {
public:
    explicit FdWriter(int fd, std::string name = {});
    void write(std::span<const std::byte> chunk) override;

private:
    int fd_;
    std::string name_;
};

}  // namespace cdc
