// SPDX-License-Identifier: Apache-2.0
// push_tree: a tree captured as `store backup` captures it
// (store::TreeCapture, store/ingest.hpp) and committed on the server as one snapshot
// in one Push stream (proto: SnapshotStart; the server's side is
// push_snapshot.cpp). The client encodes the tree objects itself (their ids
// are the BLAKE3 of their bytes), with each file's content digest: the
// parent's where the server offered it back (the file unchanged since the
// parent, not read), else the BLAKE3 of the bytes pushed.
#include "file_sender.hpp"
#include "tree_pull.hpp"

#include "../store/ingest.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <functional>
#include <algorithm>
#include <set>
#include <unordered_map>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc::transfer {

namespace {

// Files offered to the server per Candidates message (its limit).
constexpr std::size_t kCandidatesPerMessage = 4096;
// Tree ids asked about per TreeIds message (the server's limit).
constexpr std::size_t kTreeIdsPerMessage = 32768;
// Streams tried: each restart leaves out a file that changed while it was read.
constexpr unsigned kMaxAttempts = 4;

std::int64_t ns_of(const struct timespec& t) { return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec; }

struct Job {
    std::string path;    ///< from the snapshot's root, no leading '/'
    std::string digest;  ///< 32 bytes once pushed or reused
    bool reused = false;
    bool skipped = false;  ///< left out (this attempt or an earlier one)
    bool changed = false;  ///< changed while it was read: left out of every later attempt
    struct stat opened {};
    bool was_opened = false;
};

/// A file that changed while it was read: the stream is abandoned.
struct Restart {};

v1::PushReply read_reply(PushStream& stream, v1::PushReply::BodyCase want, const char* what) {
    v1::PushReply reply;
    if (!stream.read(reply)) stream.finish();  // throws the server's status
    if (reply.body_case() != want)
        throw TransferError(Code::internal, fmt::format("the server answered {} with something else", what));
    return reply;
}

/// Sends the tree records: with `ask`, their ids first (the server answers
/// which it lacks: the parent's trees it holds are not sent).
void send_trees(PushStream& stream, const std::string& records, std::span<const store::TreeCapture::RecordSpan> all,
                bool ask, TreePushReport& report) {
    std::vector<char> wanted(all.size(), 1);
    if (ask) {
        for (std::size_t first = 0; first < all.size(); first += kTreeIdsPerMessage) {
            const std::size_t n = std::min(kTreeIdsPerMessage, all.size() - first);
            v1::PushRequest req;
            std::string* ids = req.mutable_tree_ids()->mutable_ids();
            ids->reserve(n * 32);
            for (std::size_t i = first; i < first + n; ++i) ids->append(records, all[i].at, 32);
            stream.write(req);
            const v1::PushReply r = read_reply(stream, v1::PushReply::kTreesWanted, "tree ids");
            if (r.trees_wanted().wanted().size() != n)
                throw TransferError(Code::internal, "the server answered tree ids with a list of another length");
            for (std::size_t i = 0; i < n; ++i) wanted[first + i] = r.trees_wanted().wanted()[i] != 0;
        }
    }
    report.trees = all.size();
    report.trees_sent = 0;
    std::string out;  // (the records wanted, in pieces of kDataMessageBytes: the server joins them)
    for (std::size_t i = 0; i < all.size(); ++i)
        if (wanted[i]) ++report.trees_sent, out.append(records, all[i].at, all[i].length);
    report.tree_bytes = out.size();
    for (std::size_t at = 0; at < out.size(); at += kDataMessageBytes) {
        v1::PushRequest req;
        req.mutable_trees()->set_bytes(out.substr(at, kDataMessageBytes));
        stream.write(req);
    }
}

}  // namespace

TreePushReport push_tree(const std::function<std::unique_ptr<PushStream>()>& open_stream, const ServerParams& params,
                         const TreePushOptions& options) {
    const auto t0 = std::chrono::steady_clock::now();
    if (params.profile.keyed && params.key_missing)
        throw TransferError(Code::failed_precondition,
                            fmt::format("the server{} holds no key for its keyed store (it was started without "
                                        "--key-file): it takes no push; start cdc serve with the store's --key-file",
                                        params.address.empty() ? std::string() : " at " + params.address));
    auto finder = client_finder(params, options.push.key);
    TreePushReport report;

    // 1. Capture, metadata only.
    store::SnapshotResult captured;
    store::Snapshot& snap = captured.snapshot;
    const store::TreeCapture cap(options.snapshot, snap, captured);
    const std::vector<store::TreeCapture::File>& files = cap.files();
    report.warnings = captured.warnings;
    report.excluded = captured.excluded;
    std::vector<Job> jobs(files.size());
    for (std::size_t k = 0; k < files.size(); ++k) jobs[k].path = files[k].path;

    common::TaskPool pool(options.push.threads);
    std::vector<store::SnapshotIssue> changed;  // files left out of every attempt after the first that met them
    for (unsigned attempt = 1;; ++attempt) {
        report.attempts = attempt;
        std::vector<store::SnapshotIssue> skipped = captured.skipped;
        skipped.insert(skipped.end(), changed.begin(), changed.end());
        std::unique_ptr<PushStream> stream = open_stream();
        bool no_dones = false;  // (the server sends no done per file)
        auto add_wire = [&] {
            report.wire_sent += stream->wire_sent;
            report.wire_received += stream->wire_received;
        };
        try {
            for (Job& j : jobs) {
                j.reused = j.was_opened = false;
                j.skipped = j.changed;
                j.digest.clear();
            }
            report.files_pushed = report.files_reused = 0;
            report.bytes_read = report.bytes_sent = report.payload_sent = report.chunks = report.chunks_sent = 0;

            // 2. The snapshot's start; the files the server offers back.
            {
                v1::PushRequest req;
                auto* m = req.mutable_snapshot();
                for (const auto& p : snap.paths) m->add_paths(p);
                for (const auto& t : options.snapshot.tags) m->add_tags(t);
                m->set_host(snap.host);
                m->set_user(snap.user);
                m->set_parent(options.snapshot.parent);
                m->set_no_parent(options.snapshot.no_parent);
                m->set_time_ns(snap.time_ns);
                m->set_utc_offset_s(snap.utc_offset_s);
                stream->write(req);
                const v1::PushReply r = read_reply(*stream, v1::PushReply::kSnapshotStarted, "the snapshot's start");
                report.snapshot.parent = r.snapshot_started().parent();
                no_dones = r.snapshot_started().no_dones();
            }
            if (!options.snapshot.force_read && !report.snapshot.parent.empty()) {
                std::vector<std::size_t> batch;
                auto offer = [&] {
                    v1::PushRequest req;
                    auto* m = req.mutable_candidates();
                    for (const std::size_t k : batch) {
                        const store::TreeCapture::File& e = files[k];
                        m->add_paths(jobs[k].path);
                        m->add_sizes(e.size);
                        m->add_mtimes_ns(e.mtime_ns);
                        m->add_ctimes_ns(e.ctime_ns);
                        m->add_inodes(e.inode);
                        m->add_devices(e.device);
                        m->add_sparse(e.sparse);
                        m->add_extents(e.extents);
                    }
                    stream->write(req);
                    const v1::PushReply r = read_reply(*stream, v1::PushReply::kReuse, "candidates");
                    const std::string& digests = r.reuse().digests();
                    if (digests.size() != batch.size() * 32)
                        throw TransferError(Code::internal, "the server answered candidates with a reuse of another length");
                    static const std::string zero(32, '\0');
                    for (std::size_t i = 0; i < batch.size(); ++i) {
                        const std::string dg = digests.substr(i * 32, 32);
                        if (dg == zero) continue;
                        jobs[batch[i]].reused = true;
                        jobs[batch[i]].digest = dg;
                        ++report.files_reused;
                    }
                    batch.clear();
                };
                for (std::size_t k = 0; k < jobs.size(); ++k) {
                    if (jobs[k].skipped) continue;
                    batch.push_back(k);
                    if (batch.size() == kCandidatesPerMessage) offer();
                }
                if (!batch.empty()) offer();
            }

            // 3. The other files, pushed.
            std::uint64_t total = 0, count = 0;
            for (std::size_t k = 0; k < jobs.size(); ++k)
                if (!jobs[k].reused && !jobs[k].skipped) total += files[k].data_length, ++count;
            ProgressThrottle progress(options.push.progress, total, count);
            detail::FileSender sender(*stream, params, finder, pool, progress, options.push.group_lists);
            sender.defer_done(true);
            sender.expect_done(!no_dones);
            for (std::size_t k = 0; k < jobs.size(); ++k) {
                Job& j = jobs[k];
                if (j.reused || j.skipped) continue;
                const store::TreeCapture::File& e = files[k];
                const std::string path = "/" + j.path;
                int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | O_NOATIME);
                if (fd < 0 && errno == EPERM)
                    fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
                std::string problem;
                struct stat st {};
                if (fd < 0)
                    problem = fmt::format("cannot open it: {}", std::strerror(errno));
                else if (::fstat(fd, &st) != 0)
                    problem = fmt::format("cannot examine it: {}", std::strerror(errno));
                else if (!S_ISREG(st.st_mode) || st.st_ino != e.inode || st.st_dev != e.device)
                    problem = "it was replaced after it was captured";
                else if (e.sparse && static_cast<std::uint64_t>(st.st_size) != e.size)
                    problem = "it changed after it was captured";
                if (!problem.empty()) {
                    if (fd >= 0) ::close(fd);
                    j.skipped = true;
                    skipped.push_back({path, problem});
                    progress.file_done(0);
                    continue;
                }
                ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
                std::unique_ptr<Reader> extents;
                if (e.sparse) extents = cap.extents(k, fd, st, path);
                PushInput in;
                in.path = path;
                in.name = j.path;
                store::FileMeta meta;
                meta.name = j.path;
                meta.mode = e.mode;
                meta.mtime_ns = ns_of(st.st_mtim);
                PushedFile f;
                try {
                    f = sender.send(in, fd, st, meta, extents.get());
                } catch (const IoError& err) {
                    ::close(fd);
                    // The server cannot drop an open file: this stream ends
                    // (its chunks stay, no snapshot), the next leaves it out.
                    j.changed = true;
                    changed.push_back({path, err.what()});
                    throw Restart{};
                } catch (...) {
                    ::close(fd);
                    throw;
                }
                ::close(fd);
                progress.file_done(f.bytes);
                j.digest = f.digest;
                j.opened = st;
                j.was_opened = true;
                ++report.files_pushed;
                report.bytes_read += f.bytes;
                report.bytes_sent += f.bytes_sent;
                report.payload_sent += f.payload_sent;
                report.chunks += f.chunks;
                report.chunks_sent += f.chunks_sent;
            }

            sender.read_dones();

            // 4. The trees, bottom-up, each distinct one once.
            std::vector<store::TreeCapture::Content> contents(jobs.size());
            for (std::size_t k = 0; k < jobs.size(); ++k)
                if (!jobs[k].skipped) contents[k] = {jobs[k].digest, jobs[k].was_opened ? &jobs[k].opened : nullptr};
            std::string records;
            std::vector<store::TreeCapture::RecordSpan> spans;
            const std::string root = cap.encode(contents, records, spans, skipped);
            send_trees(*stream, records, spans, params.tree_ids && !report.snapshot.parent.empty(), report);
            v1::PushRequest req;
            req.mutable_commit()->set_root(root.data(), root.size());
            req.mutable_commit()->set_skipped_unreadable(skipped.size());
            stream->write(req);
            const v1::PushReply r = read_reply(*stream, v1::PushReply::kCommitted, "the commit");
            stream->writes_done();
            stream->finish();
            add_wire();
            report.snapshot = snapshot_from_info(r.committed().snapshot());
            store::ChunkId root_id{};
            std::memcpy(root_id.data(), root.data(), root_id.size());
            report.snapshot.tree = store::to_hex(root_id);
            report.snapshot.totals.skipped_unchanged = r.committed().skipped_unchanged();
            report.snapshot.totals.new_bytes = r.committed().new_bytes();
            report.snapshot.totals.bytes_read = report.bytes_read;
            report.snapshot.totals.skipped_unreadable = skipped.size();
            report.skipped = std::move(skipped);
            break;
        } catch (const Restart&) {
            stream->cancel();
            add_wire();
            if (attempt >= kMaxAttempts)
                throw TransferError(Code::aborted,
                                    fmt::format("{} files changed while they were read ({}, ...): no snapshot was "
                                                "committed; push again when the tree is quiet",
                                                changed.size(), changed.front().path));
        } catch (...) {
            stream->cancel();
            throw;
        }
    }
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return report;
}

}  // namespace cdc::transfer
