// SPDX-License-Identifier: Apache-2.0
// The S3 client's pieces that need no S3 service (src/store/s3_client.hpp):
// locations, endpoints, credentials, the signed query form, S3's XML, the
// retry policy, the headers added to requests; and the client itself
// against a scripted HTTP server on loopback (retries on 503, the error of
// a 403 named with its S3 code, a connection refused). The S3 engine tests
// (tests/engines) run against a real Ceph RGW.
#include "store/pack_storage_factory.hpp"
#include "store/s3_client.hpp"
#include "store/s3_packs.hpp"

#include <cdc/store.hpp>
#include <cdc/store_s3.hpp>

#include "test_support.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <cstdio>
#include <random>
#include <cinttypes>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>

namespace cdc::test {
namespace {

using namespace cdc::store::detail;
using namespace cdc::store::detail::s3;

TEST(S3Location, BucketAndPrefixAreParsedAndChecked) {
    const auto p = parse_bucket_url("s3://my-bucket.x/backups/host1/");
    EXPECT_EQ(p.bucket, "my-bucket.x");
    EXPECT_EQ(p.prefix, "backups/host1");
    EXPECT_EQ(parse_bucket_url("s3://abc").prefix, "");
    for (const char* bad : {"http://bucket/p", "s3://", "s3://ab", "s3://Upper/p", "s3://-abc/p", "s3://abc/a//b",
                            "s3://abc/a/../b", "s3://abc/a b", "s3://abc/a?b", "s3://under_score"}) {
        try {
            parse_bucket_url(bad);
            ADD_FAILURE() << bad << " was accepted";
        } catch (const OptionError& e) {
            EXPECT_EQ(e.field(), "packs") << bad;
            EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
        }
    }
}

TEST(S3Location, EndpointsAndRegions) {
    EXPECT_EQ(normalize_endpoint("http://127.0.0.1:7480/", "us-east-1"), "http://127.0.0.1:7480");
    EXPECT_EQ(normalize_endpoint("https://s3.example.com", "x"), "https://s3.example.com");
    EXPECT_EQ(normalize_endpoint("", "eu-west-3"), "https://s3.eu-west-3.amazonaws.com");
    for (const char* bad : {"127.0.0.1:7480", "ftp://host", "http://", "http://host/path", "http://user:pw@host",
                            "http://host?x=1"}) {
        EXPECT_THROW(normalize_endpoint(bad, "us-east-1"), OptionError) << bad;
    }
    EXPECT_NO_THROW(check_region("us-east-1"));
    EXPECT_THROW(check_region("US East"), OptionError);
    EXPECT_THROW(check_region(""), OptionError);
}

TEST(S3Credentials, TheEnvironmentComesFirstThenTheFiles) {
    TempDir tmp;
    const std::string text("# comment\n[default]\naws_access_key_id = AK1\n"
                                                     "aws_secret_access_key=SK1\n\n[profile other]\n"
                                                     "aws_access_key_id=AK2\naws_secret_access_key = SK2\n"
                                                     "aws_session_token = TOK2\n");
    const auto file = tmp.write("creds", std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
    std::map<std::string, std::string> env;
    auto getenv = [&](const char* n) -> const char* {
        const auto it = env.find(n);
        return it == env.end() ? nullptr : it->second.c_str();
    };
    env["HOME"] = tmp.path().string();  // (no .aws there)
    try {
        load_credentials("", getenv);
        ADD_FAILURE() << "no credentials anywhere";
    } catch (const store::StoreError& e) {
        EXPECT_NE(std::string(e.what()).find("no S3 credentials found"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("AWS_ACCESS_KEY_ID"), std::string::npos) << e.what();
    }
    auto c = load_credentials(file.string(), getenv);  // the store's recorded file
    EXPECT_EQ(c.access_key, "AK1");
    EXPECT_EQ(c.secret_key, "SK1");
    EXPECT_EQ(c.session_token, "");
    EXPECT_EQ(c.source.find("SK1"), std::string::npos) << "a secret never goes into messages";
    env["AWS_PROFILE"] = "other";
    c = load_credentials(file.string(), getenv);
    EXPECT_EQ(c.access_key, "AK2");
    EXPECT_EQ(c.session_token, "TOK2");
    env["AWS_PROFILE"] = "missing";
    EXPECT_THROW(load_credentials(file.string(), getenv), store::StoreError);
    env.erase("AWS_PROFILE");
    env["CDC_S3_CREDENTIALS_FILE"] = (tmp.path() / "absent").string();
    EXPECT_THROW(load_credentials(file.string(), getenv), store::StoreError) << "a file named but unreadable is an error";
    env["AWS_ACCESS_KEY_ID"] = "EK";
    EXPECT_THROW(load_credentials(file.string(), getenv), store::StoreError) << "a key id without its secret";
    env["AWS_SECRET_ACCESS_KEY"] = "ES";
    env["AWS_SESSION_TOKEN"] = "ET";
    c = load_credentials(file.string(), getenv);
    EXPECT_EQ(c.access_key, "EK");
    EXPECT_EQ(c.secret_key, "ES");
    EXPECT_EQ(c.session_token, "ET");
}

TEST(S3Signing, TheQueryIsSortedAndEncodedAsSigV4SignsIt) {
    EXPECT_EQ(uri_encode("a/b c~_-.+%", true), "a/b%20c~_-.%2B%25");
    EXPECT_EQ(uri_encode("a/b", false), "a%2Fb");
    EXPECT_EQ(canonical_query({{"prefix", "p/packs/"}, {"list-type", "2"}, {"continuation-token", "x+y="}}),
              "continuation-token=x%2By%3D&list-type=2&prefix=p%2Fpacks%2F");
    EXPECT_EQ(canonical_query({{"uploads", ""}}), "uploads=");
}

TEST(S3Signing, EveryRequestSaysItsPayloadIsUnsignedAndCarriesTheToken) {
    Request r;
    Credentials c{"AK", "SK", "", "test"};
    auto h = request_headers(r, c);
    ASSERT_FALSE(h.empty());
    EXPECT_EQ(h[0], "x-amz-content-sha256: UNSIGNED-PAYLOAD");  // RGW answers 403 without it
    for (const auto& x : h) {
        EXPECT_EQ(x.find("SK"), std::string::npos) << "the secret never goes into a header";
        EXPECT_NE(x, "Expect:") << "libcurl signs the empty header it leaves out";
    }
    c.session_token = "TOKEN";
    Body body;
    r.method = "PUT";
    r.body = &body;
    r.headers = {"If-None-Match: *"};
    h = request_headers(r, c);
    EXPECT_NE(std::find(h.begin(), h.end(), "x-amz-security-token: TOKEN"), h.end());
    EXPECT_NE(std::find(h.begin(), h.end(), "Content-Type: application/octet-stream"), h.end());
    EXPECT_EQ(h.back(), "If-None-Match: *");
}

TEST(S3Xml, ValuesElementsAndErrors) {
    const std::string list =
        "<?xml version=\"1.0\"?><ListBucketResult><IsTruncated>true</IsTruncated>"
        "<Contents><Key>p/packs/00000001.pack</Key><Size>10</Size></Contents>"
        "<Contents><Key>a&amp;b&lt;&#x41;&#66;</Key><Size>20</Size></Contents>"
        "<NextContinuationToken>tok&quot;en</NextContinuationToken><Empty/></ListBucketResult>";
    const auto contents = xml_elements(list, "Contents");
    ASSERT_EQ(contents.size(), 2u);
    EXPECT_EQ(xml_value(contents[0], "Key").value(), "p/packs/00000001.pack");
    EXPECT_EQ(xml_value(contents[1], "Key").value(), "a&b<AB");
    EXPECT_EQ(xml_value(contents[1], "Size").value(), "20");
    EXPECT_EQ(xml_value(list, "NextContinuationToken").value(), "tok\"en");
    EXPECT_EQ(xml_value(list, "Empty").value(), "");
    EXPECT_FALSE(xml_value(list, "Missing").has_value());
    const auto [code, message] = xml_error(
        "<?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code><Message>The bucket &apos;x&apos; does not "
        "exist</Message><BucketName>x</BucketName></Error>");
    EXPECT_EQ(code, "NoSuchBucket");
    EXPECT_EQ(message, "The bucket 'x' does not exist");
    EXPECT_EQ(xml_error(list).first, "");
}

TEST(S3Retry, BackoffGrowsIsCappedAndOnlyTransientFailuresAreRetried) {
    RetryPolicy p;
    p.base = std::chrono::milliseconds(100);
    p.cap = std::chrono::milliseconds(1000);
    EXPECT_EQ(p.delay(1, 1.0).count(), 100);
    EXPECT_EQ(p.delay(2, 1.0).count(), 200);
    EXPECT_EQ(p.delay(4, 1.0).count(), 800);
    EXPECT_EQ(p.delay(5, 1.0).count(), 1000);
    EXPECT_EQ(p.delay(40, 1.0).count(), 1000);
    EXPECT_EQ(p.delay(2, 0.0).count(), 100) << "jitter keeps at least half";
    for (long s : {500L, 502L, 503L, 504L, 429L}) EXPECT_TRUE(RetryPolicy::retry_status(s)) << s;
    for (long s : {400L, 403L, 404L, 409L, 412L, 416L}) EXPECT_FALSE(RetryPolicy::retry_status(s)) << s;
    EXPECT_TRUE(RetryPolicy::retry_transport(7));    // CURLE_COULDNT_CONNECT
    EXPECT_TRUE(RetryPolicy::retry_transport(28));   // CURLE_OPERATION_TIMEDOUT
    EXPECT_TRUE(RetryPolicy::retry_transport(56));   // CURLE_RECV_ERROR
    EXPECT_FALSE(RetryPolicy::retry_transport(3));   // CURLE_URL_MALFORMAT
    EXPECT_FALSE(RetryPolicy::retry_transport(23));  // CURLE_WRITE_ERROR
}

// A listening socket on loopback (an ephemeral port, into `port`).
int listen_on_loopback(int backlog, int& port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, backlog) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
        throw std::runtime_error("cannot listen");
    port = ntohs(a.sin_port);
    return fd;
}

// A request's line and headers, read from connection `c` (one request per
// connection: the servers here answer with Connection: close).
std::string read_request_head(int c) {
    std::string in;
    char buf[4096];
    while (in.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        in.append(buf, static_cast<std::size_t>(n));
    }
    return in;
}

// An HTTP server on loopback answering each request with the next of a
// script; it records the request lines it saw.
struct Answer {
    int status = 500;
    std::string body;
    /// Content-Length said; more than the body: the connection is closed
    /// midway (a transfer cut short).
    std::size_t declared = std::string::npos;
};
class ScriptedServer {
public:
    explicit ScriptedServer(std::vector<Answer> script) : script_(std::move(script)) {
        fd_ = listen_on_loopback(16, port_);
        thread_ = std::thread([this] { serve(); });
    }
    ~ScriptedServer() {
        ::shutdown(fd_, SHUT_RDWR);
        ::close(fd_);
        thread_.join();
    }
    std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
    std::vector<std::string> requests() {
        std::lock_guard lock(mutex_);
        return seen_;
    }

private:
    void serve() {
        for (std::size_t next = 0;;) {
            const int c = ::accept(fd_, nullptr, nullptr);
            if (c < 0) return;
            const std::string in = read_request_head(c);
            {
                std::lock_guard lock(mutex_);
                seen_.push_back(in.substr(0, in.find("\r\n\r\n")));
            }
            const Answer a = next < script_.size() ? script_[next++] : Answer{};
            const auto& [status, body, declared] = a;
            const std::size_t length = declared == std::string::npos ? body.size() : declared;
            const std::string out = "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: " +
                                    std::to_string(length) + "\r\nConnection: close\r\nETag: \"e1\"\r\n\r\n" + body;
            (void)!::write(c, out.data(), out.size());
            ::close(c);
        }
    }
    std::vector<Answer> script_;
    int fd_ = -1;
    int port_ = 0;
    std::thread thread_;
    std::mutex mutex_;
    std::vector<std::string> seen_;
};

ClientConfig config_for(const std::string& endpoint, int attempts) {
    ClientConfig c;
    c.endpoint = endpoint;
    c.region = "us-east-1";
    c.bucket = "bkt";
    c.credentials = {"AKID", "SECRET", "", "test"};
    c.retry.max_attempts = attempts;
    c.retry.base = std::chrono::milliseconds(1);
    c.connect_timeout_ms = 2000;
    return c;
}

TEST(S3Client, RetriesA503ThenSucceedsAndSignsWithSigV4) {
    ScriptedServer server({{503, "<Error><Code>SlowDown</Code></Error>"}, {500, ""}, {200, "hello"}});
    Client client(config_for(server.endpoint(), 5));
    std::array<std::byte, 16> out{};
    Request r;
    r.key = "p/packs/00000001.pack";
    r.headers = {"Range: bytes=0-4"};
    r.into = out;
    const Response a = client.send(r);
    EXPECT_EQ(a.status, 200);
    EXPECT_EQ(a.attempts, 3);
    EXPECT_EQ(a.received, 5u);
    EXPECT_EQ(std::memcmp(out.data(), "hello", 5), 0);
    const auto seen = server.requests();
    ASSERT_EQ(seen.size(), 3u);
    EXPECT_TRUE(seen[2].starts_with("GET /bkt/p/packs/00000001.pack HTTP/1.1")) << seen[2];
    EXPECT_NE(seen[2].find("Authorization: AWS4-HMAC-SHA256 Credential=AKID/"), std::string::npos) << seen[2];
    EXPECT_NE(seen[2].find("/us-east-1/s3/aws4_request"), std::string::npos) << seen[2];
    EXPECT_NE(seen[2].find("x-amz-content-sha256: UNSIGNED-PAYLOAD"), std::string::npos) << seen[2];
    EXPECT_EQ(seen[2].find("SECRET"), std::string::npos);
}

// A GET cut short is tried again; the bytes the first try put in place
// (and reported through on_data) are left as they are: a reader may be
// reading them already. (The second answer differs in its first bytes only
// to show they are not written again: S3 would send the same.)
TEST(S3Client, AGetCutShortIsRetriedAndKeepsTheBytesItReported) {
    ScriptedServer server({{206, "hello", 10}, {206, "HELLOworld"}});
    Client client(config_for(server.endpoint(), 3));
    std::array<std::byte, 10> out{};
    std::vector<std::uint64_t> progress;
    std::string seen_at_progress;
    Request r;
    r.key = "p/packs/00000001.pack";
    r.headers = {"Range: bytes=0-9"};
    r.into = out;
    r.on_data = [&](std::uint64_t n) {
        progress.push_back(n);
        seen_at_progress.assign(reinterpret_cast<const char*>(out.data()), n);
    };
    const Response a = client.send(r);
    EXPECT_EQ(a.attempts, 2);
    EXPECT_EQ(a.received, 10u);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(out.data()), out.size()), "helloworld");
    ASSERT_FALSE(progress.empty());
    EXPECT_TRUE(std::is_sorted(progress.begin(), progress.end()));
    EXPECT_EQ(progress.front(), 5u) << "the first try's bytes are reported as they come";
    EXPECT_EQ(progress.back(), 10u);
    EXPECT_EQ(std::count(progress.begin(), progress.end(), 5u), 1) << "nothing reported again on the retry";
    EXPECT_EQ(seen_at_progress, "helloworld");
}

TEST(S3Client, AnErrorNamesTheBucketKeyStatusAndS3Code) {
    ScriptedServer server({{403, "<?xml version=\"1.0\"?><Error><Code>InvalidAccessKeyId</Code><Message>no such "
                                 "key</Message></Error>"}});
    Client client(config_for(server.endpoint(), 5));
    Request r;
    r.method = "DELETE";
    r.key = "p/packs/00000007.pack";
    try {
        client.send(r);
        ADD_FAILURE() << "a 403 was accepted";
    } catch (const S3Error& e) {
        const std::string m = e.what();
        EXPECT_EQ(e.status(), 403);
        EXPECT_EQ(e.code(), "InvalidAccessKeyId");
        EXPECT_NE(m.find("s3://bkt/p/packs/00000007.pack"), std::string::npos) << m;
        EXPECT_NE(m.find("HTTP 403 InvalidAccessKeyId: no such key"), std::string::npos) << m;
        EXPECT_NE(m.find("DELETE"), std::string::npos) << m;
    }
    EXPECT_EQ(server.requests().size(), 1u) << "a 403 is not retried";
}

TEST(S3Client, AnExpectedStatusIsReturnedAndARefusedConnectionRetriedThenNamed) {
    {
        ScriptedServer server({{412, "<Error><Code>PreconditionFailed</Code></Error>"}});
        Client client(config_for(server.endpoint(), 3));
        Request r;
        r.method = "HEAD";
        r.key = "k";
        r.expected = {412};
        EXPECT_EQ(client.send(r).status, 412);
    }
    // A port nothing listens on (taken, then closed).
    std::string endpoint;
    {
        ScriptedServer gone({});
        endpoint = gone.endpoint();
    }
    Client client(config_for(endpoint, 3));
    Request r;
    r.key = "k";
    try {
        client.send(r);
        ADD_FAILURE() << "a refused connection was accepted";
    } catch (const S3Error& e) {
        EXPECT_EQ(e.status(), 0);
        EXPECT_NE(std::string(e.what()).find("after 3 tries"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("s3://bkt/k"), std::string::npos) << e.what();
    }
    EXPECT_EQ(client.requests(), 3u);
}

// An HTTP server on loopback serving objects held in memory as S3 would to
// HEAD and ranged GETs, a connection per request, each on its own thread;
// every `cut_every`-th GET sends half its answer and closes (a transfer cut
// short, retried by the client).
class RangeServer {
public:
    RangeServer(std::map<std::string, std::vector<std::byte>> objects, int cut_every)
        : objects_(std::move(objects)), cut_every_(cut_every) {
        fd_ = listen_on_loopback(64, port_);
        acceptor_ = std::thread([this] {
            for (;;) {
                const int c = ::accept(fd_, nullptr, nullptr);
                if (c < 0) return;
                std::lock_guard lock(mutex_);
                handlers_.emplace_back([this, c] { answer(c); });
            }
        });
    }
    ~RangeServer() {
        ::shutdown(fd_, SHUT_RDWR);
        ::close(fd_);
        acceptor_.join();
        std::lock_guard lock(mutex_);
        for (auto& t : handlers_) t.join();
    }
    std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
    int gets() const { return gets_.load(); }
    int cut() const { return cut_.load(); }

private:
    void answer(int c) {
        const std::string in = read_request_head(c);
        const bool head = in.starts_with("HEAD ");
        const std::size_t path = in.find(' ') + 1;
        std::string key = in.substr(path, in.find(' ', path) - path);
        key = key.substr(key.find('/', 1) + 1);  // (after /bucket/)
        const auto it = objects_.find(key);
        std::string out;
        if (it == objects_.end()) {
            out = "HTTP/1.1 404 X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        } else if (head) {
            out = fmt::format("HTTP/1.1 200 X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", it->second.size());
        } else {
            std::uint64_t first = 0, last = it->second.size() - 1;
            if (const auto r = in.find("Range: bytes="); r != std::string::npos)
                std::sscanf(in.c_str() + r + 13, "%" SCNu64 "-%" SCNu64, &first, &last);
            last = std::min<std::uint64_t>(last, it->second.size() - 1);
            const std::size_t n = static_cast<std::size_t>(last + 1 - first);
            const bool cut = cut_every_ > 0 && (gets_.fetch_add(1) + 1) % cut_every_ == 0;
            out = fmt::format("HTTP/1.1 206 X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", n);
            out.append(reinterpret_cast<const char*>(it->second.data() + first), cut ? n / 2 : n);
            if (cut) cut_.fetch_add(1);
        }
        for (std::size_t at = 0; at < out.size();) {
            const ssize_t k = ::write(c, out.data() + at, out.size() - at);
            if (k <= 0) break;
            at += static_cast<std::size_t>(k);
        }
        ::close(c);
    }
    std::map<std::string, std::vector<std::byte>> objects_;
    int cut_every_;
    int fd_ = -1;
    int port_ = 0;
    std::atomic<int> gets_{0};
    std::atomic<int> cut_{0};
    std::thread acceptor_;
    std::mutex mutex_;
    std::vector<std::thread> handlers_;
};

/// The packs under s3://bkt/PREFIX of a RangeServer, and credentials for it
/// in the environment while this lives.
struct RangeServerPacks {
    RangeServerPacks(const RangeServer& server, const std::string& prefix) {
        where.url = "s3://bkt/" + prefix;
        where.s3_endpoint = server.endpoint();
        where.s3_region = "us-east-1";
    }
    ScopedEnv key{"AWS_ACCESS_KEY_ID", "AKID"};
    ScopedEnv secret{"AWS_SECRET_ACCESS_KEY", "SECRET"};
    ScopedEnv token{"AWS_SESSION_TOKEN", ""};
    store::PackLocation where;
};

// S3PackStorage's read path under concurrent readers: small reads (1 MiB
// blocks), large ones and runs through a pack (8 MiB blocks, the next one
// fetched ahead by its thread), blocks evicted while read (four packs of
// 20 MiB through a 64 MiB cache), answers cut short midway and retried
// (what readers of a block still arriving have read stays): every byte
// read equals the object's. Then the storage goes while its fetch-ahead
// thread may be fetching.
TEST(S3PackStorageReads, ConcurrentReadersGetEveryByteThroughCutAnswersAndEvictions) {
    // Packs of one random MiB, rotated differently at each MiB of each
    // pack (quick to make, so that the test's own code may run at -O0
    // under TSan): a byte read from the wrong place or pack shows.
    constexpr int kPacks = 4;
    constexpr std::uint64_t kPackBytes = (std::uint64_t{20} << 20) + 12'345;
    std::vector<std::byte> mib(std::size_t{1} << 20);
    {
        std::mt19937_64 rng(7);
        std::vector<std::uint64_t> words(mib.size() / 8);
        for (auto& w : words) w = rng();
        std::memcpy(mib.data(), words.data(), mib.size());
    }
    std::map<std::string, std::vector<std::byte>> objects;
    for (int id = 1; id <= kPacks; ++id) {
        std::vector<std::byte> bytes(kPackBytes);
        for (std::size_t at = 0, m = 0; at < bytes.size(); at += mib.size(), ++m) {
            const std::size_t shift = (m * 4'099 + static_cast<std::size_t>(id) * 65'537) % mib.size();
            const std::size_t n = std::min(mib.size(), bytes.size() - at);
            const std::size_t head = std::min(n, mib.size() - shift);
            std::memcpy(bytes.data() + at, mib.data() + shift, head);
            std::memcpy(bytes.data() + at + head, mib.data(), n - head);
        }
        objects.emplace(fmt::format("p/packs/{:08}.pack", id), std::move(bytes));
    }
    RangeServer server(objects, 5);
    const RangeServerPacks served(server, "p");
    const ScopedEnv retry_base("CDC_S3_RETRY_BASE_MS", "1");
    TempDir tmp;
    const store::PackLocation& where = served.where;
    std::atomic<int> wrong{0};
    {
        S3PackStorage storage(tmp.path(), where, false);
        std::vector<std::unique_ptr<PackReader>> packs;
        for (int id = 1; id <= kPacks; ++id) {
            packs.push_back(storage.open(static_cast<std::uint64_t>(id)));
            ASSERT_TRUE(packs.back());
            ASSERT_EQ(packs.back()->size(), kPackBytes);
        }
        EXPECT_FALSE(storage.open(9)) << "no such pack: nullptr";
        std::vector<std::thread> readers;
        for (unsigned t = 0; t < 4; ++t)
            readers.emplace_back([&, t] {
                std::mt19937_64 r(100 + t);
                std::vector<std::byte> out(std::size_t{2} << 20);
                const auto check = [&](int pack, std::uint64_t at, std::size_t n) {
                    const std::size_t got = packs[static_cast<std::size_t>(pack)]->read_at(at, std::span(out).first(n));
                    const auto& want = objects.at(fmt::format("p/packs/{:08}.pack", pack + 1));
                    const std::size_t expect = static_cast<std::size_t>(std::min<std::uint64_t>(n, kPackBytes - at));
                    if (got != expect || std::memcmp(out.data(), want.data() + at, got) != 0) wrong.fetch_add(1);
                };
                for (int k = 0; k < 40; ++k) {
                    const int pack = static_cast<int>(r() % kPacks);
                    switch (r() % 3) {
                        case 0:  // a chunk
                            check(pack, r() % kPackBytes, 1 + r() % 65'536);
                            break;
                        case 1:  // a run somewhere
                            check(pack, r() % kPackBytes, S3PackStorage::kLargeRead + r() % (std::size_t{1} << 20));
                            break;
                        default:  // runs through a stretch of the pack
                            for (std::uint64_t at = r() % kPackBytes, end = std::min(kPackBytes, at + (10 << 20));
                                 at < end; at += 1 << 20)
                                check(pack, at, 1 << 20);
                    }
                }
            });
        for (auto& t : readers) t.join();
        // One more large read, and the storage goes at once (its fetching
        // thread may be in a GET: the destructor waits for it).
        std::vector<std::byte> out(S3PackStorage::kLargeRead);
        EXPECT_EQ(packs[0]->read_at(0, out), out.size());
        packs.clear();
    }
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_GT(server.cut(), 0) << "some answers were cut short (and retried)";
}

// A file read in runs through packs larger than the cache (a get of a large
// file): the blocks the cache lets go lend their buffers to the next ones,
// so the reads allocate about a cache's worth of buffers, not one per block
// (a new buffer is a page fault per 4 KiB), and every byte read is right.
TEST(S3PackStorageReads, BlocksTheCacheLetsGoLendTheirBuffers) {
    constexpr int kPacks = 3;
    // (Whole blocks: a pack's last, shorter block has a buffer of its own.)
    constexpr std::uint64_t kPackBytes = 4 * S3PackStorage::kLargeBlockBytes;
    std::map<std::string, std::vector<std::byte>> objects;
    std::mt19937_64 rng(11);
    for (int id = 1; id <= kPacks; ++id) {
        std::vector<std::uint64_t> words(kPackBytes / 8 + 1);
        for (auto& w : words) w = rng();
        std::vector<std::byte> bytes(kPackBytes);
        std::memcpy(bytes.data(), words.data(), bytes.size());
        objects.emplace(fmt::format("q/packs/{:08}.pack", id), std::move(bytes));
    }
    RangeServer server(objects, 0);
    const RangeServerPacks served(server, "q");
    TempDir tmp;
    const store::PackLocation& where = served.where;
    const std::uint64_t before = S3PackStorage::buffers_allocated();
    int wrong = 0;
    std::uint64_t blocks = 0;
    {
        S3PackStorage storage(tmp.path(), where, false);
        std::vector<std::byte> run(std::size_t{1} << 20);
        for (int round = 0; round < 2; ++round)
            for (int id = 1; id <= kPacks; ++id) {
                const auto pack = storage.open(static_cast<std::uint64_t>(id));
                ASSERT_TRUE(pack);
                const auto& want = objects.at(fmt::format("q/packs/{:08}.pack", id));
                for (std::uint64_t at = 0; at < kPackBytes; at += run.size()) {
                    const std::size_t got = pack->read_at(at, run);
                    if (got != std::min<std::uint64_t>(run.size(), kPackBytes - at) ||
                        std::memcmp(run.data(), want.data() + at, got) != 0)
                        ++wrong;
                }
                blocks += (kPackBytes + S3PackStorage::kLargeBlockBytes - 1) / S3PackStorage::kLargeBlockBytes;
            }
    }
    EXPECT_EQ(wrong, 0);
    const std::uint64_t allocated = S3PackStorage::buffers_allocated() - before;
    const std::uint64_t cache_worth = S3PackStorage::kCacheBytes / S3PackStorage::kLargeBlockBytes;
    EXPECT_LE(allocated, cache_worth + 2) << blocks << " blocks read";
    EXPECT_GE(blocks, 2 * cache_worth) << "(the reads pass the cache twice)";
}

// PackReader::view_at, the in-place read the decoder prefers, against the
// object's bytes: a run within one large block is viewed there (answers cut
// short midway and retried); a small read, one across a block boundary or
// past the end gives no view (read_at then); and a view held while the
// cache lets its block go, and other blocks take the spare buffers, still
// shows its own bytes.
TEST(S3PackStorageReads, ViewsShowTheObjectsBytesAndOutliveEviction) {
    constexpr std::uint64_t kPackBytes = (std::uint64_t{20} << 20) + 777;
    constexpr std::uint64_t kLarge = S3PackStorage::kLargeBlockBytes;
    std::map<std::string, std::vector<std::byte>> objects;
    std::mt19937_64 rng(17);
    for (int id = 1; id <= 4; ++id) {
        std::vector<std::uint64_t> words(kPackBytes / 8 + 1);
        for (auto& w : words) w = rng();
        std::vector<std::byte> bytes(kPackBytes);
        std::memcpy(bytes.data(), words.data(), bytes.size());
        objects.emplace(fmt::format("v/packs/{:08}.pack", id), std::move(bytes));
    }
    const auto& first = objects.at("v/packs/00000001.pack");
    RangeServer server(objects, 3);
    const RangeServerPacks served(server, "v");
    const ScopedEnv retry_base("CDC_S3_RETRY_BASE_MS", "1");
    TempDir tmp;
    S3PackStorage storage(tmp.path(), served.where, false);
    const auto pack = storage.open(1);
    ASSERT_TRUE(pack);
    const auto same = [&](const PackReader::View& v, std::uint64_t at) {
        return std::memcmp(v.bytes.data(), first.data() + at, v.bytes.size()) == 0;
    };
    EXPECT_TRUE(pack->view_at(100, S3PackStorage::kLargeRead - 1).bytes.empty()) << "a small read: no view";
    EXPECT_TRUE(pack->view_at(kLarge - 1000, S3PackStorage::kLargeRead).bytes.empty()) << "across two blocks";
    EXPECT_TRUE(pack->view_at(kPackBytes - 1000, S3PackStorage::kLargeRead).bytes.empty()) << "past the end";
    EXPECT_TRUE(pack->view_at(kPackBytes + 5, S3PackStorage::kLargeRead).bytes.empty());
    std::vector<std::pair<PackReader::View, std::uint64_t>> held;
    for (int k = 0; k < 40; ++k) {
        const std::size_t n = S3PackStorage::kLargeRead + rng() % (std::size_t{1} << 20);
        const std::uint64_t block = rng() % 3;  // (the third block is the pack's short last one)
        const std::uint64_t end = std::min<std::uint64_t>(kPackBytes, (block + 1) * kLarge);
        if (end - block * kLarge < n) continue;
        const std::uint64_t at = block * kLarge + rng() % (end - block * kLarge - n + 1);
        auto v = pack->view_at(at, n);
        ASSERT_EQ(v.bytes.size(), n) << at;
        EXPECT_TRUE(same(v, at)) << at;
        if (k % 8 == 0) held.emplace_back(std::move(v), at);
    }
    ASSERT_FALSE(held.empty());
    // 80 MiB more through the 64 MiB cache: every block of pack 1 is let go,
    // and new blocks take the buffers of those no view holds.
    std::vector<std::byte> run(std::size_t{1} << 20);
    for (std::uint64_t id = 2; id <= 4; ++id) {
        const auto other = storage.open(id);
        ASSERT_TRUE(other);
        for (std::uint64_t at = 0; at < kPackBytes; at += run.size()) {
            const std::size_t got = other->read_at(at, run);
            EXPECT_EQ(std::memcmp(run.data(), objects.at(fmt::format("v/packs/{:08}.pack", id)).data() + at, got), 0);
        }
    }
    for (const auto& [v, at] : held) EXPECT_TRUE(same(v, at)) << "a view held through evictions, at " << at;
    EXPECT_GT(server.cut(), 0) << "some answers were cut short (and retried)";
}

TEST(S3Factory, TheLocationIsRecordedAndS3NeedsTheS3Library) {
    store::PackLocation where;
    EXPECT_TRUE(pack_location_settings(where).empty()) << "a directory store records nothing new";
    where.url = "s3://bkt/p";
    where.s3_endpoint = "http://127.0.0.1:9";
    where.s3_region = "eu-west-1";
    where.s3_credentials_file = "/etc/creds";
    where.s3_part_size = 8 << 20;
    std::unordered_map<std::string, std::string> meta;
    for (const auto& [k, v] : pack_location_settings(where)) meta[k] = v;
    const auto back = pack_location_of(meta, "db");
    EXPECT_EQ(back.url, where.url);
    EXPECT_EQ(back.s3_endpoint, where.s3_endpoint);
    EXPECT_EQ(back.s3_region, where.s3_region);
    EXPECT_EQ(back.s3_credentials_file, where.s3_credentials_file);
    EXPECT_EQ(back.s3_part_size, where.s3_part_size);
    meta["s3_part_size"] = "12x";
    EXPECT_THROW(pack_location_of(meta, "db"), store::DamageError);

    TempDir tmp;
    set_s3_pack_storage_maker(nullptr);
    EXPECT_THROW(make_pack_storage(tmp.path(), where, PackStorageUse::open), store::StorageUnavailableError);
    store::enable_s3_packs();
    EXPECT_NO_THROW(make_pack_storage(tmp.path(), where, PackStorageUse::open)) << "no request until one is needed";
    where.s3_part_size = (5 << 20) + 1;
    EXPECT_THROW(make_pack_storage(tmp.path(), where, PackStorageUse::open), OptionError);
    where.s3_part_size = 8 << 20;
    where.url = "gs://bkt/p";
    EXPECT_THROW(make_pack_storage(tmp.path(), where, PackStorageUse::open), OptionError);
}

}  // namespace
}  // namespace cdc::test
