// SPDX-License-Identifier: Apache-2.0
// The ingest door: what a writer does per file whose chunks someone else
// cut (the push server) or that it cuts itself (Writer::put_file), in one
// object with the file's state:
//
//   begin(meta) [+ compare_with_stored(...)]      the manifest opened; the
//                                                 stored file of that name
//                                                 is the base to compare with
//   follows_base(ids)                             the next chunks are the
//                                                 base's? (then they are in
//                                                 the store and need no hash)
//   hash(bytes) / hash_kept(...) / hash_stored(ids)
//                                                 the whole-file BLAKE3 in
//                                                 file order: bytes in hand,
//                                                 or stored chunks read back
//   list(ids, sizes) / list_stored(ids)           the manifest's chunks
//   digest(size) -> {digest, unchanged, identical}
//   end(size, digest)                             the manifest queued
//
// The door owns the base list (store/base_list.hpp: a committed file's
// chunk list compared while the new chunks equal it; at the first
// difference the matched chunks are read back into the hash), the lookup
// of a similar stored file (a name the store does not hold: a stored file
// that starts with the same chunk, at the first chunks), the read-back of
// stored chunks and the whole-file hash. Chunks themselves go in through
// the Writer (put_chunk_compressed, put_file's pipeline); which of them the
// store lacks, Store::missing says.
//
// Threads: the thread that uses the Writer. Errors: StoreError (DamageError
// for data that fails a check). A file not ended is never published: it
// stays open in the writer until abandon() (begin() refuses a second one),
// and what a flush wrote of it is a pending manifest that gc drops.
#pragma once

#include <cdc/digest.hpp>
#include <cdc/snapshot.hpp>
#include <cdc/source.hpp>
#include <cdc/store.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <sys/stat.h>

namespace cdc::store {

/// A committed file's chunk list read in one snapshot that is held while
/// the object lives, on a catalog connection of its own (the ids handed
/// out are those of the file as it was then, and gc waits for the writer
/// whose session reads it, so its chunks stay).
class StoredList {
public:
    virtual ~StoredList() = default;
    virtual const std::string& name() const noexcept = 0;
    /// Its chunk count as its manifest says.
    virtual std::uint64_t chunks() const noexcept = 0;
    /// The next row of ids (32 bytes each) in file order, with its sequence
    /// number; false at the end.
    virtual bool next(std::uint32_t& seq, std::vector<std::uint8_t>& ids) = 0;
    /// Row `seq` (any order); false if there is none.
    virtual bool row(std::uint32_t seq, std::vector<std::uint8_t>& ids) = 0;
};

class Ingest {
public:
    /// Files go into `writer` (which outlives the door); one at a time.
    explicit Ingest(Writer& writer);
    ~Ingest();
    Ingest(const Ingest&) = delete;
    Ingest& operator=(const Ingest&) = delete;

    /// The committed file `name` of `store`, or nullptr.
    static std::unique_ptr<StoredList> stored_list(const Store& store, std::string_view name);
    /// stored_list of the current file's own name (begin's), using what
    /// compare_with_stored's look by name found, if it made one.
    std::unique_ptr<StoredList> own_list() const;

    /// Starts a file: its manifest opened in the writer (OptionError for an
    /// empty name; StoreError if the writer has one open).
    void begin(const FileMeta& meta);
    /// Takes the committed file of that name as the base if it has at least
    /// `min_chunks` chunks; else the first chunks will look for a similar
    /// stored file (one of `size`, if known, first).
    void compare_with_stored(std::optional<std::uint64_t> size, std::uint64_t min_chunks);
    /// For a file whose name the store cannot hold yet (a pushed snapshot's
    /// own file): no lookup by name; the first chunks look for a similar
    /// stored file.
    void compare_with_similar();

    /// At the file's first chunk, when compare_with_stored found no file of
    /// its name to compare with: takes a stored file whose
    /// list starts with `first` as the base (the newest of those of the
    /// expected size and the name that ends most alike); true if one was
    /// found now. follows_base asks it itself.
    bool find_similar(const ChunkId& first);
    /// Whether `ids`, the file's next chunks, are the base's next ones (at
    /// the first call without a base, a similar stored file is looked for).
    /// True: they are in the store and their bytes need no hash (nothing is
    /// listed: list_stored them). False: they are not, and never again for
    /// this file; the chunks that matched before were read back into the
    /// hash (DamageError if they cannot be read).
    bool follows_base(std::span<const ChunkId> ids);
    bool follows_base(std::span<const Digest> ids);
    /// The base's chunk list in a new snapshot of its own, if the base is
    /// still committed there; nullptr otherwise (or without a base).
    std::unique_ptr<StoredList> base_list() const;

    // ---- the whole-file hash, in file order
    /// Bytes in hand (copied).
    void hash(std::span<const std::byte> bytes);
    /// Bytes the caller keeps unchanged until `done` runs (any thread).
    void hash_kept(std::span<const std::byte> bytes, std::function<void()> done);
    /// Stored chunks read back (decoded on the door's threads, in one read
    /// view): each id is looked up, `sized(i, raw size)` called, and its
    /// bytes queued. Stops at the first id the store does not index and
    /// returns how many were queued (a chunk this writer put is indexed once
    /// the writer has flushed: commit, then ask again).
    std::size_t hash_stored(std::span<const ChunkId> ids, const std::function<void(std::size_t, std::uint32_t)>& sized);

    // ---- the manifest
    /// Chunks the caller read from this store or put with this writer, with
    /// their sizes (Writer::add_read_chunks).
    void list(std::span<const ChunkId> ids, std::span<const std::uint32_t> sizes);
    /// Chunks looked up in the store (Writer::add_chunks); their sizes' sum.
    std::uint64_t list_stored(std::span<const ChunkId> ids);

    struct Result {
        ChunkId digest{};
        bool unchanged = false;  ///< all the chunks of the stored file of its name
        bool identical = false;  ///< all the chunks of a similar stored file
    };
    /// The file's digest: the base's if the file (of `size` bytes) had all
    /// of the base's chunks, else that of the bytes hashed (waits for them).
    Result digest(std::uint64_t size);
    /// Queues the manifest with `digest` (DamageError if `size` is not the
    /// sum of its chunks' sizes).
    void end(std::uint64_t size, const ChunkId& digest);
    /// Drops the open file (its manifest, base and hash).
    void abandon();

    struct Impl;

private:
    friend class Writer;
    explicit Ingest(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

/// A snapshot taken in from elsewhere: the server's side of `cdc push` of a
/// tree (src/transfer, docs/TRANSFER.md "Pushing a tree as a snapshot").
/// Its files go in through an Ingest of the same Writer, each named
/// file_name(path) (stored(...) once ended); the parent's unchanged files
/// are offered back (reuse); the sender's tree records are checked in
/// everything (commit) and the snapshot commits whole or not at all.
/// Refusals: OptionError ("snapshot refused: ..."); the parent:
/// NotFoundError / OptionError; a damaged parent: DamageError.
class SnapshotIntake {
public:
    struct Start {
        std::vector<std::string> paths;  ///< absolute, normalised
        std::vector<std::string> tags;
        std::string host, user;
        std::string parent;              ///< an id or prefix; empty: the newest of this host and paths
        bool no_parent = false;
        std::int64_t time_ns = 0;
        std::int32_t utc_offset_s = 0;
    };
    /// `max_name_bytes`: the longest '/'-joined path taken.
    SnapshotIntake(const Store& store, const Start& start, std::size_t max_name_bytes);
    ~SnapshotIntake();
    SnapshotIntake(const SnapshotIntake&) = delete;
    SnapshotIntake& operator=(const SnapshotIntake&) = delete;

    /// The header so far (its id, the parent found).
    const Snapshot& snapshot() const;
    /// Why `path` ('/'-joined, no leading '/') is no path in a snapshot;
    /// empty if it is one.
    static std::string path_problem(std::string_view path, std::size_t max_bytes);
    /// The manifest a file at `path` is stored under until the commit.
    std::string file_name(const std::string& path) const;
    /// The parent's content of the file at `path` (a manifest name to
    /// compare the new version with), empty if none.
    std::string base(const std::string& path);
    /// The file at `path` was stored with this content.
    void stored(const ChunkId& digest, std::uint64_t size, const std::string& path);

    struct Candidate {
        std::string_view path;  ///< '/'-joined, no leading '/'
        std::uint64_t size = 0;
        std::int64_t mtime_ns = 0, ctime_ns = 0;
        std::uint64_t inode = 0, device = 0;
        bool sparse = false;
        std::string_view extents;  ///< a sparse file's data extents (u64 LE offset, length, ...)
    };
    /// Per candidate, the parent's content digest (32 bytes) if the file is
    /// unchanged since the parent (restic's rule, with a sparse file's
    /// extents) and its content is still stored, else 32 zero bytes.
    std::string reuse(std::span<const Candidate> batch);
    /// Per tree id (32 bytes each, before any tree record), '\1' where the
    /// sender must send that tree, '\0' where the parent holds it: the
    /// commit reads those from the parent (and only those: a tree neither
    /// sent nor answered held is refused).
    std::string wanted_trees(std::string_view ids);
    /// Appends tree records ([32-byte id][u32 LE length][object] each).
    void add_trees(std::string_view bytes);
    /// Whether tree records came (candidates may not follow them).
    bool trees_begun() const;
    /// Checks the tree records from `root` (32 bytes), names the stored
    /// files by their contents and commits the snapshot in `writer`'s last
    /// transaction. `read`: bytes_read, new_bytes and skipped_unreadable.
    const Snapshot& commit(Writer& writer, std::string_view root, const SnapshotTotals& read);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// A tree captured to be sent as a snapshot: the client's side of `cdc
/// push` of a tree. Captured as `store backup` captures (metadata only,
/// nothing read); once the sender knows each regular file's content, the
/// tree objects are encoded bottom-up.
class TreeCapture {
public:
    /// Stamps `snap` (id, time, options.host or this machine's, this
    /// process's user) and fills snap.paths; problems go to result
    /// (skipped, warnings, excluded).
    TreeCapture(const SnapshotOptions& options, Snapshot& snap, SnapshotResult& result);
    ~TreeCapture();
    TreeCapture(const TreeCapture&) = delete;
    TreeCapture& operator=(const TreeCapture&) = delete;

    struct File {
        std::string path;  ///< from the snapshot's root, no leading '/'
        std::uint64_t size = 0;
        std::uint64_t data_length = 0;  ///< bytes of content (a sparse file's data extents)
        std::int64_t mtime_ns = 0, ctime_ns = 0;
        std::uint64_t inode = 0, device = 0;
        bool sparse = false;
        std::uint32_t mode = 0;
        std::string extents;  ///< a sparse file's data extents (u64 LE offset, length, ...), as Candidate's
    };
    /// The regular files, depth first in name order.
    const std::vector<File>& files() const;
    /// A reader of file `i`'s data extents from `fd` (a sparse file), which
    /// fails if the file changes from `at_open` while it is read.
    std::unique_ptr<Reader> extents(std::size_t i, int fd, const struct stat& at_open, std::string name) const;

    struct Content {
        std::string digest;                  ///< 32 bytes; empty: the file is left out
        const struct stat* opened = nullptr; ///< the file as read (size and times), if it was
    };
    /// Where one tree record lies in `records`: its id is its first 32 bytes.
    struct RecordSpan {
        std::size_t at = 0, length = 0;
    };
    /// The tree records (appended to `records`, each once, where `spans`
    /// says) with contents[i] for files()[i]; returns the root's id (32
    /// bytes). A hard link to a file left out is left out too, named in
    /// `skipped`.
    std::string encode(std::span<const Content> contents, std::string& records, std::vector<RecordSpan>& spans,
                       std::vector<SnapshotIssue>& skipped) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace cdc::store
