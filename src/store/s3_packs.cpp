// SPDX-License-Identifier: Apache-2.0
#include "s3_packs.hpp"

#include "format.hpp"
#include "pack_storage_factory.hpp"

#include <cdc/store_s3.hpp>

#include <fmt/format.h>
#include <openssl/evp.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace cdc::store {

void enable_s3_packs() {
    detail::set_s3_pack_storage_maker(
        [](const std::filesystem::path& dir, const PackLocation& where,
           detail::PackStorageUse use) -> std::unique_ptr<detail::PackStorage> {
            return std::make_unique<detail::S3PackStorage>(dir, where, use == detail::PackStorageUse::init);
        });
}

}  // namespace cdc::store

namespace cdc::store::detail {

namespace {

constexpr std::size_t kBufferBlock = std::size_t{1} << 20;  // the sink's memory comes in blocks of this

std::string pack_file_name(std::uint64_t id) { return fmt::format("{:08}.pack", id); }

std::string md5_hex(const s3::Body& body) {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestInit_ex(ctx, EVP_md5(), nullptr);
    for (const auto& p : body.pieces) EVP_DigestUpdate(ctx, p.data(), p.size());
    std::vector<std::uint8_t> buf(body.file_bytes > 0 ? kBufferBlock : 0);
    for (std::uint64_t at = 0; at < body.file_bytes;) {
        const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), body.file_bytes - at));
        const ssize_t k = ::pread(body.fd, buf.data(), want, static_cast<off_t>(body.file_offset + at));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;  // a digest of fewer bytes: not taken for ours
        EVP_DigestUpdate(ctx, buf.data(), static_cast<std::size_t>(k));
        at += static_cast<std::uint64_t>(k);
    }
    EVP_DigestFinal_ex(ctx, digest, &n);
    EVP_MD_CTX_free(ctx);
    std::string out;
    for (unsigned int i = 0; i < n; ++i) out += fmt::format("{:02x}", digest[i]);
    return out;
}

std::string unquote(std::string s) {
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
    return s;
}

class S3Reader final : public PackReader {
public:
    S3Reader(const S3PackStorage& storage, std::uint64_t id, std::uint64_t size)
        : storage_(storage), id_(id), size_(size) {}
    std::size_t read_at(std::uint64_t offset, std::span<std::byte> out) const override {
        return storage_.read(id_, size_, offset, out);
    }
    std::uint64_t size() const override { return size_; }
    View view_at(std::uint64_t offset, std::size_t n) const override { return storage_.view(id_, size_, offset, n); }
    /// Runs of 1 MiB as for a local pack (a run of kLargeRead or more
    /// takes a large block anyway; runs of 8 MiB cost each decoding thread
    /// an 8 MiB buffer and more CPU, docs/BENCHMARKS.md), gaps read through
    /// rather than split into two reads.
    Runs runs() const override { return {std::uint64_t{1} << 20, std::uint64_t{64} << 10}; }

private:
    const S3PackStorage& storage_;
    std::uint64_t id_;
    std::uint64_t size_;
};

std::atomic<std::uint64_t> g_sinks_memory{0};
std::atomic<std::uint64_t> g_sinks_bound{S3PackStorage::kSinksMemory};

bool take_sink_memory(std::uint64_t n) {
    std::uint64_t used = g_sinks_memory.load(std::memory_order_relaxed);
    do {
        if (used + n > g_sinks_bound.load(std::memory_order_relaxed)) return false;
    } while (!g_sinks_memory.compare_exchange_weak(used, used + n, std::memory_order_relaxed));
    return true;
}

void give_sink_memory(std::uint64_t n) { g_sinks_memory.fetch_sub(n, std::memory_order_relaxed); }

class S3Sink final : public PackSink {
public:
    S3Sink(const S3PackStorage& storage, std::uint64_t id, std::filesystem::path reservation)
        : storage_(storage), id_(id), key_(storage.key_of(id)), reservation_(std::move(reservation)) {
        const auto header = pack_header(id);
        append(header);
    }

    ~S3Sink() override {
        if (!upload_id_.empty() && !sealed_) {
            try {
                s3::Request r;
                r.method = "DELETE";
                r.key = key_;
                r.query = {{"uploadId", upload_id_}};
                r.expected = {404};
                storage_.client().send(r);
            } catch (...) {
                // gc aborts what is left (reclaim_incomplete)
            }
        }
        release_blocks();
        if (fd_ >= 0) ::close(fd_);
        ::unlink(reservation_.c_str());
    }

    std::uint64_t id() const override { return id_; }
    std::uint64_t size() const override { return size_; }
    bool sealed() const override { return sealed_; }

    void append(std::span<const std::uint8_t> bytes) override {
        if (sealed_) throw StoreError(fmt::format("pack '{}': written already (an object takes no more)", describe()));
        if (broken_) throw StoreError(fmt::format("pack '{}': an earlier upload failed", describe()));
        try {
            // (size_ counts whole appends only: PackAppender's sizes.)
            std::size_t done = 0;
            while (done < bytes.size() && fd_ < 0) {
                if (blocks_.empty() || last_fill_ == kBufferBlock) {
                    if (!take_sink_memory(kBufferBlock)) {
                        spill();
                        break;
                    }
                    blocks_.push_back(std::make_unique<std::uint8_t[]>(kBufferBlock));
                    last_fill_ = 0;
                }
                const std::size_t k = std::min(bytes.size() - done, kBufferBlock - last_fill_);
                std::memcpy(blocks_.back().get() + last_fill_, bytes.data() + done, k);
                last_fill_ += k;
                done += k;
            }
            if (done < bytes.size()) pwrite_all(fd_, bytes.data() + done, bytes.size() - done, size_ + done, spilled_to_);
            size_ += bytes.size();
            // Full parts go up at once: a pack in memory holds one part at most.
            while (size_ - sent_ > storage_.part_size()) upload_part(storage_.part_size());
        } catch (...) {
            broken_ = true;
            throw;
        }
    }

    void sync() override {
        if (sealed_) return;
        if (broken_) throw StoreError(fmt::format("pack '{}': an earlier upload failed", describe()));
        try {
            if (upload_id_.empty()) put_whole();
            else complete();
        } catch (...) {
            broken_ = true;
            throw;
        }
        sealed_ = true;
        release_blocks();
    }

private:
    std::string describe() const { return storage_.describe(id_); }

    void release_blocks() {
        give_sink_memory(blocks_.size() * kBufferBlock);
        blocks_.clear();
        last_fill_ = 0;
    }

    /// From here on the pack's bytes not sent yet are in the reservation
    /// file, at their offsets in the pack (what went up before is a hole).
    void spill() {
        fd_ = ::open(reservation_.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        if (fd_ < 0)
            throw StoreError(fmt::format("cannot open '{}' to hold the pack being uploaded: {}", reservation_.string(),
                                         std::strerror(errno)));
        spilled_to_ = fmt::format("the pack being uploaded to '{}'", reservation_.string());
        std::uint64_t at = sent_;
        for (std::size_t i = 0; i < blocks_.size(); ++i) {
            const std::size_t have = i + 1 == blocks_.size() ? last_fill_ : kBufferBlock;
            pwrite_all(fd_, blocks_[i].get(), have, at, spilled_to_);
            at += have;
        }
        release_blocks();
    }

    /// The `bytes` of the pack from `sent_` (in memory: whole blocks but
    /// maybe the last; or in the file).
    s3::Body front(std::uint64_t bytes) const {
        s3::Body b;
        if (fd_ >= 0) {
            b.fd = fd_;
            b.file_offset = sent_;
            b.file_bytes = bytes;
            return b;
        }
        std::uint64_t left = bytes;
        for (std::size_t i = 0; left > 0 && i < blocks_.size(); ++i) {
            const std::size_t have = i + 1 == blocks_.size() ? last_fill_ : kBufferBlock;
            const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(left, have));
            b.pieces.emplace_back(blocks_[i].get(), k);
            left -= k;
        }
        return b;
    }

    void put_whole() {
        const s3::Body body = front(size_);
        s3::Request r;
        r.method = "PUT";
        r.key = key_;
        r.body = &body;
        r.headers = {"If-None-Match: *"};
        r.expected = {412};
        const s3::Response a = storage_.client().send(r);
        if (a.status != 412) return;
        // An object is there: ours if an earlier try of this PUT reached the
        // server without its answer reaching us (same length and MD5).
        if (a.attempts > 1) {
            s3::Request h;
            h.method = "HEAD";
            h.key = key_;
            h.expected = {404};
            const s3::Response got = storage_.client().send(h);
            if (got.status == 200 && got.content_length == size_ && unquote(got.etag) == md5_hex(body)) return;
        }
        throw StoreError(fmt::format("pack '{}' exists already in the bucket (another writer's, or a store sharing "
                                     "the prefix); nothing of it was overwritten",
                                     describe()));
    }

    void upload_part(std::uint64_t bytes) {
        if (upload_id_.empty()) {
            s3::Request r;
            r.method = "POST";
            r.key = key_;
            r.query = {{"uploads", ""}};
            const s3::Response a = storage_.client().send(r);
            upload_id_ = s3::xml_value(a.body, "UploadId").value_or("");
            if (upload_id_.empty())
                throw StoreError(fmt::format("S3: starting the multipart upload of '{}' gave no UploadId", describe()));
        }
        const s3::Body body = front(bytes);
        s3::Request r;
        r.method = "PUT";
        r.key = key_;
        r.body = &body;
        r.query = {{"partNumber", std::to_string(etags_.size() + 1)}, {"uploadId", upload_id_}};
        const s3::Response a = storage_.client().send(r);
        if (a.etag.empty()) throw StoreError(fmt::format("S3: part {} of '{}' got no ETag", etags_.size() + 1, describe()));
        etags_.push_back(a.etag);
        sent_ += bytes;
        if (fd_ >= 0) return;
        // Drop the blocks sent (bytes is a whole number of blocks or everything).
        if (sent_ == size_) {
            release_blocks();
        } else {
            const std::size_t whole = static_cast<std::size_t>(bytes / kBufferBlock);
            blocks_.erase(blocks_.begin(), blocks_.begin() + static_cast<std::ptrdiff_t>(whole));
            give_sink_memory(whole * kBufferBlock);
        }
    }

    bool object_exists() const {
        s3::Request h;
        h.method = "HEAD";
        h.key = key_;
        h.expected = {404};
        return storage_.client().send(h).status != 404;
    }

    void complete() {
        if (size_ > sent_) upload_part(size_ - sent_);
        // Ceph RGW (16.2) ignores If-None-Match on CompleteMultipartUpload
        // (AWS honours it): asked first, so that no object is replaced there.
        if (object_exists())
            throw StoreError(fmt::format("pack '{}' exists already in the bucket (another writer's, or a store sharing "
                                         "the prefix); nothing of it was overwritten",
                                         describe()));
        std::string xml = "<CompleteMultipartUpload>";
        for (std::size_t i = 0; i < etags_.size(); ++i)
            xml += fmt::format("<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>", i + 1, etags_[i]);
        xml += "</CompleteMultipartUpload>";
        s3::Body body;
        body.pieces.emplace_back(reinterpret_cast<const std::uint8_t*>(xml.data()), xml.size());
        s3::Request r;
        r.method = "POST";
        r.key = key_;
        r.query = {{"uploadId", upload_id_}};
        r.body = &body;
        r.headers = {"If-None-Match: *"};
        r.expected = {404, 412};
        const s3::Response a = storage_.client().send(r);
        if (a.status == 200) return;
        // 404 NoSuchUpload after a retry: the first try completed it.
        if (a.status == 404 && a.attempts > 1) {
            s3::Request h;
            h.method = "HEAD";
            h.key = key_;
            h.expected = {404};
            const s3::Response got = storage_.client().send(h);
            if (got.status == 200 && got.content_length == size_) return;
        }
        const auto [code, message] = s3::xml_error(a.body);
        throw StoreError(fmt::format("completing the multipart upload of pack '{}': HTTP {} {}{}", describe(),
                                     a.status, code,
                                     a.status == 412 ? " (the object exists already: nothing was overwritten)" : ""));
    }

    const S3PackStorage& storage_;
    std::uint64_t id_;
    std::string key_;
    std::filesystem::path reservation_;
    std::deque<std::unique_ptr<std::uint8_t[]>> blocks_;  // the bytes from sent_ (until spilled)
    std::size_t last_fill_ = 0;
    int fd_ = -1;  // the reservation file, once the pack is written there
    std::string spilled_to_;  // (its description, for messages)
    std::uint64_t sent_ = 0;  // bytes of the pack gone up as parts
    std::uint64_t size_ = 0;
    std::string upload_id_;
    std::vector<std::string> etags_;
    bool sealed_ = false;
    bool broken_ = false;
};

}  // namespace

std::uint64_t S3PackStorage::sinks_memory() { return g_sinks_memory.load(); }

void S3PackStorage::set_sinks_memory_bound(std::uint64_t bytes) { g_sinks_bound.store(bytes); }

namespace {
std::atomic<std::uint64_t> g_buffers_allocated{0};
}  // namespace

std::uint64_t S3PackStorage::buffers_allocated() { return g_buffers_allocated.load(); }

/// Buffers of blocks gone, lent to the next ones: a new buffer is a page
/// fault per 4 KiB, 80,000 in a get of 512 MiB (the most of its fetching
/// CPU). A block gives its buffer back when its last holder lets it go (the
/// cache, or a reader still on it after the cache let it go). Only whole
/// blocks' buffers are kept: a pack's last block (or a small pack, a block
/// of its own) has a buffer of its own size, and the cache counts it so.
struct S3PackStorage::Buffers {
    static constexpr std::size_t kSpareEach = 2;  // buffers kept of each size
    static bool kept(std::size_t size) noexcept { return size == kBlockBytes || size == kLargeBlockBytes; }
    std::mutex mutex;
    std::vector<std::pair<std::size_t, std::unique_ptr<std::byte[]>>> spare;

    std::unique_ptr<std::byte[]> take(std::size_t size) {
        {
            std::lock_guard lock(mutex);
            for (auto it = spare.begin(); it != spare.end(); ++it)
                if (it->first == size) {
                    auto buffer = std::move(it->second);
                    spare.erase(it);
                    return buffer;
                }
        }
        g_buffers_allocated.fetch_add(1, std::memory_order_relaxed);
        return std::make_unique_for_overwrite<std::byte[]>(size);
    }
    void give(std::size_t size, std::unique_ptr<std::byte[]> buffer) {
        if (!kept(size)) return;
        std::lock_guard lock(mutex);
        if (std::count_if(spare.begin(), spare.end(), [&](const auto& b) { return b.first == size; }) <
            static_cast<std::ptrdiff_t>(kSpareEach))
            spare.emplace_back(size, std::move(buffer));
    }
};

struct S3PackStorage::Block {
    /// `n` bytes, in a spare buffer of that size if there is one.
    Block(std::size_t n, std::shared_ptr<Buffers> lender) : capacity(n), buffers(std::move(lender)) {
        data = buffers->take(n);
    }
    ~Block() {
        if (data) buffers->give(capacity, std::move(data));
    }
    Block(const Block&) = delete;
    Block& operator=(const Block&) = delete;
    std::mutex mutex;
    std::condition_variable cv;
    std::unique_ptr<std::byte[]> data;  // the bytes below `filled` are final
    std::size_t capacity;              // the block's bytes (data's size)
    std::shared_ptr<Buffers> buffers;  // where data goes back
    std::size_t filled = 0;  // in place (once ready: the block's length)
    std::size_t needed = SIZE_MAX;  // the least `filled` a waiting reader waits for
    bool ready = false;      // loaded whole, or failed
    std::exception_ptr error;
    bool touched = false;  // by a reader yet (Cache::mutex): one fetched ahead is not, at first
};

struct S3PackStorage::Cache {
    std::mutex mutex;
    std::list<BlockKey> lru;  // most recent first
    std::map<BlockKey, std::shared_ptr<Block>> blocks;
    std::uint64_t cached_bytes = 0;  // of the blocks in `blocks`
    std::shared_ptr<Buffers> buffers = std::make_shared<Buffers>();  // (Cache::mutex, then Buffers::mutex)
};

/// Storages of the same packs share one cache: a `cdc serve` opens the store
/// for each push and pull, and its memory would grow with the pulls at once.
/// The packs of a prefix never change once written (a reused id's blocks are
/// forgotten at its create), so what one storage loaded serves the others.
std::shared_ptr<S3PackStorage::Cache> S3PackStorage::shared_cache(const std::string& key) {
    static std::mutex mutex;
    static std::map<std::string, std::weak_ptr<Cache>> caches;
    std::lock_guard lock(mutex);
    std::erase_if(caches, [](const auto& kv) { return kv.second.expired(); });
    auto& weak = caches[key];
    auto cache = weak.lock();
    if (!cache) {
        cache = std::make_shared<Cache>();
        weak = cache;
    }
    return cache;
}

S3PackStorage::S3PackStorage(std::filesystem::path dir, const PackLocation& where, bool init)
    : dir_(std::move(dir)), where_(where), path_(s3::parse_bucket_url(where.url)) {
    s3::check_region(where.s3_region);
    endpoint_ = s3::normalize_endpoint(where.s3_endpoint, where.s3_region);
    cache_ = shared_cache(fmt::format("{}\n{}\n{}", endpoint_, path_.bucket, path_.prefix));
    part_size_ = where.s3_part_size;
    if (part_size_ < (std::uint64_t{5} << 20) || part_size_ > (std::uint64_t{1} << 30) || part_size_ % kBufferBlock != 0)
        throw OptionError(fmt::format("S3 part size {} is invalid: a multiple of 1 MiB from 5 MiB to 1 GiB", part_size_),
                          "s3_part_size");
    if (!init) return;
    // The bucket answers with these credentials, and the prefix is the store's alone.
    s3::Request r;
    r.key = "";
    r.query = {{"list-type", "2"}, {"max-keys", "1"}, {"prefix", path_.prefix.empty() ? "" : path_.prefix + "/"}};
    s3::Response a;
    try {
        a = client().send(r);
    } catch (const s3::S3Error& e) {
        throw StoreError(fmt::format("cannot keep packs in {}: {}", where.url, e.what()));
    }
    if (!s3::xml_elements(a.body, "Contents").empty())
        throw OptionError(fmt::format("cannot keep packs in {}: it holds objects already (give each store a prefix of "
                                      "its own)",
                                      where.url),
                          "packs");
}

S3PackStorage::~S3PackStorage() {
    {
        std::lock_guard lock(ahead_mutex_);
        ahead_stop_ = true;
    }
    ahead_cv_.notify_all();
    for (auto& t : ahead_threads_) t.join();
}

const s3::Client& S3PackStorage::client() const {
    std::call_once(client_once_, [&] {
        s3::ClientConfig c;
        c.endpoint = endpoint_;
        c.region = where_.s3_region;
        c.bucket = path_.bucket;
        c.credentials = s3::load_credentials(where_.s3_credentials_file, [](const char* n) { return std::getenv(n); });
        c.retry = s3::RetryPolicy::from_environment();
        client_ = std::make_unique<s3::Client>(std::move(c));
    });
    return *client_;
}

std::string S3PackStorage::key_of(std::uint64_t id) const {
    return path_.prefix.empty() ? fmt::format("packs/{}", pack_file_name(id))
                                : fmt::format("{}/packs/{}", path_.prefix, pack_file_name(id));
}

std::string S3PackStorage::describe(std::uint64_t id) const {
    return fmt::format("s3://{}/{}", path_.bucket, key_of(id));
}

std::unique_ptr<PackSink> S3PackStorage::create(std::uint64_t id) {
    std::error_code ec;
    std::filesystem::create_directories(dir_ / kPacksDir, ec);
    const auto reservation = dir_ / kPacksDir / fmt::format("{:08}.uploading", id);
    const int fd = ::open(reservation.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        if (errno == EEXIST) return nullptr;  // another writer's (or a dead one's: gc drops it)
        throw StoreError(fmt::format("cannot reserve pack id {} ('{}'): {}", id, reservation.string(),
                                     std::strerror(errno)));
    }
    ::close(fd);
    try {
        s3::Request h;
        h.method = "HEAD";
        h.key = key_of(id);
        h.expected = {404};
        if (client().send(h).status != 404) {
            ::unlink(reservation.c_str());
            return nullptr;  // an orphan of a writer that died before its commit: gc deletes it
        }
        forget_blocks(id);
        return std::make_unique<S3Sink>(*this, id, reservation);
    } catch (...) {
        ::unlink(reservation.c_str());
        throw;
    }
}

std::unique_ptr<PackSink> S3PackStorage::reopen(std::uint64_t,
                                                const std::function<std::optional<std::uint64_t>()>&) {
    return nullptr;
}

std::unique_ptr<PackReader> S3PackStorage::open(std::uint64_t id) const {
    s3::Request h;
    h.method = "HEAD";
    h.key = key_of(id);
    h.expected = {404};
    const s3::Response a = client().send(h);
    if (a.status == 404) return nullptr;
    return std::make_unique<S3Reader>(*this, id, a.content_length);
}

std::map<std::uint64_t, std::uint64_t> S3PackStorage::list() const {
    std::map<std::uint64_t, std::uint64_t> out;
    const std::string prefix = key_of(0).substr(0, key_of(0).size() - pack_file_name(0).size());
    std::string token;
    for (;;) {
        s3::Request r;
        r.query = {{"list-type", "2"}, {"prefix", prefix}};
        if (!token.empty()) r.query.emplace_back("continuation-token", token);
        const s3::Response a = client().send(r);
        for (const auto contents : s3::xml_elements(a.body, "Contents")) {
            const std::string key = s3::xml_value(contents, "Key").value_or("");
            const std::string size = s3::xml_value(contents, "Size").value_or("0");
            if (!key.starts_with(prefix)) continue;
            const auto id = parse_pack_name(std::string_view(key).substr(prefix.size()));
            if (!id) continue;
            out.emplace(*id, std::strtoull(size.c_str(), nullptr, 10));
        }
        if (s3::xml_value(a.body, "IsTruncated").value_or("false") != "true") break;
        token = s3::xml_value(a.body, "NextContinuationToken").value_or("");
        if (token.empty())
            throw StoreError(fmt::format("S3: listing {} was cut short without a continuation token",
                                         client().describe(prefix)));
    }
    return out;
}

void S3PackStorage::remove(std::uint64_t id) {
    s3::Request r;
    r.method = "DELETE";
    r.key = key_of(id);
    r.expected = {404};
    client().send(r);
    forget_blocks(id);
}

void S3PackStorage::reclaim_incomplete(std::uint64_t up_to) {
    const std::string prefix = key_of(0).substr(0, key_of(0).size() - pack_file_name(0).size());
    std::string key_marker, id_marker;
    for (;;) {
        s3::Request r;
        r.query = {{"uploads", ""}, {"prefix", prefix}};
        if (!key_marker.empty()) {
            r.query.emplace_back("key-marker", key_marker);
            r.query.emplace_back("upload-id-marker", id_marker);
        }
        const s3::Response a = client().send(r);
        for (const auto up : s3::xml_elements(a.body, "Upload")) {
            s3::Request d;
            d.method = "DELETE";
            d.key = s3::xml_value(up, "Key").value_or("");
            d.query = {{"uploadId", s3::xml_value(up, "UploadId").value_or("")}};
            d.expected = {404};
            if (!d.key.starts_with(prefix)) continue;
            // (a pack after `up_to` may be uploading now: a writer's)
            const auto id = parse_pack_name(std::string_view(d.key).substr(prefix.size()));
            if (id && *id <= up_to) client().send(d);
        }
        if (s3::xml_value(a.body, "IsTruncated").value_or("false") != "true") break;
        key_marker = s3::xml_value(a.body, "NextKeyMarker").value_or("");
        id_marker = s3::xml_value(a.body, "NextUploadIdMarker").value_or("");
        if (key_marker.empty()) break;
    }
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_ / kPacksDir, ec))
        if (e.path().extension() == ".uploading") {
            const auto id = parse_pack_name(e.path().stem().string() + ".pack");
            if (id && *id <= up_to) std::filesystem::remove(e.path(), ec);
        }
}

// ---------------------------------------------------------------- reads

std::shared_ptr<S3PackStorage::Block> S3PackStorage::block(std::uint64_t id, std::uint64_t size,
                                                           std::uint64_t block_bytes, std::uint64_t index,
                                                           bool by_reader) const {
    const BlockKey key{id, block_bytes, index};
    const std::uint64_t first = index * block_bytes;
    const std::uint64_t end = std::min<std::uint64_t>(size, first + block_bytes);
    const bool large = block_bytes == kLargeBlockBytes;
    std::shared_ptr<Block> b;
    bool load = false;   // by this thread
    bool ahead = false;  // the next large block: to be fetched ahead
    {
        std::lock_guard lock(cache_->mutex);
        if (const auto it = cache_->blocks.find(key); it != cache_->blocks.end()) {
            cache_->lru.remove(key);
            cache_->lru.push_front(key);
            b = it->second;
            ahead = large && by_reader && !b->touched;
            b->touched = b->touched || by_reader;
        } else {
            const auto n = static_cast<std::size_t>(end - first);
            // Room first: a block let go that no reader holds gives its
            // buffer back at once, for this one.
            while (cache_->cached_bytes + n > kCacheBytes && !cache_->lru.empty()) {
                const auto last = cache_->blocks.find(cache_->lru.back());
                cache_->cached_bytes -= last->second->capacity;
                cache_->blocks.erase(last);
                cache_->lru.pop_back();
            }
            b = std::make_shared<Block>(n, cache_->buffers);
            b->touched = by_reader;
            ahead = large && by_reader;
            cache_->blocks.emplace(key, b);
            cache_->lru.push_front(key);
            cache_->cached_bytes += b->capacity;
            load = true;
        }
    }
    if (ahead) for (std::size_t k = 1; k <= kAhead; ++k) fetch_ahead(id, size, index + k);
    if (!load) return b;  // loaded, or loading (read() waits for the bytes it reads)
    try {
        s3::Request r;
        r.key = key_of(id);
        r.headers = {fmt::format("Range: bytes={}-{}", first, end - 1)};
        r.into = std::span(b->data.get(), b->capacity);
        r.on_data = [&b](std::uint64_t got) {
            bool wake = false;
            {
                std::lock_guard lock(b->mutex);
                b->filled = std::max(b->filled, static_cast<std::size_t>(got));
                wake = b->filled >= b->needed;
                if (wake) b->needed = SIZE_MAX;
            }
            if (wake) b->cv.notify_all();
        };
        const s3::Response a = client().send(r);
        std::lock_guard lock(b->mutex);
        b->filled = static_cast<std::size_t>(a.received);
        b->ready = true;
    } catch (...) {
        {
            std::lock_guard lock(b->mutex);
            b->error = std::current_exception();
            b->ready = true;
        }
        b->cv.notify_all();
        std::lock_guard lock(cache_->mutex);
        if (const auto it = cache_->blocks.find(key); it != cache_->blocks.end() && it->second == b) {
            cache_->cached_bytes -= b->capacity;
            cache_->blocks.erase(it);
            cache_->lru.remove(key);
        }
        throw;
    }
    b->cv.notify_all();
    return b;
}

void S3PackStorage::fetch_ahead(std::uint64_t id, std::uint64_t size, std::uint64_t index) const {
    if (index * kLargeBlockBytes >= size) return;
    {
        std::lock_guard lock(ahead_mutex_);
        if (ahead_stop_) return;
        if (ahead_threads_.size() < kAhead) ahead_threads_.emplace_back([this] { fetch_ahead_loop(); });
        if (ahead_queue_.size() >= kAheadQueue) ahead_queue_.pop_front();
        ahead_queue_.emplace_back(id, size, index);
    }
    ahead_cv_.notify_one();
}

void S3PackStorage::fetch_ahead_loop() const {
    for (;;) {
        std::uint64_t id = 0, size = 0, index = 0;
        {
            std::unique_lock lock(ahead_mutex_);
            ahead_cv_.wait(lock, [&] { return ahead_stop_ || !ahead_queue_.empty(); });
            if (ahead_stop_) return;
            std::tie(id, size, index) = ahead_queue_.front();
            ahead_queue_.pop_front();
        }
        try {
            block(id, size, kLargeBlockBytes, index, false);
        } catch (const std::exception&) {
            // The readers waiting for this block have the error; one that
            // needs it later loads it again (and meets the error itself).
        }
    }
}

void S3PackStorage::forget_blocks(std::uint64_t id) const {
    std::lock_guard lock(cache_->mutex);
    for (auto it = cache_->lru.begin(); it != cache_->lru.end();) {
        if (std::get<0>(*it) == id) {
            const auto b = cache_->blocks.find(*it);
            cache_->cached_bytes -= b->second->capacity;
            cache_->blocks.erase(b);
            it = cache_->lru.erase(it);
        } else {
            ++it;
        }
    }
}

std::size_t S3PackStorage::wait_for(Block& b, std::size_t until) {
    // Woken once all it reads of the block is there, not at each piece of
    // the answer (a wake-up per 256 KiB for every reader: 37,000 context
    // switches in a get of 512 MiB).
    std::unique_lock lock(b.mutex);
    while (!b.ready && b.filled < until) {
        b.needed = std::min(b.needed, until);
        b.cv.wait(lock);
    }
    if (b.error) std::rethrow_exception(b.error);
    return b.filled;
}

PackReader::View S3PackStorage::view(std::uint64_t id, std::uint64_t size, std::uint64_t offset, std::size_t n) const {
    // Only a run within one large block (most of a decoder's runs: up to
    // 1 MiB in blocks of 8): a smaller read is a chunk among other days'
    // packs, read once.
    if (n < kLargeRead || offset >= size || n > size - offset) return {};
    const std::uint64_t index = offset / kLargeBlockBytes;
    if ((offset + n - 1) / kLargeBlockBytes != index) return {};
    auto b = block(id, size, kLargeBlockBytes, index, true);
    const auto within = static_cast<std::size_t>(offset % kLargeBlockBytes);
    if (wait_for(*b, within + n) < within + n) return {};  // (shorter than said: read_at tells)
    const std::span<const std::byte> bytes(b->data.get() + within, n);
    return {bytes, std::move(b)};
}

std::size_t S3PackStorage::read(std::uint64_t id, std::uint64_t size, std::uint64_t offset,
                                std::span<std::byte> out) const {
    if (offset >= size || out.empty()) return 0;
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(out.size(), size - offset));
    if (want > kLargeBlockBytes) {
        // Larger than any block: straight into the caller's buffer.
        s3::Request r;
        r.key = key_of(id);
        r.headers = {fmt::format("Range: bytes={}-{}", offset, offset + want - 1)};
        r.into = out.first(want);
        const s3::Response a = client().send(r);
        if (a.received != want)
            throw StoreError(fmt::format("S3: pack '{}': {} bytes read at {} instead of {}", describe(id), a.received,
                                         offset, want));
        return want;
    }
    const std::uint64_t block_bytes = want >= kLargeRead ? kLargeBlockBytes : kBlockBytes;
    std::size_t done = 0;
    while (done < want) {
        const std::uint64_t at = offset + done;
        std::uint64_t bytes = block_bytes;
        if (bytes == kBlockBytes) {
            // (A small read within a large block in hand reads it from there.)
            std::lock_guard lock(cache_->mutex);
            if (cache_->blocks.contains(BlockKey{id, kLargeBlockBytes, at / kLargeBlockBytes})) bytes = kLargeBlockBytes;
        }
        const auto b = block(id, size, bytes, at / bytes, true);
        const auto within = static_cast<std::size_t>(at % bytes);
        const std::size_t have = wait_for(*b, std::min(b->capacity, within + (want - done)));
        if (within >= have) break;  // the object is shorter than it was said to be
        const std::size_t k = std::min<std::size_t>(want - done, have - within);
        std::memcpy(out.data() + done, b->data.get() + within, k);
        done += k;
    }
    return done;
}

}  // namespace cdc::store::detail
