// SPDX-License-Identifier: Apache-2.0
// Store::ReadSession's state: the store's lock, one read view of its
// catalog, and the files the session was told it will read, looked up a
// batch at a time (read_chunks.cpp: read_file; get.cpp: get_tree).
#pragma once

#include "store_impl.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cdc::store {

struct Store::ReadSession::State {
    // (in this order: the view ends before the lock is let go)
    detail::SharedLockGuard guard;
    Store::Impl& impl;
    detail::Catalog& catalog;
    std::optional<detail::ReadView> view;
    std::chrono::steady_clock::time_point viewed_at = std::chrono::steady_clock::now();  // (refresh())
    State(detail::StoreLock& lock, Store::Impl& i) : guard(lock), impl(i), catalog(*i.catalog) {
        view.emplace(catalog);
    }

    // The files expected (expect()): the next names, up to a window, and a
    // batch of them looked up in the current view.
    static constexpr std::size_t kBatchFiles = 64;
    static constexpr std::uint64_t kBatchIds = 4 * detail::Catalog::kFindChunksBatch;  // ~1 MiB of locations
    static constexpr std::uint64_t kListedChunks = 1024;  // a larger file is read on its own
    struct Ready {
        std::optional<detail::StoredFile> file;
        bool listed = false;  // its locations are here (else read on its own)
        std::vector<std::pair<ChunkId, detail::Location>> chunks;
        std::string damage;  // a chunk of its list not in the index
    };
    std::function<std::optional<std::string>()> next_name;
    std::deque<std::string> upcoming;
    std::unordered_map<std::string, Ready> ready;
    // The batch looked up, in order, and how far into it the reads came (a
    // renewal puts the rest back in front of the upcoming names).
    std::vector<std::string> batch;
    std::unordered_map<std::string, std::size_t> batch_at;
    std::size_t batch_read = 0;

    /// Drops what was looked up (for a new view: gc may move those chunks
    /// once no view sees them); `requeue`: the names not read yet go back
    /// in front of the upcoming ones, for the next batch.
    void drop_batch(bool requeue) {
        if (requeue)
            for (std::size_t k = batch.size(); k > batch_read; --k) upcoming.push_front(std::move(batch[k - 1]));
        batch.clear();
        batch_at.clear();
        batch_read = 0;
        ready.clear();
    }

    /// `name` as looked up in this view with the files expected: null if
    /// it is not (it was not expected, or not in its turn: read it on its
    /// own). A miss looks up the batch that starts at `name` if it is among
    /// the next names expected (the names before it were not read: dropped).
    const Ready* lookup(std::string_view name) {
        auto it = ready.find(std::string(name));
        if (it == ready.end() && fetch_from(name)) it = ready.find(std::string(name));
        if (it == ready.end()) return nullptr;
        batch_read = std::max(batch_read, batch_at.at(it->first) + 1);
        return &it->second;
    }

    /// lookup() for a caller that reads what it finds: the file with its
    /// chunks' places, or null when the caller reads the file on its own
    /// (not looked up, or too many chunks to be listed); NotFoundError and
    /// DamageError as that read would throw (`shown`: the name in messages).
    const Ready* listed(std::string_view name, std::string_view shown) {
        const Ready* r = lookup(name);
        if (!r || (r->file && !r->listed)) return nullptr;
        if (!r->file)
            throw NotFoundError(fmt::format("no file named '{}' in the store '{}'", shown, impl.dir.string()));
        if (!r->damage.empty()) throw DamageError(r->damage);
        return r;
    }

    bool fetch_from(std::string_view name) {
        while (next_name && upcoming.size() < kBatchFiles) {
            auto n = next_name();
            if (!n) {
                next_name = nullptr;
                break;
            }
            upcoming.push_back(std::move(*n));
        }
        const auto it = std::find(upcoming.begin(), upcoming.end(), name);
        if (it == upcoming.end()) return false;
        upcoming.erase(upcoming.begin(), it);
        drop_batch(false);  // (read to its end, or left behind by the reads)
        std::vector<std::string>& names = batch;
        while (names.size() < kBatchFiles && !upcoming.empty()) {
            names.push_back(std::move(upcoming.front()));
            upcoming.pop_front();
            batch_at.try_emplace(names.back(), names.size() - 1);
        }
        std::vector<std::pair<Ready*, std::size_t>> wanted;  // whose chunk it is, and its index in the file
        std::vector<ChunkId> ids;
        std::vector<std::uint8_t> row;
        std::uint32_t seq = 0;
        try {
            using File = std::optional<detail::StoredFile>;
            catalog.stored_files_with_lists(
                names, kListedChunks, [&](std::size_t i, const File& file, detail::ListReader* list) {
                    const auto [at, added] = ready.try_emplace(names[i]);
                    if (!added) return;  // (a name twice in the batch: its one entry serves both)
                    Ready& r = at->second;
                    r.file = file;
                    if (!file || !list || ids.size() + file->chunks > kBatchIds) return;
                    const std::size_t first = ids.size();
                    while (list->next(seq, row))
                        for (std::size_t k = 0; k + 32 <= row.size(); k += 32) {
                            ChunkId id;
                            std::memcpy(id.data(), row.data() + k, id.size());
                            ids.push_back(id);
                            wanted.emplace_back(&r, ids.size() - 1 - first);
                        }
                    r.listed = true;
                });
            catalog.find_chunks(ids, {}, [&](std::size_t i, const std::optional<detail::Location>& loc) {
                auto& [r, index] = wanted[i];
                if (!r->damage.empty()) return;
                if (!loc) {
                    r->damage = fmt::format("'{}': chunk {} (number {} of the file) is missing from the index",
                                            r->file->name, to_hex(ids[i]), index);
                    return;
                }
                r->chunks.emplace_back(ids[i], *loc);
            });
        } catch (const DamageError&) {
            // (a damaged row: each file of the batch read on its own, where
            // the damage is named for the file it belongs to)
            drop_batch(false);
        }
        return ready.count(std::string(name)) != 0;
    }
};

}  // namespace cdc::store
