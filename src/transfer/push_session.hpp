// SPDX-License-Identifier: Apache-2.0
// The server's side of one Push stream, below gRPC (the service feeds it the
// requests it reads; the fuzz target feeds it arbitrary ones).
//
// Per file: start, then chunk lists and data, then end. For each list the
// session answers which chunks the store lacks (not counting those already
// wanted by an earlier list of this stream or stored by it), then expects
// exactly those chunks, in order. Each arriving chunk is decoded and its
// BLAKE3 checked against its id before it is stored; the whole-file BLAKE3
// is computed as the file's chunks complete, in file order (chunks the
// store had are read back from it), and the file's manifest is queued only
// if it equals the client's digest. A stream that ends without `finish`
// (the client vanished, or a request was refused) commits the chunks and
// the files verified so far, never the open file.
//
// The file goes into the store through the ingest door (store/ingest.hpp),
// as `store put`'s files do: the session keeps the protocol's state, the
// door the comparison with a stored file, the read-back and the hash.
//
// Pushing a file again under its name costs no reading back: while the
// chunk lists equal the chunk list of the file of that name in the store
// (the door's base, one read snapshot), nothing is wanted nor hashed, and the digest the client sends
// must be that file's (same chunks, same bytes). At the first difference,
// the chunks that matched are read back from that snapshot and hashed, and
// the push goes on as for any file. Under a name the store does not hold, a
// large stored file that starts with the same chunk plays that part (found
// at the first list by the store's first-chunk index; its groups too):
// `done.identical` instead of `done.unchanged`.
//
// A client may send a GroupList instead of a ChunkList (proto/cdc_transfer.proto):
// groups the file of that name in the store has (base_groups.hpp) take their
// ids from it; the session answers which groups it lacks and takes their
// chunks in the next ChunkList, which it then answers as any list. Lists
// are admitted (looked up, compared with the base, answered) in file order:
// a list whose groups are not all listed yet holds back those after it.
//
// Memory is bounded whatever the file size: a few chunk lists of ids
// (kMaxListsAhead x kMaxListChunks), one chunk being assembled, and the
// last decoded chunk.
//
// An encrypted store: the client's ids are the chunks' plain BLAKE3, mapped
// to the store's keyed ids as a list arrives (one keyed hash each); the
// data is checked against the plain id the client listed; group lists are
// refused (the stored groups are of keyed ids, Info says so).
#pragma once

#include "cdc_transfer.pb.h"
#include "chunk_messages.hpp"
#include "protocol.hpp"

#include "base_groups.hpp"

#include "../store/ingest.hpp"

#include <cdc/digest.hpp>
#include <cdc/store.hpp>

#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <unordered_set>
#include <vector>

namespace cdc::store::detail {
class Decompressor;
}

namespace cdc::transfer {

struct PushTotals {
    std::uint64_t files = 0;
    std::uint64_t bytes = 0;
    std::uint64_t chunks = 0;
    std::uint64_t new_chunks = 0;
    std::uint64_t new_bytes = 0;
};

class PushSession {
public:
    using Sink = std::function<void(const v1::PushReply&)>;

    /// Opens the store (a Writer: the store's shared lock for the session's life).
    PushSession(const std::filesystem::path& store_dir, const store::OpenOptions& options);
    ~PushSession();
    PushSession(const PushSession&) = delete;
    PushSession& operator=(const PushSession&) = delete;

    /// Handles one request; replies go to `sink` in protocol order. Throws
    /// TransferError for a request the protocol does not allow, or data that
    /// fails a check (nothing of the open file is committed then).
    void handle(const v1::PushRequest& request, const Sink& sink);
    /// True once `finish` was handled (everything committed).
    bool finished() const noexcept { return finished_; }
    /// The stream ended early: commits the chunks and files verified so far
    /// (never the open file). Never throws.
    void abort() noexcept;
    const PushTotals& totals() const noexcept { return totals_; }
    /// Refuses a file whose name the store holds already (an append-only
    /// token: it may add, never replace what is there). A snapshot replaces
    /// nothing: a tree pushed as one is allowed.
    void refuse_replacing(bool refuse) noexcept { refuse_replacing_ = refuse; }
    /// The snapshot committed (a tree pushed as one), once it is.
    const std::string& snapshot_id() const noexcept { return snapshot_id_; }

private:
    struct List {
        std::vector<store::ChunkId> ids;    // the store's ids
        // An encrypted store's: the ids the client sent (plain BLAKE3), which
        // ids holds keyed (Store::id_of_plain); empty for a plain store.
        std::vector<store::ChunkId> plain;
        std::vector<std::uint32_t> sizes;
        std::vector<bool> wanted;
        std::uint64_t bytes = 0;      // sum of sizes
        std::size_t remaining = 0;    // wanted chunks not arrived yet
        std::size_t next_data = 0;    // search start for the next wanted chunk
        std::size_t next_hash = 0;    // first chunk not hashed yet
        bool from_base = false;       // equal to the base's chunks: not hashed
        // A GroupList's: its chunks from the stored file (known: in the
        // store, listed with size 0: the store's size counts) and the groups
        // whose chunks the next ChunkList lists (`awaiting` of them).
        struct Missing {
            std::size_t at;
            std::size_t count;
            std::uint64_t bytes;
            store::ChunkId digest;
            std::size_t width;  // the digest's bytes sent (32 or 16)
        };
        std::vector<bool> known;  // empty: a ChunkList's
        std::vector<Missing> missing;
        std::size_t awaiting = 0;
        bool admitted = false;        // looked up and answered
    };

    void start(const v1::FileStart& m);
    void add_list(const v1::ChunkList& m, const Sink& sink);
    void add_groups(const v1::GroupList& m, const Sink& sink);
    /// The next ChunkList after a GroupList that lacked groups: their chunks.
    void expand(List& list, const v1::ChunkList& m);
    /// Admits the lists ready in file order (see above).
    void admit_ready(const Sink& sink);
    void admit(List& list, const Sink& sink);
    /// Whether the list's chunks are the stored file's next ones (see above).
    bool follows_base(const List& list);
    void add_data(const v1::Chunks& m);
    void add_piece(const v1::ChunkData& c);
    void complete_chunk(List& list, std::size_t j);
    void end(const v1::FileEnd& m, const Sink& sink);
    void finish(const Sink& sink);
    // A tree pushed as a snapshot (push_snapshot.cpp).
    struct SnapshotState;
    void snapshot_start(const v1::SnapshotStart& m, const Sink& sink);
    void candidates(const v1::Candidates& m, const Sink& sink);
    void tree_ids(const v1::TreeIds& m, const Sink& sink);
    void tree_bytes(const v1::TreeBytes& m);
    void commit_snapshot(const v1::SnapshotCommit& m, const Sink& sink);
    void require_snapshot(const char* what) const;
    /// Why `path` (a file's path in the pushed snapshot) is refused, "" if not.
    static std::string snapshot_path_problem(const std::string& path);
    /// Where a pushed file of the snapshot at `path` is stored first.
    std::string snapshot_file_name(const std::string& path) const;
    /// The manifest of the parent's content at `path` (a file's path in the
    /// pushed snapshot), "" if the parent has none: its groups are the
    /// ones a group list of that file is compared with.
    std::string snapshot_base(const std::string& path);
    /// A content this stream pushed (its file verified).
    void pushed_content(const store::ChunkId& digest, std::uint64_t size);
    void complete_lists();
    /// Queues chunks [next_hash, end) of the front list for the whole-file
    /// hash, in order: read back from the store, or the chunk in hand.
    void hash_stored(List& list, std::size_t end);
    /// Chunk i of `list` has `size` bytes: checked against its listed size,
    /// or recorded (a group's chunks come without).
    void check_size(List& list, std::size_t i, std::size_t size) const;
    void remember(const store::ChunkId& id);
    void require_open(const char* what) const;

    store::Store store_;
    bool encrypted_ = false;  // ids on the wire are plain, the store's keyed
    bool refuse_replacing_ = false;
    std::unique_ptr<store::Writer> writer_;
    // The file's way into the store (after writer_: destroyed first).
    std::unique_ptr<store::Ingest> ingest_;
    std::unique_ptr<store::detail::Decompressor> decompressor_;
    std::uint64_t max_chunk_ = 0;
    std::uint64_t max_list_bytes_ = 0;

    // the open file
    bool open_ = false;
    std::string name_;
    std::uint64_t listed_bytes_ = 0;
    std::uint64_t listed_chunks_ = 0;
    std::uint64_t file_new_chunks_ = 0;
    std::uint64_t file_new_bytes_ = 0;
    bool file_unchanged_ = false;
    bool file_identical_ = false;
    std::deque<List> lists_;
    // The groups of the file of that name, read at the first GroupList (or
    // of the similar stored file the door found).
    std::unique_ptr<BaseGroups> groups_;
    bool groups_read_ = false;
    std::uint64_t groups_next_ = 0;  // the stored chunk after the last group found
    std::unordered_set<store::ChunkId, IdHash> pending_;  // wanted, not arrived
    std::unordered_set<store::ChunkId, IdHash> recent_;   // stored by this stream

    ChunkAssembler assembler_;

    // the last chunk decoded (a run of the same chunk is read back once)
    store::ChunkId last_id_{};
    bool have_last_ = false;
    std::vector<std::byte> last_raw_;

    PushTotals totals_;
    bool finished_ = false;
    struct SnapshotStateDeleter {
        void operator()(SnapshotState* s) const noexcept;
    };
    std::unique_ptr<SnapshotState, SnapshotStateDeleter> snap_;  // a tree pushed as a snapshot
    bool any_request_ = false;
    std::string snapshot_id_;
};

}  // namespace cdc::transfer
