// SPDX-License-Identifier: Apache-2.0
// Store::verify: the database's own check, the packs against their committed
// lengths, every indexed record (header, sizes, checksum; with full, the
// decompressed bytes against the id), and every manifest against the index.
#include "store_impl.hpp"
#include "../common/task_pool.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc::store {

using namespace detail;

namespace {
constexpr std::uint64_t kTaskBytes = std::uint64_t{8} << 20;

struct Row {
    ChunkId id;
    Location loc;
};
}  // namespace

VerifyReport Store::verify(const VerifyOptions& options) const {
    SharedLockGuard guard(impl_->lock);
    Catalog& catalog = *impl_->catalog;
    VerifyReport report;
    ProgressTicker ticker(options.progress);

    for (const std::string& line : catalog.check(options.full))
        report.damage.push_back({fmt::format("database '{}': {}", catalog.describe(), line)});
    ReadView read(catalog);

    // Packs: present, not shorter than committed, with a valid header.
    const std::map<std::uint64_t, std::uint64_t> packs = catalog.packs();  // id -> committed size
    std::set<std::uint64_t> bad_packs;
    std::uint64_t total_bytes = 0;
    const PackStorage& storage = *impl_->packs;
    const crypto::Sealer* sealer = impl_->sealer();
    const std::map<std::uint64_t, std::uint64_t> present = storage.list();
    for (const auto& [id, committed] : packs) {
        std::unique_ptr<PackReader> pack;
        try {
            pack = storage.open(id);
        } catch (const StoreError& e) {
            report.damage.push_back({fmt::format("pack {:08} cannot be read: {}", id, e.what())});
            bad_packs.insert(id);
            continue;
        }
        if (!pack) {
            report.damage.push_back({fmt::format("pack {:08} ('{}') is missing", id, storage.describe(id))});
            bad_packs.insert(id);
            continue;
        }
        const std::uint64_t on_disk = pack->size();
        if (on_disk < committed)
            report.damage.push_back({fmt::format("pack {:08} is truncated: {} bytes on disk, {} committed", id, on_disk,
                                                 committed)});
        else if (on_disk > committed)
            report.notes.push_back({fmt::format("pack {:08}: {} bytes beyond its committed length (an interrupted "
                                                "writer's; cut off by the next writer or gc)",
                                                id, on_disk - committed)});
        std::array<std::byte, kPackHeaderSize> h{};
        const std::size_t got = pack->read_at(0, h);
        const std::string bad =
            check_pack_header(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(h.data()), got), id);
        if (!bad.empty()) report.damage.push_back({fmt::format("pack {:08}: {}", id, bad)});
        total_bytes += committed;
        ++report.packs;
    }
    for (const auto& [id, size] : present) {
        (void)size;
        if (!packs.count(id))
            report.notes.push_back({fmt::format("pack {} is not in the index (a running writer's, or an "
                                                "interrupted writer's or gc's: gc deletes it)",
                                                storage.describe(id))});
    }

    // Records, in pack order, checked by the pool.
    std::mutex mutex;
    std::unordered_map<ChunkId, std::string, IdHash> damaged;
    std::atomic<std::uint64_t> checked_bytes{0};
    std::atomic<std::uint64_t> checked_chunks{0};
    {
        PackFiles files(storage);
        std::vector<std::unique_ptr<std::vector<Row>>> batches;
        TaskPool pool;
        const bool full = options.full;
        auto run_batch = [&](std::vector<Row>* rows, const PackReader* pack) {
            pool.submit([&, rows, pack] {
                thread_local std::vector<std::byte> buf;
                thread_local std::vector<std::byte> raw;
                for (const Row& r : *rows) {
                    try {
                        if (full) {
                            raw.resize(r.loc.raw_size);
                            read_chunk_into(*pack, r.loc, r.id, buf, raw, "", sealer);
                            if (impl_->chunk_id(raw) != r.id)
                                throw DamageError(chunk_problem("", r.id, r.loc, "its bytes have another BLAKE3"));
                        } else {
                            read_record(*pack, r.loc, r.id, buf, "", sealer);
                        }
                    } catch (const DamageError& e) {
                        std::lock_guard lock(mutex);
                        damaged.emplace(r.id, e.what());
                    }
                    checked_bytes.fetch_add(kRecordHeaderSize + r.loc.stored_size);
                    checked_chunks.fetch_add(1);
                }
            });
        };
        auto batch = std::make_unique<std::vector<Row>>();
        std::uint64_t batch_bytes = 0;
        std::uint64_t batch_pack = 0;
        auto flush_batch = [&] {
            if (batch->empty()) return;
            if (files.needs_room(batch_pack)) {  // the batches queued read the packs open
                pool.drain();
                batches.clear();
                files.close_all();
            }
            run_batch(batch.get(), &files.reader(batch_pack));
            batches.push_back(std::move(batch));
            batch = std::make_unique<std::vector<Row>>();
            batch_bytes = 0;
            // Bounded memory: wait when many batches are queued.
            if (batches.size() >= 64) {
                pool.drain();
                batches.clear();
            }
            ticker.tick([&](Progress& p) {
                p.bytes_done = checked_bytes.load();
                p.bytes_total = total_bytes;
            });
        };
        catalog.for_each_chunk(
            [&](const ChunkId& id, const Location& loc) {
                if (!packs.count(loc.pack) || bad_packs.count(loc.pack)) {
                    std::lock_guard lock(mutex);
                    damaged.emplace(id, chunk_problem("", id, loc, packs.count(loc.pack) ? "its pack is missing"
                                                                                        : "its pack is not in the index"));
                    return;
                }
                if (loc.pack != batch_pack || batch_bytes >= kTaskBytes) {
                    flush_batch();
                    batch_pack = loc.pack;
                }
                batch_bytes += kRecordHeaderSize + loc.stored_size;
                batch->push_back({id, loc});
            },
            [&](const ChunkId& id, const std::string& what) {
                std::lock_guard lock(mutex);
                damaged.emplace(id, what);
            });
        flush_batch();
        pool.drain();
    }
    report.chunks_checked = checked_chunks.load();
    report.bytes_checked = checked_bytes.load();

    // Manifests: every listed chunk indexed and undamaged, sizes add up.
    // Their ids are looked up in batches across manifests (one round trip
    // each for a shared catalog, whose manifests are mostly small files of
    // one chunk); a manifest is judged once all of its ids were looked up.
    std::unordered_map<ChunkId, std::vector<std::string>, IdHash> needed_by;
    {
        struct Listing {
            std::string name;
            std::uint64_t size = 0, count = 0;
            std::uint64_t n = 0, sum = 0;  // looked up so far
            bool sizes_known = true;       // (a damaged row's size is not one)
        };
        std::deque<Listing> listings;  // not judged yet; the last may be still being read
        std::vector<std::pair<Listing*, ChunkId>> queued;
        std::vector<ChunkId> ids;
        const auto needed = [&](const Listing& m, const ChunkId& id) {
            auto& v = needed_by[id];
            if (v.empty() || v.back() != m.name) v.push_back(m.name);
        };
        const auto listed = [&](Listing& m, const ChunkId& id, const std::optional<Location>& loc) {
            if (!loc) {
                report.damage.push_back(
                    {fmt::format("'{}': chunk {} (number {}) is missing from the index", m.name, to_hex(id), m.n)});
            } else {
                m.sum += loc->raw_size;
                if (damaged.count(id)) needed(m, id);
            }
            ++m.n;
        };
        const auto judge = [&](const Listing& m) {
            if (m.n != m.count)
                report.damage.push_back(
                    {fmt::format("'{}': {} chunks listed, the manifest says {}", m.name, m.n, m.count)});
            if (m.sizes_known && m.sum != m.size)
                report.damage.push_back({fmt::format("'{}': its chunks hold {} bytes, the manifest says {}", m.name,
                                                     m.sum, m.size)});
            ++report.manifests;
        };
        // Looks the queued ids up; then judges the listings read whole.
        const auto look_up = [&](bool last_read_whole) {
            ids.clear();
            for (const auto& q : queued) ids.push_back(q.second);
            std::size_t next = 0;
            try {
                catalog.find_chunks(ids, {}, [&](std::size_t i, const std::optional<Location>& loc) {
                    listed(*queued[i].first, ids[i], loc);
                    next = i + 1;
                });
            } catch (const DamageError&) {
                // From the damaged row on, one at a time.
                for (std::size_t i = next; i < ids.size(); ++i) {
                    Listing& m = *queued[i].first;
                    std::optional<Location> loc;
                    try {
                        loc = catalog.find_chunk(ids[i]);
                    } catch (const DamageError& e) {
                        damaged.emplace(ids[i], e.what());  // (found so by the records' pass already)
                        needed(m, ids[i]);
                        m.sizes_known = false;
                        ++m.n;
                        continue;
                    }
                    listed(m, ids[i], loc);
                }
            }
            queued.clear();
            while (listings.size() > (last_read_whole ? 0u : 1u)) {
                judge(listings.front());
                listings.pop_front();
            }
        };
        std::vector<std::uint8_t> blob;
        std::uint32_t seq = 0;
        catalog.for_each_manifest([&](const std::string& name, std::uint64_t size, std::uint64_t count,
                                      ListReader& list) {
            listings.push_back(Listing{name, size, count});
            Listing& m = listings.back();
            while (list.next(seq, blob)) {
                if (blob.size() % 32 != 0)
                    report.damage.push_back({fmt::format("'{}': a chunk list segment of {} bytes", name, blob.size())});
                for (std::size_t i = 0; i + 32 <= blob.size(); i += 32) {
                    queued.emplace_back(&m, to_id(std::span(blob).subspan(i, 32), name));
                    if (queued.size() >= Catalog::kFindChunksBatch) look_up(false);
                }
            }
            if (queued.size() >= Catalog::kFindChunksBatch / 4) look_up(true);
        });
        look_up(true);
        if (const std::uint64_t pending = catalog.pending_manifests(); pending > 0)
            report.notes.push_back({fmt::format("{} pending manifest(s) of interrupted writers (gc drops them)",
                                                pending)});
    }
    read.end();
    // A store holds every file put into it: others reading it is worth a note
    // (stores made before init made them 0700; a group share is deliberate).
    if (struct stat st {}; ::stat(impl_->dir.c_str(), &st) == 0 && (st.st_mode & 0007) != 0)
        report.notes.push_back({fmt::format("the store is open to every user (mode {:04o}): anyone may read the files "
                                            "put into it; chmod -R go-rwx '{}' (or o-rwx to keep a group share)",
                                            st.st_mode & 07777, impl_->dir.string())});
    for (const auto& [id, what] : damaged) {
        std::string line = what;
        if (auto it = needed_by.find(id); it != needed_by.end()) {
            line.append("; needed by ");
            for (std::size_t i = 0; i < it->second.size(); ++i) {
                if (i) line.append(", ");
                line.append("'").append(it->second[i]).append("'");
            }
        } else {
            line.append("; no file needs it");
        }
        report.damage.push_back({std::move(line)});
    }
    return report;
}

}  // namespace cdc::store
