// SPDX-License-Identifier: Apache-2.0
// cdc serve / push / pull / ls / hash against a real server on an ephemeral
// loopback port (each test starts its own and stops it): round trips (files,
// trees, empty files, stdin, stdout), what travels on a second push, resumed
// pushes after kill -9 of the client and of the server, tokens, the TLS
// policy, bad names, and requests no client of ours sends (a forged chunk,
// an oversized message, too many streams) through the raw gRPC stub, with
// the user's own token (a server without --token-file requires it).
#include "serve_support.hpp"
#include "store_support.hpp"

#include "cdc_transfer.grpc.pb.h"

#include <protocol.hpp>

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <csignal>
#include <thread>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace cdc {
namespace {

namespace fs = std::filesystem;
using test::authorize;
using test::init_store;
using test::json_of;
using test::run_tool;
using test::Serve;
namespace v1 = transfer::v1;

std::uint64_t dir_bytes(const fs::path& dir) {
    std::uint64_t n = 0;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator(); ++it)
        if (it->is_regular_file(ec)) n += it->file_size(ec);
    return n;
}

std::string hex_blake3(const std::vector<std::uint8_t>& bytes) {
    return store::to_hex(store::chunk_id_of(std::as_bytes(std::span(bytes))));
}

TEST(ServeCli, RoundTripsFilesTreesEmptyFilesAndStdin) {
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    const auto a = test::mixed_bytes(400'000, 1);
    const auto b = test::random_bytes(70'000, 2);
    tmp.write("tree/x/a.bin", a);
    tmp.write("tree/b.bin", b);
    tmp.write("tree/empty", {});
    const auto single = tmp.write("single.bin", b);
    Serve s(dir, tmp.path() / "serve");
    auto j = json_of(run_tool({"push", "--to", s.address(), (tmp.path() / "tree").string(), "--name", "t", "--json"}));
    EXPECT_EQ(j["file_count"], 3);
    EXPECT_EQ(j["bytes_read"], a.size() + b.size());
    EXPECT_EQ(j["bytes_sent"], a.size() + b.size());
    EXPECT_EQ(j["bytes_reused"], 0);
    for (const char* key : {"chunks", "chunks_sent", "seconds", "payload_sent", "wire_bytes_sent"})
        EXPECT_TRUE(j.contains(key)) << key;
    // The single file equals b.bin: nothing of it travels.
    j = json_of(run_tool({"push", "--to", s.address(), single.string(), "--name", "single", "--json"}));
    EXPECT_EQ(j["bytes_sent"], 0);
    EXPECT_EQ(j["bytes_reused"], b.size());
    // stdin
    auto r = run_tool({"push", "--to", s.address(), "-", "--name", "piped", "--json"}, (tmp.path() / "tree/x/a.bin").string());
    EXPECT_EQ(json_of(r)["bytes_sent"], 0);
    r = run_tool({"push", "--to", s.address(), "-"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--name"), std::string::npos) << r.err;
    // ls
    const auto ls = json_of(run_tool({"ls", "--from", s.address(), "--names", "--json"}));
    std::map<std::string, std::uint64_t> names;
    for (const auto& f : ls) names[f["name"]] = f["size"];
    EXPECT_EQ(names, (std::map<std::string, std::uint64_t>{
                         {"t/x/a.bin", a.size()}, {"t/b.bin", b.size()}, {"t/empty", 0}, {"single", b.size()}, {"piped", a.size()}}));
    r = run_tool({"ls", "--from", s.address(), "t/x"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("t/x/a.bin"), std::string::npos);
    EXPECT_EQ(r.out.find("single"), std::string::npos);
    // pull each
    for (const auto& [name, bytes] : std::vector<std::pair<std::string, std::vector<std::uint8_t>>>{
             {"t/x/a.bin", a}, {"t/b.bin", b}, {"t/empty", {}}, {"piped", a}}) {
        const auto out = tmp.path() / "got";
        fs::remove(out);
        j = json_of(run_tool({"pull", "--from", s.address(), name, "-o", out.string(), "--json"}));
        EXPECT_EQ(test::read_bytes(out), bytes) << name;
        EXPECT_EQ(j["bytes_read"], bytes.size());
    }
    // to stdout, and into a directory
    r = run_tool({"pull", "--from", s.address(), "t/b.bin", "-o", "-"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(std::vector<std::uint8_t>(r.out.begin(), r.out.end()), b);
    fs::create_directories(tmp.path() / "outdir");
    r = run_tool({"pull", "--from", s.address(), "t/x/a.bin", "-o", (tmp.path() / "outdir").string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_bytes(tmp.path() / "outdir/a.bin"), a);
    // an existing OUT is replaced only when named; then its chunks are reused
    struct Cwd {
        fs::path old = fs::current_path();
        ~Cwd() { fs::current_path(old); }
    } cwd;
    fs::current_path(tmp.path() / "outdir");
    r = run_tool({"pull", "--from", s.address(), "t/x/a.bin"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("exists"), std::string::npos) << r.err;
    j = json_of(run_tool({"pull", "--from", s.address(), "t/x/a.bin", "-o", "a.bin", "--json"}));
    EXPECT_EQ(j["bytes_sent"], 0);
    EXPECT_EQ(j["bytes_reused"], a.size());
    // --basis
    j = json_of(run_tool({"pull", "--from", s.address(), "single", "-o", "s.bin", "--basis", single.string(), "--json"}));
    EXPECT_EQ(j["bytes_sent"], 0);
    EXPECT_EQ(test::read_bytes(tmp.path() / "outdir/s.bin"), b);
    // hash: the server's BLAKE3 of the streamed bytes, stored nowhere
    r = run_tool({"hash", "--via", s.address(), single.string(), "-q"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, hex_blake3(b) + "  " + single.string() + "\n");
    j = json_of(run_tool({"hash", "--via", s.address(), "-", "--json"}, (tmp.path() / "tree/x/a.bin").string()));
    EXPECT_EQ(j["digest"], hex_blake3(a));
    EXPECT_EQ(j["bytes_read"], a.size());
    // unknown name
    r = run_tool({"pull", "--from", s.address(), "nope", "-o", (tmp.path() / "n").string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("nope"), std::string::npos) << r.err;
    // the store is consistent
    r = run_tool({"store", "verify", dir.string(), "--full"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(ServeCli, VersionsGroupsNewNamesAndFilesOneHas) {
    // Through the real server: a second version listed as groups costs less
    // on the wire than with --id-lists (lists, wants and framing: what is not
    // chunk data); a new name
    // equal to a stored file reads nothing back ("identical"); a pull into
    // an OUT that is the file already ends at once ("up_to_date"), cleanly.
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    const auto v1 = test::mixed_bytes(10'000'000, 5);  // ~2500 chunks, 3 lists
    auto v2 = v1;
    v2[6'000'000] ^= 1;
    const auto p1 = tmp.write("v1", v1);
    const auto p2 = tmp.write("v2", v2);
    Serve s(dir, tmp.path() / "serve");
    for (const char* name : {"f", "h"})
        EXPECT_EQ(run_tool({"push", "--to", s.address(), p1.string(), "--name", name, "-q"}).exit_code, 0);
    const auto grouped = json_of(run_tool({"push", "--to", s.address(), p2.string(), "--name", "f", "--json"}));
    const auto ids = json_of(run_tool({"push", "--to", s.address(), p2.string(), "--name", "h", "--json", "--id-lists"}));
    EXPECT_GT(grouped["bytes_sent"].get<std::uint64_t>(), 0u);
    EXPECT_EQ(ids["bytes_sent"], 0);  // f sent them
    const auto wire = [](const nlohmann::json& j) {
        return j["wire_bytes_sent"].get<std::uint64_t>() + j["wire_bytes_received"].get<std::uint64_t>() -
               j["payload_sent"].get<std::uint64_t>();
    };
    EXPECT_LT(wire(grouped), wire(ids) / 2) << grouped.dump() << ids.dump();
    const auto again = json_of(run_tool({"push", "--to", s.address(), p2.string(), "--name", "f", "--json"}));
    EXPECT_TRUE(again["files"][0]["unchanged"]);
    const auto fresh = json_of(run_tool({"push", "--to", s.address(), p2.string(), "--name", "new", "--json"}));
    EXPECT_TRUE(fresh["files"][0]["identical"]);
    EXPECT_FALSE(fresh["files"][0]["unchanged"]);
    EXPECT_EQ(fresh["bytes_sent"], 0);
    const auto out = tmp.path() / "out";
    auto j = json_of(run_tool({"pull", "--from", s.address(), "f", "-o", out.string(), "--json"}));
    EXPECT_FALSE(j["up_to_date"]);
    j = json_of(run_tool({"pull", "--from", s.address(), "f", "-o", out.string(), "--json"}));
    EXPECT_TRUE(j["up_to_date"]);
    EXPECT_EQ(j["bytes_sent"], 0);
    auto r = run_tool({"pull", "--from", s.address(), "new", "-o", out.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("up to date"), std::string::npos) << r.out;
    EXPECT_EQ(test::read_bytes(out), v2);
    for (const char* name : {"f", "h", "new"}) {
        const auto got = tmp.path() / "got";
        fs::remove(got);
        const auto quiet = run_tool({"pull", "--from", s.address(), name, "-o", got.string(), "-q"});
        EXPECT_EQ(quiet.exit_code, 0);
        EXPECT_EQ(quiet.out + quiet.err, "") << "-q prints nothing but errors";
        EXPECT_EQ(test::read_bytes(got), v2) << name;
    }
    EXPECT_EQ(s.log().find("failed"), std::string::npos) << s.log();
    r = run_tool({"store", "verify", dir.string(), "--full"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(ServeCli, APullNeverWritesThroughALinkInItsPlace) {
    // pull writes .OUT.cdc-pull beside OUT and keeps .OUT.cdc-pull.old as a
    // seed: a link planted at either (a shared directory) is refused, never
    // followed: no file is created or read through it.
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    const auto bytes = test::random_bytes(100'000, 21);
    const auto file = tmp.write("f", bytes);
    Serve s(dir, tmp.path() / "serve");
    ASSERT_EQ(run_tool({"push", "--to", s.address(), file.string(), "--name", "f"}).exit_code, 0);
    const auto out = tmp.path() / "o";
    const auto partial = tmp.path() / ".o.cdc-pull";
    const auto previous = tmp.path() / ".o.cdc-pull.old";
    const auto planted = tmp.path() / "planted";  // where a dangling link points
    fs::create_symlink(planted, partial);
    auto r = run_tool({"pull", "--from", s.address(), "f", "-o", out.string()});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(planted));
    EXPECT_FALSE(fs::exists(out));
    EXPECT_TRUE(fs::is_symlink(partial));
    fs::remove(partial);
    const std::vector<std::uint8_t> kept{'k', 'e', 'e', 'p'};
    const auto victim = tmp.write("victim", kept);
    fs::create_symlink(victim, previous);
    r = run_tool({"pull", "--from", s.address(), "f", "-o", out.string()});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_EQ(test::read_bytes(victim), kept);
    EXPECT_TRUE(fs::is_symlink(previous));
    fs::remove(previous);
    r = run_tool({"pull", "--from", s.address(), "f", "-o", out.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_bytes(out), bytes);
}

TEST(ServeCli, APullStripsSetIdBitsUnlessAskedToKeepThem) {
    // Whoever pushed a file chose its mode: a pull applies it without the
    // setuid and sticky bits unless --keep-setid.
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    const auto file = tmp.write("tool", test::random_bytes(5000, 22));
    ASSERT_EQ(::chmod(file.c_str(), 05755), 0);
    Serve s(dir, tmp.path() / "serve");
    ASSERT_EQ(run_tool({"push", "--to", s.address(), file.string(), "--name", "tool"}).exit_code, 0);
    const auto out = tmp.path() / "o";
    auto r = run_tool({"pull", "--from", s.address(), "tool", "-o", out.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::mode_of(out), 0755u);
    const auto kept = tmp.path() / "k";
    r = run_tool({"pull", "--from", s.address(), "tool", "-o", kept.string(), "--keep-setid"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::mode_of(kept), 05755u);
}

TEST(ServeCli, NoServer) {
    const auto r = run_tool({"ls", "--from", "127.0.0.1:1"});
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_NE(r.err.find("cannot reach the server at 127.0.0.1:1"), std::string::npos) << r.err;
}

TEST(ServeCli, APushResumesAfterTheClientIsKilled) {
    test::TempDir tmp;
    const auto dir = init_store(tmp, "16K");
    const auto data = test::random_bytes(40 << 20, 5);
    const auto file = tmp.write("big.bin", data);
    // The server flushes every 1 MiB of new chunks: a kill loses little.
    Serve s(dir, tmp.path() / "serve", {}, {{"CDC_STORE_FLUSH_BYTES", "1048576"}});
    const auto before = dir_bytes(dir / "packs");
    fs::create_directories(tmp.path() / "client");
    const pid_t client = test::spawn_tool({"push", "--to", s.address(), file.string(), "--name", "big", "--threads", "1"},
                                          tmp.path() / "client");
    while (dir_bytes(dir / "packs") < before + (6 << 20)) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ::kill(client, SIGKILL);
    EXPECT_EQ(test::wait_exit(client), 128 + SIGKILL);
    ASSERT_TRUE(s.wait_log("push")) << s.log();  // the server saw the stream end and committed the verified chunks
    EXPECT_TRUE(json_of(run_tool({"ls", "--from", s.address(), "--names", "--json"})).empty());  // no file
    const auto stats = json_of(run_tool({"store", "stats", dir.string(), "--json"}));
    const std::uint64_t have = stats["chunk_bytes"];
    EXPECT_GE(have, 4u << 20);
    EXPECT_LT(have, data.size());
    // Again: only what the store lacks travels.
    const auto j = json_of(run_tool({"push", "--to", s.address(), file.string(), "--name", "big", "--json"}));
    EXPECT_EQ(j["bytes_sent"], data.size() - have);
    EXPECT_EQ(j["bytes_reused"], have);
    const auto out = tmp.path() / "back";
    json_of(run_tool({"pull", "--from", s.address(), "big", "-o", out.string(), "--json"}));
    EXPECT_EQ(test::read_bytes(out), data);
}

TEST(ServeCli, APushResumesAfterTheServerIsKilled) {
    test::TempDir tmp;
    const auto dir = init_store(tmp, "16K");
    const auto data = test::random_bytes(40 << 20, 6);
    const auto file = tmp.write("big.bin", data);
    const std::vector<std::pair<std::string, std::string>> env{{"CDC_STORE_FLUSH_BYTES", "1048576"}};
    std::uint64_t have = 0;
    {
        Serve s(dir, tmp.path() / "serve", {}, env);
        const auto before = dir_bytes(dir / "packs");
        fs::create_directories(tmp.path() / "client");
        const pid_t client = test::spawn_tool({"push", "--to", s.address(), file.string(), "--name", "big"},
                                              tmp.path() / "client");
        while (dir_bytes(dir / "packs") < before + (6 << 20)) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        EXPECT_EQ(s.stop(SIGKILL), 128 + SIGKILL);
        EXPECT_EQ(test::wait_exit(client), 4);  // the client reports the broken stream
        EXPECT_NE(test::read_text(tmp.path() / "client/err").find("cdc: error:"), std::string::npos);
    }
    // The store verifies, holds no file, and keeps what was committed before the kill.
    auto r = run_tool({"store", "verify", dir.string(), "--full"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(json_of(run_tool({"store", "ls", dir.string(), "--json"})).empty());
    have = json_of(run_tool({"store", "stats", dir.string(), "--json"}))["chunk_bytes"];
    EXPECT_GE(have, 1u << 20);
    Serve s(dir, tmp.path() / "serve2", {}, env);
    const auto j = json_of(run_tool({"push", "--to", s.address(), file.string(), "--name", "big", "--json"}));
    EXPECT_EQ(j["bytes_sent"], data.size() - have);
    r = run_tool({"store", "verify", dir.string(), "--full"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto out = tmp.path() / "back";
    json_of(run_tool({"pull", "--from", s.address(), "big", "-o", out.string(), "--json"}));
    EXPECT_EQ(test::read_bytes(out), data);
}

TEST(ServeCli, Tokens) {
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    const std::string token = "a-long-enough-token-0123456789";
    const auto token_file = tmp.write("token", std::vector<std::uint8_t>(token.begin(), token.end()));
    const std::string wrong = "another-token-of-the-same-size";
    const auto wrong_file = tmp.write("wrong", std::vector<std::uint8_t>(wrong.begin(), wrong.end()));
    const auto data = test::random_bytes(10'000, 7);
    const auto file = tmp.write("f", data);
    Serve s(dir, tmp.path() / "serve", {"--token-file", token_file.string()});
    auto r = run_tool({"push", "--to", s.address(), file.string(), "--name", "f"});
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_NE(r.err.find("token"), std::string::npos) << r.err;
    r = run_tool({"push", "--to", s.address(), file.string(), "--name", "f", "--token-file", wrong_file.string()});
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_NE(r.err.find("token"), std::string::npos) << r.err;
    r = run_tool({"ls", "--from", s.address(), "--token-file", wrong_file.string()});
    EXPECT_EQ(r.exit_code, 4);
    r = run_tool({"push", "--to", s.address(), file.string(), "--name", "f", "--token-file", token_file.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    ::setenv("CDC_TOKEN", token.c_str(), 1);
    r = run_tool({"pull", "--from", s.address(), "f", "-o", (tmp.path() / "back").string()});
    ::setenv("CDC_TOKEN", "short", 1);
    const auto bad_env = run_tool({"ls", "--from", s.address()});
    ::unsetenv("CDC_TOKEN");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_bytes(tmp.path() / "back"), data);
    EXPECT_EQ(bad_env.exit_code, 2);
    EXPECT_NE(bad_env.err.find("CDC_TOKEN"), std::string::npos) << bad_env.err;
    // A token never travels in clear beyond the loopback interface.
    r = run_tool({"ls", "--from", "192.0.2.1:7777", "--token-file", token_file.string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("in clear"), std::string::npos) << r.err;
}

TEST(ServeCli, OutsideTheLoopbackTlsAndATokenAreRequired) {
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    auto r = run_tool({"serve", "--store", dir.string(), "--listen", "0.0.0.0:0"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("TLS"), std::string::npos) << r.err;
    const std::string token = "a-long-enough-token-0123456789";
    const auto token_file = tmp.write("token", std::vector<std::uint8_t>(token.begin(), token.end()));
    r = run_tool({"serve", "--store", dir.string(), "--listen", "0.0.0.0:0", "--token-file", token_file.string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("TLS"), std::string::npos) << r.err;
    // A self-signed certificate for 127.0.0.1: TLS and the token, and it serves.
    const auto cert = tmp.path() / "cert.pem", key = tmp.path() / "key.pem";
    const std::string cmd = fmt::format(
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost -addext "
        "subjectAltName=IP:127.0.0.1,DNS:localhost -keyout {} -out {} 2>/dev/null",
        key.string(), cert.string());
    ASSERT_EQ(std::system(cmd.c_str()), 0) << "openssl could not make a certificate";
    r = run_tool({"serve", "--store", dir.string(), "--listen", "0.0.0.0:0", "--tls-cert", cert.string()});
    EXPECT_EQ(r.exit_code, 2);  // a certificate without its key
    Serve s(dir, tmp.path() / "serve",
            {"--listen", "0.0.0.0:0", "--tls-cert", cert.string(), "--tls-key", key.string(), "--token-file",
             token_file.string()});
    EXPECT_NE(s.log().find("TLS, token required"), std::string::npos) << s.log();
    const auto data = test::random_bytes(50'000, 8);
    const auto file = tmp.write("f", data);
    r = run_tool({"push", "--to", s.address(), file.string(), "--name", "f", "--tls-ca", cert.string(), "--token-file",
                  token_file.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = run_tool({"pull", "--from", "localhost:" + s.port(), "f", "-o", (tmp.path() / "back").string(), "--tls-ca",
                  cert.string(), "--token-file", token_file.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_bytes(tmp.path() / "back"), data);
    // Plaintext to a TLS server: one sentence on each side, no gRPC internals.
    r = run_tool({"ls", "--from", s.address(), "--token-file", token_file.string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_TRUE(r.err.ends_with(fmt::format("\ncdc: error: ls: the server at {} uses TLS: connect with --tls or "
                                            "--tls-ca FILE (its certificate)\n",
                                            s.address())))
        << r.err;  // (after the token file's warning)
    EXPECT_TRUE(s.wait_log("a client connected without TLS and was refused")) << s.log();
    EXPECT_EQ(s.log().find(".cc:"), std::string::npos) << "a gRPC line: " << s.log();
    // TLS to a plaintext server.
    Serve plain(dir, tmp.path() / "plain");
    r = run_tool({"ls", "--from", plain.address(), "--tls-ca", cert.string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, fmt::format("cdc: error: ls: the server at {} does not use TLS: connect without --tls and "
                                 "--tls-ca\n",
                                 plain.address()));
}

// docs/TRANSFER.md's certificate and token, made by its own lines: a server
// serves with them, a client trusts the certificate under the name it
// carries, and refuses it under another.
TEST(ServeCli, TheDocumentedCertificateWorks) {
    test::TempDir tmp;
    const std::string doc = test::read_text(fs::path(CDC_SPEC_DIR) / ".." / "TRANSFER.md");
    const auto section = doc.find("## Serving the network");
    ASSERT_NE(section, std::string::npos);
    const auto start = doc.find("```sh\n", section);
    const auto end = doc.find("```\n", start + 6);
    ASSERT_NE(end, std::string::npos);
    const std::string lines = doc.substr(start + 6, end - start - 6);
    EXPECT_NE(lines.find("openssl req"), std::string::npos) << lines;
    test::TempDir work;
    std::ofstream(work.path() / "make.sh") << "set -e\ncd \"$(dirname \"$0\")\"\n" << lines;
    ASSERT_EQ(std::system(fmt::format("bash '{}' 2>/dev/null", (work.path() / "make.sh").string()).c_str()), 0)
        << lines;
    const auto cert = work.path() / "cert.pem", key = work.path() / "key.pem", token = work.path() / "token";
    EXPECT_EQ(fs::status(key).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
    const auto dir = init_store(tmp);
    Serve s(dir, tmp.path() / "serve",
            {"--tls-cert", cert.string(), "--tls-key", key.string(), "--token-file", token.string()});
    const auto data = test::random_bytes(100'000, 3);
    const auto file = tmp.write("f", data);
    auto r = run_tool({"push", "--to", s.address(), file.string(), "--name", "f", "--tls-ca", cert.string(),
                       "--tls-server-name", "store.example", "--token-file", token.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = run_tool({"pull", "--from", s.address(), "f", "-o", (tmp.path() / "back").string(), "--tls-ca",
                  cert.string(), "--tls-server-name", "store.example", "--token-file", token.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_bytes(tmp.path() / "back"), data);
    // 127.0.0.1 is not a name the certificate carries.
    r = run_tool({"ls", "--from", s.address(), "--tls-ca", cert.string(), "--token-file", token.string()});
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_NE(r.err.find("has a certificate for other names"), std::string::npos) << r.err;
    // A certificate the client was not given.
    r = run_tool({"ls", "--from", s.address(), "--tls", "--tls-server-name", "store.example", "--token-file",
                  token.string()});
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_NE(r.err.find("has a certificate this client does not trust"), std::string::npos) << r.err;
}

TEST(ServeCli, BadNames) {
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    const auto file = tmp.write("f", test::random_bytes(1000, 9));
    Serve s(dir, tmp.path() / "serve");
    for (const std::string& name : std::vector<std::string>{"../escape", "/etc/passwd", "a//b", "tab\there"}) {
        const auto r = run_tool({"push", "--to", s.address(), file.string(), "--name", name});
        EXPECT_EQ(r.exit_code, 2) << name << r.err;
        EXPECT_NE(r.err.find("name refused"), std::string::npos) << r.err;
    }
    const auto r = run_tool({"pull", "--from", s.address(), "../../etc/passwd", "-o", (tmp.path() / "o").string()});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(json_of(run_tool({"ls", "--from", s.address(), "--names", "--json"})).empty());
}

TEST(ServeCli, ATreesFilesWithNamesTheServerRefusesAreSkipped) {
    // A file name may hold control bytes or bytes that are not UTF-8; the
    // protocol's names may not. Such a file of a tree is skipped (exit 3),
    // the others pushed.
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    const auto good = test::random_bytes(2000, 23);
    tmp.write("tree/good", good);
    tmp.write("tree/esc\x1b[31m", test::random_bytes(100, 24));
    tmp.write("tree/bad\xff", test::random_bytes(100, 25));
    Serve s(dir, tmp.path() / "serve");
    const auto r = run_tool({"push", "--to", s.address(), (tmp.path() / "tree").string(), "--name", "t"});
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_NE(r.err.find("control byte"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("not UTF-8"), std::string::npos) << r.err;
    const auto listed = json_of(run_tool({"ls", "--from", s.address(), "--names", "--json"}));
    ASSERT_EQ(listed.size(), 1u) << listed.dump();
    EXPECT_EQ(listed[0]["name"], "t/good");
}

TEST(ServeCli, APushLeavesOutWhatIsExcluded) {
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    const auto data = test::random_bytes(3000, 26);
    for (const char* f : {"tree/keep.c", "tree/drop.o", "tree/sub/deep.o", "tree/marked/x", "tree/marked/.nobackup"})
        tmp.write(f, data);
    Serve s(dir, tmp.path() / "serve");
    const auto j = json_of(run_tool({"push", "--to", s.address(), (tmp.path() / "tree").string(), "--name", "t",
                                     "--json", "--exclude", "*.o", "--exclude-if-present", ".nobackup"}));
    EXPECT_EQ(j["file_count"], 1);
    EXPECT_EQ(j["excluded"], 3);  // drop.o, sub/deep.o, marked
    const auto listed = json_of(run_tool({"ls", "--from", s.address(), "--names", "--json"}));
    ASSERT_EQ(listed.size(), 1u) << listed.dump();
    EXPECT_EQ(listed[0]["name"], "t/keep.c");
}

// ---------------------------------------------------------------- through the raw stub

std::unique_ptr<v1::Transfer::Stub> stub(const Serve& s, int max_send = 0) {
    grpc::ChannelArguments args;
    if (max_send) args.SetMaxSendMessageSize(max_send);
    return v1::Transfer::NewStub(grpc::CreateCustomChannel(s.address(), grpc::InsecureChannelCredentials(), args));
}

v1::PushRequest list_of(const std::vector<std::uint8_t>& chunk) {
    v1::PushRequest r;
    std::string ids;
    transfer::append_id(ids, store::chunk_id_of(std::as_bytes(std::span(chunk))));
    r.mutable_chunks()->set_ids(ids);
    r.mutable_chunks()->add_sizes(static_cast<std::uint32_t>(chunk.size()));
    return r;
}

// A data message that claims `chunk`'s id for its bytes with the first one
// flipped (raw, whole: one piece).
v1::PushRequest forged_data(const std::vector<std::uint8_t>& chunk) {
    auto forged = chunk;
    forged[0] ^= 1;
    v1::PushRequest data;
    auto* c = data.mutable_data()->add_chunks();
    const auto id = store::chunk_id_of(std::as_bytes(std::span(chunk)));
    c->set_id(id.data(), id.size());
    c->set_raw_size(static_cast<std::uint32_t>(chunk.size()));
    c->set_raw(true);
    c->set_payload_size(static_cast<std::uint32_t>(chunk.size()));
    c->set_piece(forged.data(), forged.size());
    return data;
}

TEST(ServeCli, AForgedChunkIsRefusedAndNothingIsStored) {
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    Serve s(dir, tmp.path() / "serve");
    const auto chunk = test::random_bytes(3000, 10);
    grpc::ClientContext ctx;
    authorize(ctx);
    auto st = stub(s);
    auto rw = st->Push(&ctx);
    v1::PushRequest start;
    start.mutable_start()->set_name("forged");
    ASSERT_TRUE(rw->Write(start));
    ASSERT_TRUE(rw->Write(list_of(chunk)));
    v1::PushReply want;
    ASSERT_TRUE(rw->Read(&want));
    EXPECT_EQ(want.want().count(), 1u);
    const v1::PushRequest data = forged_data(chunk);
    rw->Write(data);
    rw->WritesDone();
    const grpc::Status status = rw->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::DATA_LOSS) << status.error_message();
    EXPECT_NE(status.error_message().find("another BLAKE3"), std::string::npos) << status.error_message();
    EXPECT_TRUE(json_of(run_tool({"ls", "--from", s.address(), "--names", "--json"})).empty());
    const auto stats = json_of(run_tool({"store", "stats", dir.string(), "--json"}));
    EXPECT_EQ(stats["chunks"], 0);
}

// The server reads a push's next request while it handles one: a request it
// refuses while that read is pending (the client still writing, not
// half-closed) must end the stream with the refusal's status, at once.
TEST(ServeCli, ARefusalWhileTheNextRequestIsReadReachesTheClient) {
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    Serve s(dir, tmp.path() / "serve");
    const auto chunk = test::random_bytes(3000, 11);
    grpc::ClientContext ctx;
    authorize(ctx);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    auto st = stub(s);
    auto rw = st->Push(&ctx);
    v1::PushRequest start;
    start.mutable_start()->set_name("forged");
    ASSERT_TRUE(rw->Write(start));
    ASSERT_TRUE(rw->Write(list_of(chunk)));
    v1::PushReply reply;
    ASSERT_TRUE(rw->Read(&reply));
    const v1::PushRequest data = forged_data(chunk);
    ASSERT_TRUE(rw->Write(data));
    // No WritesDone: the server's next read is still pending when it refuses.
    EXPECT_FALSE(rw->Read(&reply));
    const grpc::Status status = rw->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::DATA_LOSS) << status.error_message();
    EXPECT_NE(status.error_message().find("another BLAKE3"), std::string::npos) << status.error_message();
    const auto stats = json_of(run_tool({"store", "stats", dir.string(), "--json"}));
    EXPECT_EQ(stats["chunks"], 0);
}

TEST(ServeCli, AnOversizedMessageIsRefused) {
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    Serve s(dir, tmp.path() / "serve");
    auto st = stub(s, 16 << 20);
    {
        grpc::ClientContext ctx;
        authorize(ctx);
        v1::HashData big;
        big.set_data(std::string(5 << 20, 'x'));
        v1::HashReply reply;
        const grpc::Status status = st->HashUnary(&ctx, big, &reply);
        EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
    }
    {
        grpc::ClientContext ctx;
        authorize(ctx);
        auto rw = st->Push(&ctx);
        v1::PushRequest start;
        start.mutable_start()->set_name("f");
        rw->Write(start);
        v1::PushRequest list;
        list.mutable_chunks()->set_ids(std::string(5 << 20, 'i'));
        rw->Write(list);
        rw->WritesDone();
        const grpc::Status status = rw->Finish();
        EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
    }
    // Below the limit, the server still answers.
    grpc::ClientContext ctx;
    authorize(ctx);
    v1::HashData small;
    small.set_data(std::string(1 << 20, 'x'));
    v1::HashReply reply;
    EXPECT_TRUE(st->HashUnary(&ctx, small, &reply).ok());
    EXPECT_EQ(reply.size(), 1u << 20);
}

TEST(ServeCli, StreamsBeyondTheBoundAreRefused) {
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    Serve s(dir, tmp.path() / "serve", {"--max-streams", "1"});
    const auto file = tmp.write("f", test::random_bytes(1000, 11));
    grpc::ClientContext ctx;
    authorize(ctx);
    auto st = stub(s);
    auto rw = st->Push(&ctx);
    v1::PushRequest start;
    start.mutable_start()->set_name("held");
    ASSERT_TRUE(rw->Write(start));
    ASSERT_TRUE(rw->Write(list_of(test::random_bytes(10, 1))));
    v1::PushReply want;
    ASSERT_TRUE(rw->Read(&want));  // the held stream is being served
    auto r = run_tool({"push", "--to", s.address(), file.string(), "--name", "f"});
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_NE(r.err.find("busy"), std::string::npos) << r.err;
    ctx.TryCancel();
    rw->Finish();
    ASSERT_TRUE(s.wait_log("push")) << s.log();
    r = run_tool({"push", "--to", s.address(), file.string(), "--name", "f"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

// The soft limit of open files in /proc/PID/limits.
std::uint64_t soft_open_files(pid_t pid) {
    const std::string limits = test::read_text(fmt::format("/proc/{}/limits", pid));
    const auto at = limits.find("Max open files");
    if (at == std::string::npos) return 0;
    return std::stoull(limits.substr(at + std::string_view("Max open files").size()));
}

TEST(ServeCli, TakesAllTheDescriptorsItMay) {
    // Each stream keeps up to an eighth of the soft limit of pack files open
    // (16 streams by default): the server raises its soft limit to the hard one.
    rlimit mine{};
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &mine), 0);
    rlimit low = mine;
    low.rlim_cur = mine.rlim_max == RLIM_INFINITY ? 256 : std::min<rlim_t>(256, mine.rlim_max / 2);
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);  // inherited by the server
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    Serve s(dir, tmp.path() / "serve");
    ::setrlimit(RLIMIT_NOFILE, &mine);
    const std::uint64_t want =
        mine.rlim_max == RLIM_INFINITY ? std::uint64_t{1} << 20 : std::min<std::uint64_t>(mine.rlim_max, 1 << 20);
    EXPECT_EQ(soft_open_files(s.pid()), want);
}

TEST(ServeCli, AnIdleStreamIsCancelled) {
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    Serve s(dir, tmp.path() / "serve", {"--idle-timeout", "0.3"});
    grpc::ClientContext ctx;
    authorize(ctx);
    auto st = stub(s);
    auto rw = st->Push(&ctx);
    v1::PushRequest start;
    start.mutable_start()->set_name("stalled");
    ASSERT_TRUE(rw->Write(start));
    // Nothing more: the server cancels the stream, which releases the store (gc runs).
    v1::PushReply reply;
    EXPECT_FALSE(rw->Read(&reply));
    EXPECT_EQ(rw->Finish().error_code(), grpc::StatusCode::CANCELLED);
    EXPECT_TRUE(s.wait_log("nothing received")) << s.log();
    ASSERT_TRUE(s.wait_log("push")) << s.log();
    const auto r = run_tool({"store", "gc", dir.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace cdc
