// SPDX-License-Identifier: Apache-2.0
// The server's side of a tree pushed as one snapshot (proto/cdc_transfer.proto,
// SnapshotStart; docs/TRANSFER.md "Pushing a tree as a snapshot"): the
// messages of the stream handed to the store's SnapshotIntake (ingest.hpp),
// which checks everything the client sends and commits the snapshot whole
// or not at all; its refusals become the stream's status.
#include "push_session.hpp"
#include "tree_session.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <string>
#include <vector>

namespace cdc::transfer {

namespace {

constexpr std::size_t kMaxCandidatesPerMessage = 4096;
constexpr std::size_t kMaxTreeIdsPerMessage = 32768;

/// The store's refusal as the stream's status.
template <class F>
auto intake_call(const char* what, F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const store::NotFoundError& e) {
        throw TransferError(Code::not_found, fmt::format("{}: {}", what, e.what()));
    } catch (const OptionError& e) {
        throw TransferError(Code::invalid_argument, e.what());
    } catch (const store::DamageError& e) {
        throw TransferError(Code::data_loss, e.what());
    }
}

}  // namespace

struct PushSession::SnapshotState {
    std::unique_ptr<store::SnapshotIntake> intake;
};

void PushSession::SnapshotStateDeleter::operator()(SnapshotState* s) const noexcept { delete s; }

std::string PushSession::snapshot_path_problem(const std::string& path) {
    return store::SnapshotIntake::path_problem(path, kMaxNameBytes);
}

std::string PushSession::snapshot_file_name(const std::string& path) const { return snap_->intake->file_name(path); }

std::string PushSession::snapshot_base(const std::string& path) { return snap_->intake->base(path); }

void PushSession::pushed_content(const store::ChunkId& digest, std::uint64_t size) {
    snap_->intake->stored(digest, size, name_);
}

void PushSession::require_snapshot(const char* what) const {
    if (!snap_) throw TransferError(Code::failed_precondition, fmt::format("{} outside a snapshot push", what));
    if (open_) throw TransferError(Code::failed_precondition, fmt::format("{} while '{}' is open", what, name_));
}

void PushSession::snapshot_start(const v1::SnapshotStart& m, const Sink& sink) {
    if (store_.info().format_version < store::kFormatVersion)
        throw TransferError(Code::failed_precondition,
                            fmt::format("the server's store is format {}: it takes no snapshot until `cdc store "
                                        "migrate` is run on it",
                                        store_.info().format_version));
    store::SnapshotIntake::Start start;
    start.paths.assign(m.paths().begin(), m.paths().end());
    start.tags.assign(m.tags().begin(), m.tags().end());
    start.host = m.host();
    start.user = m.user();
    start.parent = m.parent();
    start.no_parent = m.no_parent();
    start.time_ns = m.time_ns();
    start.utc_offset_s = m.utc_offset_s();
    std::unique_ptr<SnapshotState, SnapshotStateDeleter> st(new SnapshotState);
    st->intake = intake_call("parent", [&] { return std::make_unique<store::SnapshotIntake>(store_, start, kMaxNameBytes); });
    const store::Snapshot& s = st->intake->snapshot();
    v1::PushReply reply;
    reply.mutable_snapshot_started()->set_id(s.id);
    reply.mutable_snapshot_started()->set_parent(s.parent);
    reply.mutable_snapshot_started()->set_no_dones(true);
    snap_ = std::move(st);
    sink(reply);
}

void PushSession::candidates(const v1::Candidates& m, const Sink& sink) {
    require_snapshot("candidates");
    if (snap_->intake->trees_begun()) throw TransferError(Code::failed_precondition, "candidates after the trees");
    const std::size_t n = static_cast<std::size_t>(m.paths_size());
    if (n > kMaxCandidatesPerMessage || m.sizes_size() != m.paths_size() || m.mtimes_ns_size() != m.paths_size() ||
        m.ctimes_ns_size() != m.paths_size() || m.inodes_size() != m.paths_size() ||
        m.devices_size() != m.paths_size() || m.sparse_size() != m.extents_size() ||
        (m.sparse_size() != 0 && m.sparse_size() != m.paths_size()))
        throw TransferError(Code::invalid_argument,
                            fmt::format("snapshot refused: a candidates message of {} paths (at most {}, each with "
                                        "its five fields, and sparse and extents for all or none) (nothing is committed)",
                                        n, kMaxCandidatesPerMessage));
    std::vector<store::SnapshotIntake::Candidate> batch(n);
    for (std::size_t i = 0; i < n; ++i) {
        const int k = static_cast<int>(i);
        const bool any = m.sparse_size() != 0;  // (none: a client that offers no sparse file)
        batch[i] = {m.paths(k),  m.sizes(k),          m.mtimes_ns(k),
                    m.ctimes_ns(k), m.inodes(k),      m.devices(k),
                    any && m.sparse(k), any ? std::string_view(m.extents(k)) : std::string_view()};
    }
    v1::PushReply reply;
    reply.mutable_reuse()->set_digests(intake_call("candidates", [&] { return snap_->intake->reuse(batch); }));
    sink(reply);
}

void PushSession::tree_ids(const v1::TreeIds& m, const Sink& sink) {
    require_snapshot("tree ids");
    if (m.ids().size() > kMaxTreeIdsPerMessage * 32)
        throw TransferError(Code::invalid_argument,
                            fmt::format("snapshot refused: a tree ids message of {} bytes (at most {} ids) (nothing "
                                        "is committed)",
                                        m.ids().size(), kMaxTreeIdsPerMessage));
    v1::PushReply reply;
    reply.mutable_trees_wanted()->set_wanted(
        intake_call("tree ids", [&] { return snap_->intake->wanted_trees(m.ids()); }));
    sink(reply);
}

void PushSession::tree_bytes(const v1::TreeBytes& m) {
    require_snapshot("tree records");
    intake_call("tree records", [&] { snap_->intake->add_trees(m.bytes()); });
}

void PushSession::commit_snapshot(const v1::SnapshotCommit& m, const Sink& sink) {
    require_snapshot("commit");
    store::SnapshotTotals read;
    read.bytes_read = totals_.bytes;
    read.new_bytes = totals_.new_bytes;
    read.skipped_unreadable = m.skipped_unreadable();
    const store::Snapshot& s =
        intake_call("commit", [&]() -> const store::Snapshot& { return snap_->intake->commit(*writer_, m.root(), read); });
    finished_ = true;
    snapshot_id_ = s.id;
    v1::PushReply reply;
    auto* c = reply.mutable_committed();
    fill_snapshot_info(s, c->mutable_snapshot());
    c->set_skipped_unchanged(s.totals.skipped_unchanged);
    c->set_new_bytes(s.totals.new_bytes);
    sink(reply);
}

}  // namespace cdc::transfer
