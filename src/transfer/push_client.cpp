// push_files: chunk each input with the store's parameters (ChunkFeed), list
// the ids, send the chunks the server wants, compressed on a pool of threads.
// Two lists are in flight: the server looks list k up while the chunks of
// list k - 1 are compressed and sent.
#include "chunk_feed.hpp"
#include "chunk_messages.hpp"
#include "client_api.hpp"
#include "progress.hpp"

#include "../store/codec.hpp"
#include "../store/task_pool.hpp"

#include <cdc/digest.hpp>
#include <cdc/error.hpp>

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <new>
#include <stdexcept>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc::transfer {

namespace {

// Lists sent before the oldest one's want is read.
constexpr std::size_t kListsInFlight = 2;
// Raw bytes of wanted chunks per compression task.
constexpr std::size_t kCompressGroup = std::size_t{1} << 20;

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

class FileSender {
public:
    FileSender(PushStream& stream, const ServerParams& params, std::shared_ptr<const CutFinder> finder,
               store::detail::TaskPool& pool, ProgressThrottle& progress)
        : stream_(stream), params_(params), finder_(std::move(finder)), pool_(pool), progress_(progress) {}

    /// Sends one file; TransferError from the server, IoError from the input.
    PushedFile send(const PushInput& in, int fd, const store::FileMeta& meta) {
        file_ = {};
        file_.name = in.name;
        file_.path = in.path;
        v1::PushRequest req;
        auto* st = req.mutable_start();
        st->set_name(meta.name);
        st->set_mode(meta.mode);
        st->set_mtime_ns(meta.mtime_ns);
        stream_.write(req);

        FdReader reader(fd, in.path == "-" ? std::string("stdin") : in.path);
        ChunkFeed feed(finder_, reader);
        Hasher whole(DigestKind::blake3);
        const std::uint64_t list_bytes = max_list_bytes(params_.profile.max_size);
        const std::size_t list_chunks = std::min<std::size_t>(kMaxListChunks, params_.max_list_chunks ? params_.max_list_chunks : kMaxListChunks);
        try {
            while (ChunkFeed::Segment* g = feed.next()) {
                whole.update(g->bytes);
                file_.bytes += g->bytes.size();
                const std::size_t n = g->lengths.size();
                if (n == 0) {
                    feed.release(g);
                    continue;
                }
                std::size_t i = 0;
                while (i < n) {
                    std::size_t j = i;
                    std::uint64_t bytes = 0;
                    while (j < n && j - i < list_chunks && (j == i || bytes + g->lengths[j] <= list_bytes))
                        bytes += g->lengths[j++];
                    send_list(*g, i, j);
                    in_flight_.push_back({g, i, j, j == n});
                    while (in_flight_.size() > kListsInFlight) serve_oldest(feed);
                    i = j;
                }
                progress_.file_bytes(file_.bytes, bytes_sent_total());
            }
            while (!in_flight_.empty()) serve_oldest(feed);
        } catch (...) {
            in_flight_.clear();
            throw;
        }
        const Digest d = whole.finish();
        req.Clear();
        auto* e = req.mutable_end();
        e->set_size(file_.bytes);
        e->set_digest(d.bytes.data(), 32);
        stream_.write(req);
        v1::PushReply reply;
        if (!stream_.read(reply)) stream_.finish();
        if (reply.body_case() != v1::PushReply::kDone)
            throw TransferError(Code::internal, fmt::format("'{}': the server answered the end of the file with "
                                                            "something else than done",
                                                            in.name));
        file_.new_chunks = reply.done().new_chunks();
        file_.unchanged = reply.done().unchanged();
        sent_before_ += file_.bytes_sent;
        return file_;
    }

private:
    struct InFlight {
        ChunkFeed::Segment* segment;
        std::size_t first, end;
        bool last_of_segment;
    };

    std::uint64_t bytes_sent_total() const noexcept { return sent_before_ + file_.bytes_sent; }

    void send_list(const ChunkFeed::Segment& g, std::size_t first, std::size_t end) {
        v1::PushRequest req;
        auto* c = req.mutable_chunks();
        std::string ids;
        ids.reserve((end - first) * 32);
        for (std::size_t k = first; k < end; ++k) append_id(ids, g.ids[k]);
        c->set_ids(std::move(ids));
        c->mutable_sizes()->Add(g.lengths.begin() + static_cast<std::ptrdiff_t>(first),
                                g.lengths.begin() + static_cast<std::ptrdiff_t>(end));
        stream_.write(req);
        file_.chunks += end - first;
    }

    void serve_oldest(ChunkFeed& feed) {
        const InFlight f = in_flight_.front();
        in_flight_.pop_front();
        v1::PushReply reply;
        if (!stream_.read(reply)) stream_.finish();  // throws the server's status
        if (reply.body_case() != v1::PushReply::kWant)
            throw TransferError(Code::internal, fmt::format("'{}': the server answered a chunk list with something "
                                                            "else than a want",
                                                            file_.name));
        const std::vector<bool> wanted = read_bitmap(reply.want().bitmap(), f.end - f.first, reply.want().count());
        send_wanted(*f.segment, f.first, wanted);
        if (f.last_of_segment) feed.release(f.segment);
    }

    void send_wanted(const ChunkFeed::Segment& g, std::size_t first, const std::vector<bool>& wanted) {
        // Compress in groups of ~1 MiB on the pool, then send in order.
        struct Item {
            std::size_t index;
            std::vector<std::byte> frame;  // empty: sent raw (a store at level 0 keeps chunks raw)
        };
        std::vector<Item> items;
        for (std::size_t k = 0; k < wanted.size(); ++k)
            if (wanted[k]) items.push_back({first + k, {}});
        if (items.empty()) return;
        std::atomic<std::size_t> left{0};
        std::size_t begin = 0;
        const int level = params_.zstd_level;
        while (level > 0 && begin < items.size()) {
            std::size_t end = begin, bytes = 0;
            while (end < items.size() && (end == begin || bytes < kCompressGroup)) bytes += g.lengths[items[end++].index];
            left.fetch_add(1);
            pool_.submit([&items, &g, &left, begin, end, level] {
                for (std::size_t k = begin; k < end; ++k) {
                    Item& it = items[k];
                    const std::span<const std::byte> raw(g.bytes.data() + g.starts[it.index], g.lengths[it.index]);
                    store::detail::thread_compressor(level).compress_frame(raw, it.frame);
                }
                left.fetch_sub(1);
            });
            begin = end;
        }
        if (level > 0) pool_.wait([&] { return left.load() == 0; });
        v1::PushRequest req;
        ChunkPacker packer([&](v1::Chunks& chunks) {
            req.mutable_data()->Swap(&chunks);
            stream_.write(req);
            req.Clear();
        });
        for (const Item& it : items) {
            const std::span<const std::byte> raw(g.bytes.data() + g.starts[it.index], g.lengths[it.index]);
            const bool is_raw = it.frame.empty();
            packer.add(g.ids[it.index], g.lengths[it.index], is_raw, is_raw ? raw : std::span<const std::byte>(it.frame));
            file_.bytes_sent += g.lengths[it.index];
            ++file_.chunks_sent;
        }
        packer.flush();
        file_.payload_sent += packer.payload_bytes();
    }

    PushStream& stream_;
    const ServerParams& params_;
    std::shared_ptr<const CutFinder> finder_;
    store::detail::TaskPool& pool_;
    ProgressThrottle& progress_;
    std::deque<InFlight> in_flight_;
    PushedFile file_;
    std::uint64_t sent_before_ = 0;
};

}  // namespace

PushReport push_files(const std::function<std::unique_ptr<PushStream>()>& open_stream, const ServerParams& params,
                      const std::vector<PushInput>& inputs, const PushOptions& options) {
    const auto t0 = std::chrono::steady_clock::now();
    auto finder = client_finder(params, options.key);
    store::detail::TaskPool pool(options.threads);
    PushReport report;
    std::uint64_t total = 0;
    for (const auto& in : inputs) total += in.size;
    ProgressThrottle progress(options.progress, total, inputs.size());
    std::unique_ptr<PushStream> stream;
    auto add_wire = [&] {
        if (!stream) return;
        report.wire_sent += stream->wire_sent;
        report.wire_received += stream->wire_received;
    };
    std::unique_ptr<FileSender> sender;
    for (const auto& in : inputs) {
        const bool is_stdin = in.path == "-";
        int fd = 0;
        if (!is_stdin) {
            fd = ::open(in.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
            if (fd < 0) {
                report.errors.push_back({in.path, fmt::format("cannot open: {}", std::strerror(errno))});
                progress.file_done(0);
                continue;
            }
        }
        store::FileMeta meta;
        meta.name = in.name;
        struct stat st {};
        if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
            meta.mode = static_cast<std::uint32_t>(st.st_mode & 07777);
            meta.mtime_ns = std::int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
            ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        } else {
            meta.mode = 0644;
            meta.mtime_ns = now_ns();
        }
        if (!stream) {
            stream = open_stream();
            sender = std::make_unique<FileSender>(*stream, params, finder, pool, progress);
        }
        try {
            PushedFile f = sender->send(in, fd, meta);
            progress.file_done(f.bytes);
            report.bytes_read += f.bytes;
            report.bytes_sent += f.bytes_sent;
            report.payload_sent += f.payload_sent;
            report.chunks += f.chunks;
            report.chunks_sent += f.chunks_sent;
            report.files.push_back(std::move(f));
        } catch (const IoError& e) {
            // The server cannot drop an open file: end this stream (it keeps
            // the chunks and the files before) and go on with a new one.
            report.errors.push_back({in.path, e.what()});
            progress.file_done(0);
            stream->cancel();
            add_wire();
            sender.reset();
            stream.reset();
        } catch (...) {
            if (!is_stdin) ::close(fd);
            throw;
        }
        if (!is_stdin) ::close(fd);
    }
    if (!stream) {
        stream = open_stream();
    }
    v1::PushRequest req;
    req.mutable_finish();
    stream->write(req);
    v1::PushReply reply;
    if (!stream->read(reply)) stream->finish();
    if (reply.body_case() != v1::PushReply::kFinished)
        throw TransferError(Code::internal, "the server answered finish with something else than finished");
    stream->writes_done();
    stream->finish();
    add_wire();
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return report;
}

}  // namespace cdc::transfer
