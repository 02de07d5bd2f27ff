// Store::get: restores a file. This thread reads the manifest and looks its
// chunks up; the pool reads, checks and decompresses blocks of chunks into
// output buffers; this thread writes the blocks in order while a hasher
// thread hashes them, in order too (ordered_hasher.hpp). With a path, the output goes to a temporary file renamed over
// OUT only once the size and whole-file BLAKE3 match.
#include "ordered_hasher.hpp"
#include "store_impl.hpp"
#include "task_pool.hpp"

#include <cdc/digest.hpp>

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc::store {

using namespace detail;

namespace {

constexpr std::size_t kBlockBytes = std::size_t{4} << 20;
constexpr std::size_t kBlocksInFlight = 8;  // being decompressed
constexpr std::size_t kBlocksHashing = 2;   // written, not yet hashed (the hasher keeps pace: few wait)

// Output buffers are recycled (allocated once, never zero-filled).
struct Block {
    struct Item {
        ChunkId id;
        Location loc;
        int fd;
        std::size_t at;
    };
    std::vector<Item> items;
    std::unique_ptr<std::byte[]> data;
    std::size_t capacity = 0;
    std::size_t used = 0;
    std::atomic<bool> done{false};    // decompressed
    std::atomic<bool> hashed{false};  // the whole-file hasher is done with it

    std::span<std::byte> out() noexcept { return {data.get(), used}; }
    void reserve(std::size_t n) {
        if (n <= capacity) return;
        data = std::make_unique_for_overwrite<std::byte[]>(n);
        capacity = n;
    }
};

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
    const std::string context = fmt::format("'{}': ", name);

    // Declared before the pool: its destructor runs the queued tasks, which
    // use the blocks and descriptors.
    PackFiles files(s.dir);
    std::deque<std::unique_ptr<Block>> queue;    // being decompressed, in file order
    std::deque<std::unique_ptr<Block>> hashing;  // written, queued to `whole`
    std::vector<std::unique_ptr<Block>> spare;
    TaskPool pool;
    OrderedHasher whole;  // after the blocks and the pool: its destructor runs the queued callbacks
    std::uint64_t written = 0;
    ProgressTicker ticker(options.progress);

    auto write_front = [&] {
        pool.wait([&] { return queue.front()->done.load(); });
        Block& b = *queue.front();
        Block* raw = &b;
        whole.update(b.out(), [raw, &pool] {
            raw->hashed.store(true);
            pool.notify();
        });
        write_all(out_fd, b.data.get(), b.used, out_desc);  // reads the block while it is hashed
        written += b.used;
        hashing.push_back(std::move(queue.front()));
        queue.pop_front();
        ticker.tick([&](Progress& p) {
            p.bytes_done = written;
            p.bytes_total = size;
        });
    };
    auto submit = [&](std::unique_ptr<Block> b) {
        Block* raw = b.get();
        queue.push_back(std::move(b));
        pool.submit([raw, &context] {
            thread_local std::vector<std::byte> buf;
            for (const auto& it : raw->items)
                read_chunk_into(it.fd, it.loc, it.id, buf, raw->out().subspan(it.at, it.loc.raw_size), context);
            raw->done.store(true);
        });
        while (queue.size() >= kBlocksInFlight) write_front();
    };

    auto fresh_block = [&] {
        // Blocks the hasher is done with are reused; when kBlocksHashing
        // wait for it, this thread waits for the oldest (memory stays bounded).
        while (!hashing.empty() && (hashing.front()->hashed.load() || hashing.size() >= kBlocksHashing)) {
            pool.wait([&] { return hashing.front()->hashed.load(); });
            spare.push_back(std::move(hashing.front()));
            hashing.pop_front();
        }
        std::unique_ptr<Block> b;
        if (!spare.empty()) {
            b = std::move(spare.back());
            spare.pop_back();
        } else {
            b = std::make_unique<Block>();
        }
        b->items.clear();
        b->used = 0;
        b->done.store(false);
        b->hashed.store(false);
        return b;
    };
    auto block = fresh_block();
    std::size_t block_bytes = 0;
    for_each_listed_chunk(db, s.dir, name, [&](const ChunkId& id, const Location& loc, std::uint64_t) {
        if (files.open_count() >= kMaxOpenPacks) {
            if (!block->items.empty()) {
                block->used = block_bytes;
                submit(std::exchange(block, fresh_block()));
                block_bytes = 0;
            }
            while (!queue.empty()) write_front();
            files.close_all();
        }
        if (block_bytes + loc.raw_size > kBlockBytes && !block->items.empty()) {
            block->used = block_bytes;
            submit(std::exchange(block, fresh_block()));
            block_bytes = 0;
        }
        block->reserve(std::max(kBlockBytes, block_bytes + loc.raw_size));
        block->items.push_back({id, loc, files.fd(loc.pack), block_bytes});
        block_bytes += loc.raw_size;
    });
    if (!block->items.empty()) {
        block->used = block_bytes;
        submit(std::move(block));
    }
    while (!queue.empty()) write_front();
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
        const mode_t mode = options.restore_metadata ? static_cast<mode_t>(info.mode & 07777) : mode_t{0644};
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
