// SPDX-License-Identifier: Apache-2.0
// push_files: each input through a FileSender (file_sender.hpp) in order,
// then finish.
#include "file_sender.hpp"

#include "../store/codec.hpp"
#include "../common/task_pool.hpp"

#include <cdc/digest.hpp>
#include <cdc/error.hpp>
#include <cdc/walk.hpp>

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc::transfer {

namespace {

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

PushReport push_files(const std::function<std::unique_ptr<PushStream>()>& open_stream, const ServerParams& params,
                      const std::vector<PushInput>& inputs, const PushOptions& options) {
    const auto t0 = std::chrono::steady_clock::now();
    auto finder = client_finder(params, options.key);
    if (params.profile.keyed && params.key_missing)
        throw TransferError(Code::failed_precondition,
                            fmt::format("the server{} holds no key for its keyed store (it was started without "
                                        "--key-file): it takes no push; start cdc serve with the store's --key-file",
                                        params.address.empty() ? std::string() : " at " + params.address));
    common::TaskPool pool(options.threads);
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
    std::unique_ptr<detail::FileSender> sender;
    for (const auto& in : inputs) {
        // A name the server would refuse: this file is skipped, not the push.
        if (const std::string why = name_problem(in.name); !why.empty()) {
            report.errors.push_back({in.path, fmt::format("not pushed: {}", why)});
            progress.file_done(0);
            continue;
        }
        const bool is_stdin = in.path == "-";
        int fd = 0;
        if (!is_stdin) {
            try {
                fd = open_walked_file(in.path, in.inside_tree, in.follow_symlinks);
            } catch (const IoError& e) {
                report.errors.push_back({in.path, e.what()});
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
            sender = std::make_unique<detail::FileSender>(*stream, params, finder, pool, progress, options.group_lists);
        }
        try {
            PushedFile f = sender->send(in, fd, st, meta);
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
