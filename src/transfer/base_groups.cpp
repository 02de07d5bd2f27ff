// SPDX-License-Identifier: Apache-2.0
#include "base_groups.hpp"

#include "protocol.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace cdc::transfer {

std::unique_ptr<BaseGroups> BaseGroups::open(std::unique_ptr<store::StoredList> list, std::size_t max_groups) {
    if (!list || list->chunks() == 0) return nullptr;
    std::unique_ptr<BaseGroups> b(new BaseGroups());
    b->max_groups_ = max_groups;
    b->name_ = list->name();
    b->chunks_ = list->chunks();
    b->list_ = std::move(list);
    b->read_groups();
    return b;
}

void BaseGroups::read_groups() {
    // One pass over the list: the rows' positions, and the groups cut as a
    // client cuts a list (a group may span two rows).
    std::vector<store::ChunkId> group;
    GroupCutter cut;
    std::uint64_t index = 0;
    auto close_group = [&] {
        const store::ChunkId d = group_digest(group);
        Group g{};
        std::memcpy(g.key.data(), d.data(), g.key.size());
        g.first = index - group.size();
        g.count = static_cast<std::uint32_t>(group.size());
        groups_.push_back(g);
        group.clear();
    };
    std::uint32_t seq = 0;
    std::vector<std::uint8_t> blob;
    while (groups_.size() < max_groups_ && list_->next(seq, blob)) {
        rows_.push_back({seq, index});
        // The first rows kept as read: a list of a few rows (most files')
        // is not asked for again when the client's groups point into it
        // (a statement a file over PostgreSQL).
        if (rows_.size() <= kRowsKept) {
            KeptRow& k = kept_[rows_.size() - 1];
            k.row = rows_.size() - 1;
            k.used = ++uses_;
            k.ids = blob;
        }
        for (std::size_t at = 0; at + 32 <= blob.size(); at += 32) {
            store::ChunkId& id = group.emplace_back();
            std::memcpy(id.data(), blob.data() + at, id.size());
            ++index;
            if (cut.ends_after(id)) close_group();
        }
    }
    // At the cap the rest of the list is not read: no group of it would be remembered.
    if (groups_.size() < max_groups_) {
        if (!group.empty()) close_group();
        if (index != chunks_)
            throw store::DamageError(fmt::format("'{}': its chunk list holds {} ids, the manifest says {}", name_,
                                                 index, chunks_));
    }
    std::sort(groups_.begin(), groups_.end(), [](const Group& x, const Group& y) { return x.key < y.key; });
}

BaseGroups::~BaseGroups() = default;

std::optional<std::uint64_t> BaseGroups::find(const store::ChunkId& digest, std::size_t count,
                                               std::uint64_t near) const {
    std::array<std::uint8_t, 16> key;
    std::memcpy(key.data(), digest.data(), key.size());
    auto it = std::lower_bound(groups_.begin(), groups_.end(), key,
                               [](const Group& g, const std::array<std::uint8_t, 16>& k) { return g.key < k; });
    std::optional<std::uint64_t> after, before;  // the nearest on either side of `near`
    for (; it != groups_.end() && it->key == key; ++it) {
        if (it->count != count) continue;
        if (it->first >= near) {
            if (!after || it->first < *after) after = it->first;
        } else if (!before || it->first > *before) {
            before = it->first;
        }
    }
    return after ? after : before;
}

const std::vector<std::uint8_t>* BaseGroups::load_row(std::size_t r) {
    KeptRow* slot = &kept_[0];
    for (KeptRow& k : kept_) {
        if (k.row == r) {
            k.used = ++uses_;
            return &k.ids;
        }
        if (k.used < slot->used) slot = &k;
    }
    if (!list_->row(rows_[r].seq, slot->ids)) return nullptr;  // (the slot's ids are left as they were)
    slot->row = r;
    slot->used = ++uses_;
    return &slot->ids;
}

void BaseGroups::append_ids(std::uint64_t first, std::size_t count, std::vector<store::ChunkId>& out) {
    while (count > 0) {
        // the row holding `first`: the last whose first index is <= first
        auto it = std::upper_bound(rows_.begin(), rows_.end(), first,
                                   [](std::uint64_t i, const Row& r) { return i < r.first; });
        const std::size_t r = static_cast<std::size_t>(it - rows_.begin()) - 1;
        const std::vector<std::uint8_t>* row = it == rows_.begin() ? nullptr : load_row(r);
        const std::size_t at = row ? static_cast<std::size_t>(first - rows_[r].first) * 32 : 0;
        if (!row || at + 32 > row->size())
            throw store::DamageError(fmt::format("'{}': no chunk {} in its list", name_, first));
        const std::size_t n = std::min(count, (row->size() - at) / 32);
        for (std::size_t k = 0; k < n; ++k) {
            store::ChunkId id;
            std::memcpy(id.data(), row->data() + at + k * 32, id.size());
            out.push_back(id);
        }
        first += n;
        count -= n;
    }
}

}  // namespace cdc::transfer
