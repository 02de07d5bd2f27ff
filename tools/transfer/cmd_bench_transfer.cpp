// SPDX-License-Identifier: Apache-2.0
// cdc bench transfer: the seed's experiment ("big chunk vs smaller chunks on
// transferring data"), in one run. N MB (default 200) hashed by a server as
// one unary message (limits raised, as in the seed) and as a stream of
// 1 MiB messages, then pushed as chunks; and a file of a few GB hashed as a
// stream, pushed and pulled (as one message it cannot even be sent:
// protobuf caps a message at 2 GiB). Every run gets a fresh server process;
// the client and the server are sampled (VmRSS) over time, and their peaks
// come from wait4. --plot draws memory over time for both.
#include "child_process.hpp"
#include "plot.hpp"
#include "sizes.hpp"
#include "commands.hpp"

#include <cdc/corpus/splitmix64.hpp>
#include <cdc/store.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include <cdc/corpus/datagen.hpp>

namespace cdc::cli {

namespace {

namespace fs = std::filesystem;

// The largest payload a protobuf message may carry (2 GiB - 1), less room
// for the message's own fields.
constexpr std::uint64_t kProtobufLimit = (std::uint64_t{2} << 30) - (std::uint64_t{64} << 20);

struct BenchArgs {
    std::string size = "200M";
    std::string big = "4G";
    std::string dir;
    std::string algorithm = "fastcdc";
    long sample_ms = 20;
    bool json = false;
    std::string plot_dir;
    bool keep = false;
    bool quiet = false;
};

struct Series {
    std::vector<double> t, rss;
};

struct Run {
    std::string input;  // "small" or "big"
    std::string way;
    std::uint64_t bytes = 0;
    double seconds = 0;
    bool ok = false;
    std::string note;
    double client_peak_mb = 0;
    double server_peak_mb = 0;
    Series client, server;
    nlohmann::json report;
};

std::string self_path() {
    std::error_code ec;
    const auto p = fs::read_symlink("/proc/self/exe", ec);
    if (ec) throw IoError("cannot find this program (/proc/self/exe)");
    return p.string();
}

/// Half text, half random, in 1 MiB blocks: compressible and not.
void write_input(const fs::path& path, std::uint64_t bytes) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw IoError(fmt::format("cannot create '{}': {}", path.string(), std::strerror(errno)));
    std::vector<std::uint8_t> block(std::size_t{1} << 20);
    std::uint64_t done = 0;
    for (std::uint64_t i = 0; done < bytes; ++i) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(block.size(), bytes - done));
        if (i % 2 == 0)
            fill_text(block, i);
        else
            fill_splitmix64(block, i);
        std::size_t w = 0;
        while (w < n) {
            const ssize_t k = ::write(fd, block.data() + w, n - w);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) {
                ::close(fd);
                throw IoError(fmt::format("cannot write '{}': {}", path.string(), std::strerror(errno)));
            }
            w += static_cast<std::size_t>(k);
        }
        done += n;
    }
    ::close(fd);
}

/// The whole file, or "" if it cannot be read (yet).
std::string read_all(const fs::path& p) {
    std::string out;
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return out;
    char buf[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return out;
}

class Bench {
public:
    Bench(const BenchArgs& a, fs::path work) : a_(a), work_(std::move(work)), self_(self_path()) {}

    /// One run: a fresh server on `store`, then the client; both sampled.
    Run run(const std::string& input, const std::string& way, std::uint64_t bytes, const fs::path& store,
            std::vector<std::string> server_extra, std::vector<std::string> client_args) {
        Run r;
        r.input = input;
        r.way = way;
        r.bytes = bytes;
        const fs::path port_file = work_ / "port";
        fs::remove(port_file);
        // (--no-token: the benchmark's own servers, whose clients include the seed's unary one)
        std::vector<std::string> sargv{self_, "serve", "--store", store.string(), "--listen", "127.0.0.1:0", "--no-token",
                                       "--port-file", port_file.string(), "-q"};
        sargv.insert(sargv.end(), server_extra.begin(), server_extra.end());
        const pid_t server = spawn_process(sargv, (work_ / "server.out").string(), (work_ / "server.err").string());
        std::string port;
        for (int i = 0; i < 3000 && port.empty(); ++i) {
            if (wait_process(server, true).code != -1) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
            std::string text = read_all(port_file);
            if (!text.empty() && text.back() == '\n') port = text.substr(0, text.size() - 1);
        }
        if (port.empty()) {
            ::kill(server, SIGKILL);
            wait_process(server);
            r.note = "the server did not start: " + read_all(work_ / "server.err");
            return r;
        }
        for (auto& arg : client_args)
            if (arg == "{addr}") arg = "127.0.0.1:" + port;
        std::vector<std::string> cargv{self_};
        cargv.insert(cargv.end(), client_args.begin(), client_args.end());
        const auto t0 = std::chrono::steady_clock::now();
        const pid_t client = spawn_process(cargv, (work_ / "client.out").string(), (work_ / "client.err").string());
        Exit ce;
        for (;;) {
            const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            const Memory cm = process_memory(client), sm = process_memory(server);
            if (cm.rss_mb > 0) r.client.t.push_back(t), r.client.rss.push_back(cm.rss_mb);
            if (sm.rss_mb > 0) r.server.t.push_back(t), r.server.rss.push_back(sm.rss_mb);
            ce = wait_process(client, true);
            if (ce.code != -1) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(a_.sample_ms));
        }
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ::kill(server, SIGTERM);
        const Exit se = wait_process(server);
        r.client_peak_mb = ce.peak_mb;
        r.server_peak_mb = se.peak_mb;
        r.ok = ce.code == 0;
        const std::string out = read_all(work_ / "client.out");
        try {
            r.report = nlohmann::json::parse(out);
        } catch (const std::exception&) {
        }
        if (!r.ok) {
            std::string err = read_all(work_ / "client.err");
            while (!err.empty() && err.back() == '\n') err.pop_back();
            r.note = fmt::format("exit {}: {}", ce.code, err);
        }
        if (!a_.json && !a_.quiet && stderr_is_tty()) fmt::print(stderr, "\r\033[K");
        return r;
    }

    void progress(const std::string& what) const {
        if (!a_.json && !a_.quiet && stderr_is_tty()) {
            fmt::print(stderr, "\r\033[Kbench transfer: {}", what);
            std::fflush(stderr);
        }
    }

private:
    const BenchArgs& a_;
    fs::path work_;
    std::string self_;
};

std::string size_text(std::uint64_t bytes) { return tools::format_size(static_cast<double>(bytes)); }

void plot_runs(const std::vector<Run>& runs, const std::string& input, const std::string& title,
               const fs::path& out) {
    plot::Chart c;
    c.title = title;
    c.subtitle = "resident memory of the client and of the server (fresh per run), loopback";
    c.x_label = "elapsed (s)";
    c.y_label = "resident set size (MB)";
    c.x_min = 0;
    for (const auto& r : runs) {
        if (r.input != input || r.client.t.empty()) continue;
        c.series.push_back({r.way + ": client", r.client.t, r.client.rss});
        if (!r.server.t.empty()) c.series.push_back({r.way + ": server", r.server.t, r.server.rss});
    }
    if (!c.series.empty()) plot::render_png(c, out);
}

int run_bench(const BenchArgs& a) {
    const std::uint64_t small = tools::parse_size(a.size, "--size");
    const std::uint64_t big = tools::parse_size(a.big, "--big");
    if (small == 0) throw UsageError("--size = 0 is invalid: at least 1 byte");
    if (small > kProtobufLimit)
        throw UsageError(fmt::format("--size = {} is invalid: one protobuf message holds less than 2 GiB", a.size));
    if (a.sample_ms <= 0) throw UsageError(fmt::format("--sample-ms = {} is invalid: must be > 0", a.sample_ms));
    fs::path work;
    if (a.dir.empty()) {
        std::string tmpl = (fs::temp_directory_path() / "cdc-bench-transfer-XXXXXX").string();
        if (!::mkdtemp(tmpl.data())) throw IoError(fmt::format("cannot create a temporary directory: {}", std::strerror(errno)));
        work = tmpl;
    } else {
        work = a.dir;
        fs::create_directories(work);
    }
    Bench bench(a, work);
    std::vector<Run> runs;
    // The seed raised gRPC's limit to 900 MB; here: twice the payload, at least 64 MiB.
    auto unary_limit = [](std::uint64_t n) {
        return std::to_string(std::min<std::uint64_t>(std::max<std::uint64_t>(2 * n, 64 << 20), (std::uint64_t{2} << 30) - 1));
    };
    auto one_input = [&](const std::string& label, std::uint64_t n) {
        const fs::path file = work / fmt::format("input-{}.bin", label);
        const fs::path store = work / fmt::format("store-{}", label);
        bench.progress(fmt::format("writing {} of input", size_text(n)));
        write_input(file, n);
        fs::remove_all(store);
        store::InitOptions io;
        io.algorithm = a.algorithm;
        store::Store::init(store, io);
        if (n <= kProtobufLimit) {
            bench.progress(fmt::format("{}: one message", size_text(n)));
            runs.push_back(bench.run(label, "one message", n, store, {"--bench-max-message", unary_limit(n)},
                                     {"bench-unary", "--via", "{addr}", "--max-message", unary_limit(n), file.string()}));
        } else {
            Run r;
            r.input = label;
            r.way = "one message";
            r.bytes = n;
            r.note = "not possible: a protobuf message holds less than 2 GiB";
            runs.push_back(r);
        }
        bench.progress(fmt::format("{}: stream of 1 MiB messages", size_text(n)));
        runs.push_back(bench.run(label, "stream (1 MiB messages)", n, store, {},
                                 {"hash", "--via", "{addr}", "--json", file.string()}));
        bench.progress(fmt::format("{}: push", size_text(n)));
        runs.push_back(bench.run(label, "push (chunks)", n, store, {},
                                 {"push", "--to", "{addr}", "--name", label, "--json", "-q", file.string()}));
        bench.progress(fmt::format("{}: pull", size_text(n)));
        const fs::path pulled = work / fmt::format("pulled-{}.bin", label);
        fs::remove(pulled);
        runs.push_back(bench.run(label, "pull (chunks)", n, store, {},
                                 {"pull", "--from", "{addr}", label, "-o", pulled.string(), "--json", "-q"}));
        fs::remove(pulled);
        if (!a.keep) {
            fs::remove(file);
            fs::remove_all(store);
        }
    };
    one_input("small", small);
    if (big > 0) one_input("big", big);
    bench.progress("");
    if (!a.json && !a.quiet && stderr_is_tty()) fmt::print(stderr, "\r\033[K");

    if (a.json) {
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& r : runs) {
            nlohmann::json samples = nlohmann::json::object();
            samples["client"] = {{"t", r.client.t}, {"rss_mb", r.client.rss}};
            samples["server"] = {{"t", r.server.t}, {"rss_mb", r.server.rss}};
            arr.push_back({{"input", r.input},
                           {"way", r.way},
                           {"bytes", r.bytes},
                           {"seconds", r.seconds},
                           {"mb_s", r.seconds > 0 ? static_cast<double>(r.bytes) / r.seconds / 1e6 : 0.0},
                           {"ok", r.ok},
                           {"note", r.note},
                           {"client_peak_rss_mb", r.client_peak_mb},
                           {"server_peak_rss_mb", r.server_peak_mb},
                           {"client_report", r.report},
                           {"samples", samples}});
        }
        const nlohmann::json j = {{"algorithm", a.algorithm}, {"small_bytes", small}, {"big_bytes", big},
                                  {"sample_ms", a.sample_ms}, {"runs", arr}};
        fmt::print("{}\n", j.dump());
    } else {
        fmt::print("cdc bench transfer: loopback, a fresh server per run, mixed data (1 MiB blocks: text, random), "
                   "{} store\n",
                   a.algorithm);
        fmt::print("{:<10} {:<24} {:>9} {:>10} {:>13} {:>13}\n", "input", "way", "seconds", "MB/s", "client peak",
                   "server peak");
        for (const auto& r : runs) {
            if (!r.ok) {
                fmt::print("{:<10} {:<24} {}\n", size_text(r.bytes), r.way, r.note);
                continue;
            }
            fmt::print("{:<10} {:<24} {:>9.2f} {:>10.1f} {:>10.1f} MB {:>10.1f} MB\n", size_text(r.bytes), r.way,
                       r.seconds, r.seconds > 0 ? static_cast<double>(r.bytes) / r.seconds / 1e6 : 0.0,
                       r.client_peak_mb, r.server_peak_mb);
        }
    }
    finish_stdout();
    if (!a.plot_dir.empty()) {
        plot_runs(runs, "small", fmt::format("Memory over time: {} hashed, pushed, pulled", size_text(small)),
                  fs::path(a.plot_dir) / "transfer-memory-small.png");
        if (big > 0)
            plot_runs(runs, "big", fmt::format("Memory over time: {} hashed, pushed, pulled", size_text(big)),
                      fs::path(a.plot_dir) / "transfer-memory-big.png");
    }
    if (!a.keep && a.dir.empty()) fs::remove_all(work);
    for (const auto& r : runs)
        if (!r.ok && r.way != "one message") return kExitFailure;
    return kExitOk;
}

// The seed's client: the whole file in memory, sent as one message.
struct UnaryArgs {
    std::string address;
    std::string path;
    std::string max_message;
};

int run_unary(const UnaryArgs& a) {
    const std::string bytes = read_all(a.path);
    transfer::ClientOptions o;
    o.address = a.address;
    o.max_message_bytes = std::stoull(a.max_message);
    transfer::Client client(o);
    const auto r = client.hash_unary(std::as_bytes(std::span(bytes.data(), bytes.size())));
    const nlohmann::json j = {{"digest", store::to_hex(r.digest)}, {"bytes_read", r.bytes}, {"bytes_sent", r.bytes},
                              {"wire_bytes_sent", r.wire_sent},   {"seconds", r.seconds}};
    fmt::print("{}\n", j.dump());
    finish_stdout();
    return kExitOk;
}

}  // namespace

void add_bench_transfer_command(CLI::App& app, int& exit_code) {
    auto* bench = app.add_subcommand("bench", "benchmarks (cdc bench run|plot are in the cdc tool)");
    bench->require_subcommand(1);
    auto a = std::make_shared<BenchArgs>();
    auto* c = bench->add_subcommand(
        "transfer", "the seed's experiment: N MB as one gRPC message vs as a stream, push and pull of a few GB; "
                    "client and server memory over time");
    c->add_option("--size", a->size, "the input sent as one message and as a stream")
        ->type_name("SIZE")
        ->capture_default_str();
    c->add_option("--big", a->big, "the large input hashed, pushed and pulled (0: skip)")
        ->type_name("SIZE")
        ->capture_default_str();
    add_algorithm_option(*c, a->algorithm, "the stores' chunking algorithm");
    c->add_option("--dir", a->dir, "work directory (default: a temporary one, removed afterwards)")->type_name("DIR");
    add_count_option(*c, "--sample-ms", a->sample_ms, 1, 3'600'000, "memory sampling interval (ms)");
    add_json_flag(*c, a->json, "{algorithm, small_bytes, big_bytes, sample_ms, runs: [{input, way, bytes, seconds, "
                               "mb_s, ok, client_peak_rss_mb, server_peak_rss_mb, samples, ...}]}");
    add_quiet_flag(*c, a->quiet);
    c->add_option("--plot", a->plot_dir,
                  "draw transfer-memory-small.png and transfer-memory-big.png (memory over time) into this directory")
        ->type_name("DIR");
    c->add_flag("--keep-files", a->keep, "keep the inputs and stores in the work directory");
    document(*c, {.notes = "Needs free disk for about three times --big (input, store, pulled copy). Peaks come "
                           "from wait4 (ru_maxrss); the curves from /proc/PID/status.",
                  .examples = {{"cdc bench transfer --big 0", "200 MB as one message and as a stream"},
                               {"cdc bench transfer --size 64M --big 1G --plot graphs", "with the graphs of memory"}},
                  .exit_codes = exit_codes()});
    c->callback([a, &exit_code] { exit_code = with_transfer_errors([&] { return run_bench(*a); }); });

    auto u = std::make_shared<UnaryArgs>();
    auto* uc = app.add_subcommand("bench-unary", "")->group("");  // the bench's one-message client
    uc->add_option("--via", u->address)->required();
    uc->add_option("--max-message", u->max_message)->required();
    uc->add_option("FILE", u->path)->required();
    uc->callback([u, &exit_code] { exit_code = with_transfer_errors([&] { return run_unary(*u); }); });
}

}  // namespace cdc::cli
