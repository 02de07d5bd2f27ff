// Store: init, open, manifests, chunk lookups and reads, stats; and the
// helpers the store's parts share (store_impl.hpp).
#include "../io/open_files.hpp"
#include "codec.hpp"
#include "pack_storage_factory.hpp"
#include "store_impl.hpp"

#include <cdc/digest.hpp>

#include <blake3.h>
#include <fmt/format.h>

#include <charconv>
#include <limits>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <unordered_set>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <unistd.h>

namespace cdc::store {

using namespace detail;

// ================================================================ ids

ChunkId chunk_id_of(std::span<const std::byte> raw) {
    const Digest d = compute_digest(DigestKind::blake3, raw);
    ChunkId id;
    std::memcpy(id.data(), d.bytes.data(), id.size());
    return id;
}

std::string to_hex(const ChunkId& id) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string s(64, '0');
    for (std::size_t i = 0; i < id.size(); ++i) {
        s[2 * i] = kHex[id[i] >> 4];
        s[2 * i + 1] = kHex[id[i] & 15];
    }
    return s;
}

ChunkId chunk_id_from_hex(std::string_view hex) {
    // Same shape as a key: 64 hex digits.
    try {
        return parse_key_hex(hex);
    } catch (const OptionError&) {
        throw OptionError(fmt::format("chunk id '{}' is invalid: expected 64 hexadecimal digits", hex));
    }
}

std::string key_check_value(const Key& key) {
    // A keyed BLAKE3 of a fixed text: proves the key without revealing it.
    static constexpr std::string_view kText = "cdc-store key check v1";
    blake3_hasher h;
    blake3_hasher_init_keyed(&h, key.data());
    blake3_hasher_update(&h, kText.data(), kText.size());
    ChunkId out;
    blake3_hasher_finalize(&h, out.data(), out.size());
    return to_hex(out);
}

std::string name_problem(std::string_view name) {
    if (name.empty()) return "the name is empty";
    if (name.size() > kMaxNameBytes) return fmt::format("the name is longer than {} bytes", kMaxNameBytes);
    if (name.front() == '/') return "the name is absolute (starts with /)";
    if (name.find('\0') != std::string_view::npos) return "the name holds a NUL byte";
    std::size_t start = 0;
    for (;;) {
        const std::size_t slash = name.find('/', start);
        const std::string_view part = name.substr(start, slash == std::string_view::npos ? name.npos : slash - start);
        if (part.empty()) return slash == std::string_view::npos ? "the name ends with /" : "the name has an empty component (//)";
        if (part == "." || part == "..") return fmt::format("the name has a '{}' component", part);
        if (slash == std::string_view::npos) break;
        start = slash + 1;
    }
    return {};
}

Options chunking_options(std::string_view algorithm, const Profile& profile, const std::optional<Key>& key) {
    Options o;
    o.min_size = profile.min_size;
    o.normal_size = profile.normal_size;
    o.max_size = profile.max_size;
    // The parameters of the peer-compatible names, where the algorithm takes them.
    if (const AlgorithmInfo* a = find_algorithm(algorithm)) {
        if (a->normalization_level.accepted) o.normalization_level = profile.normalization_level;
        if (a->seed.accepted) o.seed = profile.seed;
        if (a->polynomial.accepted) o.polynomial = profile.polynomial;
        if (a->window_size.accepted) o.window_size = profile.window_size;
    }
    if (profile.keyed) o.key = key;
    return o;
}

Options Store::Impl::chunking_options() const {
    if (info.profile.keyed && !key)
        throw OptionError(fmt::format("the store '{}' is keyed: its key is needed", dir.string()), "key");
    return store::chunking_options(info.algorithm, info.profile, key);
}

// ================================================================ shared helpers

namespace detail {

ChunkId to_id(std::span<const std::uint8_t> blob, const std::string& context) {
    if (blob.size() != 32) throw DamageError(fmt::format("{}: a chunk id of {} bytes in the index", context, blob.size()));
    ChunkId id;
    std::memcpy(id.data(), blob.data(), 32);
    return id;
}

CatalogCheck::CatalogCheck(Db& db) : lengths_stmt_(db, "SELECT size FROM packs WHERE id = ?1") {
    // Bounded by the library's limit too: a crafted max_size must not let
    // any size through.
    max_raw_ = kMaxChunkSizeLimit;
    Stmt q(db, "SELECT value FROM meta WHERE key = 'max_size'");
    if (q.step()) {
        const std::string v = q.text(0);
        std::uint64_t n = 0;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (ec == std::errc() && end == v.data() + v.size() && n > 0) max_raw_ = std::min<std::uint64_t>(n, max_raw_);
    }
}

std::uint64_t CatalogCheck::pack_length(std::uint64_t pack, bool fresh) {
    if (!fresh)
        if (const auto it = lengths_.find(pack); it != lengths_.end()) return it->second;
    lengths_stmt_.bind(1, static_cast<std::int64_t>(pack));
    const std::int64_t n = lengths_stmt_.step() ? lengths_stmt_.i64(0) : 0;
    lengths_stmt_.reset();
    const std::uint64_t length = n > 0 ? static_cast<std::uint64_t>(n) : 0;
    lengths_[pack] = length;
    return length;
}

Location CatalogCheck::location(const ChunkId& id, std::int64_t pack, std::int64_t offset, std::int64_t raw_size,
                                std::int64_t stored_size, std::string_view context) {
    Location loc;
    loc.pack = static_cast<std::uint64_t>(pack);
    loc.offset = static_cast<std::uint64_t>(offset);
    auto damage = [&](const std::string& why) {
        throw DamageError(chunk_problem(context, id, loc, fmt::format("the index is damaged: {}", why)));
    };
    if (pack <= 0 || offset < 0) damage(fmt::format("pack {}, offset {}", pack, offset));
    if (raw_size < 0 || static_cast<std::uint64_t>(raw_size) > max_raw_)
        damage(fmt::format("a raw size of {} bytes (the store's chunks have at most {})", raw_size, max_raw_));
    loc.raw_size = static_cast<std::uint32_t>(raw_size);
    const std::uint64_t bound = stored_size_bound(loc.raw_size);
    if (stored_size < 0 || static_cast<std::uint64_t>(stored_size) > bound)
        damage(fmt::format("a stored size of {} bytes for {} raw bytes (at most {})", stored_size, raw_size, bound));
    loc.stored_size = static_cast<std::uint32_t>(stored_size);
    const std::uint64_t end = loc.offset + kRecordHeaderSize + loc.stored_size;
    if (loc.offset < kPackHeaderSize) damage(fmt::format("a record at offset {}, inside the pack's header", offset));
    // (A pack another writer appended to since it was cached: asked again.)
    if (end > pack_length(loc.pack, false) && end > pack_length(loc.pack, true)) {
        const std::uint64_t length = pack_length(loc.pack, false);
        damage(length == 0 ? std::string("its pack is not in the index")
                           : fmt::format("a record ending at {}, beyond its pack's committed length {}", end, length));
    }
    return loc;
}

ChunkLookup::ChunkLookup(Db& db)
    : stmt_(db, "SELECT pack, offset, raw_size, stored_size FROM chunks WHERE id = ?1"), check_(db) {}

std::optional<Location> ChunkLookup::find(const ChunkId& id, std::string_view context) {
    stmt_.bind(1, std::span<const std::uint8_t>(id));
    std::optional<Location> r;
    try {
        if (stmt_.step()) r = check_.location(id, stmt_.i64(0), stmt_.i64(1), stmt_.i64(2), stmt_.i64(3), context);
    } catch (...) {
        stmt_.reset();
        throw;
    }
    stmt_.reset();
    return r;
}

void for_each_listed_chunk(Db& db, const std::filesystem::path& dir, std::string_view name,
                           const std::function<void(const ChunkId&, const Location&, std::uint64_t)>& f) {
    Stmt m(db, "SELECT id FROM manifests WHERE name = ?1");
    m.bind(1, name);
    if (!m.step()) throw NotFoundError(fmt::format("no file named '{}' in the store '{}'", name, dir.string()));
    for_each_listed_chunk(db, m.i64(0), name, std::numeric_limits<std::uint64_t>::max(), f);
}

std::uint64_t for_each_listed_chunk(Db& db, std::int64_t manifest, std::string_view name, std::uint64_t limit,
                                    const std::function<void(const ChunkId&, const Location&, std::uint64_t)>& f) {
    ChunkLookup lookup(db);
    Stmt segs(db, "SELECT ids FROM manifest_chunks WHERE manifest = ?1 ORDER BY seq");
    segs.bind(1, manifest);
    const std::string context = fmt::format("'{}'", name);
    std::uint64_t index = 0;
    while (index < limit && segs.step()) {
        const auto blob = segs.blob(0);
        for (std::size_t i = 0; i + 32 <= blob.size() && index < limit; i += 32, ++index) {
            const ChunkId id = to_id(blob.subspan(i, 32), context);
            const auto loc = lookup.find(id, fmt::format("'{}': ", name));
            if (!loc)
                throw DamageError(fmt::format("'{}': chunk {} (number {} of the file) is missing from the index", name,
                                              to_hex(id), index));
            f(id, *loc, index);
        }
    }
    return index;
}

std::size_t default_max_open_packs() { return cdc::detail::open_files_budget(8, 512); }

const PackReader& PackFiles::reader(std::uint64_t pack) {
    if (auto it = open_.find(pack); it != open_.end()) return *it->second;
    auto reader = storage_.open(pack);
    if (!reader) throw DamageError(fmt::format("pack '{}' is missing", storage_.describe(pack)));
    return *open_.emplace(pack, std::move(reader)).first->second;
}

std::string chunk_problem(std::string_view context, const ChunkId& id, const Location& loc, std::string_view reason) {
    return fmt::format("{}chunk {} (pack {:08}, offset {}): {}", context, to_hex(id), loc.pack, loc.offset, reason);
}

Codec read_record(const PackReader& pack, const Location& loc, const ChunkId& id, std::vector<std::byte>& buf,
                  std::string_view context) {
    const std::size_t n = kRecordHeaderSize + loc.stored_size;
    buf.resize(n);
    const std::size_t got = pack.read_at(loc.offset, buf);
    return check_record(std::span<const std::byte>(buf).first(got), loc, id, context);
}

Codec check_record(std::span<const std::byte> record, const Location& loc, const ChunkId& id,
                   std::string_view context) {
    const std::size_t n = kRecordHeaderSize + loc.stored_size;
    if (record.size() < n)
        throw DamageError(chunk_problem(context, id, loc,
                                        fmt::format("the pack ends {} bytes into the {}-byte record (truncated)",
                                                    record.size(), n)));
    const auto* h = reinterpret_cast<const std::uint8_t*>(record.data());
    const auto header = decode_record(h);
    if (!header) throw DamageError(chunk_problem(context, id, loc, "no valid record header there"));
    if (header->id != id)
        throw DamageError(chunk_problem(context, id, loc, fmt::format("the record there is chunk {}", to_hex(header->id))));
    if (header->raw_size != loc.raw_size || header->stored_size != loc.stored_size)
        throw DamageError(chunk_problem(context, id, loc, "the record's sizes differ from the index"));
    if (!record_checksum_ok(h, record.subspan(kRecordHeaderSize, loc.stored_size)))
        throw DamageError(chunk_problem(context, id, loc, "checksum mismatch (damaged bytes)"));
    if (header->codec == Codec::raw && header->stored_size != header->raw_size)
        throw DamageError(chunk_problem(context, id, loc, "a raw record whose sizes differ"));
    return header->codec;
}

void decode_record_into(std::span<const std::byte> record, const Location& loc, const ChunkId& id,
                        std::span<std::byte> out, std::string_view context) {
    const Codec codec = check_record(record, loc, id, context);
    const auto payload = record.subspan(kRecordHeaderSize, loc.stored_size);
    if (codec == Codec::raw) {
        if (!payload.empty()) std::memcpy(out.data(), payload.data(), payload.size());
        return;
    }
    thread_local Decompressor d;
    if (!d.decompress(payload, out))
        throw DamageError(chunk_problem(context, id, loc, fmt::format("the zstd frame does not decode to {} bytes",
                                                                      loc.raw_size)));
}

void read_chunk_into(const PackReader& pack, const Location& loc, const ChunkId& id, std::vector<std::byte>& buf,
                     std::span<std::byte> out, std::string_view context) {
    read_record(pack, loc, id, buf, context);
    decode_record_into(buf, loc, id, out, context);
}

void add_first_ids(Db& db) {
    auto has_column = [&] {
        Stmt q(db, "SELECT 1 FROM pragma_table_info('manifests') WHERE name = 'first_id'");
        return q.step();
    };
    // The earlier indexes, which an older writer adds back; a no-op without them.
    constexpr const char* kDropEarlier =
        "DROP INDEX IF EXISTS manifest_first_ids; DROP INDEX IF EXISTS manifest_first_chunk";
    if (has_column()) {
        db.exec(kFirstIdIndexSql, "adding the first-id index to the store");
        db.exec(kDropEarlier, "dropping the earlier first-chunk indexes");
        return;
    }
    Transaction t(db, true);
    if (has_column()) return;  // another writer did it meanwhile
    db.exec("ALTER TABLE manifests ADD COLUMN first_id BLOB", "adding first_id to the store's manifests");
    db.exec(fmt::format("UPDATE manifests SET first_id = {} WHERE name IS NOT NULL AND chunk_count >= 2", kFirstIdOfSql)
                .c_str(),
            "filling in the manifests' first ids");
    db.exec(kFirstIdIndexSql, "adding the first-id index to the store");
    db.exec(kDropEarlier, "dropping the earlier first-chunk indexes");
    t.commit();
}

}  // namespace detail

// ================================================================ init / open

namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;
CREATE TABLE packs(id INTEGER PRIMARY KEY, size INTEGER NOT NULL);
CREATE TABLE chunks(id BLOB PRIMARY KEY, pack INTEGER NOT NULL, offset INTEGER NOT NULL,
                    raw_size INTEGER NOT NULL, stored_size INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE manifests(id INTEGER PRIMARY KEY, name TEXT UNIQUE, pending_name TEXT, size INTEGER, mode INTEGER,
                       mtime_ns INTEGER, digest BLOB, algorithm TEXT, min_size INTEGER, normal_size INTEGER,
                       max_size INTEGER, keyed INTEGER, chunk_count INTEGER, committed_ns INTEGER,
                       first_id BLOB);
CREATE TABLE manifest_chunks(manifest INTEGER NOT NULL, seq INTEGER NOT NULL, ids BLOB NOT NULL,
                             PRIMARY KEY(manifest, seq)) WITHOUT ROWID;
)sql";

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::string random_hex16() {
    std::array<std::uint8_t, 16> b{};
    std::size_t got = 0;
    while (got < b.size()) {
        const ssize_t n = ::getrandom(b.data() + got, b.size() - got, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw StoreError(fmt::format("getrandom: {}", std::strerror(errno)));
        }
        got += static_cast<std::size_t>(n);
    }
    ChunkId wide{};
    std::memcpy(wide.data(), b.data(), b.size());
    return to_hex(wide).substr(0, 32);
}

std::int64_t meta_int(const std::unordered_map<std::string, std::string>& meta, const char* key,
                      const std::string& db) {
    const auto it = meta.find(key);
    if (it == meta.end()) throw DamageError(fmt::format("the store's database '{}' has no '{}' setting", db, key));
    try {
        return std::stoll(it->second);
    } catch (const std::exception&) {
        throw DamageError(fmt::format("the store's database '{}': setting '{}' = '{}' is not a number", db, key,
                                      it->second));
    }
}

// A setting added after format 1 was first written (the parameters of the
// peer-compatible algorithms): `fallback` where a store predates it.
std::uint64_t meta_u64(const std::unordered_map<std::string, std::string>& meta, const char* key,
                       const std::string& db, std::uint64_t fallback) {
    const auto it = meta.find(key);
    if (it == meta.end()) return fallback;
    try {
        std::size_t used = 0;
        const std::uint64_t v = std::stoull(it->second, &used);
        if (used == it->second.size()) return v;
    } catch (const std::exception&) {
    }
    throw DamageError(fmt::format("the store's database '{}': setting '{}' = '{}' is not a number", db, key,
                                  it->second));
}

}  // namespace

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

Store Store::init(const std::filesystem::path& dir, const InitOptions& options) {
    const Profile profile = resolve_profile(options.algorithm, options.chunking);
    check_zstd_level(options.zstd_level);
    if (options.pack_size < (std::uint64_t{1} << 20) || options.pack_size > (std::uint64_t{1} << 32))
        throw OptionError(fmt::format("pack size {} is invalid: must be between 1 MiB and 4 GiB", options.pack_size),
                          "pack_size");
    std::error_code ec;
    if (std::filesystem::exists(dir, ec)) {
        if (!std::filesystem::is_directory(dir, ec))
            throw OptionError(fmt::format("cannot create a store in '{}': it exists and is not a directory", dir.string()));
        if (!std::filesystem::is_empty(dir, ec))
            throw OptionError(fmt::format("cannot create a store in '{}': the directory is not empty", dir.string()));
    }
    // Before anything is made: a bucket that does not answer leaves nothing behind.
    (void)make_pack_storage(dir, options.packs, PackStorageUse::init);
    std::filesystem::create_directories(dir / kPacksDir, ec);
    if (ec) throw StoreError(fmt::format("cannot create '{}': {}", (dir / kPacksDir).string(), ec.message()));
    // Private to its owner: it holds the contents of every file put into it
    // (chmod the directory to share it; the files made later follow it).
    for (const auto& d : {dir, dir / kPacksDir})
        if (::chmod(d.c_str(), 0700) != 0)
            throw StoreError(fmt::format("cannot chmod '{}': {}", d.string(), std::strerror(errno)));
    StoreLock lock(dir);  // creates DIR/lock
    {
        // Made here with the store's mode (SQLite's own would be 0644 less
        // the umask; its -wal and -shm files take the database's).
        const auto db_path = dir / kDbName;
        Fd made(::open(db_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, store_file_mode(dir)));
        if (!made) throw StoreError(fmt::format("cannot create '{}': {}", db_path.string(), std::strerror(errno)));
        Db db(db_path.string(), true);
        db.exec(kSchema);
        db.exec(kFirstIdIndexSql);
        Transaction t(db, true);
        Stmt put(db, "INSERT INTO meta(key, value) VALUES(?1, ?2)");
        auto set = [&](std::string_view k, const std::string& v) {
            put.bind(1, k).bind(2, v);
            put.run();
        };
        set("format_version", std::to_string(kFormatVersion));
        set("store_id", random_hex16());
        set("algorithm", options.algorithm);
        set("min_size", std::to_string(profile.min_size));
        set("normal_size", std::to_string(profile.normal_size));
        set("max_size", std::to_string(profile.max_size));
        set("keyed", profile.keyed ? "1" : "0");
        set("normalization_level", std::to_string(profile.normalization_level));
        set("seed", std::to_string(profile.seed));
        set("polynomial", std::to_string(profile.polynomial));
        set("window_size", std::to_string(profile.window_size));
        set("key_check", options.chunking.key ? key_check_value(*options.chunking.key) : std::string());
        set("zstd_level", std::to_string(options.zstd_level));
        set("pack_size", std::to_string(options.pack_size));
        set("created_ns", std::to_string(now_ns()));
        for (const auto& [k, v] : pack_location_settings(options.packs)) set(k, v);
        t.commit();
    }
    // The marker last, atomically: a directory without it is not a store.
    const auto tmp = dir / (std::string(kMarkerName) + ".tmp");
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << marker_text(kFormatVersion);
        out.flush();
        if (!out) throw StoreError(fmt::format("cannot write '{}'", tmp.string()));
    }
    {
        Fd f(::open(tmp.c_str(), O_RDONLY | O_CLOEXEC));
        if (f) {
            ::fchmod(f.get(), store_file_mode(dir));
            fsync_fd(f.get(), tmp.string(), false);
        }
    }
    std::filesystem::rename(tmp, dir / kMarkerName);
    fsync_dir(dir);
    OpenOptions o;
    o.key = options.chunking.key;
    return open(dir, o);
}

Store Store::open(const std::filesystem::path& dir, const OpenOptions& options) {
    const std::uint32_t marker = read_marker(dir);
    auto impl = std::make_unique<Impl>();
    impl->dir = dir;
    if (!std::filesystem::exists(std::filesystem::symlink_status(dir / kDbName)))
        throw DamageError(fmt::format("the store '{}' has no database ({} is missing)", dir.string(), kDbName));
    impl->db = Db(impl->db_path(), false);
    std::unordered_map<std::string, std::string> meta;
    {
        Stmt q(impl->db, "SELECT key, value FROM meta");
        while (q.step()) meta[q.text(0)] = q.text(1);
    }
    const std::string db = impl->db_path();
    const auto version = meta_int(meta, "format_version", db);
    if (version > kFormatVersion)
        throw VersionError(fmt::format("the store '{}' has format version {}, newer than this cdc supports ({}): use "
                                       "a newer cdc; the store was not modified",
                                       dir.string(), version, kFormatVersion));
    StoreInfo& info = impl->info;
    info.path = dir;
    info.format_version = static_cast<std::uint32_t>(std::max<std::int64_t>(version, marker));
    info.store_id = meta["store_id"];
    info.algorithm = meta["algorithm"];
    info.profile.min_size = static_cast<std::size_t>(meta_int(meta, "min_size", db));
    info.profile.normal_size = static_cast<std::size_t>(meta_int(meta, "normal_size", db));
    info.profile.max_size = static_cast<std::size_t>(meta_int(meta, "max_size", db));
    info.profile.keyed = meta_int(meta, "keyed", db) != 0;
    // A store written before these settings existed used the algorithm's defaults.
    const AlgorithmInfo* algo = find_algorithm(info.algorithm);
    auto param = [&](const char* key, ParameterRule AlgorithmInfo::*rule) {
        const std::uint64_t fallback = algo && (algo->*rule).accepted ? (algo->*rule).default_value : 0;
        return meta_u64(meta, key, db, fallback);
    };
    info.profile.normalization_level = static_cast<int>(param("normalization_level", &AlgorithmInfo::normalization_level));
    info.profile.seed = param("seed", &AlgorithmInfo::seed);
    info.profile.polynomial = param("polynomial", &AlgorithmInfo::polynomial);
    info.profile.window_size = static_cast<std::size_t>(param("window_size", &AlgorithmInfo::window_size));
    info.zstd_level = static_cast<int>(meta_int(meta, "zstd_level", db));
    info.pack_size = static_cast<std::uint64_t>(meta_int(meta, "pack_size", db));
    impl->key_check = meta["key_check"];
    if (info.profile.keyed) info.key_check = impl->key_check;
    if (info.profile.keyed) impl->key = options.key;
    if (find_algorithm(info.algorithm) == nullptr)
        throw VersionError(fmt::format("the store '{}' uses the algorithm '{}', unknown to this cdc", dir.string(),
                                       info.algorithm));
    info.packs = pack_location_of(meta, db);
    impl->packs = make_pack_storage(dir, info.packs, PackStorageUse::open);
    impl->lock = StoreLock(dir);
    return Store(std::move(impl));
}

const StoreInfo& Store::info() const noexcept { return impl_->info; }

std::shared_ptr<const CutFinder> Store::finder() const {
    return make_cut_finder(impl_->info.algorithm, impl_->chunking_options());
}

// ================================================================ manifests

namespace {

ManifestInfo read_manifest_row(const Stmt& q, const std::string& context) {
    // Columns: name, size, mode, mtime_ns, digest, algorithm, min, normal, max, keyed, chunk_count, committed_ns
    ManifestInfo m;
    m.name = q.text(0);
    m.size = static_cast<std::uint64_t>(q.i64(1));
    m.mode = static_cast<std::uint32_t>(q.i64(2));
    m.mtime_ns = q.i64(3);
    m.digest = to_id(q.blob(4), context);
    m.algorithm = q.text(5);
    m.profile.min_size = static_cast<std::size_t>(q.i64(6));
    m.profile.normal_size = static_cast<std::size_t>(q.i64(7));
    m.profile.max_size = static_cast<std::size_t>(q.i64(8));
    m.profile.keyed = q.i64(9) != 0;
    m.chunks = static_cast<std::uint64_t>(q.i64(10));
    m.committed_ns = q.i64(11);
    return m;
}

constexpr const char* kManifestColumns =
    "name, size, mode, mtime_ns, digest, algorithm, min_size, normal_size, max_size, keyed, chunk_count, committed_ns";

}  // namespace

std::vector<ManifestInfo> Store::list(std::string_view prefix) const {
    Stmt q(impl_->db, fmt::format("SELECT {} FROM manifests WHERE name IS NOT NULL AND substr(name, 1, length(?1)) = ?1 "
                                  "ORDER BY name",
                                  kManifestColumns)
                          .c_str());
    q.bind(1, prefix);
    std::vector<ManifestInfo> out;
    while (q.step()) out.push_back(read_manifest_row(q, impl_->db_path()));
    return out;
}

std::optional<ManifestInfo> Store::find(std::string_view name) const {
    Stmt q(impl_->db, fmt::format("SELECT {} FROM manifests WHERE name = ?1", kManifestColumns).c_str());
    q.bind(1, name);
    if (!q.step()) return std::nullopt;
    return read_manifest_row(q, impl_->db_path());
}

void Store::for_each_chunk(std::string_view name,
                           const std::function<void(const ChunkId&, std::uint32_t)>& f) const {
    Transaction read(impl_->db, false);
    for_each_listed_chunk(impl_->db, impl_->dir, name,
                          [&](const ChunkId& id, const Location& loc, std::uint64_t) { f(id, loc.raw_size); });
    read.commit();
}

void Store::remove(std::span<const std::string> names) {
    SharedLockGuard guard(impl_->lock);
    Db& db = impl_->db;
    Transaction t(db, true);
    Stmt find_id(db, "SELECT id FROM manifests WHERE name = ?1");
    Stmt drop_chunks(db, "DELETE FROM manifest_chunks WHERE manifest = ?1");
    Stmt drop(db, "DELETE FROM manifests WHERE id = ?1");
    for (const auto& name : names) {
        find_id.bind(1, name);
        if (!find_id.step())
            throw NotFoundError(fmt::format("no file named '{}' in the store '{}' (nothing removed)", name,
                                            impl_->dir.string()));
        const std::int64_t id = find_id.i64(0);
        find_id.reset();
        drop_chunks.bind(1, id);
        drop_chunks.run();
        drop.bind(1, id);
        drop.run();
    }
    t.commit();
}

// ================================================================ chunks

bool Store::contains(const ChunkId& id) const {
    ChunkLookup lookup(impl_->db);
    return lookup.find(id).has_value();
}

std::vector<ChunkId> Store::missing(std::span<const ChunkId> ids) const {
    Transaction read(impl_->db, false);
    ChunkLookup lookup(impl_->db);
    std::unordered_set<ChunkId, IdHash> seen;
    std::vector<ChunkId> out;
    for (const ChunkId& id : ids) {
        if (!seen.insert(id).second) continue;
        if (!lookup.find(id)) out.push_back(id);
    }
    read.commit();
    return out;
}

StoredChunk Store::read_chunk(const ChunkId& id, bool compressed) const {
    StoredChunk out;
    read_chunks(std::span(&id, 1), compressed ? ChunkForm::stored : ChunkForm::raw,
                [&](std::size_t, const StoredChunk& c) { out = c; });
    // read_chunks leaves the hash to its caller; one chunk's caller is us.
    if (!compressed && chunk_id_of(out.bytes) != id)
        throw DamageError(fmt::format("chunk {} in the store '{}': the decoded bytes have another BLAKE3", to_hex(id),
                                      impl_->dir.string()));
    return out;
}

// ================================================================ stats

StoreStats Store::stats() const {
    Db& db = impl_->db;
    StoreStats s;
    Transaction read(db, false);
    {
        Stmt q(db, "SELECT count(*), coalesce(sum(size), 0), coalesce(sum(chunk_count), 0) FROM manifests "
                   "WHERE name IS NOT NULL");
        if (q.step()) {
            s.files = static_cast<std::uint64_t>(q.i64(0));
            s.logical_bytes = static_cast<std::uint64_t>(q.i64(1));
            s.references = static_cast<std::uint64_t>(q.i64(2));
        }
    }
    {
        Stmt q(db, "SELECT count(*), coalesce(sum(raw_size), 0), coalesce(sum(stored_size), 0) FROM chunks");
        if (q.step()) {
            s.chunks = static_cast<std::uint64_t>(q.i64(0));
            s.chunk_bytes = static_cast<std::uint64_t>(q.i64(1));
            s.stored_bytes = static_cast<std::uint64_t>(q.i64(2)) + s.chunks * kRecordHeaderSize;
        }
    }
    {
        Stmt q(db, "SELECT count(*), coalesce(sum(size), 0) FROM packs");
        if (q.step()) {
            s.packs = static_cast<std::uint64_t>(q.i64(0));
            s.pack_bytes = static_cast<std::uint64_t>(q.i64(1));
        }
    }
    const std::uint64_t headers = s.packs * kPackHeaderSize;
    s.garbage_bytes = s.pack_bytes > s.stored_bytes + headers ? s.pack_bytes - s.stored_bytes - headers : 0;
    try {
        Stmt q(db, "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = 'chunks'");
        if (q.step()) s.chunk_table_bytes = static_cast<std::uint64_t>(q.i64(0));
    } catch (const StoreError&) {
        s.chunk_table_bytes = 0;  // SQLite built without dbstat
    }
    read.commit();
    const std::string path = impl_->db_path();
    s.index_bytes = file_size_or_zero(path) + file_size_or_zero(path + "-wal");
    return s;
}

}  // namespace cdc::store
