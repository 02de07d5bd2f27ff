#include "test_support.hpp"

#include "datagen.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

namespace cdc::test {

std::filesystem::path shared_dir() {
    std::filesystem::path p = CDC_SHARED_DIR;
    if (const char* env = std::getenv("CDC_SHARED_DIR")) p = env;
    if (!std::filesystem::exists(p / "testvectors" / "vectors.jsonl"))
        throw std::runtime_error("shared/ not found at " + p.string() + " (set CDC_SHARED_DIR)");
    return p;
}

std::filesystem::path tool_path() { return CDC_TOOL_PATH; }

Options vector_case_options(const nlohmann::json& c) {
    Options o;
    o.min_size = c["min"];
    o.normal_size = c["normal"];
    o.max_size = c["max"];
    const std::string key_hex = c["key_hex"];
    if (!key_hex.empty()) o.key = parse_key_hex(key_hex);
    return o;
}

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path.string());
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path.string());
    std::vector<nlohmann::json> out;
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) out.push_back(nlohmann::json::parse(line));
    return out;
}

std::vector<std::size_t> lengths_memory(const std::shared_ptr<const CutFinder>& finder,
                                        std::span<const std::uint8_t> data) {
    Chunker chunker(finder, MemorySource(data));
    std::vector<std::size_t> out;
    std::uint64_t expect_offset = 0;
    for (const Chunk& c : chunker) {
        EXPECT_EQ(c.offset, expect_offset);
        expect_offset += c.size();
        out.push_back(c.size());
    }
    return out;
}

ScriptedReader::ScriptedReader(std::span<const std::uint8_t> data, std::vector<std::size_t> sizes, bool end_with_data)
    : data_(data), sizes_(std::move(sizes)), end_with_data_(end_with_data) {}

ReadResult ScriptedReader::read(std::span<std::byte> buffer) {
    const std::size_t want = sizes_[call_++ % sizes_.size()];
    const std::size_t n = std::min({want, buffer.size(), data_.size() - pos_});
    if (n > 0) std::memcpy(buffer.data(), data_.data() + pos_, n);
    pos_ += n;
    const bool end = pos_ == data_.size() && (end_with_data_ || n == 0) && want != 0;
    return {n, end};
}

std::vector<std::size_t> lengths_stream(const std::shared_ptr<const CutFinder>& finder, Reader& reader,
                                        std::span<std::byte> buffer) {
    Chunker chunker(finder, ReaderSource(reader), buffer);
    std::vector<std::size_t> out;
    chunker.for_each([&](const Chunk& c) { out.push_back(c.size()); });
    return out;
}

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed) {
    std::vector<std::uint8_t> v(n);
    tools::fill_splitmix64(v, seed);
    return v;
}

}  // namespace cdc::test

#include <csignal>
#include <cerrno>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace cdc::test {

namespace {
std::string shell_quote(const std::string& s) {
    std::string out(1, '\'');
    for (char c : s) {
        if (c == '\'') {
            for (char q : {'\'', '\\', '\'', '\''}) out.push_back(q);
        } else {
            out.push_back(c);
        }
    }
    out.push_back('\'');
    return out;
}
}  // namespace

RunResult run_tool(const std::vector<std::string>& args, const std::string& stdin_path) {
    TempDir tmp;
    std::string cmd = shell_quote(tool_path().string());
    // (appends, not operator+: g++ 12 warns falsely on "literal" + string)
    for (const auto& a : args) cmd.append(" ").append(shell_quote(a));
    cmd.append(" >").append(shell_quote((tmp.path() / "out").string()));
    cmd.append(" 2>").append(shell_quote((tmp.path() / "err").string()));
    cmd.append(" <").append(shell_quote(stdin_path.empty() ? "/dev/null" : stdin_path));
    const int status = std::system(cmd.c_str());
    RunResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = read_text(tmp.path() / "out");
    r.err = read_text(tmp.path() / "err");
    return r;
}

TempDir::TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "cdc-test-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
}

TempDir::~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

std::filesystem::path TempDir::write(const std::string& name, std::span<const std::uint8_t> data) const {
    const auto p = path_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary);
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    if (!out) throw std::runtime_error("cannot write " + p.string());
    return p;
}

nlohmann::json json_of(const RunResult& r) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    try {
        return nlohmann::json::parse(r.out);
    } catch (const std::exception&) {
        ADD_FAILURE() << "not JSON: " << r.out << r.err;
        return {};
    }
}

pid_t spawn_tool(const std::vector<std::string>& args, const std::filesystem::path& log_dir,
                 const std::vector<std::pair<std::string, std::string>>& env, std::uint64_t fsize_limit) {
    std::vector<std::string> argv{tool_path().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    const std::string out = (log_dir / "out").string(), err = (log_dir / "err").string();
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int in = ::open("/dev/null", O_RDONLY);
        ::dup2(o, 1);
        ::dup2(e, 2);
        ::dup2(in, 0);
        for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
        if (fsize_limit != 0) {
            ::signal(SIGXFSZ, SIG_IGN);
            rlimit r{fsize_limit, fsize_limit};
            ::setrlimit(RLIMIT_FSIZE, &r);
        }
        ::execv(cargv[0], cargv.data());
        ::_exit(127);
    }
    return pid;
}

int wait_exit(pid_t pid) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace cdc::test
