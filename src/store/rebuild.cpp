// SPDX-License-Identifier: Apache-2.0
// rebuild_catalog (cdc/store.hpp): a new catalog from the pack storage
// alone (docs/STORE.md, "Catalog records in the packs"). Every pack is read
// whole, in id order: each valid record becomes a chunk row (the first copy
// of an id wins, as with concurrent writers), each catalog record is kept;
// then the manifests are assembled from their pieces, the newest of each
// name kept, and published once every chunk they list is indexed.
#include "catalog_factory.hpp"
#include "catalog_records.hpp"
#include "format.hpp"
#include "masked_catalog.hpp"
#include "pack_storage_factory.hpp"
#include "records.hpp"
#include "snapshot_names.hpp"
#include "store_impl.hpp"
#include "key_ring.hpp"  // (src/crypto)
#include "key_slot.hpp"  // (src/crypto)
#include "seal.hpp"      // (src/crypto)

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>

namespace cdc::store {

using namespace detail;

namespace {

struct Piece {
    ManifestPiece piece;
    ChunkId id{};
};

struct Candidate {
    ManifestTrailer trailer;
    std::vector<std::uint8_t> ids;      // the list, 32 bytes an id
    std::vector<std::uint8_t> records;  // the settings record's id, then its pieces'
};

class Rebuilder {
public:
    Rebuilder(const std::filesystem::path& dir, const RebuildOptions& options) : dir_(dir), options_(options) {
        ids_.dir = dir;
    }

    RebuildReport run() {
        (void)read_marker(dir_);
        url_ = catalog_url(dir_);
        StoreLock lock(dir_);
        lock.lock(true);
        unlock_if_encrypted();
        packs_ = make_pack_storage(dir_, options_.packs, PackStorageUse::open);
        const auto listed = packs_->list();
        for (const auto& [id, length] : listed) scan_pack(id, length);
        if (!settings_)
            throw DamageError(fmt::format(
                "the packs of '{}' ({} pack(s), {} record(s)) hold no settings record: the store was written before "
                "catalog records were kept in its packs, or they are lost; its catalog cannot be rebuilt (nothing "
                "was changed)",
                dir_.string(), report_.packs, report_.records));
        publish_manifests();
        if (!listed.empty()) catalog_->pack_ids_above(listed.rbegin()->first);
        lock.unlock();
        return std::move(report_);
    }

private:
    void problem(std::string s) { report_.problems.push_back(std::move(s)); }

    void unlock_if_encrypted() {
        std::error_code ec;
        if (!std::filesystem::exists(dir_ / "keys", ec)) return;
        crypto::UnlockedKey u = open_with_password(dir_, options_.password, {});
        store_id_ = u.store_id;
        ids_.master = std::make_shared<const crypto::MasterKey>(std::move(u.key));
    }

    /// The header of a whole, valid record at `pos` (checksum included).
    std::optional<RecordHeader> record_at(std::span<const std::byte> pack, std::size_t pos) const {
        if (pos + kRecordHeaderSize > pack.size()) return std::nullopt;
        const auto* h = reinterpret_cast<const std::uint8_t*>(pack.data() + pos);
        auto r = decode_record(h);
        if (!r || r->stored_size > pack.size() - pos - kRecordHeaderSize) return std::nullopt;
        if (!record_checksum_ok(h, pack.subspan(pos + kRecordHeaderSize, r->stored_size))) return std::nullopt;
        return r;
    }

    void scan_pack(std::uint64_t pack, std::uint64_t length) {
        ++report_.packs;
        const auto reader = packs_->open(pack);
        if (!reader) {
            problem(fmt::format("pack {}: listed but gone", packs_->describe(pack)));
            return;
        }
        std::vector<std::byte> buf(reader->size());
        buf.resize(reader->read_at(0, buf));
        const std::span<const std::byte> bytes(buf);
        if (const std::string bad = bytes.size() < kPackHeaderSize
                                        ? std::string("shorter than a pack header")
                                        : check_pack_header(std::span(reinterpret_cast<const std::uint8_t*>(buf.data()),
                                                                      kPackHeaderSize),
                                                            pack);
            !bad.empty()) {
            problem(fmt::format("pack {}: {}: skipped", packs_->describe(pack), bad));
            report_.damaged_bytes += bytes.size();
            return;
        }
        (void)length;
        std::vector<PendingRow> rows;
        std::size_t pos = kPackHeaderSize, end = kPackHeaderSize;
        while (pos < bytes.size()) {
            const auto rec = record_at(bytes, pos);
            if (!rec) {
                // Damage or an interrupted writer's tail: the next valid record, if any.
                std::size_t next = pos + 1;
                for (; next + kRecordHeaderSize <= bytes.size(); ++next) {
                    const void* m = std::memchr(buf.data() + next, kRecordMagic[0], bytes.size() - next);
                    if (m == nullptr) {
                        next = bytes.size();
                        break;
                    }
                    next = static_cast<std::size_t>(static_cast<const std::byte*>(m) - buf.data());
                    if (record_at(bytes, next)) break;
                }
                if (next + kRecordHeaderSize > bytes.size()) break;  // a tail: never committed
                problem(fmt::format("pack {}: bytes {}..{} hold no valid record (damaged): skipped",
                                    packs_->describe(pack), pos, next));
                report_.damaged_bytes += next - pos;
                pos = next;
                continue;
            }
            const std::size_t size = kRecordHeaderSize + rec->stored_size;
            if (auto row = take_record(pack, pos, *rec, bytes.subspan(pos, size))) rows.push_back(*row);
            pos += size;
            end = pos;
        }
        pending_.emplace_back(std::move(rows), std::pair{pack, static_cast<std::uint64_t>(end)});
        if (catalog_) commit_rows();
    }

    /// The chunk row of a valid record (nullopt if it cannot be indexed),
    /// keeping the catalog records it finds.
    std::optional<PendingRow> take_record(std::uint64_t pack, std::size_t pos, const RecordHeader& h,
                                          std::span<const std::byte> record) {
        ++report_.records;
        const std::string where = fmt::format("pack {}, offset {}", packs_->describe(pack), pos);
        const crypto::Sealer* sealer = ids_.sealer();
        if (h.encrypted != (sealer != nullptr)) {
            problem(fmt::format("{}: {}: skipped", where,
                                sealer ? "an unsealed record in an encrypted store" : "a sealed record in an unencrypted store"));
            return std::nullopt;
        }
        const auto payload = record.subspan(kRecordHeaderSize);
        std::span<const std::byte> form = payload;
        std::uint32_t raw_size = h.raw_size;
        if (sealer) {
            if (payload.size() < sealed_overhead(h)) {
                problem(fmt::format("{}: a sealed record too short to hold a payload: skipped", where));
                return std::nullopt;
            }
            OpenedRecord opened;
            try {
                opened = open_record(*sealer, h, record, plain_);
            } catch (const crypto::AuthenticationError&) {
                problem(fmt::format("{}: chunk {}: its authentication tag does not match: skipped", where, to_hex(h.id)));
                return std::nullopt;
            }
            if (!opened.raw_size || *opened.raw_size > std::numeric_limits<std::uint32_t>::max()) {
                problem(fmt::format("{}: chunk {}: its zstd frame declares no usable raw size: skipped", where,
                                    to_hex(h.id)));
                return std::nullopt;
            }
            raw_size = static_cast<std::uint32_t>(*opened.raw_size);
            form = opened.form;
        }
        if (h.codec == Codec::raw && form.size() == raw_size) take_catalog_record(form, h.id, where);
        return PendingRow{h.id, pack, pos, raw_size, h.stored_size};
    }

    void take_catalog_record(std::span<const std::byte> raw, const ChunkId& id, const std::string& where) {
        const bool settings = raw.size() >= kSettingsRecordMagic.size() &&
                              std::memcmp(raw.data(), kSettingsRecordMagic.data(), kSettingsRecordMagic.size()) == 0;
        const bool piece = raw.size() >= kManifestPieceMagic.size() &&
                           std::memcmp(raw.data(), kManifestPieceMagic.data(), kManifestPieceMagic.size()) == 0;
        if (!settings && !piece) return;
        if (ids_.chunk_id(raw) != id) {
            problem(fmt::format("{}: a catalog record whose bytes are not its id's (damaged): ignored", where));
            return;
        }
        if (piece) {
            if (auto p = parse_manifest_piece(raw)) pieces_[p->uid].push_back({std::move(*p), id});
            return;
        }
        auto s = parse_settings_record(raw);
        if (!s) {
            problem(fmt::format("{}: a settings record that does not parse: ignored", where));
            return;
        }
        if (settings_) {
            if (*s != *settings_)
                throw DamageError(fmt::format("the packs of '{}' hold two different settings records ({} and {}): "
                                              "not one store's packs; nothing was changed",
                                              dir_.string(), to_hex(settings_id_), to_hex(id)));
            return;
        }
        check_settings(*s);
        settings_ = std::move(*s);
        settings_id_ = id;
        make_catalog();
    }

    void check_settings(const std::map<std::string, std::string>& s) {
        auto get = [&](const char* k) {
            const auto it = s.find(k);
            return it == s.end() ? std::string() : it->second;
        };
        const bool encrypted = !get("cipher").empty();
        if (encrypted != (ids_.master != nullptr))
            throw DamageError(fmt::format("the store '{}': its settings record says it is {}encrypted, its directory "
                                          "{} key slots",
                                          dir_.string(), encrypted ? "" : "not ", ids_.master ? "holds" : "holds no"));
        if (ids_.master && (get("store_id") != store_id_ || get("master_check") != ids_.master->check_value()))
            throw DamageError(fmt::format("the store '{}': its settings record is another store's than its key slots'",
                                          dir_.string()));
    }

    void make_catalog() {
        std::vector<std::pair<std::string, std::string>> settings;
        for (const auto& [k, v] : *settings_)
            if (k != "packs" && k.rfind("s3_", 0) != 0) settings.emplace_back(k, v);
        // Where the packs are now (what the record says may be where they were).
        for (auto& kv : pack_location_settings(options_.packs)) settings.emplace_back(std::move(kv));
        if (url_.empty()) {
            const auto db = dir_ / kDbName;
            std::error_code ec;
            if (std::filesystem::exists(std::filesystem::symlink_status(db, ec))) {
                const std::string aside = fmt::format(
                    "{}.before-rebuild-{}", kDbName,
                    std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                        .count());
                for (const char* suffix : {"", "-wal", "-shm"}) {
                    const auto from = dir_ / (std::string(kDbName) + suffix);
                    if (std::filesystem::exists(std::filesystem::symlink_status(from, ec)))
                        std::filesystem::rename(from, dir_ / (aside + suffix));
                }
                report_.moved_aside = (dir_ / aside).string();
            }
        }
        catalog_ = create_catalog(dir_, url_, settings);
        catalog_->upgrade_for_writing();
        // The records keep plain file digests; an encrypted store's catalog
        // keeps them masked (as Store::open wraps it).
        if (ids_.master) catalog_ = mask_file_digests(std::move(catalog_), ids_.master);
        report_.catalog = catalog_->describe();
        commit_rows();
    }

    void commit_rows() {
        for (auto& [rows, size] : pending_) {
            FlushBatch batch;
            batch.chunks = rows;
            batch.pack_sizes = std::span(&size, 1);
            catalog_->commit(batch);
            report_.chunks += rows.size() - batch.raced_chunks;
            report_.duplicates += batch.raced_chunks;
        }
        pending_.clear();
    }

    /// The manifests the pieces make, the newest of each name.
    std::map<std::string, Candidate> assemble() {
        std::map<std::string, Candidate> newest;
        for (auto& [uid, list] : pieces_) {
            // The same record in two packs (a pack gc rewrote, still beside
            // its rewrite) is one piece: its id is its bytes'.
            std::sort(list.begin(), list.end(), [](const Piece& a, const Piece& b) {
                return a.piece.index != b.piece.index ? a.piece.index < b.piece.index : a.id < b.id;
            });
            const auto same = [](const Piece& a, const Piece& b) { return a.id == b.id; };
            list.erase(std::unique(list.begin(), list.end(), same), list.end());
            bool whole = !list.empty() && list.back().piece.last;
            for (std::size_t i = 0; whole && i < list.size(); ++i)
                whole = list[i].piece.index == i && (list[i].piece.last == (i + 1 == list.size()));
            if (!whole) {
                ++report_.unfinished;
                continue;
            }
            Candidate c;
            c.records.assign(settings_id_.begin(), settings_id_.end());
            std::vector<std::uint8_t> stream;
            for (const Piece& p : list) {
                stream.insert(stream.end(), p.piece.body.begin(), p.piece.body.end());
                c.records.insert(c.records.end(), p.id.begin(), p.id.end());
            }
            auto t = decode_trailer(stream);
            if (!t) {
                problem(fmt::format("a manifest's catalog records ({} piece(s), uid {}) do not end with a valid "
                                    "trailer: not recovered",
                                    list.size(), to_hex(list.front().id).substr(0, 16)));
                continue;
            }
            stream.resize(t->second);
            c.ids = std::move(stream);
            c.trailer = std::move(t->first);
            const std::string name = c.trailer.meta.name;
            auto it = newest.find(name);
            if (it == newest.end()) {
                newest.emplace(name, std::move(c));
            } else {
                ++report_.superseded;
                if (c.trailer.time_ns > it->second.trailer.time_ns) it->second = std::move(c);
            }
        }
        pieces_.clear();
        return newest;
    }

    void publish_manifests() {
        std::map<std::string, Candidate> all = assemble();
        std::vector<ManifestDraft> drafts;
        std::size_t bytes = 0;
        auto flush = [&] {
            // One batch per chunking (a batch records one algorithm and profile).
            std::map<std::string, std::vector<ManifestDraft*>> by;
            std::map<std::string, ManifestTrailer*> proto;
            for (std::size_t i = 0; i < drafts.size(); ++i) {
                ManifestDraft& d = drafts[i];
                const auto& t = trailers_[i];
                const std::string k = fmt::format("{}/{}/{}/{}/{}", t.algorithm, t.profile.min_size,
                                                  t.profile.normal_size, t.profile.max_size, t.profile.keyed);
                by[k].push_back(&d);
                proto[k] = &trailers_[i];
            }
            for (auto& [k, list] : by) {
                FlushBatch batch;
                batch.manifests = list;
                batch.algorithm = proto[k]->algorithm;
                batch.profile = proto[k]->profile;
                catalog_->commit(batch);
            }
            report_.manifests += drafts.size();
            drafts.clear();
            trailers_.clear();
            bytes = 0;
        };
        for (auto& [name, c] : all) {
            const std::size_t n = c.ids.size() / 32;
            std::vector<ChunkId> list(n);
            for (std::size_t i = 0; i < n; ++i) std::memcpy(list[i].data(), c.ids.data() + 32 * i, 32);
            IdSet present;
            for (std::size_t i = 0; i < n; i += 4096)
                catalog_->find_present(std::span(list).subspan(i, std::min<std::size_t>(4096, n - i)), present);
            std::size_t missing = 0;
            for (const ChunkId& id : list) if (!present.contains(id)) ++missing;
            if (missing != 0) {
                problem(fmt::format("'{}': {} of its {} chunk(s) are in no pack: not recovered", printable(name),
                                    missing, n));
                continue;
            }
            ManifestDraft d;
            d.meta = c.trailer.meta;
            d.finished = true;
            d.chunks = c.trailer.chunks;
            d.size = c.trailer.size;
            d.digest = c.trailer.digest;
            if (n > 0) d.first = list.front();
            for (std::size_t i = 0; i < c.ids.size(); i += kIdsPerSegment * 32) {
                const std::size_t len = std::min(kIdsPerSegment * 32, c.ids.size() - i);
                d.full.emplace_back(static_cast<std::uint32_t>(i / (kIdsPerSegment * 32)),
                                    std::vector<std::uint8_t>(c.ids.begin() + static_cast<std::ptrdiff_t>(i),
                                                              c.ids.begin() + static_cast<std::ptrdiff_t>(i + len)));
            }
            d.records = std::move(c.records);
            bytes += c.ids.size();
            drafts.push_back(std::move(d));
            trailers_.push_back(std::move(c.trailer));
            if (drafts.size() >= 4096 || bytes >= (std::size_t{64} << 20)) flush();
        }
        if (!drafts.empty()) flush();
    }

    static std::string printable(const std::string& name) {
        std::string out;
        for (const char ch : name) {
            const auto u = static_cast<unsigned char>(ch);
            if (u < 0x20 || u == 0x7f)
                out += fmt::format("\\x{:02x}", u);
            else
                out += ch;
        }
        return out;
    }

    std::filesystem::path dir_;
    const RebuildOptions& options_;
    RebuildReport report_;
    Store::Impl ids_;  // chunk ids and the sealer (an encrypted store's master key)
    std::string store_id_;
    std::string url_;
    std::unique_ptr<PackStorage> packs_;
    std::unique_ptr<Catalog> catalog_;
    std::optional<std::map<std::string, std::string>> settings_;
    ChunkId settings_id_{};
    std::vector<std::pair<std::vector<PendingRow>, std::pair<std::uint64_t, std::uint64_t>>> pending_;
    std::map<std::array<std::uint8_t, 16>, std::vector<Piece>> pieces_;
    std::vector<ManifestTrailer> trailers_;
    std::vector<std::byte> plain_;
};

}  // namespace

RebuildReport rebuild_catalog(const std::filesystem::path& dir, const RebuildOptions& options) {
    RebuildReport r = Rebuilder(dir, options).run();
    // A snapshot's new files are committed under first names, then renamed
    // to their content names (snapshot_names.hpp); the records keep the
    // first names: the contents get their names again, which later
    // snapshots refer to.
    OpenOptions o;
    o.password = options.password;
    try {
        detail::adopt_snapshot_files(Store::open(dir, o));
    } catch (const StoreError& e) {
        r.problems.push_back(fmt::format("snapshot files left under their first names: {}", e.what()));
    }
    return r;
}

}  // namespace cdc::store
