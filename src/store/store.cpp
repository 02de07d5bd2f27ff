// SPDX-License-Identifier: Apache-2.0
// Store: ids and names, init and open (the catalog and the pack storage a
// store's settings choose), manifests, chunk lookups, stats.
#include "catalog_factory.hpp"
#include "codec.hpp"
#include "pack_storage_factory.hpp"
#include "sqlite_catalog.hpp"
#include "snapshot_names.hpp"
#include "store_impl.hpp"
#include "masked_catalog.hpp"
#include "key_ring.hpp"  // (src/crypto)

#include <cdc/digest.hpp>

#include <blake3.h>
#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <limits>

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

ChunkId Store::Impl::keyed_id(const ChunkId& plain) const noexcept {
    if (!master) return plain;
    return master->blob_id(plain);
}

void Store::Impl::key_digests(std::span<Digest> digests) const noexcept {
    if (!master) return;
    for (Digest& d : digests) {
        ChunkId plain;
        std::memcpy(plain.data(), d.bytes.data(), plain.size());
        const ChunkId k = master->blob_id(plain);
        std::memcpy(d.bytes.data(), k.data(), k.size());
    }
}

ChunkId Store::Impl::chunk_id(std::span<const std::byte> raw) const { return keyed_id(chunk_id_of(raw)); }

ChunkId Store::chunk_id(std::span<const std::byte> raw) const { return impl_->chunk_id(raw); }

ChunkId Store::id_of_plain(const ChunkId& plain) const noexcept { return impl_->keyed_id(plain); }

const std::optional<Key>& Store::chunking_key() const noexcept { return impl_->key; }

std::shared_ptr<const UnlockedKey> Store::unlocked_key() const {
    if (!impl_->master) return nullptr;
    return std::make_shared<const UnlockedKey>(UnlockedKey{impl_->info.store_id, impl_->master});
}

Store::Impl::Lease Store::Impl::lease_connection() const {
    {
        std::lock_guard held(idle_mutex);
        if (!idle.empty()) {
            std::unique_ptr<detail::Catalog> c = std::move(idle.back());
            idle.pop_back();
            return Lease(*this, std::move(c));
        }
    }
    return Lease(*this, catalog->connect());
}

Store::Impl::Lease::~Lease() {
    if (!c_) return;
    try {
        std::lock_guard held(owner_->idle_mutex);
        if (owner_->idle.size() < kIdleConnections) owner_->idle.push_back(std::move(c_));
    } catch (...) {
        // (not kept: closed with the lease)
    }
}

Options Store::Impl::chunking_options() const {
    if (info.profile.keyed && !key)
        throw OptionError(fmt::format("the store '{}' is keyed: its key is needed", dir.string()), "key");
    return store::chunking_options(info.algorithm, info.profile, key);
}

// ================================================================ init / open

namespace {

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

// The records' AEAD: XChaCha20-Poly1305 in either sealed record form
// (format.hpp); the compact one for stores made now, the first one read and
// written on in the stores that have it. A cdc that knows only the first
// refuses a store of the second by this name, rather than calling its
// records damaged.
constexpr const char* kCipher = "xchacha20-poly1305-r2";
constexpr const char* kCipherFirstForm = "xchacha20-poly1305";

}  // namespace

crypto::UnlockedKey detail::open_with_password(const std::filesystem::path& dir,
                                               const std::function<std::string()>& password,
                                               std::string_view store_id) {
    if (!password) throw PasswordError(fmt::format("the store '{}' is encrypted: its password is needed", dir.string()));
    std::string p = password();
    struct Wipe {
        std::string& s;
        ~Wipe() { crypto::wipe({reinterpret_cast<std::uint8_t*>(s.data()), s.size()}); }
    } wipe{p};
    if (p.empty()) throw PasswordError(fmt::format("the store '{}' is encrypted: its password is needed", dir.string()));
    try {
        crypto::DirKeySlots slots(dir, crypto::DirKeySlots::Mode::read);
        return crypto::open_key_ring(slots, crypto::bytes_of(p), store_id);
    } catch (const crypto::WrongPasswordError& e) {
        throw PasswordError(e.what());
    } catch (const crypto::KeyRingError& e) {
        throw DamageError(e.what());
    } catch (const crypto::KeySlotError& e) {
        throw DamageError(e.what());
    }
}

namespace {

// The master key of an encrypted store, unwrapped with the caller's
// password; PasswordError when there is none or it opens no key slot.
std::shared_ptr<const crypto::MasterKey> unlock_master(const std::filesystem::path& dir, const std::string& store_id,
                                                       const std::string& check, const OpenOptions& options) {
    if (options.unlocked) {
        // (a server's sessions: the key its first open unlocked)
        if (options.unlocked->store_id != store_id || !options.unlocked->master ||
            options.unlocked->master->check_value() != check)
            throw PasswordError(fmt::format("the store '{}' is encrypted: the unlocked key given is another store's",
                                            dir.string()));
        return options.unlocked->master;
    }
    crypto::UnlockedKey u = detail::open_with_password(dir, options.password, store_id);
    if (u.key.check_value() != check)
        throw DamageError(fmt::format("the store '{}': key slot {} holds a key that is not this store's (its "
                                      "check value differs from the catalog's)",
                                      dir.string(), u.slot_id));
    return std::make_shared<const crypto::MasterKey>(std::move(u.key));
}

}  // namespace

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

Store Store::init(const std::filesystem::path& dir, const InitOptions& options_in) {
    // An encrypted store's master key is made first: its chunker key keys
    // the chunker (boundaries of a known file not recognisable) unless the
    // caller gave a key of its own or the algorithm takes none.
    InitOptions options = options_in;
    struct WipePassword {
        std::string& s;
        ~WipePassword() { crypto::wipe({reinterpret_cast<std::uint8_t*>(s.data()), s.size()}); }
    } wipe_password{options.password};
    std::optional<crypto::MasterKey> master;
    if (!options.password.empty()) {
        master.emplace(crypto::MasterKey::generate());
        const AlgorithmInfo* a = find_algorithm(options.algorithm);
        if (!options.chunking.key && a && a->key != KeyUse::none) options.chunking.key = master->chunking_key();
    }
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
    if (!options.catalog.empty()) check_catalog_url(options.catalog);
    // Before anything is made: a bucket that does not answer leaves nothing behind.
    (void)make_pack_storage(dir, options.packs, PackStorageUse::init);
    // Format 2, encrypted or not: files are kept in snapshots only.
    const std::uint32_t format = kFormatVersion;
    const std::string store_id = random_hex16();
    std::vector<std::pair<std::string, std::string>> settings = {
        {"format_version", std::to_string(format)},
        {"store_id", store_id},
        {"algorithm", options.algorithm},
        {"min_size", std::to_string(profile.min_size)},
        {"normal_size", std::to_string(profile.normal_size)},
        {"max_size", std::to_string(profile.max_size)},
        {"keyed", profile.keyed ? "1" : "0"},
        {"normalization_level", std::to_string(profile.normalization_level)},
        {"seed", std::to_string(profile.seed)},
        {"polynomial", std::to_string(profile.polynomial)},
        {"window_size", std::to_string(profile.window_size)},
        {"key_check", options.chunking.key ? key_check_value(*options.chunking.key) : std::string()},
        {"zstd_level", std::to_string(options.zstd_level)},
        {"pack_size", std::to_string(options.pack_size)},
        {"created_ns", std::to_string(now_ns())},
    };
    for (auto& kv : pack_location_settings(options.packs)) settings.emplace_back(std::move(kv));
    if (master) {
        settings.emplace_back("cipher", kCipher);
        settings.emplace_back("master_check", master->check_value());
    }
    // A PostgreSQL catalog first (its schema and settings in the database):
    // a server that does not answer, or a database that holds a store
    // already, leaves nothing behind in DIR.
    if (!options.catalog.empty()) (void)create_catalog(dir, options.catalog, settings);
    std::filesystem::create_directories(dir / kPacksDir, ec);
    if (ec) throw StoreError(fmt::format("cannot create '{}': {}", (dir / kPacksDir).string(), ec.message()));
    // Private to its owner: it holds the contents of every file put into it
    // (chmod the directory to share it; the files made later follow it).
    for (const auto& d : {dir, dir / kPacksDir})
        if (::chmod(d.c_str(), 0700) != 0)
            throw StoreError(fmt::format("cannot chmod '{}': {}", d.string(), std::strerror(errno)));
    StoreLock lock(dir);  // creates DIR/lock
    if (options.catalog.empty())
        (void)create_catalog(dir, options.catalog, settings);
    else
        write_catalog_file(dir, options.catalog);
    if (master) {
        // The first key slot before the marker: a store is never without one.
        crypto::DirKeySlots slots(dir, crypto::DirKeySlots::Mode::create);
        crypto::create_key_ring(slots, *master, store_id, crypto::bytes_of(options.password),
                                crypto::kdf_params_for_new_slot());
    }
    // The marker last, atomically: a directory without it is not a store.
    const auto tmp = dir / (std::string(kMarkerName) + ".tmp");
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << marker_text(format);
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
    if (master) o.password = [&] { return options.password; };
    return open(dir, o);
}

Store Store::open(const std::filesystem::path& dir, const OpenOptions& options) {
    const std::uint32_t marker = read_marker(dir);
    auto impl = std::make_unique<Impl>();
    impl->dir = dir;
    impl->catalog = open_catalog(dir, impl->info.catalog);
    std::unordered_map<std::string, std::string> meta = impl->catalog->settings();
    const std::string db = impl->catalog->describe();
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
    if (const auto c = meta.find("cipher"); c != meta.end() && !c->second.empty()) {
        if (c->second != kCipher && c->second != kCipherFirstForm)
            throw VersionError(fmt::format("the store '{}' is encrypted with '{}', unknown to this cdc", dir.string(),
                                           c->second));
        info.cipher = c->second;
        impl->compact_records = c->second == kCipher;
        impl->master = unlock_master(dir, info.store_id, meta["master_check"], options);
        // Whole-file digests masked in the catalog: a known file's BLAKE3 is in no row.
        impl->catalog = detail::mask_file_digests(std::move(impl->catalog), impl->master);
        // The chunker key the store was made with, when it is the master key's.
        const Key derived = impl->master->chunking_key();
        if (info.profile.keyed && key_check_value(derived) == impl->key_check) impl->key = derived;
    }
    info.packs = pack_location_of(meta, db);
    impl->packs = make_pack_storage(dir, info.packs, PackStorageUse::open);
    impl->lock = StoreLock(dir, impl->catalog->hosts_lock());
    return Store(std::move(impl));
}

const StoreInfo& Store::info() const noexcept { return impl_->info; }

std::shared_ptr<const CutFinder> Store::finder() const {
    return make_cut_finder(impl_->info.algorithm, impl_->chunking_options());
}

// ================================================================ manifests

std::vector<ManifestInfo> Store::list(std::string_view prefix) const {
    auto out = impl_->catalog->list(prefix);
    // The snapshots' own manifests (names starting with NUL) are listed
    // only when asked for by their prefix.
    if (prefix.empty() || prefix[0] != detail::kInternalNameByte)
        std::erase_if(out, [](const ManifestInfo& m) { return !m.name.empty() && m.name[0] == detail::kInternalNameByte; });
    return out;
}

std::optional<ManifestInfo> Store::find(std::string_view name) const { return impl_->catalog->find(name); }

std::vector<std::optional<ManifestInfo>> Store::find(std::span<const std::string> names) const {
    std::vector<std::optional<ManifestInfo>> out(names.size());
    impl_->catalog->find_many(names, [&](std::size_t i, std::optional<ManifestInfo> m) { out[i] = std::move(m); });
    return out;
}

void Store::for_each_chunk(std::string_view name,
                           const std::function<void(const ChunkId&, std::uint32_t)>& f) const {
    impl_->list_chunks(name, f);
}

void Store::Impl::list_chunks(std::string_view name, const std::function<void(const ChunkId&, std::uint32_t)>& f) {
    Catalog& c = *catalog;
    ReadView read(c);
    const auto file = c.stored_file(name);
    if (!file) throw NotFoundError(fmt::format("no file named '{}' in the store '{}'", name, dir.string()));
    for_each_listed_chunk(c, file->row, name, std::numeric_limits<std::uint64_t>::max(),
                          [&](const ChunkId& id, const Location& loc, std::uint64_t) { f(id, loc.raw_size); });
    read.end();
}

void Store::remove(std::span<const std::string> names) {
    SharedLockGuard guard(impl_->lock);
    impl_->catalog->remove(names, impl_->dir.string());
}

void Store::rename(std::span<const std::pair<std::string, std::string>> moves) const {
    SharedLockGuard guard(impl_->lock);
    std::vector<Catalog::Move> m;
    m.reserve(moves.size());
    for (const auto& [from, to] : moves) m.push_back({from, to, std::nullopt});
    impl_->catalog->rename(m, impl_->dir.string());
}

// ================================================================ chunks

bool Store::contains(const ChunkId& id) const { return impl_->catalog->find_chunk(id).has_value(); }

std::vector<ChunkId> Store::missing(std::span<const ChunkId> ids) const {
    Catalog& c = *impl_->catalog;
    IdSet seen;
    std::vector<ChunkId> distinct;
    for (const ChunkId& id : ids)
        if (seen.insert(id).second) distinct.push_back(id);
    // A view only for more than one statement (one is consistent by itself:
    // a view costs a catalog over a network two more round trips).
    std::optional<ReadView> read;
    if (distinct.size() > Catalog::kFindChunksBatch) read.emplace(c);
    std::vector<ChunkId> out;
    c.find_chunks(distinct, {}, [&](std::size_t i, const std::optional<Location>& loc) {
        if (!loc) out.push_back(distinct[i]);
    });
    if (read) read->end();
    return out;
}

StoredChunk Store::read_chunk(const ChunkId& id, bool compressed) const {
    StoredChunk out;
    read_chunks(std::span(&id, 1), compressed ? ChunkForm::stored : ChunkForm::raw,
                [&](std::size_t, const StoredChunk& c) { out = c; });
    // read_chunks leaves the hash to its caller; one chunk's caller is us.
    if (!compressed && impl_->chunk_id(out.bytes) != id)
        throw DamageError(fmt::format("chunk {} in the store '{}': the decoded bytes have another BLAKE3", to_hex(id),
                                      impl_->dir.string()));
    return out;
}

// ================================================================ stats

StoreStats Store::stats() const {
    const Catalog::Totals t = impl_->catalog->totals();
    StoreStats s;
    s.files = t.files;
    s.logical_bytes = t.logical_bytes;
    s.references = t.references;
    // (the catalog records committed manifests name are not file data: not
    // counted as chunks, but stored, so not garbage either)
    s.chunks = t.chunks - std::min(t.chunks, t.catalog_records);
    s.chunk_bytes = t.chunk_bytes - std::min(t.chunk_bytes, t.catalog_record_bytes);
    s.stored_bytes = t.stored_payload + t.chunks * kRecordHeaderSize;
    s.packs = t.packs;
    s.pack_bytes = t.pack_bytes;
    const std::uint64_t headers = s.packs * kPackHeaderSize;
    s.garbage_bytes = s.pack_bytes > s.stored_bytes + headers ? s.pack_bytes - s.stored_bytes - headers : 0;
    s.chunk_table_bytes = t.chunk_table_bytes;
    s.index_bytes = t.size_on_disk;
    return s;
}

}  // namespace cdc::store
