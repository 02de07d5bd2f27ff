// SPDX-License-Identifier: Apache-2.0
// pull_tree: the trees first (checked, parsed by the store's ImportedTree),
// then the contents the restore will ask for, by digest, in its order; the
// server lists their chunks back to back across files, the client takes
// what its seeds hold and asks for the rest, and the restore consumes the
// chunks file by file as they arrive (each checked against its id, each
// file against its digest). Lists arrive one ahead of their data, as in a
// file's pull.
#include "chunk_messages.hpp"
#include "progress.hpp"
#include "seed_index.hpp"
#include "want_list.hpp"
#include "tree_pull.hpp"
#include "tree_session.hpp"

#include "../common/handoff.hpp"
#include "../store/codec.hpp"

#include <cdc/digest.hpp>
#include <cdc/error.hpp>
#include <cdc/snapshot_wire.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <exception>
#include <limits>
#include <unordered_map>
#include <utility>

#include <sys/resource.h>
#include <sys/stat.h>

namespace cdc::transfer {

namespace {


class TreeReceiver {
public:
    TreeReceiver(TreePullStream& stream, const ServerParams& params, const SeedIndex& seeds,
                 std::vector<store::ContentNeed> needs, TreePullReport& report, const TransferProgressFn& progress)
        : stream_(stream), params_(params), seeds_(seeds), needs_(std::move(needs)), report_(report),
          assembler_(params.profile.max_size), progress_(progress, 0, 1) {
        // The replies are read ahead by a thread of their own, so that the
        // server's chunks travel while the restore makes files: read only
        // when the restore asked for bytes, the stream stopped at each
        // flow-control window (64 KiB) while the client wrote.
        ahead_.start([this] {
            v1::PullTreeReply m;
            while (stream_.read(m)) ahead_.push(std::exchange(m, {}));
        });
    }
    ~TreeReceiver() {
        // (a read blocked on the server returns; then the reader is joined)
        if (!reader_done_) stream_.interrupt();
    }
    TreeReceiver(const TreeReceiver&) = delete;
    TreeReceiver& operator=(const TreeReceiver&) = delete;

    /// The restore's content source: the bytes of `need`, from the stream.
    void content(const store::ContentNeed& need, const std::function<void(std::string_view)>& sink) {
        if (broken_) std::rethrow_exception(broken_);
        try {
            // Contents the restore did not ask for (an entry it could not
            // make) are dropped as they come.
            while (consume_ < needs_.size() && needs_[consume_].digest != need.digest) {
                take(needs_[consume_].length - partial_, nullptr);
                next_content();
            }
            if (consume_ == needs_.size()) throw store::DamageError("its content was not fetched (not expected here)");
            if (partial_ != 0) {  // (its restore failed midway, and it is asked for again)
                take(needs_[consume_].length - partial_, nullptr);
                next_content();
                throw store::DamageError("its content was not fetched again");
            }
        } catch (const TransferError&) {
            broken_ = std::current_exception();
            throw;
        }
        try {
            take(need.length, &sink);
        } catch (const TransferError&) {
            broken_ = std::current_exception();
            throw;
        }
        next_content();
    }

    /// After the restore: the rest of the stream, or its cancellation when
    /// contents were left (the restore skipped them).
    void end() {
        if (broken_) std::rethrow_exception(broken_);
        if (consume_ < needs_.size()) {
            stream_.interrupt();
            v1::PullTreeReply m;
            while (ahead_.next(m)) {
            }
            reader_done_ = true;
            stream_.cancel();
            return;
        }
        while (!ended_) pump();
        v1::PullTreeReply m;
        if (ahead_.next(m)) throw TransferError(Code::internal, "tree pull: the server sent more after the end");
        reader_done_ = true;
        if (!lists_.empty() || assembler_.busy() || !fifo_.empty())
            throw TransferError(Code::internal, "tree pull: the server ended the stream before its data");
        stream_.writes_done();
        stream_.finish();
    }

private:
    using List = WantList;

    void next_content() {
        ++consume_;
        partial_ = 0;
    }

    /// Takes `n` bytes (whole chunks: they end where contents end) from the
    /// chunks received, to `sink` or nowhere.
    void take(std::uint64_t n, const std::function<void(std::string_view)>* sink) {
        while (n > 0) {
            while (fifo_.empty()) {
                if (ended_)
                    throw TransferError(Code::data_loss, "tree pull: the server ended the stream before a content's data");
                pump();
            }
            std::vector<std::byte> chunk = std::move(fifo_.front());
            fifo_.pop_front();
            if (chunk.size() > n) throw TransferError(Code::internal, "tree pull: a chunk beyond its content");
            n -= chunk.size();
            partial_ += chunk.size();
            if (sink) (*sink)(std::string_view(reinterpret_cast<const char*>(chunk.data()), chunk.size()));
            written_ += chunk.size();
            progress_.file_bytes(written_, report_.bytes_sent);
        }
    }

    void pump() {
        v1::PullTreeReply reply;
        if (!ahead_.next(reply)) {
            reader_done_ = true;
            stream_.finish();  // throws the server's status
            throw TransferError(Code::internal, "tree pull: the server ended the stream early");
        }
        switch (reply.body_case()) {
        case v1::PullTreeReply::kChunks: add_list(reply.chunks()); break;
        case v1::PullTreeReply::kData:
            for (const auto& c : reply.data().chunks()) add_piece(c);
            break;
        case v1::PullTreeReply::kEnd: ended_ = true; break;
        default: throw TransferError(Code::internal, "tree pull: the server sent something else than lists, data or the end");
        }
    }

    void add_list(const v1::ChunkList& m) {
        const std::size_t count = static_cast<std::size_t>(m.sizes_size());
        if (count == 0 || count > kMaxListChunks)
            throw TransferError(Code::internal, fmt::format("tree pull: a chunk list of {} chunks", count));
        if (lists_.size() >= 2) throw TransferError(Code::internal, "tree pull: lists too far ahead");
        List l;
        l.ids = ids_from_bytes(m.ids(), count);
        l.sizes.assign(m.sizes().begin(), m.sizes().end());
        std::uint64_t bytes = 0;
        for (const std::uint32_t s : l.sizes) {
            if (s == 0 || s > params_.profile.max_size)
                throw TransferError(Code::internal, fmt::format("tree pull: a chunk of {} bytes listed", s));
            bytes += s;
            // Each chunk lies within the content being listed: nothing beyond
            // the lengths the trees give is asked for or written.
            if (list_file_ == needs_.size())
                throw TransferError(Code::data_loss, "tree pull: the server lists more chunks than the contents asked for");
            const std::uint64_t left = needs_[list_file_].length - list_offset_;
            if (s > left)
                throw TransferError(Code::data_loss,
                                    fmt::format("tree pull: the server lists a chunk of {} bytes where a content has {} "
                                                "left: refused",
                                                s, left));
            list_offset_ += s;
            if (list_offset_ == needs_[list_file_].length) {
                ++list_file_;
                list_offset_ = 0;
            }
        }
        if (bytes > max_list_bytes(params_.profile.max_size))
            throw TransferError(Code::internal, fmt::format("tree pull: a chunk list of {} bytes", bytes));
        report_.chunks += count;
        report_.bytes_reused += l.mark(seeds_);
        v1::PullTreeRequest req;
        auto* w = req.mutable_want();
        w->set_bitmap(make_bitmap(l.wanted));
        w->set_count(static_cast<std::uint32_t>(l.remaining));
        stream_.write(req);
        lists_.push_back(std::move(l));
        completed();
    }

    void add_piece(const v1::ChunkData& c) {
        if (lists_.empty() || lists_.front().remaining == 0)
            throw TransferError(Code::internal, "tree pull: chunk data that was not asked for");
        List& l = lists_.front();
        const std::size_t j = l.next_wanted();
        if (!assembler_.add(c, l.ids[j], l.sizes[j])) return;
        std::vector<std::byte> raw;
        decode_chunk(decompressor_, assembler_.payload(), assembler_.raw(), l.sizes[j], l.ids[j], raw, "tree pull");
        report_.bytes_sent += l.sizes[j];
        report_.payload_sent += assembler_.payload().size();
        ++report_.chunks_sent;
        locals(l, j);
        if (l.slot[j] != WantList::kNoSlot) std::memcpy(l.local.data() + l.slot[j], raw.data(), raw.size());
        fifo_.push_back(std::move(raw));
        l.next_write = l.next_data = j + 1;
        --l.remaining;
        completed();
    }

    /// Queues the chunks of `l` before `end` that are not wanted.
    void locals(List& l, std::size_t end) {
        for (; l.next_write < end; ++l.next_write) {
            const std::size_t i = l.next_write;
            const auto* p = l.local.data() + l.slot[i];
            fifo_.emplace_back(p, p + l.sizes[i]);
        }
    }

    void completed() {
        while (!lists_.empty() && lists_.front().remaining == 0) {
            locals(lists_.front(), lists_.front().ids.size());
            lists_.pop_front();
        }
    }

    TreePullStream& stream_;
    const ServerParams& params_;
    const SeedIndex& seeds_;
    std::vector<store::ContentNeed> needs_;
    TreePullReport& report_;
    ChunkAssembler assembler_;
    store::detail::Decompressor decompressor_;
    ProgressThrottle progress_;
    std::deque<List> lists_;
    std::deque<std::vector<std::byte>> fifo_;  // chunks received or local, in content order, not taken yet
    std::size_t list_file_ = 0;                // the content the next listed chunk belongs to
    std::uint64_t list_offset_ = 0;
    std::size_t consume_ = 0;                  // the content the restore takes next
    std::uint64_t partial_ = 0;                // of it, taken already
    std::uint64_t written_ = 0;
    bool ended_ = false;
    bool reader_done_ = false;  // the reader thread saw the stream's end
    std::exception_ptr broken_;
    /// Replies read ahead: at most 16 messages (gRPC's limit: 4 MiB each).
    common::Handoff<v1::PullTreeReply> ahead_{16};  // last: its thread stops first
};

store::Snapshot snapshot_of(const v1::SnapshotInfo& m) {
    store::Snapshot s;
    s.id = m.id();
    s.time_ns = m.time_ns();
    s.utc_offset_s = m.utc_offset_s();
    s.host = m.host();
    s.user = m.user();
    s.paths.assign(m.paths().begin(), m.paths().end());
    s.tags.assign(m.tags().begin(), m.tags().end());
    s.parent = m.parent();
    s.totals.files = m.files();
    s.totals.dirs = m.dirs();
    s.totals.others = m.others();
    s.totals.bytes = m.bytes();
    return s;
}

/// Descriptors the seed index may keep open (it holds one per file): the
/// soft limit raised to the hard one, less a margin for the restore.
std::uint64_t seed_file_budget() {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
    if (rl.rlim_cur < rl.rlim_max) {
        rlimit raised = rl;
        raised.rlim_cur = std::min<rlim_t>(rl.rlim_max, rlim_t{1} << 20);
        if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
    }
    return rl.rlim_cur > 2048 ? rl.rlim_cur - 1024 : rl.rlim_cur / 2;
}

}  // namespace

store::Snapshot snapshot_from_info(const v1::SnapshotInfo& m) { return snapshot_of(m); }

TreePullReport pull_tree(TreePullStream& stream, const ServerParams& params, const std::string& snapshot,
                         const std::string& path, const std::filesystem::path& out, const TreePullOptions& options) {
    const auto t0 = std::chrono::steady_clock::now();
    TreePullReport report;
    std::shared_ptr<const CutFinder> finder;
    if (!params.profile.keyed || options.key)
        finder = client_finder(params, options.key);
    else if (!options.seeds.empty())
        throw OptionError("the server's store is keyed: seeds need its key to chunk like it", "key");
    SeedIndex seeds(finder);
    if (seeds.usable()) {
        std::uint64_t budget = seed_file_budget();
        auto add = [&](const std::filesystem::path& p, bool required) {
            if (budget == 0) return;
            try {
                report.seed_bytes += seeds.add(p);
                ++report.seed_files;
                --budget;
            } catch (const IoError&) {
                if (required) throw;  // (a file of OUT that cannot be read is only not reused)
            }
        };
        for (const auto& s : options.seeds) add(s, true);
        std::error_code ec;
        if (options.seed_output && std::filesystem::is_directory(out, ec)) {
            namespace fs = std::filesystem;
            for (auto it = fs::recursive_directory_iterator(out, fs::directory_options::skip_permission_denied, ec);
                 !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
                if (it->symlink_status(ec).type() == fs::file_type::regular && it->file_size(ec) > 0) add(it->path(), false);
            }
        }
        seeds.seal();
    }
    v1::PullTreeRequest req;
    req.mutable_start()->set_snapshot(snapshot);
    req.mutable_start()->set_path(path);
    stream.write(req);
    v1::PullTreeReply reply;
    auto read = [&](const char* what) {
        if (!stream.read(reply)) {
            stream.finish();
            throw TransferError(Code::internal, fmt::format("tree pull: the server ended the stream before {}", what));
        }
    };
    read("the header");
    if (reply.body_case() != v1::PullTreeReply::kHeader)
        throw TransferError(Code::internal, "tree pull: the server sent something else than the header");
    const v1::TreeHeader header = reply.header();
    report.snapshot = snapshot_of(header.snapshot());
    if (header.trees_bytes() > kMaxTreeBytes)
        throw TransferError(Code::data_loss, fmt::format("tree pull: the server announces {} bytes of trees (at most {})",
                                                         header.trees_bytes(), kMaxTreeBytes));
    std::string trees;
    while (trees.size() < header.trees_bytes()) {
        read("the trees");
        if (reply.body_case() != v1::PullTreeReply::kTrees)
            throw TransferError(Code::internal, "tree pull: the server sent something else than the trees");
        if (reply.trees().bytes().size() > header.trees_bytes() - trees.size())
            throw TransferError(Code::data_loss, "tree pull: more tree bytes than the header announced: refused");
        trees += reply.trees().bytes();
    }
    std::optional<store::ImportedTree> tree;
    try {
        tree.emplace(path, header.root(), std::move(trees));
    } catch (const store::DamageError& e) {
        throw TransferError(Code::data_loss, fmt::format("tree pull: {}", e.what()));
    }
    std::vector<store::ContentNeed> needs = tree->contents();
    report.contents = needs.size();
    for (const auto& n : needs) report.bytes += n.length;
    for (std::size_t at = 0;;) {
        const std::size_t n = std::min(kMaxTreeFilesPerMessage, needs.size() - at);
        v1::PullTreeRequest f;
        std::string digests;
        digests.reserve(n * 32);
        for (std::size_t i = at; i < at + n; ++i) digests += needs[i].digest;
        f.mutable_files()->set_digests(std::move(digests));
        at += n;
        f.mutable_files()->set_last(at == needs.size());
        stream.write(f);
        if (at == needs.size()) break;
    }
    TreeReceiver receiver(stream, params, seeds, std::move(needs), report, options.progress);
    report.restore = tree->restore(
        out, [&](const store::ContentNeed& need, const auto& sink) { receiver.content(need, sink); }, options.restore);
    receiver.end();
    report.wire_sent = stream.wire_sent;
    report.wire_received = stream.wire_received;
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return report;
}

}  // namespace cdc::transfer
