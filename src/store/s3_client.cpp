// SPDX-License-Identifier: Apache-2.0
#include "s3_client.hpp"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <tuple>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include <unistd.h>

namespace cdc::store::detail::s3 {

namespace {

bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool is_unreserved(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.' || c == '~';
}

std::string trim(std::string_view s) {
    const auto first = s.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) return {};
    const auto last = s.find_last_not_of(" \t\r\n");
    return std::string(s.substr(first, last - first + 1));
}

std::string decode_entities(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '&') {
            out += s[i];
            continue;
        }
        const auto semi = s.find(';', i);
        if (semi == std::string_view::npos) {
            out += s[i];
            continue;
        }
        const std::string_view name = s.substr(i + 1, semi - i - 1);
        if (name == "amp") out += '&';
        else if (name == "lt") out += '<';
        else if (name == "gt") out += '>';
        else if (name == "quot") out += '"';
        else if (name == "apos") out += '\'';
        else if (name.size() > 1 && name[0] == '#') {
            const bool hex = name[1] == 'x';
            const std::string digits(name.substr(hex ? 2 : 1));
            char* end = nullptr;
            const unsigned long v = std::strtoul(digits.c_str(), &end, hex ? 16 : 10);
            if (end == nullptr || *end != '\0' || digits.empty() || v > 0x7f) {  // (keys here are ASCII)
                out.append(s.substr(i, semi - i + 1));
            } else {
                out += static_cast<char>(v);
            }
        } else {
            out.append(s.substr(i, semi - i + 1));
        }
        i = semi;
    }
    return out;
}

}  // namespace

// ================================================================ parsing

BucketPath parse_bucket_url(std::string_view url) {
    auto bad = [&](const std::string& why) -> OptionError {
        return OptionError(fmt::format("packs location '{}' is invalid: {} (expected s3://BUCKET/PREFIX)", url, why),
                           "packs");
    };
    constexpr std::string_view kScheme = "s3://";
    if (!url.starts_with(kScheme)) throw bad("it does not start with s3://");
    std::string_view rest = url.substr(kScheme.size());
    const auto slash = rest.find('/');
    BucketPath p;
    p.bucket = std::string(rest.substr(0, slash));
    std::string_view prefix = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
    while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
    if (p.bucket.size() < 3 || p.bucket.size() > 63)
        throw bad(fmt::format("a bucket name has 3 to 63 characters, '{}' has {}", p.bucket, p.bucket.size()));
    for (const char c : p.bucket)
        if (!is_lower_alnum(c) && c != '.' && c != '-')
            throw bad(fmt::format("the bucket name '{}' holds '{}' (lower-case letters, digits, '.' and '-' only)",
                                  p.bucket, c));
    if (!is_lower_alnum(p.bucket.front()) || !is_lower_alnum(p.bucket.back()))
        throw bad(fmt::format("the bucket name '{}' must start and end with a letter or digit", p.bucket));
    std::size_t start = 0;
    while (start <= prefix.size() && !prefix.empty()) {
        const auto end = prefix.find('/', start);
        const std::string_view part = prefix.substr(start, end == std::string_view::npos ? prefix.npos : end - start);
        if (part.empty() || part == "." || part == "..")
            throw bad(fmt::format("the prefix '{}' has an empty, '.' or '..' part", prefix));
        for (const char c : part)
            if (!is_unreserved(static_cast<unsigned char>(c)) || c == '~')
                throw bad(fmt::format("the prefix '{}' holds '{}' (letters, digits, '.', '_', '-' and '/' only)",
                                      prefix, c));
        if (end == std::string_view::npos) break;
        start = end + 1;
    }
    p.prefix = std::string(prefix);
    return p;
}

void check_region(std::string_view region) {
    bool ok = !region.empty() && region.size() <= 64;
    for (const char c : region) ok = ok && (is_lower_alnum(c) || c == '-');
    if (!ok)
        throw OptionError(fmt::format("S3 region '{}' is invalid: lower-case letters, digits and '-' only "
                                      "(e.g. us-east-1)",
                                      region),
                          "s3_region");
}

std::string normalize_endpoint(std::string_view endpoint, std::string_view region) {
    if (endpoint.empty()) return fmt::format("https://s3.{}.amazonaws.com", region);
    auto bad = [&](const std::string& why) -> OptionError {
        return OptionError(fmt::format("S3 endpoint '{}' is invalid: {} (expected http://HOST[:PORT] or "
                                       "https://HOST[:PORT])",
                                       endpoint, why),
                           "s3_endpoint");
    };
    std::string_view rest;
    if (endpoint.starts_with("http://")) rest = endpoint.substr(7);
    else if (endpoint.starts_with("https://")) rest = endpoint.substr(8);
    else throw bad("no http:// or https://");
    while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
    if (rest.empty()) throw bad("no host");
    for (const char c : rest) {
        if (c == '/' || c == '?' || c == '#') throw bad("a path-style endpoint has no path of its own");
        if (c == '@') throw bad("credentials do not go into the endpoint");
        if (static_cast<unsigned char>(c) <= ' ') throw bad("it holds a space or a control character");
    }
    return std::string(endpoint.substr(0, endpoint.size() - (endpoint.size() - (endpoint.find("://") + 3) - rest.size())));
}

Credentials parse_credentials_file(std::string_view text, std::string_view profile, const std::string& path) {
    Credentials c;
    bool in_profile = false, seen_profile = false;
    std::size_t at = 0;
    while (at <= text.size()) {
        const auto nl = text.find('\n', at);
        const std::string line = trim(text.substr(at, nl == std::string_view::npos ? text.npos : nl - at));
        at = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
        if (line.empty() || line[0] == '#' || line[0] == ';') continue;
        if (line.front() == '[' && line.back() == ']') {
            std::string name = trim(std::string_view(line).substr(1, line.size() - 2));
            if (name.starts_with("profile ")) name = trim(std::string_view(name).substr(8));
            in_profile = name == profile;
            seen_profile = seen_profile || in_profile;
            continue;
        }
        if (!in_profile) continue;
        const auto eq = line.find('=');
        if (eq == std::string::npos) continue;
        const std::string key = trim(std::string_view(line).substr(0, eq));
        const std::string value = trim(std::string_view(line).substr(eq + 1));
        if (key == "aws_access_key_id") c.access_key = value;
        else if (key == "aws_secret_access_key") c.secret_key = value;
        else if (key == "aws_session_token") c.session_token = value;
    }
    if (!seen_profile)
        throw StoreError(fmt::format("the S3 credentials file '{}' has no [{}] profile", path, profile));
    if (c.access_key.empty() || c.secret_key.empty())
        throw StoreError(fmt::format("the S3 credentials file '{}': profile [{}] lacks aws_access_key_id or "
                                     "aws_secret_access_key",
                                     path, profile));
    c.source = fmt::format("the file '{}' (profile {})", path, profile);
    return c;
}

Credentials load_credentials(const std::string& recorded_file,
                             const std::function<const char*(const char*)>& getenv) {
    auto env = [&](const char* name) -> std::string {
        const char* v = getenv(name);
        return v == nullptr ? std::string() : std::string(v);
    };
    const std::string id = env("AWS_ACCESS_KEY_ID"), secret = env("AWS_SECRET_ACCESS_KEY");
    if (!id.empty() || !secret.empty()) {
        if (id.empty() || secret.empty())
            throw StoreError("S3 credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together");
        return {id, secret, env("AWS_SESSION_TOKEN"), "the environment (AWS_ACCESS_KEY_ID)"};
    }
    std::string path = env("CDC_S3_CREDENTIALS_FILE");
    std::string looked = "AWS_ACCESS_KEY_ID, CDC_S3_CREDENTIALS_FILE";
    if (path.empty()) path = recorded_file;
    if (!recorded_file.empty()) looked += fmt::format(", the store's --s3-credentials '{}'", recorded_file);
    if (path.empty()) path = env("AWS_SHARED_CREDENTIALS_FILE");
    looked += ", AWS_SHARED_CREDENTIALS_FILE";
    bool fallback = false;
    if (path.empty() && !env("HOME").empty()) {
        path = env("HOME") + "/.aws/credentials";
        fallback = true;
    }
    looked += ", ~/.aws/credentials";
    std::string profile = env("AWS_PROFILE");
    if (profile.empty()) profile = "default";
    if (path.empty()) throw StoreError(fmt::format("no S3 credentials found (looked at: {})", looked));
    std::ifstream in(path);
    if (!in) {
        if (fallback) throw StoreError(fmt::format("no S3 credentials found (looked at: {})", looked));
        throw StoreError(fmt::format("cannot read the S3 credentials file '{}': {}", path, std::strerror(errno)));
    }
    std::stringstream text;
    text << in.rdbuf();
    return parse_credentials_file(text.str(), profile, path);
}

std::string uri_encode(std::string_view s, bool keep_slash) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(s.size());
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (is_unreserved(c) || (keep_slash && c == '/')) {
            out += ch;
        } else {
            out += '%';
            out += kHex[c >> 4];
            out += kHex[c & 15];
        }
    }
    return out;
}

std::string canonical_query(Query query) {
    for (auto& [k, v] : query) {
        k = uri_encode(k, false);
        v = uri_encode(v, false);
    }
    std::sort(query.begin(), query.end());
    std::string out;
    for (const auto& [k, v] : query) {
        if (!out.empty()) out += '&';
        out += k;
        out += '=';
        out += v;
    }
    return out;
}

std::vector<std::string_view> xml_elements(std::string_view xml, std::string_view tag) {
    std::vector<std::string_view> out;
    const std::string open = fmt::format("<{}>", tag), close = fmt::format("</{}>", tag);
    std::size_t at = 0;
    for (;;) {
        const auto b = xml.find(open, at);
        if (b == std::string_view::npos) break;
        const auto e = xml.find(close, b + open.size());
        if (e == std::string_view::npos) break;
        out.push_back(xml.substr(b + open.size(), e - b - open.size()));
        at = e + close.size();
    }
    return out;
}

std::optional<std::string> xml_value(std::string_view xml, std::string_view tag) {
    const auto all = xml_elements(xml, tag);
    if (all.empty()) {
        // An empty element: <Tag/>.
        if (xml.find(fmt::format("<{}/>", tag)) != std::string_view::npos) return std::string();
        return std::nullopt;
    }
    return decode_entities(all.front());
}

std::pair<std::string, std::string> xml_error(std::string_view body) {
    const auto err = xml_elements(body, "Error");
    if (err.empty()) return {};
    return {xml_value(err.front(), "Code").value_or(""), xml_value(err.front(), "Message").value_or("")};
}

// ================================================================ retries

bool RetryPolicy::retry_status(long status) { return status >= 500 || status == 429; }

bool RetryPolicy::retry_transport(int curl_code) {
    switch (static_cast<CURLcode>(curl_code)) {
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_CONNECT:
        case CURLE_OPERATION_TIMEDOUT:
        case CURLE_SEND_ERROR:
        case CURLE_RECV_ERROR:
        case CURLE_GOT_NOTHING:
        case CURLE_PARTIAL_FILE:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM:
        case CURLE_SSL_CONNECT_ERROR:
            return true;
        default:
            return false;
    }
}

std::chrono::milliseconds RetryPolicy::delay(int attempt, double unit) const {
    const int shift = std::clamp(attempt - 1, 0, 30);
    const double raw = static_cast<double>(base.count()) * static_cast<double>(std::uint64_t{1} << shift);
    const double capped = std::min(raw, static_cast<double>(cap.count()));
    const double jitter = 0.5 + 0.5 * std::clamp(unit, 0.0, 1.0);
    return std::chrono::milliseconds(static_cast<std::int64_t>(capped * jitter));
}

RetryPolicy RetryPolicy::from_environment() {
    RetryPolicy p;
    auto number = [](const char* name, long lo, long hi) -> std::optional<long> {
        const char* v = std::getenv(name);
        if (v == nullptr || *v == '\0') return std::nullopt;
        char* end = nullptr;
        const long n = std::strtol(v, &end, 10);
        if (end == nullptr || *end != '\0' || n < lo || n > hi)
            throw OptionError(fmt::format("{} = '{}' is invalid: expected a whole number in [{}, {}]", name, v, lo, hi));
        return n;
    };
    if (const auto n = number("CDC_S3_RETRIES", 1, 100)) p.max_attempts = static_cast<int>(*n);
    if (const auto n = number("CDC_S3_RETRY_BASE_MS", 1, 60000)) p.base = std::chrono::milliseconds(*n);
    return p;
}

std::vector<std::string> request_headers(const Request& r, const Credentials& c) {
    std::vector<std::string> h;
    h.emplace_back("x-amz-content-sha256: UNSIGNED-PAYLOAD");
    if (!c.session_token.empty()) h.push_back("x-amz-security-token: " + c.session_token);
    if (r.body != nullptr) {
        if (std::strcmp(r.method, "POST") == 0) h.emplace_back("Content-Type: application/xml");
        else h.emplace_back("Content-Type: application/octet-stream");
    }
    for (const auto& x : r.headers) h.push_back(x);
    return h;
}

// ================================================================ the client

namespace {

constexpr long kAnswerBuffer = 256L << 10;  // libcurl's receive buffer for a GET into memory

struct Transfer {
    const Body* body = nullptr;
    std::size_t piece = 0;
    std::size_t offset = 0;
    std::uint64_t file_read = 0;  // bytes of the body's file part sent
    std::span<std::byte> into;
    const std::function<void(std::uint64_t)>* on_data = nullptr;
    std::uint64_t kept = 0;  // bytes of `into` an earlier try put there: left as they are
    std::uint64_t received = 0;
    bool overflow = false;
    std::string text;
    std::string etag;
    CURL* handle = nullptr;
};

std::size_t read_body(char* buf, std::size_t size, std::size_t n, void* p) {
    auto& t = *static_cast<Transfer*>(p);
    const std::size_t room = size * n;
    std::size_t done = 0;
    while (done < room && t.body && t.piece < t.body->pieces.size()) {
        const auto& piece = t.body->pieces[t.piece];
        const std::size_t k = std::min(room - done, piece.size() - t.offset);
        if (k) std::memcpy(buf + done, piece.data() + t.offset, k);
        done += k;
        t.offset += k;
        if (t.offset == piece.size()) {
            ++t.piece;
            t.offset = 0;
        }
    }
    while (done < room && t.body && t.body->fd >= 0 && t.file_read < t.body->file_bytes) {
        const std::uint64_t left = t.body->file_bytes - t.file_read;
        const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(room - done, left));
        const ssize_t k = ::pread(t.body->fd, buf + done, want, static_cast<off_t>(t.body->file_offset + t.file_read));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return CURL_READFUNC_ABORT;  // the send fails and is retried; a file cut short fails it for good
        done += static_cast<std::size_t>(k);
        t.file_read += static_cast<std::uint64_t>(k);
    }
    return done;
}

std::size_t write_answer(char* data, std::size_t size, std::size_t n, void* p) {
    auto& t = *static_cast<Transfer*>(p);
    const std::size_t len = size * n;
    long status = 0;
    curl_easy_getinfo(t.handle, CURLINFO_RESPONSE_CODE, &status);
    if (!t.into.empty() && status >= 200 && status < 300) {
        if (t.received + len > t.into.size()) {
            t.overflow = true;
            return 0;  // (aborts the transfer)
        }
        if (t.received + len > t.kept) {
            const std::size_t skip = t.received >= t.kept ? 0 : static_cast<std::size_t>(t.kept - t.received);
            std::memcpy(t.into.data() + t.received + skip, data + skip, len - skip);
        }
        t.received += len;
        if (t.received > t.kept && t.on_data != nullptr && *t.on_data) (*t.on_data)(t.received);
        return len;
    }
    constexpr std::size_t kMaxText = std::size_t{64} << 20;  // listings, errors
    if (t.text.size() + len > kMaxText) {
        t.overflow = true;
        return 0;
    }
    t.text.append(data, len);
    return len;
}

std::size_t read_header(char* data, std::size_t size, std::size_t n, void* p) {
    auto& t = *static_cast<Transfer*>(p);
    const std::string_view line(data, size * n);
    if (line.size() > 5 && (line[0] == 'E' || line[0] == 'e') && (line.starts_with("ETag:") || line.starts_with("etag:") ||
                                                                   line.starts_with("Etag:")))
        t.etag = trim(line.substr(5));
    return size * n;
}

}  // namespace

struct Client::Pool {
    std::mutex mutex;
    std::vector<CURL*> idle;
    std::atomic<std::uint64_t> requests{0};
    std::atomic<std::uint64_t> received{0};       // body bytes of answers
    std::atomic<std::uint64_t> transfer_ns{0};    // in curl_easy_perform, summed over threads
    ~Pool() {
        for (CURL* h : idle) curl_easy_cleanup(h);
    }
    CURL* take() {
        {
            std::lock_guard lock(mutex);
            if (!idle.empty()) {
                CURL* h = idle.back();
                idle.pop_back();
                return h;
            }
        }
        CURL* h = curl_easy_init();
        if (h == nullptr) throw StoreError("S3: curl_easy_init failed");
        return h;
    }
    void give(CURL* h) {
        std::lock_guard lock(mutex);
        idle.push_back(h);
    }
};

Client::Client(ClientConfig config) : config_(std::move(config)), pool_(std::make_unique<Pool>()) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

Client::~Client() {
    // CDC_S3_STATS: what the requests cost, to tell a client that waits on
    // the server from one that waits on its own work (bench/engines).
    if (const char* v = std::getenv("CDC_S3_STATS"); v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0)
        std::fprintf(stderr, "S3: %llu requests, %.1f MB received, %.3f s in transfers (summed over threads)\n",
                     static_cast<unsigned long long>(pool_->requests.load()),
                     static_cast<double>(pool_->received.load()) / 1e6,
                     static_cast<double>(pool_->transfer_ns.load()) / 1e9);
}

std::uint64_t Client::requests() const noexcept { return pool_->requests.load(); }

std::string Client::describe(std::string_view key) const {
    return key.empty() ? fmt::format("s3://{}", config_.bucket) : fmt::format("s3://{}/{}", config_.bucket, key);
}

Response Client::send(const Request& r) const {
    std::string url = fmt::format("{}/{}", config_.endpoint, config_.bucket);
    if (!r.key.empty()) url += "/" + uri_encode(r.key, true);
    if (!r.query.empty()) url += "?" + canonical_query(r.query);
    const std::string sigv4 = fmt::format("aws:amz:{}:s3", config_.region);
    const std::vector<std::string> headers = request_headers(r, config_.credentials);
    const std::string what = fmt::format("S3 {} {} (endpoint {})", r.method, describe(r.key), config_.endpoint);
    thread_local std::minstd_rand jitter(std::random_device{}());

    struct HandleGuard {
        Pool& pool;
        CURL* h;
        ~HandleGuard() { pool.give(h); }
    } guard{*pool_, pool_->take()};
    CURL* h = guard.h;

    std::uint64_t kept = 0;  // bytes of r.into in place from earlier tries
    for (int attempt = 1;; ++attempt) {
        curl_easy_reset(h);
        Transfer t;
        t.body = r.body;
        t.into = r.into;
        t.on_data = &r.on_data;
        t.kept = kept;
        t.handle = h;
        curl_slist* list = nullptr;
        for (const auto& x : headers) list = curl_slist_append(list, x.c_str());
        char errbuf[CURL_ERROR_SIZE] = {};
        curl_easy_setopt(h, CURLOPT_URL, url.c_str());
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
        curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4.c_str());
        curl_easy_setopt(h, CURLOPT_USERNAME, config_.credentials.access_key.c_str());
        curl_easy_setopt(h, CURLOPT_PASSWORD, config_.credentials.secret_key.c_str());
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, config_.connect_timeout_ms);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, config_.stall_timeout_s);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write_answer);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, read_header);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, &t);
        curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
        // A large answer comes in fewer, larger writes (libcurl's default is
        // 16 KiB: a block of 8 MiB was 512 calls into write_answer, each
        // waking the block's readers).
        if (!r.into.empty()) curl_easy_setopt(h, CURLOPT_BUFFERSIZE, kAnswerBuffer);
        const std::string_view method = r.method;
        if (method == "HEAD") {
            curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
        } else if (method == "PUT") {
            curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
            curl_easy_setopt(h, CURLOPT_READFUNCTION, read_body);
            curl_easy_setopt(h, CURLOPT_READDATA, &t);
            curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(r.body ? r.body->size() : 0));
        } else if (method == "POST") {
            curl_easy_setopt(h, CURLOPT_POST, 1L);
            curl_easy_setopt(h, CURLOPT_READFUNCTION, read_body);
            curl_easy_setopt(h, CURLOPT_READDATA, &t);
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body ? r.body->size() : 0));
        } else if (method != "GET") {
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r.method);
        }
        pool_->requests.fetch_add(1);
        const auto t0 = std::chrono::steady_clock::now();
        const CURLcode rc = curl_easy_perform(h);
        pool_->transfer_ns.fetch_add(static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count()));
        pool_->received.fetch_add(t.received + t.text.size());
        curl_slist_free_all(list);
        long status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        if (status >= 200 && status < 300) kept = std::max(kept, t.received);
        const bool last = attempt >= config_.retry.max_attempts;
        if (rc != CURLE_OK) {
            if (t.overflow)
                throw S3Error(fmt::format("{}: the answer is larger than expected ({} bytes room)", what,
                                          r.into.empty() ? std::size_t{64} << 20 : r.into.size()),
                              status, "Overflow");
            if (!last && RetryPolicy::retry_transport(rc)) {
                std::this_thread::sleep_for(config_.retry.delay(attempt, std::uniform_real_distribution<>(0, 1)(jitter)));
                continue;
            }
            throw S3Error(fmt::format("{}: {}", what, errbuf[0] ? errbuf : curl_easy_strerror(rc)) +
                              (attempt > 1 ? fmt::format(" (after {} tries)", attempt) : std::string()),
                          0, curl_easy_strerror(rc));
        }
        Response out;
        out.status = status;
        out.received = t.received;
        out.etag = std::move(t.etag);
        out.attempts = attempt;
        if (method == "HEAD") {
            curl_off_t len = -1;
            curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len);
            out.content_length = len > 0 ? static_cast<std::uint64_t>(len) : 0;
        }
        const bool ok = status >= 200 && status < 300;
        if (ok || std::find(r.expected.begin(), r.expected.end(), status) != r.expected.end()) {
            out.body = std::move(t.text);
            // CompleteMultipartUpload may answer 200 with an <Error> body.
            if (ok && method == "POST") {
                const auto [code, message] = xml_error(out.body);
                if (!code.empty()) {
                    if (!last && (code == "InternalError" || code == "SlowDown" || code == "ServiceUnavailable")) {
                        std::this_thread::sleep_for(
                            config_.retry.delay(attempt, std::uniform_real_distribution<>(0, 1)(jitter)));
                        continue;
                    }
                    throw S3Error(fmt::format("{}: HTTP {} {}{}{}", what, status, code, message.empty() ? "" : ": ",
                                              message),
                                  status, code);
                }
            }
            return out;
        }
        if (!last && RetryPolicy::retry_status(status)) {
            std::this_thread::sleep_for(config_.retry.delay(attempt, std::uniform_real_distribution<>(0, 1)(jitter)));
            continue;
        }
        auto [code, message] = xml_error(t.text);
        if (code.empty() && method == "HEAD") {
            // A HEAD answer has no body: the same request as a GET of one
            // byte says what S3 objects to (InvalidAccessKeyId, NoSuchBucket).
            Request g = r;
            g.method = "GET";
            g.headers.emplace_back("Range: bytes=0-0");
            std::array<std::byte, 1> one{};
            g.into = one;
            g.expected = {status};
            try {
                std::tie(code, message) = xml_error(send(g).body);
            } catch (const S3Error&) {
            }
            if (code.empty()) code = status == 403 ? "Forbidden" : status == 404 ? "NotFound" : "";
        }
        // (RGW says QuotaExceeded without a message.)
        if (code == "QuotaExceeded" && message.empty())
            message = "the bucket's or its owner's quota is full (what was stored before stays; make room or raise it)";
        throw S3Error(fmt::format("{}: HTTP {}{}{}{}{}", what, status, code.empty() ? "" : " ", code,
                                  message.empty() ? "" : ": ", message) +
                          (attempt > 1 ? fmt::format(" (after {} tries)", attempt) : std::string()),
                      status, code);
    }
}

}  // namespace cdc::store::detail::s3
