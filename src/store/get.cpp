// Store::get: restores a file. This thread reads the manifest and looks its
// chunks up; the pool reads, checks and decompresses blocks of chunks
// (ordered_decoder.hpp); this thread writes the blocks in order while a
// hasher thread hashes them, in order too (ordered_hasher.hpp), each block
// kept until hashed. With a path, the output goes to a temporary file
// renamed over OUT only once the size and whole-file BLAKE3 match.
#include "ordered_decoder.hpp"
#include "ordered_hasher.hpp"
#include "store_impl.hpp"
#include "task_pool.hpp"

#include <cdc/digest.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc::store {

using namespace detail;

namespace {

struct Restored {
    std::uint32_t mode = 0;
    std::int64_t mtime_ns = 0;
};

Restored restore_to_fd(const Store::Impl& s, std::string_view name, int out_fd, const std::string& out_desc,
                       const GetOptions& options) {
    Db& db = s.db;
    Transaction read(db, false);  // one snapshot for the whole file and its metadata
    Stmt m(db, "SELECT size, digest, mode, mtime_ns FROM manifests WHERE name = ?1");
    m.bind(1, name);
    if (!m.step()) throw NotFoundError(fmt::format("no file named '{}' in the store '{}'", name, s.dir.string()));
    const auto size = static_cast<std::uint64_t>(m.i64(0));
    const ChunkId digest = to_id(m.blob(1), fmt::format("'{}'", name));
    const Restored meta{static_cast<std::uint32_t>(m.i64(2)), m.i64(3)};

    // Declared in this order: the hasher goes first (it drains its queue,
    // whose callbacks give blocks back to the decoder), then the decoder
    // (it waits for its tasks on the pool, which read the pack files).
    PackFiles files(s.dir);
    TaskPool pool;
    std::uint64_t written = 0;
    ProgressTicker ticker(options.progress);
    OrderedDecoder::Options blocks;
    blocks.block_bytes = std::size_t{4} << 20;
    blocks.blocks_ahead = 8;  // a block is written when 8 are being decompressed
    blocks.blocks_kept = 2;   // written, not yet hashed (the hasher keeps pace: few wait)
    std::unique_ptr<OrderedDecoder> decoder;
    OrderedHasher whole;
    decoder = std::make_unique<OrderedDecoder>(
        pool, fmt::format("'{}': ", name),
        [&](OrderedDecoder::Delivery& d) {
            const void* token = d.keep();
            whole.update(d.bytes, [token, &decoder] { decoder->release(token); });
            write_all(out_fd, d.bytes.data(), d.bytes.size(), out_desc);  // reads the block while it is hashed
            written += d.bytes.size();
            ticker.tick([&](Progress& p) {
                p.bytes_done = written;
                p.bytes_total = size;
            });
        },
        blocks);
    for_each_listed_chunk(db, s.dir, name, [&](const ChunkId& id, const Location& loc, std::uint64_t) {
        decoder->add(id, loc, files);
    });
    decoder->finish();
    read.commit();
    if (written != size)
        throw DamageError(fmt::format("'{}': its chunks hold {} bytes, the manifest says {}", name, written, size));
    const Digest d = whole.finish();
    if (std::memcmp(d.bytes.data(), digest.data(), digest.size()) != 0)
        throw DamageError(fmt::format("'{}': the restored bytes' BLAKE3 {} differs from the manifest's {}", name,
                                      d.hex(), to_hex(digest)));
    return meta;
}

}  // namespace

void Store::get(std::string_view name, int fd, const GetOptions& options) const {
    SharedLockGuard guard(impl_->lock);
    restore_to_fd(*impl_, name, fd, fmt::format("the output of '{}'", name), options);
}

void Store::get(std::string_view name, const std::filesystem::path& out_path, const GetOptions& options) const {
    SharedLockGuard guard(impl_->lock);
    std::filesystem::path out = out_path;
    std::error_code ec;
    if (std::filesystem::is_directory(out, ec)) out /= std::filesystem::path(std::string(name)).filename();
    const auto parent = out.has_parent_path() ? out.parent_path() : std::filesystem::path(".");
    std::string base(".");  // (append: g++ 12 warns falsely on "literal" + string)
    base.append(out.filename().string()).append(".cdc-get-XXXXXX");
    std::string tmpl = (parent / base).string();
    Fd fd(::mkstemp(tmpl.data()));
    if (!fd) throw StoreError(fmt::format("cannot create a temporary file beside '{}': {}", out.string(),
                                          std::strerror(errno)));
    try {
        const Restored info = restore_to_fd(*impl_, name, fd.get(), fmt::format("'{}'", tmpl), options);
        const mode_t kept_bits = options.keep_setid ? 07777 : 0777;
        const mode_t mode = options.restore_metadata ? static_cast<mode_t>(info.mode & kept_bits) : mode_t{0644};
        if (::fchmod(fd.get(), mode) != 0)
            throw StoreError(fmt::format("chmod '{}': {}", tmpl, std::strerror(errno)));
        if (options.restore_metadata) {
            timespec ts[2];
            ts[0].tv_sec = 0;
            ts[0].tv_nsec = UTIME_OMIT;
            ts[1].tv_sec = info.mtime_ns / 1'000'000'000;
            ts[1].tv_nsec = info.mtime_ns % 1'000'000'000;
            if (ts[1].tv_nsec < 0) {
                ts[1].tv_nsec += 1'000'000'000;
                --ts[1].tv_sec;
            }
            ::futimens(fd.get(), ts);
        }
        if (::close(fd.release()) != 0) throw StoreError(fmt::format("closing '{}': {}", tmpl, std::strerror(errno)));
        if (::rename(tmpl.c_str(), out.c_str()) != 0)
            throw StoreError(fmt::format("cannot rename '{}' to '{}': {}", tmpl, out.string(), std::strerror(errno)));
    } catch (...) {
        ::unlink(tmpl.c_str());
        throw;
    }
}

}  // namespace cdc::store
