// SPDX-License-Identifier: Apache-2.0
// pull_file / pull_to_fd: the server lists the file's chunks; for each list
// the client takes what its seeds hold (checked by BLAKE3), asks for the
// rest, and writes the file in order while the chunks arrive, each decoded
// and checked against its id; the whole-file BLAKE3 and size are checked
// at the end. Lists arrive one ahead of their data, so the want of list
// k + 1 goes out while the chunks of list k are still coming.
#include "chunk_messages.hpp"
#include "client_api.hpp"
#include "progress.hpp"
#include "seed_index.hpp"
#include "want_list.hpp"

#include "../store/codec.hpp"
#include "../common/posix.hpp"

#include <cdc/digest.hpp>
#include <cdc/error.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <climits>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <optional>
#include <unordered_map>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc::transfer {

namespace {


void write_all_fd(int fd, std::span<const std::byte> bytes, const std::string& what) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw IoError(fmt::format("cannot write {}: {}", what, std::strerror(errno)));
        }
        done += static_cast<std::size_t>(n);
    }
}

class Puller {
public:
    /// `have`: the size and BLAKE3 of the file at the output, if any: when
    /// the header says the same, the pull ends there (report.up_to_date).
    Puller(PullStream& stream, const ServerParams& params, const std::string& name, int fd, std::string what,
           const SeedIndex& seeds, const PullOptions& options,
           std::optional<std::pair<std::uint64_t, Digest>> have = std::nullopt)
        : stream_(stream), params_(params), name_(name), fd_(fd), what_(std::move(what)), seeds_(seeds),
          assembler_(params.profile.max_size), progress_(options.progress, 0, 1), have_(std::move(have)) {}

    /// Returns the header (mode, mtime) once the file is complete and checked.
    v1::FileHeader run(PullReport& report) {
        v1::PullRequest req;
        req.mutable_start()->set_name(name_);
        if (have_) {
            req.mutable_start()->set_have_size(have_->first);
            req.mutable_start()->set_have_digest(have_->second.bytes.data(), 32);
        }
        stream_.write(req);
        v1::PullReply reply;
        read(reply);
        if (reply.body_case() != v1::PullReply::kHeader) unexpected("the file's header");
        const v1::FileHeader header = reply.header();
        report.bytes = header.size();
        report.chunks = header.chunks();
        announced_bytes_ = header.size();
        announced_chunks_ = header.chunks();
        if (have_ && header.size() == have_->first && header.digest().size() == 32 &&
            std::memcmp(header.digest().data(), have_->second.bytes.data(), 32) == 0) {
            // The server ends the file here (an older server lists it: then the stream is dropped).
            read(reply);
            if (reply.body_case() == v1::PullReply::kEnd) {
                stream_.writes_done();
                stream_.finish();
            } else {
                stream_.cancel();
            }
            report.up_to_date = true;
            report.bytes_reused = header.size();
            report.wire_sent = stream_.wire_sent;
            report.wire_received = stream_.wire_received;
            return header;
        }
        for (;;) {
            read(reply);
            if (reply.body_case() == v1::PullReply::kChunks) {
                add_list(reply.chunks(), report);
            } else if (reply.body_case() == v1::PullReply::kData) {
                for (const auto& c : reply.data().chunks()) add_piece(c, report);
            } else if (reply.body_case() == v1::PullReply::kEnd) {
                break;
            } else {
                unexpected("chunk lists, data or the end");
            }
            progress_.file_bytes(written_, report.bytes_sent);
        }
        if (!lists_.empty() || assembler_.busy())
            throw TransferError(Code::internal, fmt::format("'{}': the server ended the file before its data", name_));
        stream_.writes_done();
        stream_.finish();
        if (written_ != header.size())
            throw TransferError(Code::data_loss, fmt::format("'{}': {} bytes received, the server said {}", name_,
                                                             written_, header.size()));
        const Digest d = whole_.finish();
        if (header.digest().size() != 32 || std::memcmp(d.bytes.data(), header.digest().data(), 32) != 0)
            throw TransferError(Code::data_loss,
                                fmt::format("'{}': the BLAKE3 of the bytes received differs from the server's", name_));
        report.wire_sent = stream_.wire_sent;
        report.wire_received = stream_.wire_received;
        return header;
    }

private:
    using List = WantList;

    [[noreturn]] void unexpected(const char* expected) {
        throw TransferError(Code::internal, fmt::format("'{}': the server sent something else than {}", name_, expected));
    }

    void read(v1::PullReply& reply) {
        if (!stream_.read(reply)) {
            stream_.finish();  // throws the server's status
            throw TransferError(Code::internal, fmt::format("'{}': the server ended the stream early", name_));
        }
    }

    void add_list(const v1::ChunkList& m, PullReport& report) {
        const std::size_t count = static_cast<std::size_t>(m.sizes_size());
        if (count == 0 || count > kMaxListChunks)
            throw TransferError(Code::internal, fmt::format("'{}': a chunk list of {} chunks", name_, count));
        if (lists_.size() >= 2) throw TransferError(Code::internal, fmt::format("'{}': lists too far ahead", name_));
        List l;
        l.ids = ids_from_bytes(m.ids(), count);
        l.sizes.assign(m.sizes().begin(), m.sizes().end());
        std::uint64_t bytes = 0;
        for (const std::uint32_t s : l.sizes) {
            if (s == 0 || s > params_.profile.max_size)
                throw TransferError(Code::internal, fmt::format("'{}': a chunk of {} bytes listed", name_, s));
            bytes += s;
        }
        if (bytes > max_list_bytes(params_.profile.max_size))
            throw TransferError(Code::internal, fmt::format("'{}': a chunk list of {} bytes", name_, bytes));
        // Nothing beyond what the header announced is asked for or written
        // (a lying server's stream would be, up to its end).
        listed_bytes_ += bytes;
        listed_chunks_ += count;
        if (listed_bytes_ > announced_bytes_ || listed_chunks_ > announced_chunks_)
            throw TransferError(Code::data_loss,
                                fmt::format("'{}': the server lists more than the {} bytes in {} chunks its header "
                                            "announced (at least {} bytes, {} chunks): refused",
                                            name_, announced_bytes_, announced_chunks_, listed_bytes_,
                                            listed_chunks_));
        report.bytes_reused += l.mark(seeds_);
        v1::PullRequest req;
        auto* w = req.mutable_want();
        w->set_bitmap(make_bitmap(l.wanted));
        w->set_count(static_cast<std::uint32_t>(l.remaining));
        stream_.write(req);
        lists_.push_back(std::move(l));
        write_completed();
    }

    void add_piece(const v1::ChunkData& c, PullReport& report) {
        if (lists_.empty() || lists_.front().remaining == 0)
            throw TransferError(Code::internal, fmt::format("'{}': chunk data that was not asked for", name_));
        List& l = lists_.front();
        const std::size_t j = l.next_wanted();
        if (!assembler_.add(c, l.ids[j], l.sizes[j])) return;
        decode_chunk(decompressor_, assembler_.payload(), assembler_.raw(), l.sizes[j], l.ids[j], raw_,
                     fmt::format("'{}'", name_));
        report.bytes_sent += l.sizes[j];
        report.payload_sent += assembler_.payload().size();
        ++report.chunks_sent;
        write_locals(l, j);
        put(raw_);
        if (l.slot[j] != WantList::kNoSlot) std::memcpy(l.local.data() + l.slot[j], raw_.data(), raw_.size());
        l.next_write = l.next_data = j + 1;
        --l.remaining;
        write_completed();
    }

    /// Writes the chunks of `l` before `end` that are not wanted.
    void write_locals(List& l, std::size_t end) {
        for (; l.next_write < end; ++l.next_write) {
            const std::size_t i = l.next_write;
            put(std::span<const std::byte>(l.local).subspan(l.slot[i], l.sizes[i]));
        }
    }

    void write_completed() {
        while (!lists_.empty() && lists_.front().remaining == 0) {
            write_locals(lists_.front(), lists_.front().ids.size());
            lists_.pop_front();
        }
    }

    void put(std::span<const std::byte> bytes) {
        if (written_ + bytes.size() > announced_bytes_)  // (the lists are bounded so already)
            throw TransferError(Code::data_loss, fmt::format("'{}': more bytes than the header announced", name_));
        write_all_fd(fd_, bytes, what_);
        whole_.update(bytes);
        written_ += bytes.size();
    }

    PullStream& stream_;
    const ServerParams& params_;
    const std::string& name_;
    int fd_;
    std::string what_;
    const SeedIndex& seeds_;
    ChunkAssembler assembler_;
    store::detail::Decompressor decompressor_;
    ProgressThrottle progress_;
    std::optional<std::pair<std::uint64_t, Digest>> have_;
    std::deque<List> lists_;
    std::vector<std::byte> raw_;
    Hasher whole_{DigestKind::blake3};
    std::uint64_t written_ = 0;
    std::uint64_t announced_bytes_ = 0, announced_chunks_ = 0;  // the header's
    std::uint64_t listed_bytes_ = 0, listed_chunks_ = 0;
};

bool is_regular(const std::filesystem::path& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

/// Whether the pull's own file `p` (partial, previous) is there: a regular
/// file, not a link. Anything else in its place is not ours to read, replace
/// or write through (a link planted in a shared directory): IoError.
bool own_file_exists(const std::filesystem::path& p) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) {
        if (errno == ENOENT) return false;
        throw IoError(fmt::format("cannot stat '{}': {}", p.string(), std::strerror(errno)));
    }
    if (!S_ISREG(st.st_mode))
        throw IoError(fmt::format("'{}' is in the way and is not a regular file (a link?): remove it and pull again",
                                  p.string()));
    return true;
}

std::uint64_t size_of(const std::filesystem::path& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

void fsync_parent(const std::filesystem::path& p) {
    const auto dir = p.parent_path().empty() ? std::filesystem::path(".") : p.parent_path();
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    ::fsync(fd);
    ::close(fd);
}

mode_t current_umask() {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    return mask;
}

/// The stored file's mode (masked by the umask unless keep_modes) and mtime
/// on the open file `fd` (`what`: it, for messages).
void restore_metadata(int fd, const v1::FileHeader& header, const PullOptions& options, const std::string& what) {
    mode_t mode = static_cast<mode_t>(header.mode() & (options.keep_setid ? 07777u : 0777u));
    if (!options.keep_modes) mode &= ~current_umask();
    if (::fchmod(fd, mode) != 0) throw IoError(fmt::format("cannot chmod {}: {}", what, std::strerror(errno)));
    const timespec times[2] = {{0, UTIME_OMIT}, common::timespec_of_ns(header.mtime_ns())};
    if (::futimens(fd, times) != 0)
        throw IoError(fmt::format("cannot set the mtime of {}: {}", what, std::strerror(errno)));
}

/// The chunker of the seeds: none for a keyed store without its key (its
/// --key-file, or the chunker key an encrypted store's server sent; then
/// nothing local is reused; --seed is refused).
std::shared_ptr<const CutFinder> seed_finder(const ServerParams& params, const PullOptions& options) {
    if (!params.profile.keyed || options.key || params.chunker_key) return client_finder(params, options.key);
    if (!options.seeds.empty())
        throw OptionError("the server's store is keyed: seeds need its key to chunk like it", "key");
    return nullptr;
}

}  // namespace

std::filesystem::path partial_path(const std::filesystem::path& out) {
    // (append: g++ 12 warns wrongly about "literal" + std::string, DEVELOPING.md)
    const std::string base = out.filename().string();
    std::string name = std::string(".").append(base).append(".cdc-pull");
    if (name.size() + std::string_view(".old").size() > NAME_MAX) {
        // One name per OUT all the same (the next pull finds it), of a fixed length.
        const Digest d = compute_digest(DigestKind::blake3, std::as_bytes(std::span(base.data(), base.size())));
        name = std::string(".cdc-pull-").append(d.hex().substr(0, 16));
    }
    return out.parent_path() / name;
}

PullReport pull_file(PullStream& stream, const ServerParams& params, const std::string& name,
                     const std::filesystem::path& out, const PullOptions& options) {
    const auto t0 = std::chrono::steady_clock::now();
    PullReport report;
    SeedIndex seeds(seed_finder(params, options));
    // An interrupted pull left `partial`: keep the longer of it and an older
    // one as a seed (both are prefixes of what was being pulled).
    const auto partial = partial_path(out);
    auto previous = partial;
    previous += ".old";
    const bool had_previous = own_file_exists(previous);
    if (own_file_exists(partial)) {
        if (had_previous && size_of(previous) > size_of(partial))
            ::unlink(partial.c_str());
        else if (::rename(partial.c_str(), previous.c_str()) != 0)
            throw IoError(fmt::format("cannot rename '{}': {}", partial.string(), std::strerror(errno)));
    }
    // OUT is hashed whole as it is chunked: if it is the file already, the
    // pull ends at the header (nothing fetched, nothing written).
    // Only OUT itself, not a symbolic link's target, and only the file that
    // was hashed, is then touched (its mode and mtime, through a descriptor).
    std::optional<std::pair<std::uint64_t, Digest>> have;
    struct stat hashed {};
    if (seeds.usable()) {
        if (is_regular(out)) {
            Digest d{};
            const bool plain = ::lstat(out.c_str(), &hashed) == 0 && S_ISREG(hashed.st_mode);
            const std::uint64_t size = seeds.add(out, plain ? &d : nullptr);
            report.seed_bytes += size;
            if (plain) have.emplace(size, d);
        }
        if (own_file_exists(previous)) report.seed_bytes += seeds.add(previous);
    }
    for (const auto& s : options.seeds) report.seed_bytes += seeds.add(s);
    seeds.seal();

    // A new file of ours: never through a link someone put there meanwhile.
    int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) throw IoError(fmt::format("cannot create '{}': {}", partial.string(), std::strerror(errno)));
    v1::FileHeader header;
    try {
        Puller p(stream, params, name, fd, fmt::format("'{}'", partial.string()), seeds, options, have);
        header = p.run(report);
        if (report.up_to_date) {
            ::close(std::exchange(fd, -1));
            ::unlink(partial.c_str());
            ::unlink(previous.c_str());
            if (options.restore_metadata) {
                const common::Fd ofd(::open(out.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY));
                struct stat now {};
                const bool same = ofd && ::fstat(ofd.get(), &now) == 0 && S_ISREG(now.st_mode) &&
                                  now.st_dev == hashed.st_dev && now.st_ino == hashed.st_ino;
                if (same) restore_metadata(ofd.get(), header, options, fmt::format("'{}'", out.string()));
                if (!same)
                    throw IoError(fmt::format("'{}' was replaced while it was compared: its mode and mtime are not "
                                              "set (pull again)",
                                              out.string()));
            }
            report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            return report;
        }
        if (::fsync(fd) != 0)
            throw IoError(fmt::format("cannot write '{}': {}", partial.string(), std::strerror(errno)));
        if (options.restore_metadata) {
            restore_metadata(fd, header, options, fmt::format("'{}'", partial.string()));
        } else if (::fchmod(fd, 0666 & ~current_umask()) != 0) {
            throw IoError(fmt::format("cannot chmod '{}': {}", partial.string(), std::strerror(errno)));
        }
    } catch (const TransferError& e) {
        if (fd >= 0) ::close(fd);
        // A broken transfer keeps its prefix for the next pull; bytes that
        // failed a check do not stay.
        if (e.code() == Code::data_loss || e.code() == Code::not_found || e.code() == Code::invalid_argument)
            ::unlink(partial.c_str());
        throw;
    } catch (...) {
        if (fd >= 0) ::close(fd);
        ::unlink(partial.c_str());
        throw;
    }
    if (::close(fd) != 0) {
        ::unlink(partial.c_str());
        throw IoError(fmt::format("cannot write '{}': {}", partial.string(), std::strerror(errno)));
    }
    if (::rename(partial.c_str(), out.c_str()) != 0) {
        const int err = errno;
        ::unlink(partial.c_str());
        throw IoError(fmt::format("cannot rename '{}' to '{}': {}", partial.string(), out.string(), std::strerror(err)));
    }
    fsync_parent(out);
    ::unlink(previous.c_str());
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return report;
}

PullReport pull_to_fd(PullStream& stream, const ServerParams& params, const std::string& name, int fd,
                      const PullOptions& options) {
    const auto t0 = std::chrono::steady_clock::now();
    PullReport report;
    SeedIndex seeds(seed_finder(params, options));
    for (const auto& s : options.seeds) report.seed_bytes += seeds.add(s);
    seeds.seal();
    Puller p(stream, params, name, fd, "the output", seeds, options);
    p.run(report);
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return report;
}

}  // namespace cdc::transfer
