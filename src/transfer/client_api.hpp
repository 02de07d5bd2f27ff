// SPDX-License-Identifier: Apache-2.0
// The client's side of push and pull, below gRPC: they talk to a
// MessageStream (a gRPC stream in client.cpp; a session in process in the
// tests), so that the protocol logic is tested without a network.
#pragma once

#include "cdc_transfer.pb.h"
#include "protocol.hpp"

#include <cdc/algorithms.hpp>
#include <cdc/options.hpp>
#include <cdc/snapshot.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cdc::transfer {

/// A bidirectional stream of messages. write() and read() throw
/// TransferError when the stream broke (with the peer's status if known).
template <class Out, class In>
class MessageStream {
public:
    virtual ~MessageStream() = default;
    virtual void write(const Out& message) = 0;
    /// False at the end of the stream (then finish() tells why).
    virtual bool read(In& message) = 0;
    /// No more writes (half-close).
    virtual void writes_done() = 0;
    /// Waits for the stream's status: throws TransferError unless it is OK.
    virtual void finish() = 0;
    /// Abandons the stream (the peer sees it cancelled).
    virtual void cancel() = 0;
    /// Makes a read blocked in another thread return false (the stream is
    /// cancelled); cancel() or finish() still follow, in the reading thread
    /// or after it stopped.
    virtual void interrupt() {}
    /// Bytes of the messages written / read so far (serialized sizes + the
    /// 5-byte gRPC frame header each): what travelled, give or take HTTP/2 framing.
    std::uint64_t wire_sent = 0;
    std::uint64_t wire_received = 0;
};
using PushStream = MessageStream<v1::PushRequest, v1::PushReply>;
using PullStream = MessageStream<v1::PullRequest, v1::PullReply>;

/// What the server said about its store.
struct ServerParams {
    std::string algorithm;
    Profile profile;
    int zstd_level = 3;
    std::string store_id;
    std::uint32_t max_message_bytes = 0;
    std::uint32_t max_list_chunks = 0;
    bool group_lists = false;  ///< the server takes GroupLists in a push
    std::size_t group_digest_bytes = 32;  ///< of each group digest sent (16 where the server takes 16)
    bool data_ids_optional = false;       ///< pushed chunk data may go without ids (the chunk due)
    std::string key_check;                ///< a keyed store's key check value (store::key_check_value), if sent
    bool key_missing = false;             ///< keyed, and the server lacks the key: it takes no push
    bool encrypted = false;               ///< the store is encrypted at rest (the server holds its key)
    bool tree_ids = false;                ///< a tree push may ask which trees the server lacks (TreeIds)
    /// An encrypted store's chunker key, sent to a client with the server's token.
    std::optional<Key> chunker_key;
    std::string address;                  ///< the server's (for messages)
};
ServerParams params_from(const v1::InfoReply& info);
/// The cut finder a client chunks with (OptionError for a keyed store
/// without `key`, or with a key whose check value is not the store's). No
/// `key`: the chunker key the server sent, if any.
std::shared_ptr<const CutFinder> client_finder(const ServerParams& params, const std::optional<Key>& key);

/// Progress of a push or pull (called at most ~5 times a second).
struct TransferProgress {
    std::uint64_t bytes_done = 0;   ///< read (push) or written (pull)
    std::uint64_t bytes_total = 0;  ///< 0 when unknown
    std::uint64_t bytes_sent = 0;   ///< raw bytes of the chunks that travelled
    std::uint64_t files_done = 0;
    std::uint64_t files_total = 0;
    double seconds = 0;
};
using TransferProgressFn = std::function<void(const TransferProgress&)>;

// ---------------------------------------------------------------- push

struct PushInput {
    std::string path;   ///< "-": standard input
    std::string name;   ///< the name on the server
    std::uint64_t size = 0;  ///< for progress (0 = unknown)
    bool inside_tree = false;  ///< found by walking a tree: opened by open_walked_file (walk.hpp)
    bool follow_symlinks = false;  ///< the walk followed links
};

struct PushedFile {
    std::string name;
    std::string path;
    std::uint64_t bytes = 0;
    std::uint64_t chunks = 0;
    std::uint64_t chunks_sent = 0;
    std::uint64_t bytes_sent = 0;      ///< raw bytes of the chunks sent
    std::uint64_t payload_sent = 0;    ///< their compressed size
    std::uint64_t new_chunks = 0;      ///< chunks the server stored (a chunk sent may be stored already by a concurrent push)
    bool unchanged = false;            ///< the server's file of that name had the same chunks (nothing read back)
    bool identical = false;            ///< a new name: another stored file had the same chunks (nothing read back)
    std::string digest;                ///< BLAKE3-256 of the bytes sent (32 raw bytes)
};

struct InputProblem {
    std::string path;
    std::string message;
};

struct PushReport {
    std::vector<PushedFile> files;
    std::vector<InputProblem> errors;  ///< inputs skipped (cannot be opened or read)
    std::uint64_t bytes_read = 0;
    std::uint64_t bytes_sent = 0;
    std::uint64_t payload_sent = 0;
    std::uint64_t chunks = 0;
    std::uint64_t chunks_sent = 0;
    std::uint64_t wire_sent = 0;
    std::uint64_t wire_received = 0;
    double seconds = 0;
};

struct PushOptions {
    std::optional<Key> key;            ///< a keyed store's key (to chunk alike)
    unsigned threads = 0;              ///< compression threads (0: every core)
    bool group_lists = true;           ///< list chunks in groups where the server takes them
    TransferProgressFn progress;
};

/// Pushes the inputs over a stream from `open_stream` (files in order, then
/// finish). An input that cannot be opened or read is skipped
/// (report.errors); one that fails midway ends the stream (the server
/// commits the files before it, never the broken one) and a new stream
/// carries the rest. TransferError if the
/// server refuses something or the stream breaks.
PushReport push_files(const std::function<std::unique_ptr<PushStream>()>& open_stream, const ServerParams& params,
                      const std::vector<PushInput>& inputs, const PushOptions& options);

// ---------------------------------------------------------------- a tree as one snapshot

struct TreePushOptions {
    PushOptions push;
    /// The paths, tags, host, parent (an id on the server, or "": the
    /// newest of this host and paths), no_parent, force_read, xattrs,
    /// excludes and one_file_system, as for `store backup`.
    store::SnapshotOptions snapshot;
};

struct TreePushReport {
    store::Snapshot snapshot;                 ///< as the server committed it (its id and totals)
    std::vector<store::SnapshotIssue> skipped;   ///< left out (could not be read, changed while read)
    std::vector<store::SnapshotIssue> warnings;  ///< kept, with a problem
    std::uint64_t excluded = 0;
    std::uint64_t files_pushed = 0;           ///< files whose chunks were listed
    std::uint64_t files_reused = 0;           ///< files unchanged since the parent: not read
    std::uint64_t bytes_read = 0;
    std::uint64_t bytes_sent = 0;
    std::uint64_t payload_sent = 0;
    std::uint64_t chunks = 0;
    std::uint64_t chunks_sent = 0;
    std::uint64_t tree_bytes = 0;             ///< of the tree records sent
    std::uint64_t trees = 0;                  ///< tree objects of the snapshot
    std::uint64_t trees_sent = 0;             ///< of those, sent (the others the server held)
    std::uint64_t wire_sent = 0;
    std::uint64_t wire_received = 0;
    unsigned attempts = 1;                    ///< streams used (a file that changed while read restarts the push)
    double seconds = 0;
};

/// Captures the paths as `store backup` does and commits them on the server
/// as one snapshot, in one Push stream (proto: SnapshotStart): files
/// unchanged since the parent are offered back by the server and not read;
/// the others are pushed as by push_files; then the tree objects and the
/// commit. A file that changes while it is read ends the stream (the
/// server keeps its chunks, commits no snapshot) and the push starts again
/// without it (it is reported in `skipped`). TransferError if the server
/// refuses (an encrypted store, a format-1 store, a parent it lacks) or the
/// stream breaks: no snapshot is committed then. OptionError for paths that
/// cannot be captured.
TreePushReport push_tree(const std::function<std::unique_ptr<PushStream>()>& open_stream, const ServerParams& params,
                         const TreePushOptions& options);

// ---------------------------------------------------------------- pull

struct PullOptions {
    std::optional<Key> key;
    std::vector<std::filesystem::path> seeds;  ///< files whose chunks may be reused
    bool restore_metadata = true;              ///< mode and mtime from the server
    /// The mode exactly as the server has it; else masked by the umask, as
    /// a file one creates is (whoever pushed chose it: 0777 must not make it
    /// writable by everyone here).
    bool keep_modes = false;
    bool keep_setid = false;                   ///< with them the setuid, setgid, sticky bits (GetOptions)
    TransferProgressFn progress;
};

struct PullReport {
    std::uint64_t bytes = 0;          ///< the file's size
    std::uint64_t chunks = 0;
    std::uint64_t chunks_sent = 0;    ///< chunks that travelled
    std::uint64_t bytes_sent = 0;     ///< their raw bytes
    std::uint64_t payload_sent = 0;   ///< their size as sent
    std::uint64_t bytes_reused = 0;   ///< raw bytes taken from the seeds (and an older OUT, a partial pull)
    std::uint64_t seed_bytes = 0;     ///< bytes of the seeds chunked
    bool up_to_date = false;          ///< OUT was the file already (size and BLAKE3): nothing fetched nor written
    std::uint64_t wire_sent = 0;
    std::uint64_t wire_received = 0;
    double seconds = 0;
};

/// The hidden partial file a pull into `out` writes to (kept when the
/// transfer breaks: the next pull reuses its chunks): ".OUT.cdc-pull", or
/// ".cdc-pull-" and 16 hex digits of OUT's name's BLAKE3 where that name
/// would pass NAME_MAX (with ".old", which the next pull renames it to).
std::filesystem::path partial_path(const std::filesystem::path& out);

/// Pulls `name` into `out`: written to partial_path(out), checked (size and
/// whole-file BLAKE3), then renamed over `out`. `out` (when it exists), an
/// earlier partial file and the seeds are chunked with the store's
/// parameters first; their chunks are not fetched. TransferError if the
/// server refuses or the stream breaks (the partial file stays), or the
/// bytes do not check (it is removed); IoError for local I/O.
PullReport pull_file(PullStream& stream, const ServerParams& params, const std::string& name,
                     const std::filesystem::path& out, const PullOptions& options);
/// The same to a file descriptor (e.g. stdout): the seeds only, no temp file;
/// the digest is checked at the end (after the bytes went out).
PullReport pull_to_fd(PullStream& stream, const ServerParams& params, const std::string& name, int fd,
                      const PullOptions& options);

}  // namespace cdc::transfer
