// SPDX-License-Identifier: Apache-2.0
// The ingest door (ingest.hpp): its state (Ingest::Impl, also put_file's),
// the public door over a Writer, and the stored lists it hands out.
#include "ingest.hpp"

#include "ingest_impl.hpp"
#include "writer_impl.hpp"

#include <fmt/format.h>

namespace cdc::store {

using namespace detail;

namespace {

/// A committed file's list in a read view of a connection of its own
/// (leased from the store: given back when the list is dropped).
class CatalogList final : public StoredList {
public:
    /// nullptr if `find` finds no committed file in the new view.
    static std::unique_ptr<StoredList> open(Store::Impl::Lease catalog,
                                            const std::function<std::optional<StoredFile>(Catalog&)>& find) {
        std::unique_ptr<CatalogList> l(new CatalogList(std::move(catalog)));
        l->catalog_->begin_read();
        const auto file = find(*l->catalog_);
        if (!file) return nullptr;
        l->file_ = *file;
        l->list_ = l->catalog_->read_list(file->row);
        return l;
    }
    /// `file` (found outside a view) in a new view, nullptr if the view
    /// no longer holds it (Catalog::read_list_if_there; its first row read
    /// to tell).
    static std::unique_ptr<StoredList> open_known(Store::Impl::Lease catalog, const StoredFile& file) {
        std::unique_ptr<CatalogList> l(new CatalogList(std::move(catalog)));
        l->catalog_->begin_read();
        l->file_ = file;
        l->list_ = l->catalog_->read_list_if_there(file);
        if (!l->list_->next(l->first_seq_, l->first_)) return nullptr;  // (a stored file has a row or more)
        l->first_pending_ = true;
        return l;
    }
    ~CatalogList() override {
        list_.reset();
        catalog_->cancel_read();
    }
    const std::string& name() const noexcept override { return file_.name; }
    std::uint64_t chunks() const noexcept override { return file_.chunks; }
    bool next(std::uint32_t& seq, std::vector<std::uint8_t>& ids) override {
        if (first_pending_) {
            first_pending_ = false;
            seq = first_seq_;
            ids = std::move(first_);
            return true;
        }
        return list_->next(seq, ids);
    }
    bool row(std::uint32_t seq, std::vector<std::uint8_t>& ids) override { return list_->row(seq, ids); }

private:
    explicit CatalogList(Store::Impl::Lease c) : catalog_(std::move(c)) {}
    Store::Impl::Lease catalog_;
    StoredFile file_;
    std::unique_ptr<ListReader> list_;
    // (open_known: the first row, read to tell the file is there)
    bool first_pending_ = false;
    std::uint32_t first_seq_ = 0;
    std::vector<std::uint8_t> first_;
};

}  // namespace

// ---------------------------------------------------------------- Ingest::Impl

Ingest::Impl::~Impl() = default;

void Ingest::Impl::start(const std::string& name) {
    base_.reset();
    own_ = {};
    look_similar_ = false;
    name_ = name;
    size_.reset();
}

Catalog& Ingest::Impl::base_catalog() {
    if (!base_catalog_) base_catalog_ = w.catalog->connect();
    return *base_catalog_;
}

void Ingest::Impl::compare_with_stored(std::optional<std::uint64_t> size, std::uint64_t min_chunks) {
    base_.reset();
    size_ = size;
    base_ = BaseList::open(base_catalog(), *w.store.packs, w.store.sealer(), name_, min_chunks, &own_);
    look_similar_ = !base_;
}

bool Ingest::Impl::find_similar(const ChunkId& first) {
    if (!look_similar_) return false;
    look_similar_ = false;
    base_ = BaseList::open_similar(base_catalog(), *w.store.packs, w.store.sealer(), first, size_, name_);
    return base_ != nullptr;
}

void Ingest::Impl::leave_base() {
    const std::unique_ptr<BaseList> b = std::move(base_);
    flush_read_back();  // (nothing is queued while the base matches: a no-op)
    b->read_matched([&](std::span<const std::byte> block) { whole_.update(block); });
}

std::optional<Ingest::Impl::BaseMatch> Ingest::Impl::end_base(std::uint64_t size) {
    look_similar_ = false;
    if (!base_) return std::nullopt;
    if (base_->complete() && base_->size() == size) {
        // The stored file's chunks, all of them: its bytes, its digest.
        BaseMatch m{base_->digest(), base_->name() == name_, base_->manifest_row(),
                    base_->mode(),   base_->mtime_ns(),      base_->chunk_count()};
        base_.reset();
        return m;
    }
    leave_base();
    return std::nullopt;
}

std::unique_ptr<StoredList> Ingest::Impl::own_list() const {
    // (what compare_with_stored's look found: no second look by name, and
    // none at all when there is no stored file of that name)
    if (own_.done) {
        if (!own_.file) return nullptr;
        return CatalogList::open_known(w.store.lease_connection(), *own_.file);
    }
    const std::string& name = name_;
    return CatalogList::open(w.store.lease_connection(), [&name](Catalog& c) { return c.stored_file(name); });
}

std::unique_ptr<StoredList> Ingest::Impl::base_list() const {
    if (!base_) return nullptr;
    const std::int64_t row = base_->manifest_row();
    return CatalogList::open(w.store.lease_connection(), [row](Catalog& c) { return c.stored_file(row); });
}

OrderedDecoder& Ingest::Impl::read_back() {
    if (!read_back_) {
        // (made at first use: a stream of small files never needs it)
        read_catalog_ = w.catalog->connect();
        packs_ = std::make_unique<PackFiles>(*w.store.packs);
        pool_ = std::make_unique<TaskPool>(2);
        // Blocks of 256 KiB: a list's chunks (a few MiB) keep both threads busy.
        read_back_ = std::make_unique<OrderedDecoder>(
            *pool_, "",
            [this](OrderedDecoder::Delivery& d) {
                const void* token = d.keep();
                whole_.update_kept(d.bytes, [this, token] { read_back_->release(token); });
            },
            OrderedDecoder::Options{std::size_t{256} << 10, 6, 6, w.store.sealer()});
    }
    return *read_back_;
}

void Ingest::Impl::flush_read_back() {
    if (read_back_) read_back_->finish();
}

void Ingest::Impl::hash(std::span<const std::byte> bytes) { read_back().add_bytes(bytes); }

std::size_t Ingest::Impl::hash_stored(std::span<const ChunkId> ids,
                                      const std::function<void(std::size_t, std::uint32_t)>& sized) {
    OrderedDecoder& decoder = read_back();
    // The ids looked up together (a statement per batch over a network), in
    // a view only for more than one statement (a view costs two more round
    // trips; the writer's session keeps gc from the chunks meanwhile).
    std::optional<ReadView> view;
    if (ids.size() > Catalog::kFindChunksBatch) view.emplace(*read_catalog_);
    std::size_t found = 0;
    bool ended = false;  // at the first id not found
    read_catalog_->find_chunks(ids, {}, [&](std::size_t i, const std::optional<Location>& loc) {
        if (ended || !loc) {
            ended = true;
            return;
        }
        sized(i, loc->raw_size);
        decoder.add(ids[i], *loc, *packs_);
        ++found;
    });
    if (view) view->end();
    return found;
}

Digest Ingest::Impl::finish_hash() {
    flush_read_back();
    return whole_.finish();
}

void Ingest::Impl::drop() {
    look_similar_ = false;
    base_.reset();
    if (read_back_) {
        try {
            read_back_->finish();
        } catch (...) {
            // the file is dropped: what could not be read does not matter
        }
    }
    whole_.end_message({});  // drops this file's digest; the next file's starts afresh
}

// ---------------------------------------------------------------- Ingest

Ingest::Ingest(Writer& writer) : impl_(std::make_unique<Impl>(*writer.impl_)) {}
Ingest::Ingest(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Ingest::~Ingest() = default;

std::unique_ptr<StoredList> Ingest::stored_list(const Store& store, std::string_view name) {
    return CatalogList::open(store.impl_->lease_connection(), [name](Catalog& c) { return c.stored_file(name); });
}

std::unique_ptr<StoredList> Ingest::own_list() const { return impl_->own_list(); }

void Ingest::begin(const FileMeta& meta) {
    impl_->w.check_usable();
    impl_->w.begin(meta);
    impl_->start(meta.name);
}

void Ingest::compare_with_stored(std::optional<std::uint64_t> size, std::uint64_t min_chunks) {
    impl_->compare_with_stored(size, min_chunks);
}
void Ingest::compare_with_similar() { impl_->compare_with_similar(); }

bool Ingest::find_similar(const ChunkId& first) { return impl_->find_similar(first); }
bool Ingest::follows_base(std::span<const ChunkId> ids) { return impl_->follows_base(ids); }
bool Ingest::follows_base(std::span<const Digest> ids) { return impl_->follows_base(ids); }
std::unique_ptr<StoredList> Ingest::base_list() const { return impl_->base_list(); }

void Ingest::hash(std::span<const std::byte> bytes) { impl_->hash(bytes); }
void Ingest::hash_kept(std::span<const std::byte> bytes, std::function<void()> done) {
    impl_->hash_kept(bytes, std::move(done));
}
std::size_t Ingest::hash_stored(std::span<const ChunkId> ids,
                                const std::function<void(std::size_t, std::uint32_t)>& sized) {
    return impl_->hash_stored(ids, sized);
}

void Ingest::list(std::span<const ChunkId> ids, std::span<const std::uint32_t> sizes) {
    impl_->w.check_usable();
    impl_->w.add_read_chunks(ids, sizes);
    // A list of chunks the store holds stores nothing, so nothing else would
    // flush: an unchanged 4 GiB file's 512k ids would wait for its end.
    if (impl_->w.flush_due()) impl_->w.flush();
}

std::uint64_t Ingest::list_stored(std::span<const ChunkId> ids) {
    impl_->w.check_usable();
    const std::uint64_t bytes = impl_->w.add_chunks(ids);
    if (impl_->w.flush_due()) impl_->w.flush();
    return bytes;
}

Ingest::Result Ingest::digest(std::uint64_t size) {
    Result r;
    if (const auto b = impl_->end_base(size)) {
        r.digest = b->digest;
        (b->same_name ? r.unchanged : r.identical) = true;
        return r;
    }
    r.digest = id_of(impl_->finish_hash());
    return r;
}

void Ingest::end(std::uint64_t size, const ChunkId& digest) {
    impl_->w.check_usable();
    impl_->w.finish(digest, size);
}

void Ingest::abandon() {
    impl_->drop();
    impl_->w.abandon();
}

}  // namespace cdc::store
