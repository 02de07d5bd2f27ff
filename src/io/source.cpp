// SPDX-License-Identifier: Apache-2.0
#include <cdc/error.hpp>
#include <cdc/source.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc {

namespace {
std::string describe(const std::string& name, int fd) {
    return name.empty() ? fmt::format("fd {}", fd) : name;
}

// Waits until a non-blocking descriptor is ready; EINTR is retried.
void wait_ready(int fd, short events, const std::string& name) {
    pollfd p{fd, events, 0};
    while (::poll(&p, 1, -1) < 0) {
        if (errno != EINTR) throw IoError(fmt::format("poll {}: {}", describe(name, fd), std::strerror(errno)));
    }
}

// Owns a descriptor opened by path.
class OwnedFdReader final : public Reader {
public:
    OwnedFdReader(int fd, std::string name) : fd_(fd), inner_(fd, std::move(name)) {}
    ~OwnedFdReader() override { ::close(fd_); }
    OwnedFdReader(const OwnedFdReader&) = delete;
    OwnedFdReader& operator=(const OwnedFdReader&) = delete;
    ReadResult read(std::span<std::byte> buffer) override { return inner_.read(buffer); }

private:
    int fd_;
    FdReader inner_;
};
}  // namespace

FillResult read_at_least(Reader& reader, std::span<std::byte> buffer, std::size_t at_least) {
    constexpr int kMaxEmptyReads = 1000;
    at_least = std::min(at_least, buffer.size());
    FillResult got;
    int empty_reads = 0;
    while (!got.end && got.bytes < at_least) {
        const std::size_t room = buffer.size() - got.bytes;
        const ReadResult r = reader.read(buffer.subspan(got.bytes));
        if (r.bytes > room) throw IoError(fmt::format("reader returned {} bytes for a {}-byte buffer", r.bytes, room));
        got.bytes += r.bytes;
        got.end = r.end;
        if (r.bytes != 0)
            empty_reads = 0;
        else if (!r.end && ++empty_reads >= kMaxEmptyReads)
            throw IoError(fmt::format("reader returned no data {} times in a row", kMaxEmptyReads));
    }
    return got;
}

FdReader::FdReader(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}

ReadResult FdReader::read(std::span<std::byte> buffer) {
    if (buffer.empty()) return {};
    for (;;) {
        const ssize_t n = ::read(fd_, buffer.data(), buffer.size());
        if (n > 0) return {static_cast<std::size_t>(n), false};
        if (n == 0) return {0, true};
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            wait_ready(fd_, POLLIN, name_);
            continue;
        }
        throw IoError(fmt::format("read {}: {}", describe(name_, fd_), std::strerror(errno)));
    }
}

SteadyFileReader::SteadyFileReader(int fd, const struct stat& at_open, std::string name)
    : inner_(fd, std::move(name)), at_open_(at_open) {}

ReadResult SteadyFileReader::read(std::span<std::byte> buffer) {
    const ReadResult r = inner_.read(buffer);
    bytes_read_ += r.bytes;
    if (!r.end) return r;
    const auto size = static_cast<std::uint64_t>(at_open_.st_size);
    if (bytes_read_ != size)
        throw IoError(fmt::format("changed while it was read: {} bytes when opened, {} read to its end (not taken: "
                                  "its bytes would mix two states of the file)",
                                  size, bytes_read_));
    struct stat now {};
    if (::fstat(inner_.fd(), &now) != 0) throw IoError(fmt::format("cannot examine it: {}", std::strerror(errno)));
    const auto same_time = [](const timespec& a, const timespec& b) { return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec; };
    if (now.st_size != at_open_.st_size || !same_time(now.st_mtim, at_open_.st_mtim) ||
        !same_time(now.st_ctim, at_open_.st_ctim))
        throw IoError("changed while it was read: written to (its size, mtime or ctime changed) since it was "
                      "opened (not taken: its bytes would mix two states of the file)");
    return r;
}

Source Source::memory(std::span<const std::byte> bytes) noexcept {
    Source s;
    s.memory_ = bytes;
    return s;
}

Source Source::reader(Reader& reader) noexcept {
    Source s;
    s.reader_ = &reader;
    return s;
}

Source Source::reader(std::unique_ptr<Reader> reader) noexcept {
    Source s;
    s.reader_ = reader.get();
    s.owned_ = std::shared_ptr<Reader>(std::move(reader));
    return s;
}

Source FileSource(int fd, std::string name) { return Source::reader(std::make_unique<FdReader>(fd, std::move(name))); }

Source FileSource(const std::filesystem::path& path) {
    int fd;
    do {
        fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) throw IoError(fmt::format("open {}: {}", path.string(), std::strerror(errno)));
    return Source::reader(std::make_unique<OwnedFdReader>(fd, path.string()));
}

FdWriter::FdWriter(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}

void FdWriter::write(std::span<const std::byte> chunk) {
    while (!chunk.empty()) {
        const ssize_t n = ::write(fd_, chunk.data(), chunk.size());
        if (n >= 0) {
            chunk = chunk.subspan(static_cast<std::size_t>(n));
            continue;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            wait_ready(fd_, POLLOUT, name_);
            continue;
        }
        throw IoError(fmt::format("write {}: {}", describe(name_, fd_), std::strerror(errno)));
    }
}

}  // namespace cdc
