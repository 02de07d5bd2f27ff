// SPDX-License-Identifier: Apache-2.0
// The client's side of one file of a push (push_client.cpp, push_tree_client.cpp):
// chunk it with the store's parameters (ChunkFeed), list the ids, send the
// chunks the server wants, compressed on a pool of threads.
// Two lists are in flight: the server looks list k up while the chunks of
// list k - 1 are compressed and sent. Where the server takes them, lists go
// as groups (GroupList): the server answers which groups it lacks, their
// chunks are listed next, and that list is answered as any. Replies come in
// the order of the lists they answer; `replies_` says which list each is for.
#pragma once

#include "chunk_feed.hpp"
#include "chunk_messages.hpp"
#include "client_api.hpp"
#include "progress.hpp"

#include "../store/codec.hpp"
#include "../common/task_pool.hpp"

#include <cdc/digest.hpp>
#include <cdc/error.hpp>

#include <fmt/format.h>

#include <atomic>
#include <deque>
#include <memory>
#include <optional>

#include <sys/stat.h>

namespace cdc::transfer::detail {

// Lists sent before the oldest one's want is read.
inline constexpr std::size_t kListsInFlight = 2;
// Raw bytes of wanted chunks per compression task.
inline constexpr std::size_t kCompressGroup = std::size_t{1} << 20;

class FileSender {
public:
    FileSender(PushStream& stream, const ServerParams& params, std::shared_ptr<const CutFinder> finder,
               common::TaskPool& pool, ProgressThrottle& progress, bool group_lists)
        : stream_(stream),
          params_(params),
          finder_(std::move(finder)),
          pool_(pool),
          progress_(progress),
          group_lists_(group_lists && params.group_lists),
          group_digest_bytes_(params.group_digest_bytes),
          data_ids_optional_(params.data_ids_optional) {}

    /// Sends one file; TransferError from the server, IoError from the input.
    /// `opened`: the input's fstat when opened (a regular file is read by a
    /// SteadyFileReader: one that changes meanwhile is an IoError).
    /// `reader`: where the bytes come from instead of `fd` (a sparse file's
    /// data extents), or nullptr.
    PushedFile send(const PushInput& in, int fd, const struct stat& opened, const store::FileMeta& meta,
                    Reader* reader = nullptr) {
        file_ = {};
        file_.name = in.name;
        file_.path = in.path;
        v1::PushRequest req;
        auto* st = req.mutable_start();
        st->set_name(meta.name);
        st->set_mode(meta.mode);
        st->set_mtime_ns(meta.mtime_ns);
        stream_.write(req);

        FdReader stream(fd, in.path == "-" ? std::string("stdin") : in.path);
        std::optional<SteadyFileReader> file;
        if (S_ISREG(opened.st_mode) && in.path != "-") file.emplace(fd, opened, in.path);
        // (a small regular file is chunked on this thread: ChunkFeed::kInlineBytes)
        std::optional<std::uint64_t> size_hint;
        if (file && !reader) size_hint = static_cast<std::uint64_t>(opened.st_size);
        ChunkFeed feed(finder_, reader ? *reader : file ? static_cast<Reader&>(*file) : stream, std::size_t{4} << 20,
                       size_hint);
        Hasher whole(DigestKind::blake3);
        const std::uint64_t list_bytes = max_list_bytes(params_.profile.max_size);
        const std::size_t list_chunks = std::min<std::size_t>(kMaxListChunks, params_.max_list_chunks ? params_.max_list_chunks : kMaxListChunks);
        try {
            while (ChunkFeed::Segment* g = feed.next()) {
                whole.update(g->bytes);
                file_.bytes += g->bytes.size();
                held_.push_back({g, g->lengths.size()});
                for (std::size_t k = 0; k < g->lengths.size(); ++k) pending_.push_back({g, k});
                list_pending(feed, list_chunks, list_bytes, false);
                release_served(feed);
                // The feed reads into a free segment: serve lists until one is.
                while (held_.size() >= ChunkFeed::kSegments - 1 && !in_flight_.empty()) serve_oldest(feed);
                progress_.file_bytes(file_.bytes, bytes_sent_total());
            }
            list_pending(feed, list_chunks, list_bytes, true);
            while (!in_flight_.empty()) serve_oldest(feed);
        } catch (...) {
            in_flight_.clear();
            replies_.clear();
            pending_.clear();
            held_.clear();
            throw;
        }
        const Digest d = whole.finish();
        file_.digest.assign(reinterpret_cast<const char*>(d.bytes.data()), 32);
        req.Clear();
        auto* e = req.mutable_end();
        e->set_size(file_.bytes);
        e->set_digest(d.bytes.data(), 32);
        stream_.write(req);
        if (defer_done_ || !expect_done_) {  // (read before the next reply: replies come in order)
            if (expect_done_) ++dones_due_;
            sent_before_ += file_.bytes_sent;
            return file_;
        }
        v1::PushReply reply;
        if (!stream_.read(reply)) stream_.finish();
        if (reply.body_case() != v1::PushReply::kDone)
            throw TransferError(Code::internal, fmt::format("'{}': the server answered the end of the file with "
                                                            "something else than done",
                                                            in.name));
        file_.new_chunks = reply.done().new_chunks();
        file_.unchanged = reply.done().unchanged();
        file_.identical = reply.done().identical();
        sent_before_ += file_.bytes_sent;
        return file_;
    }

    /// The server's `done` of each file is read later (read_dones, or
    /// before the next reply), so that the next file starts without a
    /// round trip; its PushedFile then lacks new_chunks, unchanged and
    /// identical (a tree push uses none of them).
    void defer_done(bool defer) noexcept { defer_done_ = defer; }
    /// Whether the server sends a `done` per file (a tree push's server
    /// may send none: SnapshotStarted.no_dones).
    void expect_done(bool expect) noexcept { expect_done_ = expect; }
    /// Reads the `done` of every file whose done was deferred.
    void read_dones() {
        while (dones_due_ > 0) {
            v1::PushReply reply;
            if (!stream_.read(reply)) stream_.finish();  // throws the server's status
            if (reply.body_case() != v1::PushReply::kDone)
                throw TransferError(Code::internal, "the server answered the end of a file with something else "
                                                    "than done");
            --dones_due_;
        }
    }

private:
    /// A chunk of a segment the feed handed out.
    struct Ref {
        ChunkFeed::Segment* segment;
        std::size_t index;
        std::span<const std::byte> bytes() const noexcept {
            return {segment->bytes.data() + segment->starts[index], segment->lengths[index]};
        }
        std::uint32_t length() const noexcept { return segment->lengths[index]; }
        const store::ChunkId& id() const noexcept { return segment->ids[index]; }
    };
    struct InFlight {
        std::vector<Ref> chunks;
        enum class Stage { group_want, want, done } stage = Stage::want;
        std::vector<std::pair<std::size_t, std::size_t>> groups;  // [first, end) in chunks, per group
        std::vector<std::size_t> listed;  // the chunks the want is about (grouped: the lacking groups')
    };
    struct Held {
        ChunkFeed::Segment* segment;
        std::size_t unserved;  // its chunks not served yet
    };

    /// Sends lists of the pending chunks while limits allow. With groups, a
    /// list ends where a group ends: the chunks after the last group's end
    /// wait for the next segment, so that groups run on across segments as
    /// in the server's copy of the file (a group cut by a list's end is new
    /// to the server and travels as ids). Only chunks of the newest segment
    /// wait (so with no list in flight, one segment is held at most).
    void list_pending(ChunkFeed& feed, std::size_t list_chunks, std::uint64_t list_bytes, bool at_end) {
        while (!pending_.empty()) {
            std::size_t j = 0;
            std::uint64_t bytes = 0;
            while (j < pending_.size() && j < list_chunks && (j == 0 || bytes + pending_[j].length() <= list_bytes))
                bytes += pending_[j++].length();
            const bool all = j == pending_.size();
            if (group_lists_ && !(all && at_end)) {
                GroupCutter cutter;
                std::size_t cut = 0;
                for (std::size_t k = 0; k < j; ++k)
                    if (cutter.ends_after(pending_[k].id())) cut = k + 1;
                if (cut > 0)
                    j = cut;
                else if (all && pending_.front().segment == held_.back().segment)
                    return;  // no group ends yet: wait for the next segment's chunks
                // (chunks wait for one segment at most: the feed has few)
            }
            InFlight& f = in_flight_.emplace_back();
            f.chunks.assign(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(j));
            pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(j));
            send_list(f);
            while (in_flight_.size() > kListsInFlight) serve_oldest(feed);
        }
    }

    /// Gives the feed back its segments whose chunks are all served, in order.
    void release_served(ChunkFeed& feed) {
        while (!held_.empty() && held_.front().unserved == 0) {
            feed.release(held_.front().segment);
            held_.pop_front();
        }
    }

    std::uint64_t bytes_sent_total() const noexcept { return sent_before_ + file_.bytes_sent; }

    void send_list(InFlight& f) {
        v1::PushRequest req;
        file_.chunks += f.chunks.size();
        if (group_lists_) {
            auto* m = req.mutable_groups();
            std::vector<store::ChunkId> ids;
            ids.reserve(f.chunks.size());
            for (const Ref& r : f.chunks) ids.push_back(r.id());
            std::string digests;
            for_each_group(ids, [&](std::size_t a, std::size_t b) {
                const store::ChunkId d = group_digest(std::span(ids).subspan(a, b - a));
                digests.append(reinterpret_cast<const char*>(d.data()), group_digest_bytes_);
                m->add_counts(static_cast<std::uint32_t>(b - a));
                std::uint64_t bytes = 0;
                for (std::size_t k = a; k < b; ++k) bytes += f.chunks[k].length();
                m->add_bytes(bytes);
                f.groups.emplace_back(a, b);
            });
            m->set_digests(std::move(digests));
            f.stage = InFlight::Stage::group_want;
            stream_.write(req);
            replies_.push_back(&f);
            return;
        }
        for (std::size_t k = 0; k < f.chunks.size(); ++k) f.listed.push_back(k);
        send_chunk_list(f, req);
        f.stage = InFlight::Stage::want;
        replies_.push_back(&f);
    }

    /// The ChunkList of `f.listed`.
    void send_chunk_list(const InFlight& f, v1::PushRequest& req) {
        auto* c = req.mutable_chunks();
        std::string ids;
        ids.reserve(f.listed.size() * 32);
        for (const std::size_t k : f.listed) {
            append_id(ids, f.chunks[k].id());
            c->add_sizes(f.chunks[k].length());
        }
        c->set_ids(std::move(ids));
        stream_.write(req);
    }

    /// Reads replies until the oldest list is served, then drops it.
    void serve_oldest(ChunkFeed& feed) {
        while (in_flight_.front().stage != InFlight::Stage::done) read_reply();
        for (const Ref& r : in_flight_.front().chunks)
            for (Held& h : held_)
                if (h.segment == r.segment) {
                    --h.unserved;
                    break;
                }
        in_flight_.pop_front();
        release_served(feed);
    }

    void read_reply() {
        read_dones();
        InFlight& f = *replies_.front();
        replies_.pop_front();
        v1::PushReply reply;
        if (!stream_.read(reply)) stream_.finish();  // throws the server's status
        if (f.stage == InFlight::Stage::group_want) {
            if (reply.body_case() != v1::PushReply::kGroupWant)
                throw TransferError(Code::internal, fmt::format("'{}': the server answered a group list with "
                                                                "something else than a group want",
                                                                file_.name));
            const std::vector<bool> wanted =
                read_bitmap(reply.group_want().bitmap(), f.groups.size(), reply.group_want().count());
            for (std::size_t k = 0; k < f.groups.size(); ++k)
                if (wanted[k])
                    for (std::size_t c = f.groups[k].first; c < f.groups[k].second; ++c) f.listed.push_back(c);
            if (f.listed.empty()) {
                f.stage = InFlight::Stage::done;
                return;
            }
            v1::PushRequest req;
            send_chunk_list(f, req);
            f.stage = InFlight::Stage::want;
            replies_.push_back(&f);
            return;
        }
        if (reply.body_case() != v1::PushReply::kWant)
            throw TransferError(Code::internal, fmt::format("'{}': the server answered a chunk list with something "
                                                            "else than a want",
                                                            file_.name));
        const std::vector<bool> wanted = read_bitmap(reply.want().bitmap(), f.listed.size(), reply.want().count());
        std::vector<Ref> send;
        for (std::size_t k = 0; k < wanted.size(); ++k)
            if (wanted[k]) send.push_back(f.chunks[f.listed[k]]);
        send_wanted(send);
        f.stage = InFlight::Stage::done;
    }

    void send_wanted(const std::vector<Ref>& wanted) {
        if (wanted.empty()) return;
        // Compressed in groups of ~1 MiB on the pool; each group is sent as
        // soon as it and those before it are compressed, so that the stream
        // carries the first groups while the pool compresses the next.
        std::vector<std::vector<std::byte>> frames(wanted.size());  // empty: sent raw (a store at level 0 keeps chunks raw)
        const int level = params_.zstd_level;
        std::vector<std::size_t> ends;  // of each group, in `wanted`
        for (std::size_t begin = 0; begin < wanted.size();) {
            std::size_t end = begin, bytes = 0;
            while (end < wanted.size() && (end == begin || bytes < kCompressGroup)) bytes += wanted[end++].length();
            ends.push_back(end);
            begin = end;
        }
        std::unique_ptr<std::atomic<bool>[]> compressed(new std::atomic<bool>[ends.size()]);
        for (std::size_t g = 0; g < ends.size(); ++g) {
            compressed[g].store(level <= 0);
            if (level <= 0) continue;
            const std::size_t begin = g == 0 ? 0 : ends[g - 1], end = ends[g];
            std::atomic<bool>* flag = &compressed[g];
            pool_.submit([&wanted, &frames, flag, begin, end, level] {
                for (std::size_t k = begin; k < end; ++k)
                    store::detail::thread_compressor(level).compress_frame(wanted[k].bytes(), frames[k]);
                flag->store(true);
            });
        }
        v1::PushRequest req;
        ChunkPacker packer(
            [&](v1::Chunks& chunks) {
                req.mutable_data()->Swap(&chunks);
                stream_.write(req);
                req.Clear();
            },
            !data_ids_optional_);
        try {
            for (std::size_t g = 0; g < ends.size(); ++g) {
                pool_.wait([&] { return compressed[g].load(); });
                for (std::size_t k = g == 0 ? 0 : ends[g - 1]; k < ends[g]; ++k) {
                    const bool is_raw = frames[k].empty();
                    packer.add(wanted[k].id(), wanted[k].length(), is_raw,
                               is_raw ? wanted[k].bytes() : std::span<const std::byte>(frames[k]));
                    file_.bytes_sent += wanted[k].length();
                    ++file_.chunks_sent;
                }
            }
            packer.flush();
        } catch (...) {
            // The tasks still queued write into `frames`: they finish first.
            pool_.wait([&] {
                for (std::size_t g = 0; g < ends.size(); ++g)
                    if (!compressed[g].load()) return false;
                return true;
            });
            throw;
        }
        file_.payload_sent += packer.payload_bytes();
    }

    PushStream& stream_;
    const ServerParams& params_;
    std::shared_ptr<const CutFinder> finder_;
    common::TaskPool& pool_;
    ProgressThrottle& progress_;
    const bool group_lists_;
    const std::size_t group_digest_bytes_;
    const bool data_ids_optional_;
    bool defer_done_ = false;
    bool expect_done_ = true;
    std::size_t dones_due_ = 0;  // files ended whose done is not read yet
    std::deque<InFlight> in_flight_;   // in file order (references stay valid: push_back, pop_front)
    std::deque<InFlight*> replies_;    // the list each reply to come is about
    std::vector<Ref> pending_;         // chunks not listed yet, in file order
    std::deque<Held> held_;            // segments from the feed, in order
    PushedFile file_;
    std::uint64_t sent_before_ = 0;
};

}  // namespace cdc::transfer::detail
