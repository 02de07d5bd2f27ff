// SPDX-License-Identifier: Apache-2.0
// Store::read_chunks: many chunks by id from one snapshot, under one lock,
// with one index statement and the pack files kept open (read_chunk does all
// of that per call); in raw form decoded on a pool, handed over in order.
// The transfer service reads the chunks a client wants (pull) and the chunks
// it must hash for a whole-file digest (push) this way.
#include "codec.hpp"
#include "ordered_decoder.hpp"
#include "read_session.hpp"
#include "store_impl.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

namespace cdc::store {

using namespace detail;

void Store::read_chunks(std::span<const ChunkId> ids, ChunkForm form,
                        const std::function<void(std::size_t, const StoredChunk&)>& f) const {
    if (ids.empty()) return;
    SharedLockGuard guard(impl_->lock);
    Catalog& catalog = *impl_->catalog;
    ReadView read(catalog);
    PackFiles files(*impl_->packs);
    std::vector<std::byte> record;
    StoredChunk out;
    // Raw: decoded on a pool (ordered_decoder.hpp), handed over in order.
    std::optional<OrderedDecoder> decoder;
    std::size_t next = 0;
    if (form == ChunkForm::raw) {
        if (!impl_->decode_pool) impl_->decode_pool = std::make_unique<TaskPool>(2);
        OrderedDecoder::Options options;
        options.sealer = impl_->sealer();
        decoder.emplace(*impl_->decode_pool, "", [&](OrderedDecoder::Delivery& d) {
            std::size_t at = 0;
            for (const Location& l : d.locs) {
                out.raw_size = l.raw_size;
                out.codec = Codec::raw;
                out.bytes.assign(d.bytes.begin() + static_cast<std::ptrdiff_t>(at),
                                 d.bytes.begin() + static_cast<std::ptrdiff_t>(at + l.raw_size));
                at += l.raw_size;
                f(next++, out);
            }
        }, options);
    }
    // (a statement per batch of ids over a network)
    catalog.find_chunks(ids, {}, [&](std::size_t i, const std::optional<Location>& loc) {
        const ChunkId& id = ids[i];
        if (!loc)
            throw NotFoundError(fmt::format("chunk {} is not in the store '{}'", to_hex(id), impl_->dir.string()));
        if (decoder) {
            decoder->add(id, *loc, files);
            return;
        }
        out.raw_size = loc->raw_size;
        // (Stored form: a sealed record's payload opened, its tag checked.)
        out.codec = stored_payload(read_record_bytes(files.read(loc->pack), *loc, record), *loc, id, out.bytes, "",
                                   impl_->sealer());
        f(next++, out);
    });
    if (decoder) decoder->finish();
    read.end();
}

namespace {

/// Decodes a file's chunks on the store's pool and hands its bytes to f in
/// order: `feed(add)` calls add(id, location) for each chunk in file order.
template <class Feed>
void decode_file(Store::Impl& impl, PackFiles& files, Feed&& feed,
                 const std::function<void(std::span<const std::byte>)>& f) {
    if (!impl.decode_pool) impl.decode_pool = std::make_unique<TaskPool>(2);
    OrderedDecoder::Options options;
    options.sealer = impl.sealer();
    OrderedDecoder decoder(*impl.decode_pool, "", [&](OrderedDecoder::Delivery& d) { f(d.bytes); }, options);
    feed([&](const ChunkId& id, const Location& loc) { decoder.add(id, loc, files); });
    decoder.finish();
}

/// read_file's work inside a view: the file looked up, its list's own
/// lookups giving the locations (no second statement).
void read_file_in_view(Store::Impl& impl, PackFiles& files, std::string_view name,
                       const std::function<void(std::span<const std::byte>)>& f) {
    Catalog& catalog = *impl.catalog;
    const auto file = catalog.stored_file(name);
    if (!file) throw NotFoundError(fmt::format("no file named '{}' in the store '{}'", name, impl.dir.string()));
    decode_file(
        impl, files,
        [&](const auto& add) {
            for_each_listed_chunk(catalog, file->row, name, std::numeric_limits<std::uint64_t>::max(),
                                  [&](const ChunkId& id, const Location& loc, std::uint64_t) { add(id, loc); });
        },
        f);
}

}  // namespace

void Store::read_file(std::string_view name, const std::function<void(std::span<const std::byte>)>& f) const {
    SharedLockGuard guard(impl_->lock);
    ReadView read(*impl_->catalog);
    PackFiles files(*impl_->packs);
    read_file_in_view(*impl_, files, name, f);
    read.end();
}

void Store::ReadSession::expect(std::function<std::optional<std::string>()> next_name) {
    s_->drop_batch(false);
    s_->upcoming.clear();
    s_->next_name = std::move(next_name);
}

void Store::ReadSession::read_file(std::string_view name, const std::function<void(std::span<const std::byte>)>& f) {
    State& s = *s_;
    PackFiles files(*s.impl.packs);
    const State::Ready* r = s.listed(name, name);
    if (!r) {
        read_file_in_view(s.impl, files, name, f);
        return;
    }
    decode_file(
        s.impl, files,
        [&](const auto& add) {
            for (const auto& [id, loc] : r->chunks) add(id, loc);
        },
        f);
}

void Store::ReadSession::for_each_chunk(std::string_view name,
                                        const std::function<void(const ChunkId&, std::uint32_t)>& f) {
    State& s = *s_;
    const State::Ready* r = s.listed(name, name);
    if (!r) {
        s.impl.list_chunks(name, f);
        return;
    }
    for (const auto& [id, loc] : r->chunks) f(id, loc.raw_size);
}

Store::ReadSession::ReadSession(std::unique_ptr<State> s) : s_(std::move(s)) {}
Store::ReadSession::ReadSession(ReadSession&&) noexcept = default;
Store::ReadSession::~ReadSession() {
    if (s_ && s_->view) {
        try {
            s_->view->end();
        } catch (...) {
            // (a read-only view: nothing to keep; the lock still goes)
        }
    }
}

void Store::ReadSession::renew() {
    // The locations looked up belong to the view that ends (gc may move
    // those chunks once no view can see them).
    s_->drop_batch(true);
    // (None if the last renewal failed: its reads took views of their own.)
    if (s_->view) s_->view->end();
    s_->view.reset();
    s_->view.emplace(s_->catalog);
    s_->viewed_at = std::chrono::steady_clock::now();
}

void Store::ReadSession::refresh() {
    // (held through a long run of reads, a view would keep PostgreSQL from
    // cleaning up behind the writers)
    if (std::chrono::steady_clock::now() - s_->viewed_at > std::chrono::seconds(5)) renew();
}

void Store::ReadSession::retry_once(const std::function<void()>& f,
                                    const std::function<bool(const StoreError&)>& again) {
    try {
        f();
    } catch (const DamageError&) {
        throw;
    } catch (const NotFoundError&) {
        throw;
    } catch (const StoreError& e) {
        if (again && !again(e)) throw;
        renew();
        f();
    }
}

Store::ReadSession Store::read_session() const {
    return ReadSession(std::make_unique<ReadSession::State>(impl_->lock, *impl_));
}

}  // namespace cdc::store
