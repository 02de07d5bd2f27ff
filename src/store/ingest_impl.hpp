// SPDX-License-Identifier: Apache-2.0
// Ingest::Impl (ingest.hpp): the door's state for one writer, also held by
// the writer itself for put_file (writer_impl.hpp), which hands segments it
// keeps to the hash and ends a file without waiting for its digest.
#pragma once

#include "base_list.hpp"
#include "catalog.hpp"
#include "ingest.hpp"
#include "ordered_decoder.hpp"
#include "store_impl.hpp"
#include "../common/ordered_hasher.hpp"
#include "../common/task_pool.hpp"

#include <cdc/digest.hpp>
#include <cdc/store.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace cdc::store {

struct Ingest::Impl {
    /// `writer` outlives the door (nothing of it is used here before begin()).
    explicit Impl(Writer::Impl& writer) : w(writer) {}
    ~Impl();
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;

    Writer::Impl& w;

    /// A new file named `name` (the manifest is the caller's): no base yet.
    void start(const std::string& name);
    void compare_with_stored(std::optional<std::uint64_t> size, std::uint64_t min_chunks);
    void compare_with_similar() {
        base_.reset();
        size_.reset();
        look_similar_ = true;
    }
    bool follows_base(std::span<const ChunkId> ids) { return follows(ids, [](const ChunkId& id) { return id; }); }
    bool follows_base(std::span<const Digest> ids) { return follows(ids, detail::id_of); }
    bool comparing() const noexcept { return base_ != nullptr; }
    /// At the first chunk of a file whose name the store does not hold:
    /// takes a stored file that starts with `first` as the base; true if
    /// one was found now.
    bool find_similar(const ChunkId& first);

    /// The stored file this one equals, at its end.
    struct BaseMatch {
        ChunkId digest{};
        bool same_name = false;
        std::int64_t row = 0;
        std::uint32_t mode = 0;
        std::int64_t mtime_ns = 0;
        std::uint64_t chunks = 0;
    };
    /// At the end of a file of `size` bytes: the base if the file had all of
    /// its chunks (the base is then dropped); else nullopt, the chunks that
    /// matched read back into the hash.
    std::optional<BaseMatch> end_base(std::uint64_t size);
    std::unique_ptr<StoredList> base_list() const;
    std::unique_ptr<StoredList> own_list() const;

    void hash(std::span<const std::byte> bytes);
    void hash_kept(std::span<const std::byte> bytes, std::function<void()> done) {
        whole_.update_kept(bytes, std::move(done));
    }
    std::size_t hash_stored(std::span<const ChunkId> ids, const std::function<void(std::size_t, std::uint32_t)>& sized);
    /// The digest of what was hashed (waits for it); a new message starts.
    Digest finish_hash();
    /// Ends the message without waiting (`deliver` on the hasher thread).
    void end_hash(std::function<void(const Digest&)> deliver) { whole_.end_message(std::move(deliver)); }
    /// Waits until every message ended is delivered.
    void wait_hashed() { whole_.wait_idle(); }
    /// Drops the file's base and hash (not its manifest).
    void drop();

private:
    template <class Id, class ToId>
    bool follows(std::span<const Id> ids, ToId to_id) {
        if (look_similar_ && !ids.empty()) find_similar(to_id(ids[0]));
        look_similar_ = false;
        if (!base_) return false;
        if (base_->match(ids)) return true;
        leave_base();
        return false;
    }
    /// Stops comparing with the base: the chunks that matched are read back
    /// and hashed first (this file's bytes so far, in order).
    void leave_base();
    detail::Catalog& base_catalog();
    detail::OrderedDecoder& read_back();
    void flush_read_back();

    std::string name_;
    std::optional<std::uint64_t> size_;
    // A file of a name the store holds: that file's chunk list, on a
    // catalog connection of its own. Else, at the first chunks, a stored
    // file that starts with the same chunk is looked for.
    std::unique_ptr<detail::Catalog> base_catalog_;
    std::unique_ptr<detail::BaseList> base_;
    // The look by name compare_with_stored made outside a view (over a
    // network): own_list() takes its file instead of asking again.
    detail::NameLook own_;
    bool look_similar_ = false;
    // The read-back of stored chunks for the hash (hash_stored): looked up
    // on a connection of its own, decoded on two threads, handed to the
    // hasher in file order without a copy (each block comes back once
    // hashed); bytes in hand take their place in the same order.
    std::unique_ptr<detail::Catalog> read_catalog_;
    std::unique_ptr<detail::PackFiles> packs_;
    std::unique_ptr<detail::TaskPool> pool_;
    std::unique_ptr<detail::OrderedDecoder> read_back_;
    // The whole-file BLAKE3 on a thread of its own (declared last: destroyed
    // first, once what it holds is hashed and given back).
    common::CopyingHasher whole_;
};

}  // namespace cdc::store
