// SPDX-License-Identifier: Apache-2.0
#include "masked_catalog.hpp"

#include <utility>

namespace cdc::store::detail {

namespace {

class MaskedCatalog final : public Catalog {
public:
    MaskedCatalog(std::unique_ptr<Catalog> inner, std::shared_ptr<const crypto::MasterKey> key)
        : in_(std::move(inner)), key_(std::move(key)) {}

    std::string describe() const override { return in_->describe(); }
    std::unique_ptr<Catalog> connect() const override { return mask_file_digests(in_->connect(), key_); }
    std::unordered_map<std::string, std::string> settings() override { return in_->settings(); }
    void upgrade_for_writing() override { in_->upgrade_for_writing(); }

    void begin_read() override { in_->begin_read(); }
    void end_read() override { in_->end_read(); }
    void cancel_read() noexcept override { in_->cancel_read(); }
    bool reading() const noexcept override { return in_->reading(); }

    std::optional<Location> find_chunk(const ChunkId& id, std::string_view context) override {
        return in_->find_chunk(id, context);
    }
    void find_chunks(std::span<const ChunkId> ids, std::string_view context,
                     const std::function<void(std::size_t, const std::optional<Location>&)>& f) override {
        in_->find_chunks(ids, context, f);
    }
    std::optional<std::uint32_t> chunk_size(const ChunkId& id) override { return in_->chunk_size(id); }
    void chunk_sizes(std::span<const ChunkId> ids, const std::function<void(std::size_t, std::uint32_t)>& f) override {
        in_->chunk_sizes(ids, f);
    }
    void find_present(std::span<const ChunkId> ids, IdSet& found) override { in_->find_present(ids, found); }
    void for_each_chunk(const std::function<void(const ChunkId&, const Location&)>& f,
                        const std::function<void(const ChunkId&, const std::string&)>& damaged,
                        std::string_view context, const std::set<std::uint64_t>* only_packs) override {
        in_->for_each_chunk(f, damaged, context, only_packs);
    }

    std::map<std::uint64_t, std::uint64_t> packs() override { return in_->packs(); }
    std::uint64_t max_pack_id() override { return in_->max_pack_id(); }
    std::vector<std::uint64_t> packs_below(std::uint64_t below, std::size_t limit) override {
        return in_->packs_below(below, limit);
    }
    std::optional<std::uint64_t> pack_length(std::uint64_t pack) override { return in_->pack_length(pack); }

    std::vector<ManifestInfo> list(std::string_view prefix) override {
        auto out = in_->list(prefix);
        for (ManifestInfo& m : out) flip(m.digest, m.name, m.size);
        return out;
    }
    std::optional<ManifestInfo> find(std::string_view name) override {
        auto m = in_->find(name);
        if (m) flip(m->digest, m->name, m->size);
        return m;
    }
    void find_many(std::span<const std::string> names,
                   const std::function<void(std::size_t, std::optional<ManifestInfo>)>& f) override {
        in_->find_many(names, [&](std::size_t i, std::optional<ManifestInfo> m) {
            if (m) flip(m->digest, m->name, m->size);
            f(i, std::move(m));
        });
    }
    std::optional<StoredFile> stored_file(std::string_view name, std::optional<std::uint64_t> size,
                                          std::string_view context) override {
        return plain(in_->stored_file(name, size, context));
    }
    std::optional<StoredFile> stored_file(std::int64_t row) override { return plain(in_->stored_file(row)); }
    void stored_files_with_lists(
        std::span<const std::string> names, std::uint64_t max_chunks,
        const std::function<void(std::size_t, const std::optional<StoredFile>&, ListReader*)>& f) override {
        in_->stored_files_with_lists(names, max_chunks,
                                     [&](std::size_t i, const std::optional<StoredFile>& file, ListReader* list) {
                                         f(i, plain(file), list);
                                     });
    }
    std::vector<StoredFile> files_starting_with(const ChunkId& first, std::size_t limit,
                                                std::optional<std::uint64_t> size,
                                                std::optional<std::uint64_t> chunks) override {
        auto out = in_->files_starting_with(first, limit, size, chunks);
        for (StoredFile& f : out) flip(f.digest, f.name, f.size);
        return out;
    }
    std::vector<std::vector<StoredFile>> files_starting_with_each(std::span<const FirstQuery> queries,
                                                                  std::size_t limit) override {
        auto out = in_->files_starting_with_each(queries, limit);
        for (auto& files : out)
            for (StoredFile& f : files) flip(f.digest, f.name, f.size);
        return out;
    }
    bool round_trips() const override { return in_->round_trips(); }
    bool still_there(const StoredFile& file) override {
        StoredFile masked = file;
        flip(masked.digest, masked.name, masked.size);
        return in_->still_there(masked);
    }
    std::unique_ptr<ListReader> read_list(std::int64_t row) override { return in_->read_list(row); }
    std::unique_ptr<ListReader> read_list_if_there(const StoredFile& file) override {
        StoredFile masked = file;
        flip(masked.digest, masked.name, masked.size);
        return in_->read_list_if_there(masked);
    }
    void rename(std::span<const Move> moves, std::string_view store_name) override {
        // The mask is bound to the name: each digest is unmasked under its
        // old name and masked again under its new one.
        std::vector<Move> out(moves.begin(), moves.end());
        for (Move& m : out) {
            const auto stored = in_->find(m.from);
            if (!stored) continue;  // (the inner catalog names it)
            ChunkId d = m.digest ? *m.digest : stored->digest;
            if (!m.digest) flip(d, m.from, stored->size);
            flip(d, m.to, stored->size);
            m.digest = d;
        }
        in_->rename(out, store_name);
    }
    void remove(std::span<const std::string> names, std::string_view store_name) override {
        in_->remove(names, store_name);
    }
    void for_each_manifest(
        const std::function<void(const std::string&, std::uint64_t, std::uint64_t, ListReader&)>& f) override {
        in_->for_each_manifest(f);
    }
    std::uint64_t pending_manifests() override { return in_->pending_manifests(); }

    void commit(FlushBatch& batch) override {
        // The drafts' digests masked for the flush, plain again after it
        // (the writer compares and reuses them), whatever the flush did.
        for (ManifestDraft* m : batch.manifests) flip(m->digest, m->meta.name, m->size);
        struct Restore {
            MaskedCatalog& c;
            FlushBatch& b;
            ~Restore() {
                for (ManifestDraft* m : b.manifests) c.flip(m->digest, m->meta.name, m->size);
            }
        } restore{*this, batch};
        in_->commit(batch);
    }

    GcSweep sweep() override { return in_->sweep(); }
    std::map<std::uint64_t, std::uint64_t> live_bytes() override { return in_->live_bytes(); }
    void drop_packs(const std::set<std::uint64_t>& packs) override { in_->drop_packs(packs); }
    void move_chunks(std::span<const std::pair<std::uint64_t, std::uint64_t>> pack_sizes,
                     std::span<const PendingRow> moved, std::span<const std::uint64_t> dropped) override {
        in_->move_chunks(pack_sizes, moved, dropped);
    }
    void compact() override { in_->compact(); }
    Totals totals() override { return in_->totals(); }
    std::vector<std::string> check(bool full) override { return in_->check(full); }
    std::unique_ptr<HostsLock> hosts_lock() const override { return in_->hosts_lock(); }
    std::function<std::uint64_t()> pack_ids() const override { return in_->pack_ids(); }
    void pack_ids_above(std::uint64_t id) override { in_->pack_ids_above(id); }
    bool gc_marks() const override { return in_->gc_marks(); }
    std::uint64_t snapshot_commits() override { return in_->snapshot_commits(); }
    std::optional<std::uint64_t> gc_mark(std::span<const std::string> unreferenced, std::uint64_t listed_at) override {
        return in_->gc_mark(unreferenced, listed_at);
    }
    bool gc_marked() override { return in_->gc_marked(); }
    bool gc_wait(double seconds, double timeout) override { return in_->gc_wait(seconds, timeout); }
    GcSweep gc_sweep(std::span<const std::string> named, bool named_complete, std::span<const std::string> dead_files,
                     std::uint64_t& quiet) override {
        return in_->gc_sweep(named, named_complete, dead_files, quiet);
    }

private:
    void flip(ChunkId& digest, std::string_view name, std::uint64_t size) const noexcept {
        key_->mask_digest(std::span<std::uint8_t, 32>(digest), name, size);
    }
    std::optional<StoredFile> plain(std::optional<StoredFile> f) const noexcept {
        if (f) flip(f->digest, f->name, f->size);
        return f;
    }

    std::unique_ptr<Catalog> in_;
    std::shared_ptr<const crypto::MasterKey> key_;
};

}  // namespace

std::unique_ptr<Catalog> mask_file_digests(std::unique_ptr<Catalog> inner,
                                           std::shared_ptr<const crypto::MasterKey> key) {
    return std::make_unique<MaskedCatalog>(std::move(inner), std::move(key));
}

}  // namespace cdc::store::detail
