// SPDX-License-Identifier: Apache-2.0
// The on-disk kernel calibration cache (see calibration_cache.hpp).
//
// File format (text, one file per identity, named after a hash of it):
//   cdc-chunkers kernel calibration v1
//   cpu <cpu_identity()>
//   build <build_identity()>
//   family <name> chosen <level> bytes <n> rounds <n> seconds <s> <level>=<MB/s> ...
//   ...
//   checksum <BLAKE3 of every line above, newlines included, in hex>
#include "calibration_cache.hpp"

#include <cdc/version.hpp>

#include <blake3.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace cdc::detail {

namespace {

constexpr std::string_view kHeader = "cdc-chunkers kernel calibration v1";
constexpr std::size_t kMaxFileBytes = 64 * 1024;

std::string blake3_hex(std::string_view text, std::size_t bytes = 32) {
    blake3_hasher h;
    blake3_hasher_init(&h);
    blake3_hasher_update(&h, text.data(), text.size());
    std::vector<std::uint8_t> out(bytes);
    blake3_hasher_finalize(&h, out.data(), out.size());
    std::string hex;
    for (std::uint8_t b : out) hex += fmt::format("{:02x}", b);
    return hex;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    while (true) {
        const std::size_t at = s.find(sep);
        out.push_back(s.substr(0, at));
        if (at == std::string_view::npos) return out;
        s.remove_prefix(at + 1);
    }
}

/// A real level by name (not "auto"), without throwing.
std::optional<KernelLevel> level_named(std::string_view name) {
    for (const auto& e : kKernelLevelNames)
        if (e.name == name && e.value != KernelLevel::automatic) return e.value;
    return std::nullopt;
}

template <class T>
bool parse_number(std::string_view s, T& out) {
    const char* end = s.data() + s.size();
    const auto [p, ec] = std::from_chars(s.data(), end, out);
    return ec == std::errc{} && p == end;
}

/// The directory is ours alone: a real directory (not a link) owned by this
/// user, which no one else may write or read.
bool private_dir(const std::filesystem::path& dir) {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0) return false;
    return S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 077) == 0;
}

/// Creates `dir` (0700) and its missing parents (0700, as the XDG base
/// directory specification asks of the cache home); true if it is then a
/// private directory.
bool make_private_dir(const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> missing;
    for (std::filesystem::path p = dir; !p.empty() && p != p.parent_path(); p = p.parent_path()) {
        std::error_code ec;
        if (std::filesystem::exists(std::filesystem::symlink_status(p, ec))) break;
        missing.push_back(p);
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it)
        if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST) return false;
    return private_dir(dir);
}

bool write_all(int fd, std::string_view data) {
    while (!data.empty()) {
        const ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

#if defined(__x86_64__) || defined(__i386__)
std::uint64_t xcr0() {
    std::uint32_t lo = 0, hi = 0;
    asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (std::uint64_t{hi} << 32) | lo;
}
#endif

/// The GNU build ID of the loaded object that holds this function's code
/// (the executable, or the shared library / Python module linking libcdc).
std::string own_build_id() {
    struct Search {
        std::uintptr_t code;
        std::string id;
    } search{reinterpret_cast<std::uintptr_t>(&own_build_id), {}};
    ::dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* arg) -> int {
            auto* s = static_cast<Search*>(arg);
            bool holds = false;
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                const auto& ph = info->dlpi_phdr[i];
                const std::uintptr_t start = info->dlpi_addr + ph.p_vaddr;
                if (ph.p_type == PT_LOAD && s->code >= start && s->code < start + ph.p_memsz) holds = true;
            }
            if (!holds) return 0;
            for (int i = 0; i < info->dlpi_phnum; ++i) {
                const auto& ph = info->dlpi_phdr[i];
                if (ph.p_type != PT_NOTE) continue;
                const auto* p = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
                const unsigned char* end = p + ph.p_memsz;
                while (p + sizeof(ElfW(Nhdr)) <= end) {
                    ElfW(Nhdr) note;
                    std::memcpy(&note, p, sizeof note);
                    const unsigned char* name = p + sizeof note;
                    const unsigned char* desc = name + ((note.n_namesz + 3) & ~3u);
                    const unsigned char* next = desc + ((note.n_descsz + 3) & ~3u);
                    if (next > end) break;
                    if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
                        for (std::size_t k = 0; k < note.n_descsz; ++k) s->id += fmt::format("{:02x}", desc[k]);
                        return 1;
                    }
                    p = next;
                }
            }
            return 1;
        },
        &search);
    return search.id;
}

}  // namespace

std::string calibration_checksum(std::string_view text) { return blake3_hex(text); }

std::string cpu_identity() {
#if defined(__x86_64__) || defined(__i386__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid(0, &a, &b, &c, &d) == 0) return "x86 no-cpuid";
    const unsigned max_leaf = a;
    char vendor[13] = {};
    std::memcpy(vendor, &b, 4);
    std::memcpy(vendor + 4, &d, 4);
    std::memcpy(vendor + 8, &c, 4);
    for (char& ch : vendor)
        if (ch != '\0' && (ch < '!' || ch > '~')) ch = '_';
    __get_cpuid(1, &a, &b, &c, &d);
    const unsigned stepping = a & 0xF, base_model = (a >> 4) & 0xF, base_family = (a >> 8) & 0xF;
    const unsigned family = base_family == 0xF ? base_family + ((a >> 20) & 0xFF) : base_family;
    const unsigned model = (base_family == 0x6 || base_family == 0xF) ? base_model + (((a >> 16) & 0xF) << 4) : base_model;
    const unsigned ecx1 = c, edx1 = d;
    unsigned b7 = 0, c7 = 0, d7 = 0;
    if (max_leaf >= 7) __get_cpuid_count(7, 0, &a, &b7, &c7, &d7);
    const bool osxsave = (ecx1 >> 27) & 1;
    return fmt::format("x86 {} family {} model {} stepping {} leaf1 {:08x}:{:08x} leaf7 {:08x}:{:08x}:{:08x} xcr0 {:x}",
                       vendor, family, model, stepping, ecx1, edx1, b7, c7, d7, osxsave ? xcr0() : 0);
#elif defined(__aarch64__)
    return "aarch64";
#else
    return "other";
#endif
}

std::string build_identity(std::string_view kernels) {
    std::string id = own_build_id();
    // Without a build ID (a linker told not to write one), this file's
    // compile time stands in for it.
    if (id.empty()) id = fmt::format("compiled {} {}", __DATE__, __TIME__);
    return fmt::format("version {} build-id {} kernels {}", kVersionString, id, blake3_hex(kernels, 16));
}

std::optional<std::filesystem::path> calibration_cache_dir(const std::function<const char*(const char*)>& getenv) {
    if (const char* off = getenv("CDC_KERNEL_CACHE")) {
        const std::string_view v(off);
        if (v == "0" || v == "off" || v == "no" || v == "false") return std::nullopt;
    }
    // XDG: a relative $XDG_CACHE_HOME is invalid and ignored.
    if (const char* xdg = getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/')
        return std::filesystem::path(xdg) / "cdc-chunkers";
    if (const char* home = getenv("HOME"); home != nullptr && home[0] == '/')
        return std::filesystem::path(home) / ".cache" / "cdc-chunkers";
    return std::nullopt;
}

CalibrationFile::CalibrationFile(std::filesystem::path dir, CalibrationIdentity identity)
    : dir_(std::move(dir)), identity_(std::move(identity)) {
    path_ = dir_ / fmt::format("kernels-{}.txt", blake3_hex(identity_.cpu + "\n" + identity_.build, 16));
}

std::map<std::string, CalibrationFile::Entry, std::less<>> CalibrationFile::read() const {
    std::map<std::string, Entry, std::less<>> entries;
    if (!private_dir(dir_)) return entries;
    const int fd = ::open(path_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return entries;
    std::string text;
    struct stat st {};
    const bool ours = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
                      (st.st_mode & 077) == 0 && st.st_size > 0 && st.st_size <= static_cast<off_t>(kMaxFileBytes);
    if (ours) {
        text.resize(static_cast<std::size_t>(st.st_size));
        std::size_t got = 0;
        while (got < text.size()) {
            const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            got += static_cast<std::size_t>(n);
        }
        text.resize(got);
    }
    ::close(fd);
    if (!ours || text.empty() || text.back() != '\n') return entries;

    std::vector<std::string_view> lines = split(std::string_view(text).substr(0, text.size() - 1), '\n');
    if (lines.size() < 4 || lines[0] != kHeader || lines[1] != "cpu " + identity_.cpu ||
        lines[2] != "build " + identity_.build)
        return entries;
    const std::string_view last = lines.back();
    const std::size_t body = text.size() - last.size() - 1;  // the bytes the checksum covers
    if (last != "checksum " + calibration_checksum(std::string_view(text).substr(0, body))) return entries;
    lines.pop_back();

    std::map<std::string, Entry, std::less<>> parsed;
    for (std::size_t i = 3; i < lines.size(); ++i) {
        const std::vector<std::string_view> t = split(lines[i], ' ');
        if (t.size() < 11 || t[0] != "family" || t[2] != "chosen" || t[4] != "bytes" || t[6] != "rounds" ||
            t[8] != "seconds")
            return entries;
        Entry e{};
        const auto chosen = level_named(t[3]);
        if (!chosen || !parse_number(t[5], e.bytes) || !parse_number(t[7], e.rounds) || !parse_number(t[9], e.seconds))
            return entries;
        e.chosen = *chosen;
        for (std::size_t k = 10; k < t.size(); ++k) {
            const std::vector<std::string_view> kv = split(t[k], '=');
            KernelMeasurement m;
            const auto level = kv.size() == 2 ? level_named(kv[0]) : std::nullopt;
            if (!level || !parse_number(kv[1], m.mb_s)) return entries;
            m.level = *level;
            e.candidates.push_back(m);
        }
        if (!parsed.emplace(std::string(t[1]), std::move(e)).second) return entries;  // a family twice
    }
    return parsed;
}

std::optional<KernelCalibration> CalibrationFile::load(std::string_view family,
                                                       const std::function<bool(KernelLevel)>& runs) const {
    const auto entries = read();
    const auto it = entries.find(family);
    if (it == entries.end()) return std::nullopt;
    const Entry& e = it->second;
    if (e.bytes == 0 || e.rounds <= 0 || !std::isfinite(e.seconds) || e.seconds < 0 || e.candidates.empty() ||
        !runs(e.chosen))
        return std::nullopt;
    bool chosen_listed = false;
    for (std::size_t i = 0; i < e.candidates.size(); ++i) {
        const KernelMeasurement& m = e.candidates[i];
        if (!runs(m.level) || !std::isfinite(m.mb_s) || m.mb_s <= 0) return std::nullopt;
        for (std::size_t j = 0; j < i; ++j)
            if (e.candidates[j].level == m.level) return std::nullopt;
        chosen_listed = chosen_listed || m.level == e.chosen;
    }
    if (!chosen_listed) return std::nullopt;
    KernelCalibration c;
    c.family = family;
    c.candidates = e.candidates;
    c.chosen = e.chosen;
    c.bytes = e.bytes;
    c.rounds = e.rounds;
    c.seconds = e.seconds;
    c.cached = true;
    return c;
}

namespace {

/// Removes the oldest of the user's own calibration files (kernels-*.txt,
/// regular, by modification time) in `dir` past the newest `keep`.
void prune_calibrations(const std::filesystem::path& dir, std::size_t keep) {
    std::vector<std::pair<std::int64_t, std::filesystem::path>> files;  // (mtime ns, path)
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        if (!name.starts_with("kernels-") || !name.ends_with(".txt")) continue;
        struct stat st {};
        if (::lstat(e.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) continue;
        files.emplace_back(std::int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec, e.path());
    }
    if (files.size() <= keep) return;
    std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (std::size_t k = keep; k < files.size(); ++k) ::unlink(files[k].second.c_str());
}

}  // namespace

bool CalibrationFile::writable() const { return make_private_dir(dir_) && ::access(dir_.c_str(), W_OK | X_OK) == 0; }

bool CalibrationFile::store(const KernelCalibration& c) {
    if (!make_private_dir(dir_)) return false;
    auto entries = read();
    const bool fresh = entries.empty();
    Entry e{c.chosen, c.bytes, c.rounds, c.seconds, c.candidates};
    entries.insert_or_assign(std::string(c.family), std::move(e));

    std::string text = fmt::format("{}\ncpu {}\nbuild {}\n", kHeader, identity_.cpu, identity_.build);
    for (const auto& [name, entry] : entries) {
        text += fmt::format("family {} chosen {} bytes {} rounds {} seconds {}", name, to_string(entry.chosen),
                            entry.bytes, entry.rounds, entry.seconds);
        for (const KernelMeasurement& m : entry.candidates) text += fmt::format(" {}={}", to_string(m.level), m.mb_s);
        text += '\n';
    }
    text += fmt::format("checksum {}\n", calibration_checksum(text));

    std::string tmp = path_.string() + ".XXXXXX";
    const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);  // 0600
    if (fd < 0) return false;
    bool ok = ::fchmod(fd, 0600) == 0 && write_all(fd, text) && ::fsync(fd) == 0;
    ok = (::close(fd) == 0) && ok;
    if (ok) ok = ::rename(tmp.c_str(), path_.c_str()) == 0;
    if (!ok) {
        ::unlink(tmp.c_str());
        return false;
    }
    // The rename itself made durable.
    if (const int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
    if (fresh) prune_calibrations(dir_, kKeepFiles);
    return true;
}

}  // namespace cdc::detail
