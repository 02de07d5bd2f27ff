// SPDX-License-Identifier: Apache-2.0
// Store::get: restores a file. This thread reads the manifest and looks its
// chunks up; the pool reads, checks and decompresses blocks of chunks
// (ordered_decoder.hpp); this thread writes the blocks in order while a
// hasher thread hashes them, in order too (ordered_hasher.hpp), each block
// kept until hashed. With a path, the output goes to a temporary file
// renamed over OUT only once the size and whole-file BLAKE3 match.
#include "ordered_decoder.hpp"
#include "read_session.hpp"
#include "../common/ordered_hasher.hpp"
#include "store_impl.hpp"
#include "../common/task_pool.hpp"

#include <cdc/digest.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc::store {

using namespace detail;
using common::OrderedHasher;

namespace {

/// A failure of the output (creating, writing, closing or renaming OUT or
/// its temporary file, making its directory): a tree restore skips that
/// file and goes on; a single get reports it as any StoreError.
class OutputError : public StoreError {
public:
    using StoreError::StoreError;
};

struct Restored {
    std::uint32_t mode = 0;
    std::int64_t mtime_ns = 0;
};

/// What restoring reads with: the pack files and the decoding threads,
/// made once for all the files of a tree.
struct Readers {
    explicit Readers(const PackStorage& storage) : files(storage) {}
    PackFiles files;
    TaskPool pool;
};

/// `session`: a tree's (its view, the files looked up in batches), or null.
Restored restore_to_fd(const Store::Impl& s, Readers& readers, std::string_view stored_name, int out_fd,
                       const std::string& out_desc, const GetOptions& options,
                       Store::ReadSession::State* session = nullptr) {
    // A snapshot's manifest name starts with a NUL byte: shown as "\0" (a
    // message is a C string).
    std::string name(stored_name);
    if (!name.empty() && name[0] == '\0') name.replace(0, 1, "\\0");
    Catalog& catalog = *s.catalog;
    ReadView read(catalog);  // one view for the whole file and its metadata (none within a session's)
    const Store::ReadSession::State::Ready* looked_up = session ? session->listed(stored_name, name) : nullptr;
    const auto file = looked_up ? looked_up->file
                                : catalog.stored_file(stored_name, std::nullopt, fmt::format("'{}'", name));
    if (!file) throw NotFoundError(fmt::format("no file named '{}' in the store '{}'", name, s.dir.string()));
    const std::uint64_t size = file->size;
    const ChunkId digest = file->digest;
    const Restored meta{file->mode, file->mtime_ns};

    // Declared in this order: the hasher goes first (it drains its queue,
    // whose callbacks give blocks back to the decoder), then the decoder
    // (it waits for its tasks on the pool, which read the pack files: both
    // outlive it in `readers`).
    std::uint64_t written = 0;
    ProgressTicker ticker(options.progress);
    OrderedDecoder::Options blocks;
    blocks.block_bytes = std::size_t{4} << 20;
    blocks.blocks_ahead = 8;  // a block is written when 8 are being decompressed
    blocks.blocks_kept = 2;   // written, not yet hashed (the hasher keeps pace: few wait)
    blocks.sealer = s.sealer();
    std::unique_ptr<OrderedDecoder> decoder;
    OrderedHasher whole;
    decoder = std::make_unique<OrderedDecoder>(
        readers.pool, fmt::format("'{}': ", name),
        [&](OrderedDecoder::Delivery& d) {
            const void* token = d.keep();
            whole.update(d.bytes, [token, &decoder] { decoder->release(token); });
            try {
                write_all(out_fd, d.bytes.data(), d.bytes.size(), out_desc);  // reads the block while it is hashed
            } catch (const OutputError&) {
                throw;
            } catch (const StoreError& e) {
                throw OutputError(e.what());
            }
            written += d.bytes.size();
            ticker.tick([&](Progress& p) {
                p.bytes_done = written;
                p.bytes_total = size;
            });
        },
        blocks);
    if (looked_up) {
        for (const auto& [id, loc] : looked_up->chunks) decoder->add(id, loc, readers.files);
    } else {
        for_each_listed_chunk(catalog, file->row, name, std::numeric_limits<std::uint64_t>::max(),
                              [&](const ChunkId& id, const Location& loc, std::uint64_t) {
                                  decoder->add(id, loc, readers.files);
                              });
    }
    decoder->finish();
    read.end();
    if (written != size)
        throw DamageError(fmt::format("'{}': its chunks hold {} bytes, the manifest says {}", name, written, size));
    const Digest d = whole.finish();
    if (std::memcmp(d.bytes.data(), digest.data(), digest.size()) != 0)
        throw DamageError(fmt::format("'{}': the restored bytes' BLAKE3 {} differs from the manifest's {}", name,
                                      d.hex(), to_hex(digest)));
    return meta;
}

/// The manifest's mode (without the set-id bits unless asked) and mtime, or
/// 0644 without restore_metadata.
void apply_metadata(int fd, const Restored& info, const GetOptions& options, const std::string& desc) {
    const mode_t kept_bits = options.keep_setid ? 07777 : 0777;
    const mode_t mode = options.restore_metadata ? static_cast<mode_t>(info.mode & kept_bits) : mode_t{0644};
    if (::fchmod(fd, mode) != 0) throw OutputError(fmt::format("chmod '{}': {}", desc, std::strerror(errno)));
    if (!options.restore_metadata) return;
    const timespec ts[2] = {{0, UTIME_OMIT}, timespec_of_ns(info.mtime_ns)};
    if (::futimens(fd, ts) != 0)
        throw OutputError(fmt::format("cannot set the mtime of '{}': {}", desc, std::strerror(errno)));
}

/// A path below the tree's prefix made of plain components, or nullopt.
std::optional<std::vector<std::string>> safe_components(std::string_view rel) {
    std::vector<std::string> parts;
    std::size_t at = 0;
    for (;;) {
        const std::size_t slash = rel.find('/', at);
        const std::string_view part = rel.substr(at, slash == std::string_view::npos ? std::string_view::npos : slash - at);
        if (part.empty() || part == "." || part == "..") return std::nullopt;
        parts.emplace_back(part);
        if (slash == std::string_view::npos) return parts;
        at = slash + 1;
    }
}

/// A temporary name beside OUT (openat has no mkstemp): short and of one
/// length whatever OUT's name, which may take all of NAME_MAX itself.
std::string temporary_name() {
    std::uint64_t v = 0;
    if (::getrandom(&v, sizeof v, 0) != static_cast<ssize_t>(sizeof v))
        v = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    return fmt::format(".cdc-get-{:016x}", v);
}

/// Why a file of the tree cannot be restored (it is skipped), as opposed
/// to an error that stops the whole restore.
class Blocked : public std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// Restores `name` as `base` in the directory `dir`: into a new temporary
/// file beside it (never through a link), renamed over `base` only once the
/// size and whole-file BLAKE3 matched and the metadata is applied; the
/// temporary file does not outlive a failure. `shown`: OUT for messages.
void restore_into(const Store::Impl& s, Readers& readers, std::string_view name, int dir, const std::string& base,
                  const std::string& shown, const GetOptions& options, Store::ReadSession::State* session = nullptr) {
    std::string tmp;
    Fd fd;
    for (int attempt = 0; !fd; ++attempt) {
        tmp = temporary_name();
        fd = Fd(::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
        if (!fd && (errno != EEXIST || attempt > 8))
            throw OutputError(fmt::format("cannot create a temporary file beside '{}': {}", shown, std::strerror(errno)));
    }
    try {
        const Restored info = restore_to_fd(s, readers, name, fd.get(), fmt::format("'{}'", shown), options, session);
        apply_metadata(fd.get(), info, options, shown);
        if (::close(fd.release()) != 0) throw OutputError(fmt::format("closing '{}': {}", shown, std::strerror(errno)));
        if (::renameat(dir, tmp.c_str(), dir, base.c_str()) != 0)
            throw OutputError(fmt::format("cannot rename into '{}': {}", shown, std::strerror(errno)));
    } catch (...) {
        ::unlinkat(dir, tmp.c_str(), 0);
        throw;
    }
}

/// A restore of many files under one read session: the files named to it
/// in their order (looked up in batches), its view refreshed between files,
/// and a file's read tried once more in a fresh view after an error of the
/// catalog (a PostgreSQL restart takes the view with it: every read in it
/// would fail until it is renewed).
class SessionRestore {
public:
    SessionRestore(Store::ReadSession session, std::function<std::optional<std::string>()> names)
        : session_(std::move(session)) {
        session_.expect(std::move(names));
    }
    /// f(state) for one file; f must leave nothing behind when it throws.
    template <class F>
    void run(F&& f, Store::ReadSession::State* state) {
        session_.refresh();
        // (an output's failure is not the catalog's: not tried again)
        session_.retry_once([&] { f(state); },
                            [](const StoreError& e) { return dynamic_cast<const OutputError*>(&e) == nullptr; });
    }
    Store::ReadSession& session() { return session_; }

private:
    Store::ReadSession session_;
};

/// The directory `out` goes into, opened, and the name it takes there
/// (inside `out` when it is a directory: `name`'s last component).
std::pair<Fd, std::filesystem::path> output_place(std::string_view name, const std::filesystem::path& out_path) {
    std::filesystem::path out = out_path;
    std::error_code ec;
    if (std::filesystem::is_directory(out, ec)) out /= std::filesystem::path(std::string(name)).filename();
    const auto parent = out.has_parent_path() ? out.parent_path() : std::filesystem::path(".");
    Fd dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir)
        throw StoreError(fmt::format("cannot open the directory of '{}': {}", out.string(), std::strerror(errno)));
    return {std::move(dir), out};
}

}  // namespace

void Store::get(std::string_view name, int fd, const GetOptions& options) const {
    SharedLockGuard guard(impl_->lock);
    Readers readers(*impl_->packs);
    restore_to_fd(*impl_, readers, name, fd, fmt::format("the output of '{}'", name), options);
}

void Store::get(std::string_view name, const std::filesystem::path& out_path, const GetOptions& options) const {
    SharedLockGuard guard(impl_->lock);
    const auto [dir, out] = output_place(name, out_path);
    Readers readers(*impl_->packs);
    restore_into(*impl_, readers, name, dir.get(), out.filename().string(), out.string(), options);
}

void Store::get_each(std::span<const GetItem> items, const GetOptions& options,
                     const std::function<void(std::size_t, std::exception_ptr)>& done) const {
    std::size_t told = 0;
    SessionRestore restore(read_session(), [&]() -> std::optional<std::string> {
        if (told == items.size()) return std::nullopt;
        return items[told++].name;
    });
    Readers readers(*impl_->packs);
    for (std::size_t i = 0; i < items.size(); ++i) {
        std::exception_ptr error;
        try {
            // (not a structured binding: clang 14 lets no lambda capture one)
            const std::pair<Fd, std::filesystem::path> place = output_place(items[i].name, items[i].out);
            const int dir = place.first.get();
            const std::filesystem::path& out = place.second;
            restore.run(
                [&](ReadSession::State* state) {
                    restore_into(*impl_, readers, items[i].name, dir, out.filename().string(), out.string(), options,
                                 state);
                },
                restore.session().s_.get());
        } catch (...) {
            error = std::current_exception();
        }
        done(i, error);
    }
}

TreeGetReport Store::get_tree(std::string_view prefix, const std::filesystem::path& out_dir,
                              const GetOptions& options) const {
    SharedLockGuard guard(impl_->lock);
    std::string under(prefix);
    while (!under.empty() && under.back() == '/') under.pop_back();
    if (!under.empty()) under.push_back('/');
    const std::vector<ManifestInfo> files = list(under);
    if (::mkdir(out_dir.c_str(), 0777) != 0 && errno != EEXIST)
        throw StoreError(fmt::format("cannot create '{}': {}", out_dir.string(), std::strerror(errno)));
    const Fd root(::open(out_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root) throw StoreError(fmt::format("cannot open the directory '{}': {}", out_dir.string(), std::strerror(errno)));

    TreeGetReport report;
    std::uint64_t total = 0;
    for (const ManifestInfo& m : files) total += m.size;
    std::uint64_t done = 0;
    std::uint64_t files_done = 0;
    const auto t0 = std::chrono::steady_clock::now();
    auto fill = [&](Progress& p, std::uint64_t in_file) {
        p.bytes_done = done + in_file;
        p.bytes_total = total;
        p.files_done = files_done;
        p.files_total = files.size();
        p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    GetOptions each = options;  // a large file's progress, within the tree's
    if (options.progress)
        each.progress = [&](const Progress& in) {
            Progress p;
            fill(p, in.bytes_done);
            options.progress(p);
        };
    ProgressTicker ticker(options.progress);
    Readers readers(*impl_->packs);
    // One session for all the files (over PostgreSQL a small file took 13
    // statements: its view, its manifest, its list, its chunks).
    std::size_t told = 0;
    SessionRestore restore(read_session(), [&]() -> std::optional<std::string> {
        if (told == files.size()) return std::nullopt;
        return files[told++].name;
    });
    for (const ManifestInfo& m : files) {
        ticker.tick([&](Progress& p) { fill(p, 0); });
        const std::string rel = m.name.substr(under.size());
        const std::string shown = (out_dir / rel).string();
        try {
            const auto parts = safe_components(rel);
            if (!parts) throw Blocked("its name has an empty, '.' or '..' component: not restored");
            // Into its directory, one component at a time, never through a link.
            Fd dir(::dup(root.get()));
            if (!dir) throw StoreError(fmt::format("dup: {}", std::strerror(errno)));
            for (std::size_t i = 0; i + 1 < parts->size(); ++i) {
                const char* c = (*parts)[i].c_str();
                if (::mkdirat(dir.get(), c, 0777) != 0 && errno != EEXIST)
                    throw OutputError(fmt::format("cannot create a directory for '{}': {}", shown, std::strerror(errno)));
                Fd next(::openat(dir.get(), c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
                if (!next) {
                    if (errno == ENOTDIR || errno == ELOOP)
                        throw Blocked(fmt::format("'{}' is in the way (a file or a link, not a directory)", (*parts)[i]));
                    throw OutputError(fmt::format("cannot open a directory for '{}': {}", shown, std::strerror(errno)));
                }
                dir = std::move(next);
            }
            const std::string& base = parts->back();
            if (struct stat st {}; ::fstatat(dir.get(), base.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
                throw Blocked("a directory of that name is in the way");
            restore.run(
                [&](ReadSession::State* state) {
                    restore_into(*impl_, readers, m.name, dir.get(), base, shown, each, state);
                },
                restore.session().s_.get());
            ++report.files;
            report.bytes += m.size;
        } catch (const Blocked& e) {
            report.skipped.push_back({m.name, e.what()});
        } catch (const OutputError& e) {
            report.skipped.push_back({m.name, e.what()});
        } catch (const DamageError& e) {
            report.skipped.push_back({m.name, e.what()});
        } catch (const NotFoundError&) {
            report.skipped.push_back({m.name, "removed while the tree was restored"});
        }
        done += m.size;
        ++files_done;
    }
    return report;
}

}  // namespace cdc::store
