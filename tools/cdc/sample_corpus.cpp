// SPDX-License-Identifier: Apache-2.0
#include "sample_corpus.hpp"

#include <cdc/corpus/datagen.hpp>
#include <cdc/corpus/resync.hpp>
#include <cdc/digest.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <span>
#include <sstream>

namespace cdc::tools {

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * 1024;

std::size_t between(SplitMix64& rng, std::size_t lo, std::size_t hi) {
    return lo + static_cast<std::size_t>(rng.next() % (hi - lo + 1));
}

// A "disk image": segments of random data (compressed or encrypted
// payloads), text, zero runs and structured records, as real binaries mix them.
Bytes disk_image(std::size_t size, std::uint64_t seed) {
    Bytes out(size);
    SplitMix64 rng(seed);
    std::size_t pos = 0;
    while (pos < size) {
        const std::uint64_t kind = rng.next() % 8;
        std::size_t n = 0;
        if (kind < 4) n = between(rng, 16 * KiB, 512 * KiB);
        else if (kind < 6) n = between(rng, 4 * KiB, 64 * KiB);
        else if (kind == 6) n = between(rng, 1 * KiB, 32 * KiB);
        else n = between(rng, 8 * KiB, 64 * KiB);
        n = std::min(n, size - pos);
        std::span<std::uint8_t> seg(out.data() + pos, n);
        if (kind < 4) {
            fill_splitmix64(seg, rng.next());
        } else if (kind < 6) {
            fill_text(seg, rng.next());
        } else if (kind == 6) {
            std::fill(seg.begin(), seg.end(), std::uint8_t{0});
        } else {
            // 32-byte records: a counter, a small id and padding.
            const std::uint64_t base = rng.next();
            for (std::size_t i = 0; i < n; ++i) {
                const std::size_t rec = i / 32, off = i % 32;
                std::uint8_t b = 0;
                if (off < 8) b = static_cast<std::uint8_t>((base + rec) >> (8 * off));
                else if (off < 12) b = static_cast<std::uint8_t>((rec * 2654435761u) >> (8 * (off - 8)));
                else if (off < 16) b = static_cast<std::uint8_t>('A' + rec % 26);
                seg[i] = b;
            }
        }
        pos += n;
    }
    return out;
}

Bytes text(std::size_t size, std::uint64_t seed) {
    Bytes out(size);
    fill_text(out, seed);
    return out;
}

Bytes edited(const Bytes& from, EditKind kind, std::size_t count, std::size_t size, std::uint64_t seed) {
    const auto edits = plan_edits(from.size(), EditSpec{kind, count, size, seed});
    return apply_edits(from, edits, seed);
}

// A log that grows by appending lines.
Bytes log_lines(std::size_t size, std::uint64_t seed, std::uint64_t first_line) {
    Bytes out;
    out.reserve(size + 256);
    SplitMix64 rng(seed);
    static constexpr const char* kLevels[] = {"INFO", "INFO", "INFO", "WARN", "DEBUG", "ERROR"};
    static constexpr const char* kWhat[] = {"chunk stored", "index flushed", "backup started", "backup finished",
                                            "snapshot pruned", "connection reset", "cache miss", "gc pass"};
    for (std::uint64_t line = first_line; out.size() < size; ++line) {
        const std::string s = fmt::format(
            "2026-01-{:02} {:02}:{:02}:{:02}.{:03} {:<5} worker-{} {} id={:016x} bytes={}\n", 1 + line / 86400 % 28,
            line / 3600 % 24, line / 60 % 60, line % 60, rng.next() % 1000, kLevels[rng.next() % 6], rng.next() % 8,
            kWhat[rng.next() % 8], rng.next(), rng.next() % 100000);
        out.insert(out.end(), s.begin(), s.end());
    }
    out.resize(size);
    return out;
}

std::string digest_of(std::span<const std::uint8_t> data) {
    return compute_digest(DigestKind::blake3, std::as_bytes(data)).hex();
}

// The BLAKE3 of a file on disk, or "" if it cannot be read or is not `size` bytes.
std::string digest_of_file(const fs::path& path, std::uint64_t size) {
    std::error_code ec;
    if (!fs::is_regular_file(fs::symlink_status(path, ec)) || fs::file_size(path, ec) != size || ec) return {};
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) return {};
    Hasher h(DigestKind::blake3);
    std::vector<std::uint8_t> buf(std::size_t{1} << 20);
    std::uint64_t total = 0;
    for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), f)) > 0;) {
        h.update(std::as_bytes(std::span(buf).first(n)));
        total += n;
    }
    const bool ok = !std::ferror(f) && total == size;
    std::fclose(f);
    return ok ? h.finish().hex() : std::string();
}

// Writes `data` to `path` whole or not at all (a temporary renamed over it).
void write_whole(const fs::path& path, std::span<const std::byte> data) {
    const fs::path tmp = fs::path(path).concat(".cdc-sample-tmp");
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) throw IoError(fmt::format("cannot write '{}': {}", tmp.string(), std::strerror(errno)));
    const bool ok = data.empty() || std::fwrite(data.data(), 1, data.size(), f) == data.size();  // (no null to fwrite)
    const bool closed = std::fclose(f) == 0;
    if (!ok || !closed) throw IoError(fmt::format("writing '{}' failed: {}", tmp.string(), std::strerror(errno)));
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
        throw IoError(fmt::format("cannot rename '{}': {}", tmp.string(), std::strerror(errno)));
}

// Puts each generated file in place unless the same bytes are already there.
struct Writer {
    fs::path dir;
    const std::function<void(const std::string&)>& log;
    SampleResult& result;

    void put(const std::string& rel, const Bytes& data) {
        const fs::path path = dir / rel;
        SampleFile f{rel, data.size(), digest_of(data)};
        if (digest_of_file(path, f.size) != f.digest) {
            std::error_code ec;
            fs::create_directories(path.parent_path(), ec);
            if (ec) throw IoError(fmt::format("cannot create '{}': {}", path.parent_path().string(), ec.message()));
            write_whole(path, std::as_bytes(std::span(data)));
            ++result.written;
            if (log) log(fmt::format("{:>10}  {}", data.size(), rel));
        }
        result.bytes += f.size;
        result.files.push_back(std::move(f));
    }
};

std::string manifest_text(const SampleResult& r) {
    std::string s = kSampleVersion;
    s.push_back('\n');
    for (const auto& f : r.files) s.append(fmt::format("{} {} {}\n", f.size, f.digest, f.path));
    return s;
}

// The manifest's first line, or "" if there is none.
std::string manifest_version(const fs::path& dir) {
    std::ifstream in(dir / kManifest);
    std::string line;
    if (!in || !std::getline(in, line)) return {};
    return line;
}

// True if `dir` holds this version's manifest and every file it lists has
// its size and BLAKE3 digest.
bool verified_sample(const fs::path& dir, SampleResult& out) {
    std::ifstream in(dir / kManifest);
    std::string line;
    if (!in || !std::getline(in, line) || line != kSampleVersion) return false;
    SampleResult r;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        SampleFile f;
        if (!(ls >> f.size >> f.digest) || !std::getline(ls >> std::ws, f.path)) return false;
        if (digest_of_file(dir / f.path, f.size) != f.digest) return false;
        r.bytes += f.size;
        r.files.push_back(std::move(f));
    }
    if (r.files.empty()) return false;
    out = std::move(r);
    return true;
}

}  // namespace

SampleResult write_sample_corpus(const fs::path& dir, const std::function<void(const std::string&)>& log) {
    std::error_code ec;
    const bool exists = fs::exists(dir, ec);
    if (exists && !fs::is_directory(dir, ec))
        throw SampleDirError(fmt::format("'{}' exists and is not a directory", dir.string()));
    // Ours: a manifest (of any version) or the marker of a run that did not
    // finish. Anything else that is not empty is someone else's.
    const bool interrupted = fs::exists(dir / kMarker, ec);
    const bool has_manifest = manifest_version(dir).starts_with("cdc-sample ");
    const bool empty = !exists || fs::is_empty(dir, ec);
    if (!empty && !interrupted && !has_manifest)
        throw SampleDirError(fmt::format("'{}' is not empty and does not hold a cdc sample: give a new or empty "
                                         "directory",
                                         dir.string()));
    SampleResult result;
    if (!interrupted && verified_sample(dir, result)) {
        result.state = SampleResult::State::verified;
        return result;
    }
    result.state = empty ? SampleResult::State::written
                   : interrupted ? SampleResult::State::completed
                                 : SampleResult::State::repaired;
    // The marker first, the manifest last: a run killed at any instant
    // leaves the marker, and the next run completes the sample.
    fs::create_directories(dir, ec);
    if (ec) throw IoError(fmt::format("cannot create '{}': {}", dir.string(), ec.message()));
    write_whole(dir / kMarker, {});
    fs::remove(dir / kManifest, ec);
    Writer w{dir, log, result};

    // Disk images: five successive versions with inserts, deletes, overwrites
    // and a mix; v1 also kept as an exact copy in backup/.
    Bytes v = disk_image(16 * MiB, 101);
    const Bytes image_v1 = v;
    w.put("images/disk-v1.img", v);
    v = edited(v, EditKind::insert, 16, 2 * KiB, 102);
    w.put("images/disk-v2.img", v);
    v = edited(v, EditKind::remove, 16, 4 * KiB, 103);
    w.put("images/disk-v3.img", v);
    v = edited(v, EditKind::overwrite, 32, 1 * KiB, 104);
    w.put("images/disk-v4.img", v);
    v = edited(v, EditKind::mixed, 24, 512, 105);
    w.put("images/disk-v5.img", v);
    w.put("backup/disk-v1.img", image_v1);

    // A text manual in three versions (small edits), v2 copied to backup/.
    Bytes t = text(10 * MiB, 201);
    w.put("docs/manual-v1.txt", t);
    t = edited(t, EditKind::insert, 40, 200, 202);
    w.put("docs/manual-v2.txt", t);
    w.put("backup/manual-v2.txt", t);
    t = edited(t, EditKind::mixed, 40, 300, 203);
    w.put("docs/manual-v3.txt", t);

    // An append-only log: v2 = v1 + 2 MiB of new lines.
    const Bytes log1 = log_lines(4 * MiB, 301, 0);
    Bytes log2 = log1;
    const Bytes more = log_lines(2 * MiB, 302, 4 * MiB / 90);
    log2.insert(log2.end(), more.begin(), more.end());
    w.put("logs/app-v1.log", log1);
    w.put("logs/app-v2.log", log2);

    // A source tree of small files in two releases: most files unchanged,
    // some edited, some removed, some added.
    SplitMix64 rng(401);
    std::vector<Bytes> files;
    for (int i = 0; i < 150; ++i) files.push_back(text(between(rng, 1 * KiB, 48 * KiB), rng.next()));
    for (std::size_t i = 0; i < files.size(); ++i) w.put(fmt::format("src-v1/module{:03}.txt", i), files[i]);
    for (std::size_t i = 0; i < files.size(); ++i) {
        if (i % 30 == 7) continue;  // removed in v2
        if (i % 5 == 1) files[i] = edited(files[i], EditKind::mixed, 3, 64, 500 + i);
        w.put(fmt::format("src-v2/module{:03}.txt", i), files[i]);
    }
    for (int i = 0; i < 5; ++i) w.put(fmt::format("src-v2/new{:02}.txt", i), text(between(rng, 1 * KiB, 48 * KiB), rng.next()));

    const std::string manifest = manifest_text(result);
    write_whole(dir / kManifest, std::as_bytes(std::span(manifest)));
    fs::remove(dir / kMarker, ec);
    if (ec) throw IoError(fmt::format("cannot remove '{}': {}", (dir / kMarker).string(), ec.message()));
    return result;
}

}  // namespace cdc::tools
