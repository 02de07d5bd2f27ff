// SPDX-License-Identifier: Apache-2.0
// cdc/store.hpp — a deduplicating, zstd-compressed, crash-safe chunk store
// in a directory (no server): the library behind `cdc store` and the
// server side of the transfer service.
//
//   cdc::store::InitOptions init;
//   init.algorithm = "fastcdc";                      // any name of cdc::algorithms()
//   auto s = cdc::store::Store::init("/backups/store", init);
//
//   cdc::store::Writer w(s);                         // shared store lock
//   w.put_file({"etc/hosts", 0644, mtime_ns}, cdc::FileSource("/etc/hosts"));
//   w.commit();                                      // durable, then visible
//
//   s.get("etc/hosts", "/tmp/hosts");                // temp file + rename after
//                                                    // the whole-file BLAKE3 matched
//
// The model
// - A chunk id is the BLAKE3-256 of the chunk's raw bytes. Each distinct
//   chunk is stored once, zstd-compressed (stored raw when compression does
//   not shrink it), as one self-describing record (its id, sizes, codec and a
//   checksum) appended to a pack file of bounded size.
// - The index (chunk id -> pack, offset, sizes) and the manifests (name,
//   size, mode, mtime, whole-file BLAKE3, algorithm and sizes used, ordered
//   chunk list) are in SQLite (WAL) inside the store.
// - The store records its chunking parameters (algorithm, sizes, whether it
//   is keyed) and a format version. A key is never written: only a keyed
//   BLAKE3 check value, so that a wrong key fails when a Writer starts.
// docs/STORE.md describes the on-disk format, the fsync order and the locks.
// The packs may also be objects in an S3 bucket (PackLocation, "Packs in S3"
// there; cdc/store_s3.hpp), the index and settings staying in the directory.
//
// Guarantees
// - A manifest becomes visible only after every chunk it lists is durable
//   (pack fdatasync, then one SQLite commit with the chunk rows and the
//   manifest). A crash (kill -9, power loss) at any instant leaves a store
//   that verifies and in which every committed name restores byte for byte;
//   an interrupted Writer leaves at most unreferenced data that gc reclaims.
// - Any number of Writers (threads or processes) may put at once; each holds
//   a shared lock on the store, gc holds it exclusively, so gc never removes
//   a chunk a committed or in-flight manifest needs. Writers dedup against
//   each other's committed batches (a chunk written by two Writers within
//   one batch window is kept once in the index; the other copy is garbage
//   for gc).
// - Readers (get, read_chunk, list, verify) see committed data only.
//
// Threads: a Store or a Writer is used by one thread at a time (each has its
// own SQLite connection); open one per thread. Errors: every function throws
// StoreError (or a subclass below), cdc::OptionError for invalid options and
// cdc::IoError for a failing input Source; messages name the store, the
// file name and the chunk concerned.
//
// For the transfer service (the calls a server needs):
//   Store::missing(ids)                  which of these chunks does the store lack
//   Writer::put_chunk_compressed(...)    store a zstd frame as is, after checking
//                                        its BLAKE3 once decompressed
//   Writer::begin_manifest / add_chunks / finish_manifest, then commit()
//                                        a manifest from its chunk list + digest
//   Store::for_each_chunk(name, f)       a manifest's chunk list, in order
//   Store::read_chunks(ids, form, f)     many chunks from one snapshot (as stored or raw)
//   Store::read_chunk(id, compressed)    one chunk as stored (zstd frame or raw)
#pragma once

#include <cdc/algorithms.hpp>
#include <cdc/error.hpp>
#include <cdc/options.hpp>
#include <cdc/source.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cdc::store {

/// The newest on-disk format this library reads and writes. A store of a
/// newer format is refused (VersionError), never modified. Every new store
/// is format 2: its files are kept in snapshots (cdc/snapshot.hpp), its
/// records sealed when it is encrypted (docs/STORE.md "Encryption"); a cdc
/// that knows only format 1 refuses it instead of misreading. A format-1
/// store (named files, unencrypted) is read as before; `migrate` turns it
/// into format 2.
inline constexpr std::uint32_t kFormatVersion = 2;
/// The format of stores made by earlier versions without encryption (and
/// of every pack header: records say whether they are sealed).
inline constexpr std::uint32_t kPlainFormatVersion = 1;

// ---------------------------------------------------------------- errors

/// Base of the store's errors (a damaged or unusable store, a failed write).
class StoreError : public Error {
public:
    using Error::Error;
};

/// Stored data is damaged or missing (a checksum or BLAKE3 mismatch, a
/// truncated pack, a chunk listed by a manifest but absent). The message
/// names the manifest name (when known), the chunk id and the pack.
class DamageError : public StoreError {
public:
    using StoreError::StoreError;
};

/// The directory is not a store, or is one of a newer format version.
class VersionError : public StoreError {
public:
    using StoreError::StoreError;
};

/// No committed manifest has that name.
class NotFoundError : public StoreError {
public:
    using StoreError::StoreError;
};

/// An encrypted store was opened without its password, or with one that
/// opens none of its key slots (docs/STORE.md "Encryption"). The store was
/// not modified.
class PasswordError : public StoreError {
public:
    using StoreError::StoreError;
};

/// The store keeps its packs where this program cannot reach them: S3 packs
/// in a program built without S3 support (the static `cdc` runs its
/// cdc-store-s3 helper instead; a program linked with cdc::store_s3 calls
/// cdc::store::enable_s3_packs() first, cdc/store_s3.hpp).
class StorageUnavailableError : public StoreError {
public:
    using StoreError::StoreError;
};

// ---------------------------------------------------------------- ids

/// A chunk id: BLAKE3-256 of the chunk's raw (uncompressed) bytes; in an
/// encrypted store, that digest keyed with the store's id key
/// (Store::chunk_id): the ids its catalog, contains(), missing() and
/// read_chunk() take.
using ChunkId = std::array<std::uint8_t, 32>;

/// BLAKE3-256 of `raw` (an unencrypted store's id of it).
ChunkId chunk_id_of(std::span<const std::byte> raw);
/// 64 lowercase hex digits.
std::string to_hex(const ChunkId& id);
/// Parses 64 hex digits; throws OptionError.
ChunkId chunk_id_from_hex(std::string_view hex);

/// The options that cut like `profile` does for `algorithm`: the sizes, the
/// parameters the algorithm takes (level, seed, polynomial, window) and
/// `key` when the profile is keyed (the caller checks that it has one). How
/// a store and a client of a store's server chunk alike.
Options chunking_options(std::string_view algorithm, const Profile& profile, const std::optional<Key>& key);

/// Longest name a file may be stored under.
inline constexpr std::size_t kMaxNameBytes = 4096;

/// Empty if `name` may be stored, else why not: the rule of the names a
/// tree restore (Store::get_tree) writes below its directory, which `cdc
/// store put` and the transfer server apply before storing. Not empty, at
/// most kMaxNameBytes, relative (no leading /), no NUL byte, no empty, "."
/// or ".." component, no trailing "/". (Other bytes are allowed: listings
/// escape them.)
std::string name_problem(std::string_view name);

/// The keyed BLAKE3 check value of a key (64 hex digits): what a keyed
/// store keeps instead of its key (StoreInfo::key_check), and what proves a
/// key is the store's without revealing it.
std::string key_check_value(const Key& key);

/// Bounds the memory the catalog's caches take in this process, all stores
/// and connections together (a long-lived server: page caches would
/// otherwise grow with every connection it opens); past it a cache reuses
/// its oldest pages instead of growing.
void limit_catalog_cache(std::uint64_t bytes);

/// How a chunk's bytes are kept in a pack.
enum class Codec : std::uint8_t { raw = 0, zstd = 1 };

// ---------------------------------------------------------------- configuration

/// Where a store keeps its packs (docs/STORE.md, "Packs in S3"). The
/// catalog (index.db) and the settings stay in the store's directory.
struct PackLocation {
    /// Empty: DIR/packs. "s3://BUCKET/PREFIX": objects PREFIX/packs/NNNNNNNN.pack
    /// in an S3 bucket (which must exist; the prefix must hold no object yet).
    std::string url;
    /// "http[s]://HOST[:PORT]" (path-style requests); empty: AWS's endpoint of the region.
    std::string s3_endpoint;
    std::string s3_region = "us-east-1";
    /// A credentials file (AWS INI format) to read when the environment has
    /// no AWS_ACCESS_KEY_ID: its path is recorded, never its content.
    std::string s3_credentials_file;
    /// A pack larger than this is uploaded in parts of this size (multipart
    /// upload, 5 MiB .. 1 GiB, a multiple of 1 MiB); memory holds one part per
    /// pack being written.
    std::uint64_t s3_part_size = std::uint64_t{64} << 20;
    bool is_s3() const noexcept { return !url.empty(); }
};

struct InitOptions {
    std::string algorithm = "fastcdc";  ///< any name of cdc::algorithms()
    Options chunking;                   ///< sizes (0 = the algorithm's defaults) and key
    /// zstd level, 1..19 (ZSTD_maxCLevel() at most); 0 stores every chunk raw.
    int zstd_level = 3;
    /// Bound of a pack file (a record larger than this gets a pack of its own).
    std::uint64_t pack_size = std::uint64_t{64} << 20;
    /// Where the packs go (default: the store's directory).
    PackLocation packs;
    /// Non-empty: an encrypted store (format 2, docs/STORE.md "Encryption"):
    /// a random master key wrapped under this password (Argon2id; its cost
    /// tuned to ~0.5 s, or minimal with CDC_TEST_FAST_KDF=1), records
    /// sealed, chunk ids keyed, and, unless `chunking.key` is given, the
    /// chunker keyed with a key derived from the master key (for the
    /// algorithms that take a key). Empty: an unencrypted store.
    std::string password;
    /// Where the catalog goes: empty for SQLite in the store's directory
    /// (the default), or "postgresql://[USER@]HOST[:PORT]/DB" (libpq's URI;
    /// the password from PGPASSWORD, PGPASSFILE or ~/.pgpass, never in it),
    /// a database that holds no store yet, recorded in DIR/catalog
    /// (docs/STORE.md, "A PostgreSQL catalog").
    std::string catalog;
};

/// An encrypted store's master key once unlocked (opaque; src/store/store_impl.hpp).
struct UnlockedKey;

struct OpenOptions {
    /// The key of a keyed store: needed to put (a Writer checks it against
    /// the stored check value), not to read. Ignored for unkeyed stores.
    std::optional<Key> key;
    /// The password of an encrypted store: called once, only when the store
    /// is encrypted (PasswordError if absent there, or if the password
    /// opens no key slot). The returned string is wiped after use.
    std::function<std::string()> password;
    /// An encrypted store's key unlocked by an earlier open of the same
    /// store (Store::unlocked_key()): used instead of the password, without
    /// another Argon2id (a server's sessions). PasswordError if it is not
    /// this store's.
    std::shared_ptr<const UnlockedKey> unlocked;
};

/// What a store was created with.
struct StoreInfo {
    std::filesystem::path path;
    std::uint32_t format_version = 0;
    std::string store_id;     ///< 32 hex digits, random at init
    std::string algorithm;
    Profile profile;          ///< resolved sizes; keyed when the store has a key
    int zstd_level = 0;
    std::uint64_t pack_size = 0;
    PackLocation packs;       ///< where its packs are
    std::string catalog;      ///< where its catalog is: empty for DIR/index.db, else a postgresql:// URI
    /// A keyed store's key check value (key_check_value of its key; never
    /// the key), empty for an unkeyed store.
    std::string key_check;
    /// Encrypted at rest: records sealed with this cipher
    /// ("xchacha20-poly1305-r2"; "xchacha20-poly1305" in stores of the
    /// first sealed record form); empty for an unencrypted store.
    std::string cipher;
    bool encrypted() const noexcept { return !cipher.empty(); }
};

/// File metadata kept in a manifest.
struct FileMeta {
    std::string name;          ///< unique in the store; a later put of the same name replaces it
    std::uint32_t mode = 0644; ///< permission bits (st_mode & 07777)
    std::int64_t mtime_ns = 0; ///< nanoseconds since the epoch
};

/// A committed manifest, without its chunk list (see Store::for_each_chunk).
struct ManifestInfo {
    std::string name;
    std::uint64_t size = 0;
    std::uint32_t mode = 0;
    std::int64_t mtime_ns = 0;
    ChunkId digest{};          ///< BLAKE3-256 of the whole file
    std::string algorithm;     ///< chunking used for this file
    Profile profile;
    std::uint64_t chunks = 0;
    std::int64_t committed_ns = 0;
};

/// One chunk as read from the store.
struct StoredChunk {
    Codec codec = Codec::raw;
    std::uint32_t raw_size = 0;
    std::vector<std::byte> bytes;  ///< a zstd frame (codec zstd) or the raw bytes
};

// ---------------------------------------------------------------- reports

/// Progress of a long operation (called from the calling thread).
struct Progress {
    std::uint64_t bytes_done = 0;
    std::uint64_t bytes_total = 0;  ///< 0 when unknown (stdin)
    std::uint64_t files_done = 0;
    std::uint64_t files_total = 0;
    std::uint64_t new_bytes = 0;    ///< put: raw bytes of new chunks
    double seconds = 0;
};
using ProgressFn = std::function<void(const Progress&)>;

/// What a put added. `stored_bytes` counts the new records in the packs
/// (compressed payload + record header); put_file() leaves it 0 (compression
/// ends in the background): Writer::stats() has it after commit().
struct PutStats {
    std::uint64_t files = 0;
    std::uint64_t bytes = 0;        ///< bytes read
    std::uint64_t chunks = 0;
    std::uint64_t new_chunks = 0;
    std::uint64_t new_bytes = 0;    ///< raw bytes of the new chunks
    std::uint64_t stored_bytes = 0;
    /// Files whose content is that of the file already stored under the
    /// same name: a large file's chunks were compared with the stored ones
    /// and its stored digest reused instead of hashing it a second time; a
    /// small one read ahead by put_files was found by its digest (with its
    /// metadata unchanged too, its manifest row is kept, not rewritten).
    std::uint64_t unchanged_files = 0;
    /// Files under a name the store did not hold whose chunks were exactly
    /// those of a stored file of another name that starts with the same
    /// chunk (a tree put again under a new prefix): that file's digest was
    /// reused likewise (large files only).
    std::uint64_t identical_files = 0;
    /// Chunks this writer stored that another writer had indexed first, in
    /// the same instant (each checks the committed index before storing, so
    /// only chunks in flight at both): their records' bytes are stored
    /// twice, garbage in this writer's packs until gc rewrites them.
    std::uint64_t raced_chunks = 0;
    std::uint64_t raced_bytes = 0;
};

/// The result of putting one chunk.
struct ChunkPut {
    ChunkId id{};
    bool added = false;             ///< false: the store (or this writer) had it
    std::uint64_t stored_bytes = 0; ///< bytes appended to a pack (0 when not added)
};

struct StoreStats {
    std::uint64_t files = 0;            ///< committed manifests
    std::uint64_t logical_bytes = 0;    ///< sum of their sizes
    std::uint64_t references = 0;       ///< sum of their chunk counts
    std::uint64_t chunks = 0;           ///< distinct chunks in the index
    std::uint64_t chunk_bytes = 0;      ///< their raw bytes
    std::uint64_t stored_bytes = 0;     ///< their records in the packs (payload + headers)
    std::uint64_t packs = 0;
    std::uint64_t pack_bytes = 0;       ///< pack files' committed lengths
    /// Pack bytes no indexed chunk uses (interrupted writers, concurrent writers' duplicates,
    /// removed chunks; with gc beside writers, the chunks a standing mark condemned): gc
    /// reclaims them. Indexed chunks that no manifest lists (after rm) are counted by gc.
    std::uint64_t garbage_bytes = 0;
    std::uint64_t index_bytes = 0;      ///< the SQLite database (+ WAL)
    std::uint64_t chunk_table_bytes = 0;///< pages of the chunk index alone (0 if unknown)
};

struct VerifyOptions {
    /// Also decompress every chunk and check its BLAKE3 against its id (else
    /// the record checksums, sizes and the index/manifest structure only).
    bool full = false;
    ProgressFn progress;
};

/// One problem found by verify.
struct Problem {
    std::string what;  ///< names the pack, offset, chunk id and manifest names concerned
};

struct VerifyReport {
    std::vector<Problem> damage;     ///< data that cannot be restored as committed
    std::vector<Problem> notes;      ///< harmless: unreferenced data, torn tails beyond the committed length
    std::uint64_t packs = 0;
    std::uint64_t chunks_checked = 0;
    std::uint64_t bytes_checked = 0;
    std::uint64_t manifests = 0;
    bool ok() const noexcept { return damage.empty(); }
};

struct GcOptions {
    /// A pack whose live records fill less than this fraction of it is
    /// rewritten (its live records copied into new packs, then deleted).
    double rewrite_below = 0.5;
    /// Called once if gc has to wait for the exclusive lock (writers running).
    std::function<void()> on_wait;
    /// A PostgreSQL catalog's gc runs beside writers (docs/STORE.md, "gc
    /// while writers write"): how long it waits, after its mark, for the
    /// sessions alive at the mark to end before it sweeps (0: no wait; the
    /// sweep is left to a later gc).
    double wait_seconds = 600;
    /// A session (writer, reader) without a heartbeat for this long is
    /// declared dead (its connection gone: at once).
    double session_timeout = 600;
};

struct GcReport {
    std::uint64_t manifests_dropped = 0;  ///< pending manifests of dead writers
    std::uint64_t chunks_removed = 0;
    std::uint64_t bytes_removed = 0;      ///< records of removed chunks
    std::uint64_t packs_rewritten = 0;
    std::uint64_t packs_deleted = 0;
    std::uint64_t bytes_before = 0;       ///< pack bytes on disk
    std::uint64_t bytes_after = 0;
    std::uint64_t chunks_condemned = 0;   ///< marked by gc beside writers
    bool sweep_left = false;              ///< gc beside writers: the sweep waits for a later gc
};

/// How get writes.
struct GetOptions {
    /// Apply the manifest's mode and mtime to the output file (not to "-").
    bool restore_metadata = true;
    /// With restore_metadata, also the setuid, setgid and sticky bits. Off by
    /// default (unzip's rule): a file someone else put must not become a
    /// set-id program of whoever restores it.
    bool keep_setid = false;
    ProgressFn progress;
};

/// What Store::get_tree restored, and what it skipped.
struct TreeGetReport {
    struct Skipped {
        std::string name;
        std::string why;
    };
    std::uint64_t files = 0;
    std::uint64_t bytes = 0;
    std::vector<Skipped> skipped;  ///< damaged, vanished, unsafe or blocked names
};

// ---------------------------------------------------------------- rebuilding a lost catalog

struct RebuildOptions {
    /// Where the packs are (the catalog that recorded it is lost): empty
    /// url for DIR/packs.
    PackLocation packs;
    /// An encrypted store's password (as OpenOptions::password).
    std::function<std::string()> password;
};

struct RebuildReport {
    std::string catalog;                ///< the catalog made (the database file, the server)
    std::string moved_aside;            ///< where an index.db found in DIR was moved, if one was
    std::uint64_t packs = 0;            ///< packs read
    std::uint64_t records = 0;          ///< valid records found
    std::uint64_t chunks = 0;           ///< distinct chunks indexed (catalog records included)
    std::uint64_t duplicates = 0;       ///< records of a chunk indexed from an earlier pack
    std::uint64_t manifests = 0;        ///< files and snapshot manifests restored
    std::uint64_t superseded = 0;       ///< older manifests of a name a newer one replaced
    std::uint64_t unfinished = 0;       ///< manifests whose last piece no pack holds (never committed)
    std::uint64_t damaged_bytes = 0;    ///< bytes of packs skipped as damage
    /// What could not be recovered, one line each (damaged ranges, files
    /// whose chunks are missing): empty when every committed file came back.
    std::vector<std::string> problems;
};

/// Makes a new catalog for the store in `dir` (SQLite in DIR, or the
/// PostgreSQL database DIR/catalog names, which must hold no store tables)
/// from its pack storage alone: every record becomes a chunk row, the
/// catalog records (docs/STORE.md, "Catalog records in the packs") give the
/// settings and the manifests. An index.db in DIR is moved aside first,
/// never deleted. DamageError when the packs hold no settings record (a
/// store written before catalog records: nothing is made, nothing guessed).
/// Nothing else may use the store meanwhile.
RebuildReport rebuild_catalog(const std::filesystem::path& dir, const RebuildOptions& options);

// ---------------------------------------------------------------- the store

class Writer;
class Ingest;

class Store {
public:
    /// Creates a store in `dir` (created if absent; must be empty otherwise).
    /// Validates the algorithm and sizes (OptionError). With a key, only
    /// its keyed BLAKE3 check value is written.
    static Store init(const std::filesystem::path& dir, const InitOptions& options);
    /// Opens an existing store. VersionError if `dir` is not a store or has a
    /// newer format; StoreError if the database is damaged.
    static Store open(const std::filesystem::path& dir, const OpenOptions& options = {});

    Store(Store&&) noexcept;
    Store& operator=(Store&&) noexcept;
    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;
    ~Store();

    const StoreInfo& info() const noexcept;
    /// The id this store gives a chunk of these bytes: chunk_id_of(raw) in an
    /// unencrypted store; in an encrypted one that digest hashed again with
    /// the store's secret id key (BLAKE3 keyed), so that an id does not say
    /// whether a known chunk is stored.
    ChunkId chunk_id(std::span<const std::byte> raw) const;
    /// The store's id of a chunk whose BLAKE3-256 is `plain`: `plain` in an
    /// unencrypted store, that digest keyed with the id key in an encrypted
    /// one (what a transfer server maps its clients' plain ids with).
    ChunkId id_of_plain(const ChunkId& plain) const noexcept;
    /// The key the store's chunker is keyed with, when this Store holds it
    /// (OpenOptions::key, or an encrypted store's own derived chunker key);
    /// empty for an unkeyed store or one opened without its key.
    const std::optional<Key>& chunking_key() const noexcept;
    /// An encrypted store's unlocked key, to open the store again without
    /// its password (OpenOptions::unlocked); null for an unencrypted store.
    std::shared_ptr<const UnlockedKey> unlocked_key() const;
    /// The store's cut finder (needs the key for a keyed store: OptionError).
    std::shared_ptr<const CutFinder> finder() const;

    // --- manifests (committed only)
    /// Manifests whose name starts with `prefix`, sorted by name.
    std::vector<ManifestInfo> list(std::string_view prefix = {}) const;
    std::optional<ManifestInfo> find(std::string_view name) const;
    /// find of each of `names`, in order (one round trip for a catalog over
    /// a network).
    std::vector<std::optional<ManifestInfo>> find(std::span<const std::string> names) const;
    /// Calls f(id, raw_size) for each chunk of `name`, in file order
    /// (NotFoundError; DamageError if a listed chunk is not in the index).
    void for_each_chunk(std::string_view name,
                        const std::function<void(const ChunkId&, std::uint32_t raw_size)>& f) const;
    /// Removes these manifests in one transaction (their chunks stay until
    /// gc); NotFoundError naming the first unknown name, removing none.
    void remove(std::span<const std::string> names);
    /// Renames manifests in one transaction, each (from, to); a manifest
    /// already named `to` is kept and `from` removed instead (names that say
    /// the content: a snapshot's file contents). NotFoundError naming a
    /// missing `from`, renaming none. (const as Writer(const Store&): a
    /// write through the store's catalog, not a change of this object)
    void rename(std::span<const std::pair<std::string, std::string>> moves) const;

    // --- chunks
    bool contains(const ChunkId& id) const;
    /// The ids of `ids` the store lacks, in their order (duplicates kept once).
    std::vector<ChunkId> missing(std::span<const ChunkId> ids) const;
    /// Reads one chunk. compressed = true returns it as stored (a zstd frame,
    /// or raw bytes when it is stored raw: see StoredChunk::codec); false
    /// returns the raw bytes, checked against the id. DamageError if the
    /// record is damaged, NotFoundError if absent.
    StoredChunk read_chunk(const ChunkId& id, bool compressed) const;

    // --- batched chunk reads (the transfer service: src/store/read_chunks.cpp)
    /// How read_chunks hands chunks over.
    enum class ChunkForm {
        stored,  ///< as read_chunk(id, true): a zstd frame, or raw bytes (codec raw)
        raw,     ///< the raw bytes; the record is checked (checksum, sizes, decoded
                 ///< length) but the bytes are not hashed against the id: for a
                 ///< caller that hashes them anyway (a whole-file digest)
    };
    /// Reads `ids` in their order from one snapshot under one lock, with one
    /// index statement and the pack files kept open: f(i, chunk) for ids[i]
    /// (the chunk and its buffer are reused by the next call). NotFoundError
    /// naming the first absent id (after the chunks before it were handed
    /// over); DamageError for a damaged record.
    void read_chunks(std::span<const ChunkId> ids, ChunkForm form,
                     const std::function<void(std::size_t index, const StoredChunk& chunk)>& f) const;
    /// The raw bytes of `name`, in order, in pieces: f(bytes) (valid during
    /// the call). Under one lock and one read of the index: for_each_chunk
    /// and read_chunks at once (NotFoundError; DamageError as they say).
    void read_file(std::string_view name, const std::function<void(std::span<const std::byte> bytes)>& f) const;

    /// Holds the store's lock (shared) and one read view of its index while
    /// it lives: the reads made meanwhile (find, read_file, for_each_chunk,
    /// read_chunks...) see one committed state and take neither themselves.
    /// For many small reads in a row over a catalog a round trip away
    /// (PostgreSQL: a read takes 8 statements of lock and view). Nothing is
    /// written through the Store while one lives (its writes would fail).
    class ReadSession {
    public:
        /// Ends the view and opens a fresh one (the lock stays). A long run
        /// of reads renews it now and then: a PostgreSQL server keeps every
        /// row version an open view could see (its tables grow behind the
        /// writers meanwhile); and after the catalog's server was lost (the
        /// view went with it: the reads in it fail until then).
        void renew();
        /// renew() if the view is older than a few seconds (5): what a long
        /// run of reads calls between two of them.
        void refresh();
        /// f() (reads in this session), and once more in a fresh view after
        /// it failed with an error of the catalog (a lost server takes the
        /// view with it: every read in it fails until renew()), if `again`
        /// (given that error; none: always) says f may run again, say when
        /// nothing of the first try was handed on. A DamageError or a
        /// NotFoundError is never tried again.
        void retry_once(const std::function<void()>& f, const std::function<bool(const StoreError&)>& again = {});
        /// Names the files this session is about to read with read_file, in
        /// the order it will ask for them: `next_name` gives the next one,
        /// or nullopt after the last. read_file then looks them up many at
        /// a time (over PostgreSQL three statements for up to 64 small files,
        /// where each took three); a name out of that order is read on its
        /// own, as Store::read_file would.
        void expect(std::function<std::optional<std::string>()> next_name);
        /// Store::read_file within this session.
        void read_file(std::string_view name, const std::function<void(std::span<const std::byte> bytes)>& f);
        /// Store::for_each_chunk within this session.
        void for_each_chunk(std::string_view name, const std::function<void(const ChunkId& id, std::uint32_t size)>& f);
        ~ReadSession();
        ReadSession(ReadSession&&) noexcept;
        ReadSession& operator=(ReadSession&&) = delete;
        ReadSession(const ReadSession&) = delete;
        ReadSession& operator=(const ReadSession&) = delete;
        struct State;  ///< (the store's own: opaque)

    private:
        friend class Store;
        explicit ReadSession(std::unique_ptr<State> s);
        std::unique_ptr<State> s_;
    };
    [[nodiscard]] ReadSession read_session() const;

    // --- files
    /// Restores `name` to `out`: written to a temporary file in the same
    /// directory and renamed over `out` only after the size and whole-file
    /// BLAKE3 match (no wrong byte ever reaches `out`). DamageError names
    /// the file and the chunk.
    void get(std::string_view name, const std::filesystem::path& out, const GetOptions& options = {}) const;
    /// Streams `name` to `fd` (e.g. stdout): every chunk is checked before
    /// it is written, the whole-file digest at the end (then DamageError
    /// after the bytes went out: prefer the path form).
    void get(std::string_view name, int fd, const GetOptions& options = {}) const;
    /// Restores every file named `prefix`/... (a tree put with --name
    /// `prefix`; an empty prefix: every file of the store) below `out_dir`
    /// (created if absent) at its path below the prefix, each as get() does
    /// (a temporary file renamed once its digest matched). Safe with names
    /// and directories others made: a name with an empty, "." or ".."
    /// component is skipped, and directories are entered without following
    /// links (a link inside `out_dir` is never written through). A damaged,
    /// vanished or blocked file is skipped and reported; other errors throw.
    TreeGetReport get_tree(std::string_view prefix, const std::filesystem::path& out_dir,
                           const GetOptions& options = {}) const;
    /// get(items[i].name, items[i].out) for each item, in order, under one
    /// lock and one view of the index (renewed every few seconds), the files
    /// looked up in batches (over PostgreSQL three statements for up to 64
    /// small files, where each get took 13). done(i, error) after each: a
    /// null error once restored, else the item's exception (NotFoundError,
    /// DamageError, StoreError...), which done may rethrow to stop there.
    struct GetItem {
        std::string name;
        std::filesystem::path out;
    };
    void get_each(std::span<const GetItem> items, const GetOptions& options,
                  const std::function<void(std::size_t, std::exception_ptr)>& done) const;

    // --- maintenance
    StoreStats stats() const;
    VerifyReport verify(const VerifyOptions& options = {}) const;
    /// Takes the exclusive lock (waits for Writers and readers of any process
    /// to finish: never call it while this thread or process holds a Writer),
    /// drops pending manifests of dead writers, removes unreferenced chunks,
    /// rewrites sparse packs, deletes empty and orphan pack files, cuts torn
    /// tails. Crash-safe at any instant.
    GcReport gc(const GcOptions& options = {});

    struct Impl;

private:
    friend class Writer;
    friend class Ingest;
    explicit Store(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------- writing

/// A writing session: holds a shared lock on the store (so gc waits) from
/// construction to destruction. Chunks become durable and manifests visible
/// at commit() (and at automatic flushes, every few tens of MiB); a Writer
/// destroyed (or a process killed) before commit leaves unreferenced chunks
/// only. OptionError at construction if the store is keyed and the key is
/// missing or wrong. If a flush fails (commit(), or one a put started: disk
/// full, an I/O error), the Writer writes nothing more: every later call
/// throws StoreError (what it had not committed is left for gc); a new
/// Writer may go on. A put that fails reading its source (IoError) leaves
/// the Writer usable.
class Writer {
public:
    /// `store` must outlive the writer.
    explicit Writer(const Store& store);
    Writer(Writer&&) noexcept;
    Writer& operator=(Writer&&) noexcept;
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;
    ~Writer();

    // --- whole files
    /// Chunks `source` with the store's algorithm, stores its new chunks and
    /// queues its manifest (visible after the next flush or commit()). Reading
    /// and cutting, hashing and compressing run on several threads. Throws the
    /// source's IoError (nothing of this file is committed; the Writer stays
    /// usable).
    PutStats put_file(const FileMeta& meta, Source source, const ProgressFn& progress = {});

    /// One file of put_files.
    struct Input {
        FileMeta meta;  ///< its name (open may set mode and mtime from the opened file)
        /// Opens it: on a pool thread ahead of its turn for a small file,
        /// else in turn. An IoError it throws skips the file (see put_files).
        std::function<Source(FileMeta& meta)> open;
        /// Its size when listed (a walk): a file of up to 4 MiB is read, cut
        /// and hashed ahead, on the pool, while the ones before it are stored.
        std::optional<std::uint64_t> size_hint;
    };
    /// Called on the calling thread for each input, in order, once it is
    /// queued: its figures, or the IoError (open, read) that skipped it.
    using InputDone =
        std::function<void(std::size_t index, const PutStats& stats, const std::exception_ptr& io_error)>;
    /// put_file of each input in order, the same manifests, but a tree of
    /// small files keeps every core busy (one small file leaves most of
    /// them idle: its cut and chunk digests are one segment's work). At
    /// most 16 MiB is read ahead. A file's IoError goes to `done` and the
    /// rest goes on; any other error is thrown (as put_file's).
    void put_files(std::span<const Input> inputs, const InputDone& done, const ProgressFn& progress = {});

    // --- single chunks (the transfer service)
    /// Stores raw bytes as one chunk (no chunking). A chunk is at most the
    /// store's max chunk size (OptionError otherwise), for this and the
    /// calls below: its readers refuse index rows beyond it as damage.
    ChunkPut put_chunk(std::span<const std::byte> raw);
    /// Stores a chunk that arrives as one zstd frame (with its content size,
    /// as ZSTD_compress writes it): decompressed to check that it has raw_size
    /// bytes with BLAKE3 `id` (DamageError otherwise), then kept as is, not
    /// compressed again (kept raw if the frame is not smaller than raw_size).
    ChunkPut put_chunk_compressed(const ChunkId& id, std::uint32_t raw_size,
                                  std::span<const std::byte> zstd_frame);
    /// The same, leaving the decoded bytes in `decoded` (resized to raw_size;
    /// reuse it across calls): a caller that hashes the whole file (the
    /// transfer server) decodes each frame once.
    /// `lacking`: the caller has just found the chunk missing (Store::missing),
    /// so only this writer's own chunks are checked, not the index again
    /// (should another writer store it in between, the second record is
    /// garbage that gc reclaims; the index keeps one).
    ChunkPut put_chunk_compressed(const ChunkId& id, std::uint32_t raw_size, std::span<const std::byte> zstd_frame,
                                  std::vector<std::byte>& decoded, bool lacking = false);

    // --- manifests from a chunk list (the transfer service)
    /// Starts a manifest; the chunking recorded is the store's.
    void begin_manifest(const FileMeta& meta);
    /// Appends chunks in file order. Each must be in the store or put by this
    /// writer (DamageError naming the chunk otherwise); returns their raw sizes' sum.
    std::uint64_t add_chunks(std::span<const ChunkId> ids);
    /// add_chunks for chunks the caller has read from this store while this
    /// Writer lived, or put with it, with their raw sizes: nothing is looked
    /// up (gc waits for a live Writer's lock, so chunks read stay). Each
    /// size must be the chunk's (std::invalid_argument for a 0 or a span
    /// of another length; a wrong one makes finish_manifest's size check or
    /// the whole-file digest fail).
    void add_read_chunks(std::span<const ChunkId> ids, std::span<const std::uint32_t> sizes);
    /// Ends the manifest: its size must be the sum of its chunks' sizes
    /// (DamageError otherwise); `digest` is the whole file's BLAKE3. Queued for
    /// the next flush or commit().
    void finish_manifest(const ChunkId& digest, std::uint64_t size);

    /// Makes everything put so far durable, then visible (one transaction).
    void commit();
    /// commit(), removing these committed manifests in its last transaction:
    /// what was put and the removal are visible together (NotFoundError for
    /// a name that is not there, nothing of that transaction committed).
    void commit_removing(std::span<const std::string> names);
    /// commit(), whose last transaction also makes the committed manifests
    /// `names()` gives (a snapshot's contents, named by what it commits) live
    /// again if a gc running beside writers condemned them at its mark (a
    /// PostgreSQL catalog: docs/STORE.md, "gc while writers write"): they
    /// are found by lookups and listings again, and their chunks too.
    /// `names` is called only for a catalog whose gc marks (else it is
    /// commit(): a snapshot's walk for nothing).
    void commit_naming(const std::function<std::vector<std::string>()>& names);
    /// Totals since construction (stored_bytes: up to the last flush).
    const PutStats& stats() const noexcept;

    struct Impl;

private:
    friend class Ingest;
    std::unique_ptr<Impl> impl_;
};

}  // namespace cdc::store
