// SPDX-License-Identifier: Apache-2.0
#include "test_support.hpp"

#include <sys/stat.h>

#include <cdc/corpus/datagen.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

namespace cdc::test {

namespace {
std::filesystem::path data_dir(const char* built_in, const char* env_name, const char* probe) {
    std::filesystem::path p = built_in;
    if (const char* env = std::getenv(env_name)) p = env;
    if (!std::filesystem::exists(p / probe))
        throw std::runtime_error(std::string(probe) + " not found in " + p.string() + " (set " + env_name + ")");
    return p;
}
}  // namespace

std::filesystem::path vectors_dir() { return data_dir(CDC_VECTORS_DIR, "CDC_VECTORS_DIR", "vectors.jsonl"); }
std::filesystem::path spec_dir() { return data_dir(CDC_SPEC_DIR, "CDC_SPEC_DIR", "ALGORITHMS.md"); }


Options vector_case_options(const nlohmann::json& c) {
    Options o;
    o.min_size = c["min"];
    o.normal_size = c["normal"];
    o.max_size = c["max"];
    const std::string key_hex = c["key_hex"];
    if (!key_hex.empty()) o.key = parse_key_hex(key_hex);
    return o;
}

Options compat_case_options(const nlohmann::json& c) {
    const auto& p = c.at("params");
    Options o;
    o.min_size = p.at("min");
    o.normal_size = p.at("avg");
    o.max_size = p.at("max");
    if (p.contains("level")) o.normalization_level = p["level"].get<int>();
    if (p.contains("seed")) o.seed = p["seed"].get<std::uint64_t>();
    if (p.contains("poly")) o.polynomial = p["poly"].get<std::uint64_t>();
    if (p.contains("window")) o.window_size = p["window"].get<std::size_t>();
    return o;
}

const std::vector<std::uint8_t>& cached_input(const std::string& spec) {
    static std::mutex mutex;
    static std::map<std::string, std::vector<std::uint8_t>> cache;
    std::lock_guard lock(mutex);
    auto it = cache.find(spec);
    if (it == cache.end()) it = cache.emplace(spec, generate_input(spec)).first;
    return it->second;
}

std::vector<KernelLevel> accelerated_levels() {
    std::vector<KernelLevel> out;
    for (KernelLevel l : {KernelLevel::wide, KernelLevel::avx2, KernelLevel::avx512, KernelLevel::avx512vbmi})
        if (static_cast<int>(l) <= static_cast<int>(best_kernel_level())) out.push_back(l);
    return out;
}

Options sized_options(std::size_t min, std::size_t normal, std::size_t max) {
    Options o;
    o.min_size = min;
    o.normal_size = normal;
    o.max_size = max;
    return o;
}

void expect_option_error(std::string_view algorithm, const Options& o, const std::vector<std::string>& fragments) {
    try {
        (void)make_cut_finder(algorithm, o);
        ADD_FAILURE() << "no error for " << algorithm;
    } catch (const OptionError& e) {
        const std::string msg = e.what();
        for (const auto& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
    }
}

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path.string());
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

unsigned mode_of(const std::filesystem::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) throw std::runtime_error("cannot stat " + path.string());
    return static_cast<unsigned>(st.st_mode) & 07777u;
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
    fill_splitmix64(v, seed);
    return v;
}


std::filesystem::path write_beyond_path_max(const std::filesystem::path& root, const std::string& name,
                                            std::span<const std::uint8_t> data) {
    // mkdirat/openat one level at a time: the full path cannot be used.
    int fd = ::open(root.c_str(), O_DIRECTORY | O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error("cannot open " + root.string());
    std::string path = root.string();
    const std::string dir(250, 'd');
    while (path.size() <= PATH_MAX) {
        const int sub = ::mkdirat(fd, dir.c_str(), 0755) == 0 ? ::openat(fd, dir.c_str(), O_DIRECTORY | O_RDONLY) : -1;
        ::close(fd);
        if (sub < 0) throw std::runtime_error("mkdirat below " + root.string());
        fd = sub;
        path.append("/").append(dir);
    }
    const int f = ::openat(fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    const bool ok = f >= 0 && ::write(f, data.data(), data.size()) == static_cast<ssize_t>(data.size());
    if (f >= 0) ::close(f);
    ::close(fd);
    if (!ok) throw std::runtime_error("cannot write " + name + " below " + root.string());
    return path.append("/").append(name);
}

std::vector<std::vector<std::string>> parse_csv(std::string_view text) {
    std::vector<std::vector<std::string>> records;
    std::vector<std::string> record;
    std::string field;
    std::size_t i = 0;
    const auto fail = [&](const char* why) {
        throw std::runtime_error(std::string("CSV: ").append(why).append(" at byte ").append(std::to_string(i)));
    };
    while (i < text.size()) {
        field.clear();
        if (text[i] == '"') {
            for (++i;; ++i) {
                if (i >= text.size()) fail("unterminated quoted field");
                if (text[i] == '"') {
                    if (i + 1 < text.size() && text[i + 1] == '"') {
                        field.push_back('"');
                        ++i;
                    } else {
                        ++i;
                        break;
                    }
                } else {
                    field.push_back(text[i]);
                }
            }
        } else {
            while (i < text.size() && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
                if (text[i] == '"') fail("quote inside an unquoted field");
                field.push_back(text[i++]);
            }
        }
        record.push_back(field);
        if (i == text.size()) fail("record without a final newline");
        if (text[i] == ',') {
            ++i;
            continue;
        }
        if (text[i] == '\r') {
            if (i + 1 >= text.size() || text[i + 1] != '\n') fail("bare carriage return");
            ++i;
        }
        if (text[i] != '\n') fail("text after a closing quote");
        ++i;
        records.push_back(std::move(record));
        record.clear();
    }
    return records;
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

}  // namespace cdc::test
