// SPDX-License-Identifier: Apache-2.0
// A small S3 client over libcurl for the store's S3 pack storage
// (s3_packs.hpp): path-style URLs (ENDPOINT/BUCKET/KEY), SigV4 signed by
// libcurl (CURLOPT_AWS_SIGV4) with an unsigned payload, a pool of easy
// handles (connections kept alive), retries with exponential backoff on 5xx,
// 429, timeouts and connection errors, and errors that name the bucket, the
// key, the HTTP status and S3's error code.
//
// The pieces that need no server (URL and credential parsing, the query
// encoding, the XML of answers, the retry policy, the headers added to a
// request) are free functions, tested alone (tests/unit/s3_client_test.cpp).
#pragma once

#include <cdc/store.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cdc::store::detail::s3 {

/// An error S3 answered (or a request that failed after its retries): the
/// message names the method, s3://BUCKET/KEY, the endpoint, the HTTP status
/// and S3's error code and message.
class S3Error : public StoreError {
public:
    S3Error(const std::string& what, long status, std::string code)
        : StoreError(what), status_(status), code_(std::move(code)) {}
    long status() const noexcept { return status_; }      ///< 0: no answer (connection, timeout)
    const std::string& code() const noexcept { return code_; }  ///< "NoSuchBucket", or a curl error's name

private:
    long status_;
    std::string code_;
};

/// "s3://BUCKET/PREFIX" split; the prefix has no leading or trailing '/'.
struct BucketPath {
    std::string bucket;
    std::string prefix;  ///< may be empty
};
/// Parses "s3://BUCKET[/PREFIX]": OptionError (field "packs") unless the
/// bucket is 3..63 of [a-z0-9.-] and the prefix of [A-Za-z0-9._-/] without
/// empty, "." or ".." parts (keys that need no escaping anywhere).
BucketPath parse_bucket_url(std::string_view url);

/// "http[s]://HOST[:PORT]" without a path, query or trailing '/'
/// (OptionError, field "s3_endpoint", otherwise). Empty: AWS's endpoint of
/// `region`.
std::string normalize_endpoint(std::string_view endpoint, std::string_view region);

/// A region name: [a-z0-9-]+ (OptionError, field "s3_region").
void check_region(std::string_view region);

struct Credentials {
    std::string access_key;
    std::string secret_key;
    std::string session_token;  ///< empty without one
    std::string source;         ///< where they came from, for messages (never the secret)
};

/// The [profile] of an AWS credentials file (INI: aws_access_key_id,
/// aws_secret_access_key, aws_session_token); StoreError naming `path` when
/// the profile or a key is missing.
Credentials parse_credentials_file(std::string_view text, std::string_view profile, const std::string& path);

/// The credentials of a store's S3 packs, in order: AWS_ACCESS_KEY_ID +
/// AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN) from the environment; else the
/// file named by CDC_S3_CREDENTIALS_FILE, else `recorded_file` (the store's
/// setting), else AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials, its
/// profile AWS_PROFILE or "default". StoreError saying where it looked.
/// `getenv` is a parameter for the tests.
Credentials load_credentials(const std::string& recorded_file,
                             const std::function<const char*(const char*)>& getenv);

/// S3's URI encoding (RFC 3986 unreserved characters kept, every other byte
/// %XX in upper case; '/' kept when `keep_slash`).
std::string uri_encode(std::string_view s, bool keep_slash);

using Query = std::vector<std::pair<std::string, std::string>>;
/// The query string as SigV4 signs it: parameters sorted by name, names and
/// values encoded, "name=" for an empty value. libcurl 7.88 signs the query
/// as it is given, so the URL carries this very form.
std::string canonical_query(Query query);

/// The text of the first <tag>...</tag> in `xml` with the five XML entities
/// decoded; nullopt if there is none. (S3's answers are flat enough for this:
/// no attributes on the elements read, no CDATA.)
std::optional<std::string> xml_value(std::string_view xml, std::string_view tag);
/// The bodies of every <tag>...</tag> in `xml`, raw (not decoded).
std::vector<std::string_view> xml_elements(std::string_view xml, std::string_view tag);
/// The <Code> and <Message> of an S3 <Error> document; empty strings if the
/// body is not one.
std::pair<std::string, std::string> xml_error(std::string_view body);

/// When and how long to retry.
struct RetryPolicy {
    int max_attempts = 8;                       ///< tries in all (1: no retry)
    std::chrono::milliseconds base{200};        ///< first delay
    std::chrono::milliseconds cap{8000};        ///< longest delay
    /// Whether an answer with this HTTP status is worth another try (5xx, 429).
    static bool retry_status(long status);
    /// Whether a libcurl error (CURLcode) is worth another try (connection,
    /// timeout, send/receive errors); not for a bad URL or an option error.
    static bool retry_transport(int curl_code);
    /// The delay before try `attempt` + 1 (attempt counts from 1): base x
    /// 2^(attempt-1), capped, times a jitter in [0.5, 1.0] from `unit` in [0, 1].
    std::chrono::milliseconds delay(int attempt, double unit) const;
    /// The policy of the environment: CDC_S3_RETRIES (tries in all, 1..100)
    /// and CDC_S3_RETRY_BASE_MS, else the defaults.
    static RetryPolicy from_environment();
};

/// A request's body: pieces of memory sent one after the other, then
/// `file_bytes` bytes of the open file `fd` from `file_offset` (read as
/// they are sent, so a body in a file costs no memory).
struct Body {
    std::vector<std::span<const std::uint8_t>> pieces;
    int fd = -1;
    std::uint64_t file_offset = 0;
    std::uint64_t file_bytes = 0;
    std::uint64_t size() const {
        std::uint64_t n = file_bytes;
        for (const auto& p : pieces) n += p.size();
        return n;
    }
};

struct Request {
    const char* method = "GET";  ///< GET, HEAD, PUT, POST, DELETE
    std::string key;             ///< object key; empty: the bucket itself
    Query query;
    std::vector<std::string> headers;  ///< extra "Name: value"
    const Body* body = nullptr;        ///< PUT, POST
    /// GET: the answer's body goes here (at most its size; more is an
    /// error); otherwise into Response::body.
    std::span<std::byte> into;
    /// With `into`: called as the answer's bytes arrive, with how many are
    /// in place from its start. A try after one that failed midway writes
    /// only past what that one put there (the same bytes: an object here is
    /// never rewritten), so bytes once reported stay as they are and may be
    /// read meanwhile (S3PackStorage's readers of a block still loading).
    std::function<void(std::uint64_t)> on_data;
    /// Statuses returned to the caller instead of thrown (2xx always are).
    std::vector<long> expected;
};

struct Response {
    long status = 0;
    std::string body;              ///< unless Request::into was given
    std::uint64_t received = 0;    ///< bytes written into Request::into
    std::uint64_t content_length = 0;  ///< HEAD: the object's size
    std::string etag;
    int attempts = 1;  ///< tries it took (a PUT retried may meet its own first try: 412)
};

/// The headers a request gets beyond libcurl's own (SigV4's Authorization,
/// X-Amz-Date, Host): x-amz-content-sha256 (RGW refuses SigV4 without it),
/// the session token, a body's Content-Type, then the request's own. (Not
/// "Expect:" to drop libcurl's 100-continue: libcurl 7.88 signs the empty
/// header it then leaves out, and the signature no longer matches.)
std::vector<std::string> request_headers(const Request& r, const Credentials& c);

struct ClientConfig {
    std::string endpoint;  ///< normalized (normalize_endpoint)
    std::string region;
    std::string bucket;
    Credentials credentials;
    RetryPolicy retry;
    long connect_timeout_ms = 10000;
    /// A transfer slower than 1 byte/s for this long is a timeout.
    long stall_timeout_s = 60;
};

class Client {
public:
    explicit Client(ClientConfig config);
    ~Client();
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    /// Sends `r`, retrying as the policy says; S3Error for a status neither
    /// 2xx nor expected, or when the tries are spent. Thread-safe.
    Response send(const Request& r) const;

    /// s3://BUCKET/KEY, for messages.
    std::string describe(std::string_view key) const;
    const ClientConfig& config() const noexcept { return config_; }
    /// Requests sent so far (tries included), and their body bytes.
    std::uint64_t requests() const noexcept;

private:
    struct Pool;
    ClientConfig config_;
    std::unique_ptr<Pool> pool_;
};

}  // namespace cdc::store::detail::s3
