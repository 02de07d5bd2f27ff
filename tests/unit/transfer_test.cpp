// SPDX-License-Identifier: Apache-2.0
// The transfer protocol in process (no gRPC): the client's push and pull
// logic against the server's sessions over a real store. Round trips, what
// travels (only missing chunks), seeds and resumed pulls, and every check
// the server owes: names, chunk bytes against their ids, whole-file
// digests, protocol order, bounds, a client that vanishes.
#include "transfer_support.hpp"

#include <chunk_feed.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc {
namespace {

namespace fs = std::filesystem;
using transfer::Code;
using transfer::TransferError;

fs::path make_store(const test::TempDir& tmp, const std::string& algorithm = "fastcdc", std::size_t avg = 4096,
                    std::size_t max = 0, const std::string& sub = "store") {
    store::InitOptions o;
    o.algorithm = algorithm;
    o.chunking.normal_size = avg;
    if (max) {
        o.chunking.min_size = avg / 4;
        o.chunking.max_size = max;
    }
    const auto dir = tmp.path() / sub;
    store::Store::init(dir, o);
    return dir;
}

std::vector<std::uint8_t> store_bytes(const fs::path& dir, const std::string& name, const test::TempDir& tmp) {
    const store::Store s = store::Store::open(dir);
    return test::get_bytes(s, name, tmp);
}

Code code_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const TransferError& e) {
        return e.code();
    }
    ADD_FAILURE() << "no TransferError";
    return Code::unknown;
}

TEST(TransferLocal, PushAndPullRoundTrips) {
    test::TempDir tmp;
    const auto dir = make_store(tmp);
    const auto a = test::mixed_bytes(700'000, 1);
    const auto b = test::random_bytes(1, 2);
    const auto pa = tmp.write("a.bin", a);
    const auto pb = tmp.write("b.bin", b);
    const auto pe = tmp.write("empty", {});
    const auto r = test::local_push(dir, {{pa.string(), "x/a.bin", a.size()}, {pb.string(), "b", 1}, {pe.string(), "e", 0}});
    EXPECT_TRUE(r.errors.empty());
    ASSERT_EQ(r.files.size(), 3u);
    EXPECT_EQ(r.bytes_read, a.size() + 1);
    EXPECT_EQ(r.bytes_sent, a.size() + 1);  // a fresh store lacks every chunk
    EXPECT_LT(r.payload_sent, r.bytes_sent);  // the text half compresses
    EXPECT_EQ(store_bytes(dir, "x/a.bin", tmp), a);
    EXPECT_EQ(store_bytes(dir, "b", tmp), b);
    EXPECT_TRUE(store_bytes(dir, "e", tmp).empty());
    const auto found = store::Store::open(dir).find("x/a.bin");
    ASSERT_TRUE(found);
    EXPECT_EQ(found->chunks, r.files[0].chunks);

    for (const auto& [name, bytes] : std::vector<std::pair<std::string, std::vector<std::uint8_t>>>{
             {"x/a.bin", a}, {"b", b}, {"e", {}}}) {
        const auto out = tmp.path() / "out.bin";
        fs::remove(out);
        const auto p = test::local_pull(dir, name, out);
        EXPECT_EQ(test::read_bytes(out), bytes) << name;
        EXPECT_EQ(p.bytes, bytes.size());
        EXPECT_EQ(p.bytes_sent, bytes.size()) << name;  // nothing local to reuse
        EXPECT_FALSE(fs::exists(transfer::partial_path(out)));
    }
}

TEST(TransferLocal, OnlyMissingChunksTravel) {
    test::TempDir tmp;
    const auto dir = make_store(tmp);
    auto v1 = test::mixed_bytes(2'000'000, 3);
    const auto p1 = tmp.write("v1", v1);
    test::local_push(dir, {{p1.string(), "v1", v1.size()}});
    // The same file again: nothing travels.
    auto r = test::local_push(dir, {{p1.string(), "v1-again", v1.size()}});
    EXPECT_EQ(r.bytes_sent, 0u);
    EXPECT_EQ(r.chunks_sent, 0u);
    // An edit in the middle: a few chunks travel.
    auto v2 = v1;
    for (std::size_t i = 1'000'000; i < 1'000'100; ++i) v2[i] ^= 0xff;
    v2.insert(v2.begin() + 1'500'000, 777, std::uint8_t{7});
    const auto p2 = tmp.write("v2", v2);
    r = test::local_push(dir, {{p2.string(), "v2", v2.size()}});
    EXPECT_GT(r.bytes_sent, 0u);
    EXPECT_LT(r.bytes_sent, v2.size() / 20);
    EXPECT_EQ(store_bytes(dir, "v2", tmp), v2);
    // Pulling v2 with v1 as a seed fetches about as little.
    const auto out = tmp.path() / "pulled";
    transfer::PullOptions o;
    o.seeds = {p1};
    const auto p = test::local_pull(dir, "v2", out, o);
    EXPECT_EQ(test::read_bytes(out), v2);
    EXPECT_LT(p.bytes_sent, v2.size() / 20);
    EXPECT_EQ(p.bytes_sent + p.bytes_reused, v2.size());
    // An existing OUT is a seed too: pulling v1 over it fetches the edited chunks only.
    const auto again = test::local_pull(dir, "v1", out);
    EXPECT_EQ(test::read_bytes(out), v1);
    EXPECT_LT(again.bytes_sent, v1.size() / 20);
}

TEST(TransferLocal, PushingAgainUnderTheSameName) {
    // While the chunks equal those of the stored file of that name, the
    // server reads nothing back; at the first difference it hashes what
    // matched and goes on. Every variant must restore exactly.
    test::TempDir tmp;
    const auto dir = make_store(tmp);
    const auto v1 = test::mixed_bytes(3'000'000, 41);  // ~700 chunks of 4 KiB
    const auto p1 = tmp.write("v1", v1);
    test::local_push(dir, {{p1.string(), "f", v1.size()}});
    // unchanged
    auto r = test::local_push(dir, {{p1.string(), "f", v1.size()}});
    EXPECT_EQ(r.bytes_sent, 0u);
    EXPECT_TRUE(r.files.at(0).unchanged);
    EXPECT_EQ(store_bytes(dir, "f", tmp), v1);
    // under another name: the same chunks, read back and hashed
    r = test::local_push(dir, {{p1.string(), "g", v1.size()}});
    EXPECT_EQ(r.bytes_sent, 0u);
    EXPECT_FALSE(r.files.at(0).unchanged);
    // changed at the end, in the middle, at the start; a prefix; an extension
    std::vector<std::pair<std::string, std::vector<std::uint8_t>>> variants;
    auto end = v1;
    end.back() ^= 1;
    variants.emplace_back("end", end);
    auto middle = v1;
    middle[1'500'000] ^= 1;
    variants.emplace_back("middle", middle);
    auto start = v1;
    start[10] ^= 1;
    variants.emplace_back("start", start);
    variants.emplace_back("prefix", std::vector<std::uint8_t>(v1.begin(), v1.begin() + 2'000'000));
    auto longer = v1;
    const auto extra = test::random_bytes(500'000, 42);
    longer.insert(longer.end(), extra.begin(), extra.end());
    variants.emplace_back("extension", longer);
    for (const auto& [what, bytes] : variants) {
        // each compared with v1 under the name "f"
        test::local_push(dir, {{p1.string(), "f", v1.size()}});
        const auto p = tmp.write("variant", bytes);
        r = test::local_push(dir, {{p.string(), "f", bytes.size()}});
        EXPECT_FALSE(r.files.at(0).unchanged) << what;
        EXPECT_EQ(store_bytes(dir, "f", tmp), bytes) << what;
        EXPECT_LT(r.bytes_sent, bytes.size() / 4) << what;
    }
    const store::Store s = store::Store::open(dir);
    EXPECT_TRUE(s.verify(test::full_check()).ok());
}

// A store of a peer-compatible name with its own parameters (restic's
// polynomial here): the client learns them from Info and cuts exactly like
// the store, so a file the store already holds sends nothing.
TEST(TransferLocal, AListOfStoredChunksFlushesAsItGrows) {
    // A push of a file the store holds lists only stored chunks: nothing is
    // stored, so only the count of listed ids can call for a flush. Without
    // it a 4 GiB file's 512k ids (and the catalog records made of them) sat
    // in the server's memory until its end: +37 MB of VmHWM. Listed here in
    // batches past the writer's flush threshold (262,144 ids), the file not
    // ended: the flush shows as the manifest's catalog records synced into
    // the packs.
    test::TempDir tmp;
    const auto dir = make_store(tmp);
    std::vector<std::uint8_t> chunk(200);  // (below the minimum: one chunk)
    for (std::size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<std::uint8_t>(i * 131 + 7);
    const auto p = tmp.write("one", chunk);
    test::local_push(dir, {{p.string(), "one", chunk.size()}});
    const auto pack_bytes = [&] {
        std::uintmax_t n = 0;
        for (const auto& e : fs::recursive_directory_iterator(dir / "packs"))
            if (e.is_regular_file()) n += e.file_size();
        return n;
    };
    const store::Store s = store::Store::open(dir);
    const store::ChunkId id = store::chunk_id_of(std::as_bytes(std::span(chunk)));
    store::Writer w(s);
    store::Ingest door(w);
    door.begin({"many", 0644, 0});
    const std::uintmax_t before = pack_bytes();
    const std::vector<store::ChunkId> batch(4096, id);
    for (int i = 0; i < 70; ++i) door.list_stored(batch);  // 286,720 ids
    EXPECT_GT(pack_bytes(), before + (std::uintmax_t{4} << 20));
    door.abandon();
}

TEST(TransferLocal, PeerParametersTravel) {
    test::TempDir tmp;
    store::InitOptions o;
    o.algorithm = "restic-rabin";
    o.chunking.min_size = 2048;
    o.chunking.normal_size = 8192;
    o.chunking.max_size = 65536;
    o.chunking.polynomial = 458649537773299;  // not restic's default
    const auto dir = tmp.path() / "store";
    const auto data = test::mixed_bytes(1'500'000, 21);
    {
        store::Store s = store::Store::init(dir, o);
        store::Writer w(s);
        test::put_bytes(w, "local", data);
        w.commit();
    }
    transfer::v1::InfoReply info;  // what Info says, as service.cpp fills it
    const auto p = test::params_of(dir);
    info.set_algorithm(p.algorithm);
    info.set_min_size(p.profile.min_size);
    info.set_avg_size(p.profile.normal_size);
    info.set_max_size(p.profile.max_size);
    info.set_polynomial(p.profile.polynomial);
    const auto learned = transfer::params_from(info);
    EXPECT_EQ(learned.profile.polynomial, o.chunking.polynomial);
    EXPECT_EQ(transfer::client_finder(learned, {})->profile().polynomial, *o.chunking.polynomial);
    const auto file = tmp.write("again", data);
    const auto r = test::local_push(dir, {{file.string(), "pushed", data.size()}});
    EXPECT_EQ(r.chunks_sent, 0u);
    EXPECT_EQ(r.bytes_sent, 0u);
    EXPECT_EQ(store_bytes(dir, "pushed", tmp), data);
}

TEST(TransferLocal, RepeatedChunksTravelOnce) {
    test::TempDir tmp;
    const auto dir = make_store(tmp, "fixed-v1.0.0", 4096);
    // 1000 copies of one 4 KiB block, a random tail.
    auto data = std::vector<std::uint8_t>();
    const auto block = test::random_bytes(4096, 9);
    for (int i = 0; i < 1000; ++i) data.insert(data.end(), block.begin(), block.end());
    const auto tail = test::random_bytes(5000, 10);
    data.insert(data.end(), tail.begin(), tail.end());
    const auto p = tmp.write("rep", data);
    const auto r = test::local_push(dir, {{p.string(), "rep", data.size()}});
    EXPECT_EQ(r.chunks_sent, 3u);  // the block, then the tail's 4096 + 904 bytes
    EXPECT_EQ(store_bytes(dir, "rep", tmp), data);
    const auto out = tmp.path() / "out";
    const auto pr = test::local_pull(dir, "rep", out);
    EXPECT_EQ(test::read_bytes(out), data);
    EXPECT_EQ(pr.chunks_sent, 3u);
}

TEST(TransferLocal, ChunksLargerThanAMessageTravelInPieces) {
    test::TempDir tmp;
    const auto dir = make_store(tmp, "fastcdc", 1 << 20, 8 << 20);
    const auto data = test::random_bytes(12 << 20, 11);  // chunks of up to 8 MiB, messages of 1 MiB
    const auto p = tmp.write("big", data);
    const auto r = test::local_push(dir, {{p.string(), "big", data.size()}});
    EXPECT_EQ(r.bytes_sent, data.size());
    EXPECT_EQ(store_bytes(dir, "big", tmp), data);
    const auto out = tmp.path() / "out";
    test::local_pull(dir, "big", out);
    EXPECT_EQ(test::read_bytes(out), data);
}

TEST(TransferLocal, KeyedStore) {
    test::TempDir tmp;
    store::InitOptions io;
    io.algorithm = "kfastcdc";
    io.chunking.normal_size = 4096;
    Key key{};
    key[3] = 42;
    io.chunking.key = key;
    const auto dir = tmp.path() / "store";
    store::Store::init(dir, io);
    const auto data = test::mixed_bytes(300'000, 12);
    const auto p = tmp.write("f", data);
    store::OpenOptions open;
    open.key = key;
    // Without the key the client cannot chunk like the store.
    EXPECT_THROW(test::local_push(dir, {{p.string(), "f", data.size()}}, {}, open), OptionError);
    transfer::PushOptions po;
    po.key = key;
    test::local_push(dir, {{p.string(), "f", data.size()}}, po, open);
    const auto again = test::local_push(dir, {{p.string(), "g", data.size()}}, po, open);
    EXPECT_EQ(again.bytes_sent, 0u);
    EXPECT_EQ(store_bytes(dir, "g", tmp), data);
}

TEST(TransferLocal, PartialPullIsReused) {
    test::TempDir tmp;
    const auto dir = make_store(tmp);
    const auto data = test::mixed_bytes(1'500'000, 13);
    const auto p = tmp.write("f", data);
    test::local_push(dir, {{p.string(), "f", data.size()}});
    const auto out = tmp.path() / "out";
    // What an interrupted pull leaves: a prefix of the file under the partial name.
    const std::vector<std::uint8_t> prefix(data.begin(), data.begin() + 900'000);
    {
        std::ofstream f(transfer::partial_path(out), std::ios::binary);
        f.write(reinterpret_cast<const char*>(prefix.data()), static_cast<std::streamsize>(prefix.size()));
    }
    const auto r = test::local_pull(dir, "f", out);
    EXPECT_EQ(test::read_bytes(out), data);
    EXPECT_GT(r.bytes_reused, 800'000u);
    EXPECT_LT(r.bytes_sent, 700'000u);
    EXPECT_FALSE(fs::exists(transfer::partial_path(out)));
    auto old = transfer::partial_path(out);
    old += ".old";
    EXPECT_FALSE(fs::exists(old));
}

TEST(TransferLocal, PullOverTheSameFileWritesNothing) {
    // OUT is the file already (size and BLAKE3): the pull ends at the
    // header, OUT stays the same file (same inode), its mtime is set.
    test::TempDir tmp;
    const auto dir = make_store(tmp);
    const auto v1 = test::mixed_bytes(3'000'000, 97);
    const auto p1 = tmp.write("v1", v1);
    test::local_push(dir, {{p1.string(), "f", v1.size()}});
    const auto out = tmp.path() / "out";
    const auto first = test::local_pull(dir, "f", out);
    EXPECT_FALSE(first.up_to_date);
    struct stat before {};
    ASSERT_EQ(::stat(out.c_str(), &before), 0);
    const timespec old[2] = {{0, UTIME_OMIT}, {1000, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, out.c_str(), old, 0), 0);
    const auto again = test::local_pull(dir, "f", out);
    EXPECT_TRUE(again.up_to_date);
    EXPECT_EQ(again.bytes_sent, 0u);
    EXPECT_EQ(again.bytes_reused, v1.size());
    struct stat after {};
    ASSERT_EQ(::stat(out.c_str(), &after), 0);
    EXPECT_EQ(after.st_ino, before.st_ino);
    EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);  // the stored mtime again
    EXPECT_EQ(test::read_bytes(out), v1);
    EXPECT_FALSE(fs::exists(transfer::partial_path(out)));
    // OUT a symbolic link to a file with the same bytes: not taken as up to
    // date (the link's target is never touched: its mode and mtime stay);
    // the pulled file replaces the link.
    const auto target = tmp.write("target", v1);
    ASSERT_EQ(::chmod(target.c_str(), 0600), 0);
    ASSERT_EQ(::utimensat(AT_FDCWD, target.c_str(), old, 0), 0);
    fs::remove(out);
    fs::create_symlink(target, out);
    const auto linked = test::local_pull(dir, "f", out);
    EXPECT_FALSE(linked.up_to_date);
    EXPECT_EQ(linked.bytes_sent, 0u);  // its chunks reused all the same
    EXPECT_FALSE(fs::is_symlink(out));
    EXPECT_EQ(test::read_bytes(out), v1);
    struct stat t {};
    ASSERT_EQ(::stat(target.c_str(), &t), 0);
    EXPECT_EQ(t.st_mode & 07777, 0600u);
    EXPECT_EQ(t.st_mtim.tv_sec, 1000);
    // One byte off (same size): pulled and written as before.
    auto v2 = v1;
    v2[2'000'000] ^= 1;
    tmp.write("out", v2);
    const auto fixed = test::local_pull(dir, "f", out);
    EXPECT_FALSE(fixed.up_to_date);
    EXPECT_GT(fixed.bytes_sent, 0u);
    EXPECT_EQ(test::read_bytes(out), v1);
}

TEST(TransferLocal, PullOfAnUnknownName) {
    test::TempDir tmp;
    const auto dir = make_store(tmp);
    EXPECT_EQ(code_of([&] { test::local_pull(dir, "nope", tmp.path() / "o"); }), Code::not_found);
    EXPECT_FALSE(fs::exists(tmp.path() / "o"));
    EXPECT_FALSE(fs::exists(transfer::partial_path(tmp.path() / "o")));
}

TEST(TransferLocal, NamesAreChecked) {
    for (const std::string& bad : std::vector<std::string>{"", "/etc/passwd", "../x", "a/../../x", "a//b", "a/./b", "a/", ".", "..",
                                  std::string("a\0b", 3), "a\nb", "tab\there", std::string("del\x7f"),
                                  std::string(5000, 'n')})
        EXPECT_FALSE(transfer::name_problem(bad).empty()) << bad;
    EXPECT_NE(transfer::name_problem("bad\xff").find("UTF-8"), std::string::npos);
    for (const std::string& good : std::vector<std::string>{"a", "a/b/c.txt", "..a", "a..", ".hidden/x", "spaces are fine", "ünï"})
        EXPECT_TRUE(transfer::name_problem(good).empty()) << good;
    test::TempDir tmp;
    const auto dir = make_store(tmp);
    const auto data = test::random_bytes(1000, 14);
    const auto p = tmp.write("f", data);
    // The server refuses it; a client skips such a file and pushes the rest.
    {
        transfer::PushSession session(dir, {});
        auto sink = [](const transfer::v1::PushReply&) {};
        for (const char* name : {"../escape", "bad\xff"})
            EXPECT_EQ(code_of([&] { session.handle(test::start_request(name), sink); }), Code::invalid_argument) << name;
    }
    const auto r = test::local_push(dir, {{p.string(), "../escape", data.size()}, {p.string(), "ok", data.size()}});
    ASSERT_EQ(r.errors.size(), 1u);
    EXPECT_NE(r.errors[0].message.find("'..'"), std::string::npos) << r.errors[0].message;
    EXPECT_EQ(r.files.size(), 1u);
    EXPECT_EQ(code_of([&] { test::local_pull(dir, "/abs", tmp.path() / "o"); }), Code::invalid_argument);
    const auto names = store::Store::open(dir).list();
    ASSERT_EQ(names.size(), 1u);
    EXPECT_EQ(names[0].name, "ok");
}

TEST(TransferLocal, ALoopbackAddressNeedsNoTls) {
    for (const std::string& a : std::vector<std::string>{"127.0.0.1:7777", "127.1.2.3:1", "localhost:80", "[::1]:7777", "unix:/tmp/s"})
        EXPECT_TRUE(transfer::is_loopback_address(a)) << a;
    for (const std::string& a : std::vector<std::string>{"0.0.0.0:7777", "[::]:7777", "192.168.1.2:7777", "example.com:7777",
                                "127.0.0.1.example.com:1", "128.0.0.1:1", "127.0.0.256:1"})
        EXPECT_FALSE(transfer::is_loopback_address(a)) << a;
    EXPECT_TRUE(transfer::listen_problem("127.0.0.1:0", false, false).empty());
    EXPECT_NE(transfer::listen_problem("0.0.0.0:0", false, true).find("TLS"), std::string::npos);
    EXPECT_NE(transfer::listen_problem("0.0.0.0:0", true, false).find("token"), std::string::npos);
    EXPECT_TRUE(transfer::listen_problem("0.0.0.0:0", true, true).empty());
}

TEST(TransferLocal, TokensCompare) {
    const std::string token = "0123456789abcdef-secret";
    EXPECT_TRUE(transfer::bearer_matches(transfer::bearer_header(token), token));
    EXPECT_FALSE(transfer::bearer_matches(transfer::bearer_header(token + "x"), token));
    EXPECT_FALSE(transfer::bearer_matches(token, token));
    EXPECT_FALSE(transfer::bearer_matches("", token));
}

// ---------------------------------------------------------------- the server's checks, request by request

class PushChecks : public ::testing::Test {
protected:
    void SetUp() override {
        // (called again by tests that try several refusals: a fresh store each time)
        dir_ = make_store(tmp_, "fixed-v1.0.0", 1024, 0, "store" + std::to_string(++stores_));
        session_ = std::make_unique<transfer::PushSession>(dir_, store::OpenOptions{});
        a_ = test::random_bytes(1024, 21);
        b_ = test::random_bytes(1024, 22);
        whole_ = a_;
        whole_.insert(whole_.end(), b_.begin(), b_.end());
    }
    void send(const transfer::v1::PushRequest& r) {
        session_->handle(r, [&](const transfer::v1::PushReply& reply) { replies_.push_back(reply); });
    }
    Code refused(const transfer::v1::PushRequest& r) {
        return code_of([&] { send(r); });
    }
    bool committed(const std::string& name) {
        session_->abort();
        return store::Store::open(dir_).find(name).has_value();
    }
    bool stored(const std::vector<std::uint8_t>& chunk) {
        return store::Store::open(dir_).contains(store::chunk_id_of(std::as_bytes(std::span(chunk))));
    }

    test::TempDir tmp_;
    int stores_ = 0;
    fs::path dir_;
    std::unique_ptr<transfer::PushSession> session_;
    std::vector<transfer::v1::PushReply> replies_;
    std::vector<std::uint8_t> a_, b_, whole_;
};

TEST_F(PushChecks, AWellFormedFile) {
    send(test::start_request("f"));
    send(test::list_request({a_, b_}));
    ASSERT_EQ(replies_.size(), 1u);
    EXPECT_EQ(replies_[0].want().count(), 2u);
    send(test::data_request(a_));
    send(test::data_request(b_));
    send(test::end_request(whole_));
    ASSERT_EQ(replies_.size(), 2u);
    EXPECT_EQ(replies_[1].done().new_chunks(), 2u);
    transfer::v1::PushRequest fin;
    fin.mutable_finish();
    send(fin);
    EXPECT_TRUE(session_->finished());
    EXPECT_EQ(store_bytes(dir_, "f", tmp_), whole_);
}

TEST_F(PushChecks, ACorruptedChunkIsRejectedAndNothingIsStored) {
    send(test::start_request("f"));
    send(test::list_request({a_, b_}));
    auto forged = b_;
    forged[100] ^= 1;
    send(test::data_request(a_));
    EXPECT_EQ(refused(test::data_request(forged, b_)), Code::data_loss);
    EXPECT_FALSE(committed("f"));
    EXPECT_FALSE(stored(forged));
    EXPECT_FALSE(stored(b_));
    EXPECT_TRUE(stored(a_));  // verified before: kept for a resumed push
}

TEST_F(PushChecks, AWrongWholeFileDigestCommitsNothing) {
    send(test::start_request("f"));
    send(test::list_request({a_, b_}));
    send(test::data_request(a_));
    send(test::data_request(b_));
    auto other = whole_;
    other[0] ^= 1;
    auto end = test::end_request(other);
    EXPECT_EQ(refused(end), Code::data_loss);
    EXPECT_FALSE(committed("f"));
}

TEST_F(PushChecks, AVanishedClientLeavesNoFile) {
    send(test::start_request("done"));
    send(test::list_request({a_}));
    send(test::data_request(a_));
    send(test::end_request(a_));
    send(test::start_request("open"));
    send(test::list_request({b_}));
    send(test::data_request(b_));
    // no end, no finish: the stream broke
    session_->abort();
    const store::Store s = store::Store::open(dir_);
    EXPECT_TRUE(s.find("done"));    // verified before the break
    EXPECT_FALSE(s.find("open"));
    EXPECT_TRUE(s.contains(store::chunk_id_of(std::as_bytes(std::span(b_)))));  // a resumed push skips it
    EXPECT_TRUE(s.verify(test::full_check()).ok());
}

TEST_F(PushChecks, ProtocolOrderAndBounds) {
    EXPECT_EQ(refused(test::list_request({a_})), Code::failed_precondition);  // before start
    EXPECT_EQ(refused(transfer::v1::PushRequest{}), Code::invalid_argument);  // empty
    SetUp();
    send(test::start_request("f"));
    EXPECT_EQ(refused(test::start_request("g")), Code::failed_precondition);  // a file is open
    SetUp();
    send(test::start_request("f"));
    EXPECT_EQ(refused(test::data_request(a_)), Code::invalid_argument);  // not asked for
    SetUp();
    send(test::start_request("f"));
    send(test::list_request({a_, b_}));
    EXPECT_EQ(refused(test::data_request(b_)), Code::invalid_argument);  // out of order
    SetUp();
    send(test::start_request("f"));
    send(test::list_request({a_}));
    EXPECT_EQ(refused(test::end_request(a_)), Code::failed_precondition);  // end before the data
    SetUp();
    send(test::start_request("f"));
    auto bad = test::list_request({a_, b_});
    bad.mutable_chunks()->mutable_sizes()->RemoveLast();  // 2 ids, 1 size
    EXPECT_EQ(refused(bad), Code::invalid_argument);
    SetUp();
    send(test::start_request("f"));
    const std::vector<std::uint8_t> huge(2048, 1);  // the store's chunks are at most 1024 bytes
    EXPECT_EQ(refused(test::list_request({huge})), Code::invalid_argument);
    SetUp();
    send(test::start_request("f"));
    for (std::size_t i = 0; i < transfer::kMaxListsAhead; ++i) send(test::list_request({a_}));
    EXPECT_EQ(refused(test::list_request({a_})), Code::failed_precondition);  // lists too far ahead
    SetUp();
    send(test::start_request("f"));
    send(test::list_request({a_}));
    auto piece = test::data_request(a_);
    piece.mutable_data()->mutable_chunks(0)->set_offset(5);  // a first piece that does not start at 0
    EXPECT_EQ(refused(piece), Code::invalid_argument);
    SetUp();
    send(test::start_request("f"));
    send(test::list_request({a_}));
    piece = test::data_request(a_);
    piece.mutable_data()->mutable_chunks(0)->set_payload_size(1 << 30);  // beyond any frame of 1024 bytes
    EXPECT_EQ(refused(piece), Code::invalid_argument);
    SetUp();
    send(test::start_request("f"));
    send(test::list_request({a_}));
    piece = test::data_request(a_);
    piece.mutable_data()->mutable_chunks(0)->set_raw(false);  // not a zstd frame
    piece.mutable_data()->mutable_chunks(0)->set_payload_size(1024);
    EXPECT_EQ(refused(piece), Code::data_loss);
    SetUp();
    send(test::start_request("f"));
    send(test::list_request({a_}));
    send(test::data_request(a_));
    auto end = test::end_request(a_);
    end.mutable_end()->set_size(1023);
    EXPECT_EQ(refused(end), Code::invalid_argument);  // size differs from the chunks'
}

TEST(PushChecks2, TheSameChunksWithAnotherDigestAreRefused) {
    test::TempDir tmp;
    const auto dir = make_store(tmp, "fixed-v1.0.0", 1024);
    const auto data = test::random_bytes(400 * 1024, 43);  // 400 chunks: compared with the stored file
    const auto p = tmp.write("f", data);
    test::local_push(dir, {{p.string(), "f", data.size()}});
    transfer::PushSession session(dir, {});
    auto sink = [](const transfer::v1::PushReply&) {};
    session.handle(test::start_request("f"), sink);
    std::vector<std::vector<std::uint8_t>> chunks;
    for (std::size_t i = 0; i < data.size(); i += 1024)
        chunks.emplace_back(data.begin() + static_cast<std::ptrdiff_t>(i), data.begin() + static_cast<std::ptrdiff_t>(i + 1024));
    session.handle(test::list_request(chunks), sink);
    auto other = data;
    other[0] ^= 1;
    auto end = test::end_request(other);
    end.mutable_end()->set_size(data.size());
    EXPECT_EQ(code_of([&] { session.handle(end, sink); }), Code::data_loss);
    session.abort();
    EXPECT_EQ(store_bytes(dir, "f", tmp), data);
}

TEST_F(PushChecks, SizesMustMatchTheStoredChunks) {
    // `a` is in the store; a list claiming another size for it is refused.
    send(test::start_request("f"));
    send(test::list_request({a_}));
    send(test::data_request(a_));
    send(test::end_request(a_));
    auto lie = test::list_request({a_});
    lie.mutable_chunks()->set_sizes(0, 1000);
    send(test::start_request("g"));
    EXPECT_EQ(refused(lie), Code::invalid_argument);
    EXPECT_FALSE(committed("g"));
}

// ---------------------------------------------------------------- chunk lists as groups

TEST(TransferLocal, GroupListsSendFewerBytesForAVersion) {
    // A second version pushed under the same name: with groups, the chunks
    // it shares with the stored file cost a digest per ~16 chunks instead of
    // an id each; the bytes that travel and the file stored are the same.
    test::TempDir tmp;
    const auto v1 = test::mixed_bytes(4'000'000, 51);  // ~1000 chunks of 4 KiB
    auto v2 = v1;
    for (std::size_t at : {300'000u, 2'100'000u, 3'500'000u}) v2[at] ^= 0x55;
    v2.insert(v2.begin() + 1'000'000, 3000, std::uint8_t{9});
    const auto p1 = tmp.write("v1", v1);
    const auto p2 = tmp.write("v2", v2);
    std::uint64_t wire[2] = {0, 0}, sent[2] = {0, 0}, payload[2] = {0, 0};
    for (const bool groups : {false, true}) {
        const auto dir = make_store(tmp, "fastcdc", 4096, 0, groups ? "grouped" : "ids");
        transfer::PushOptions o;
        o.group_lists = groups;
        test::local_push(dir, {{p1.string(), "f", v1.size()}}, o);
        const auto r = test::local_push(dir, {{p2.string(), "f", v2.size()}}, o);
        wire[groups] = r.wire_sent + r.wire_received;
        sent[groups] = r.bytes_sent;
        payload[groups] = r.payload_sent;
        EXPECT_EQ(store_bytes(dir, "f", tmp), v2) << groups;
        // unchanged: a few bytes per group
        const auto again = test::local_push(dir, {{p2.string(), "f", v2.size()}}, o);
        EXPECT_EQ(again.bytes_sent, 0u);
        if (groups) {
            EXPECT_LT(again.wire_sent + again.wire_received, again.chunks * 4) << again.chunks;
        }
        EXPECT_TRUE(store::Store::open(dir).verify(test::full_check()).ok());
    }
    EXPECT_EQ(sent[0], sent[1]);
    EXPECT_GT(sent[1], 0u);
    EXPECT_EQ(payload[0], payload[1]);
    // what is not chunk data: lists, wants, message headers
    EXPECT_LT(wire[1] - payload[1], (wire[0] - payload[0]) / 2) << wire[0] << " " << wire[1] << " " << payload[0];
}

TEST(TransferLocal, GroupListsWithChunksAsLargeAsSegments) {
    // Chunks of ~1 MiB (up to 4 MiB): a read segment holds a few, a group
    // spans several segments; the client must not hold more segments than
    // its feed has while it waits for a group's end.
    test::TempDir tmp;
    store::InitOptions o;
    o.algorithm = "fastcdc";
    o.chunking.min_size = 256 << 10;
    o.chunking.normal_size = 1 << 20;
    o.chunking.max_size = 4 << 20;
    const auto dir = tmp.path() / "store";
    store::Store::init(dir, o);
    const auto v1 = test::random_bytes(40 << 20, 81);
    auto v2 = v1;
    v2[20 << 20] ^= 1;
    const auto p1 = tmp.write("v1", v1);
    const auto p2 = tmp.write("v2", v2);
    test::local_push(dir, {{p1.string(), "f", v1.size()}});
    const auto r = test::local_push(dir, {{p2.string(), "f", v2.size()}});
    EXPECT_LT(r.bytes_sent, std::uint64_t{9} << 20);
    EXPECT_EQ(store_bytes(dir, "f", tmp), v2);
}

TEST(TransferLocal, GroupListsWithChunksLargerThanSegments) {
    // Fixed chunks of 2-8 MiB: a segment holds one chunk or none, groups end
    // rarely; lists in flight and the chunks waiting for a group's end must
    // leave the feed a segment to read into.
    test::TempDir tmp;
    for (const std::size_t size : {std::size_t{2} << 20, std::size_t{4} << 20, std::size_t{8} << 20}) {
        store::InitOptions o;
        o.algorithm = "fixed-v1.0.0";
        o.chunking.normal_size = size;
        const auto dir = tmp.path() / ("store" + std::to_string(size));
        store::Store::init(dir, o);
        const auto data = test::random_bytes(64 << 20, 91);
        const auto p = tmp.write("f", data);
        test::local_push(dir, {{p.string(), "f", data.size()}});
        const auto r = test::local_push(dir, {{p.string(), "f", data.size()}});
        EXPECT_EQ(r.bytes_sent, 0u);
        EXPECT_EQ(store_bytes(dir, "f", tmp), data) << size;
    }
}

TEST(TransferLocal, PushUnderANewNameComparesWithAStoredFileStartingAlike) {
    // A new name (a tree pushed under a new prefix): a stored file that
    // starts with the same chunk is compared with, groups taken from it,
    // nothing read back when all equal.
    test::TempDir tmp;
    const auto dir = make_store(tmp);
    // ~7500 chunks in 8 lists: the first three go as ids (sent before the
    // server has seen the file's first chunk), the rest as groups.
    const auto v1 = test::mixed_bytes(30'000'000, 95);
    auto v2 = v1;
    v2[20'000'000] ^= 1;
    const auto p1 = tmp.write("v1", v1);
    const auto p2 = tmp.write("v2", v2);
    test::local_push(dir, {{p1.string(), "a", v1.size()}});
    transfer::PushOptions ids;
    ids.group_lists = false;
    const auto plain = test::local_push(dir, {{p1.string(), "b", v1.size()}}, ids);
    EXPECT_TRUE(plain.files.at(0).identical);
    const auto r = test::local_push(dir, {{p1.string(), "c", v1.size()}});
    EXPECT_TRUE(r.files.at(0).identical);
    EXPECT_FALSE(r.files.at(0).unchanged);
    EXPECT_EQ(r.bytes_sent, 0u);
    EXPECT_LT(r.wire_sent + r.wire_received, (plain.wire_sent + plain.wire_received) / 2);
    EXPECT_EQ(store_bytes(dir, "c", tmp), v1);
    const auto changed = test::local_push(dir, {{p2.string(), "d", v2.size()}});
    EXPECT_FALSE(changed.files.at(0).identical);
    EXPECT_EQ(store_bytes(dir, "d", tmp), v2);
    // the same name again: unchanged, not identical
    const auto again = test::local_push(dir, {{p2.string(), "d", v2.size()}});
    EXPECT_TRUE(again.files.at(0).unchanged);
    EXPECT_FALSE(again.files.at(0).identical);
    EXPECT_TRUE(store::Store::open(dir).verify(test::full_check()).ok());
}

class PushGroups : public ::testing::Test {
protected:
    void SetUp() override {
        // (called again by tests that try several refusals: a fresh store each time)
        session_.reset();
        replies_.clear();
        chunks_.clear();
        dir_ = make_store(tmp_, "fixed-v1.0.0", 1024, 0, "store" + std::to_string(++stores_));
        data_ = test::random_bytes(300 * 1024, 61);  // 300 chunks, ~19 groups
        for (std::size_t i = 0; i < data_.size(); i += 1024)
            chunks_.emplace_back(data_.begin() + static_cast<std::ptrdiff_t>(i),
                                 data_.begin() + static_cast<std::ptrdiff_t>(i + 1024));
        const auto p = tmp_.write("f", data_);
        test::local_push(dir_, {{p.string(), "f", data_.size()}});
        session_ = std::make_unique<transfer::PushSession>(dir_, store::OpenOptions{});
    }
    void send(const transfer::v1::PushRequest& r) {
        session_->handle(r, [&](const transfer::v1::PushReply& reply) { replies_.push_back(reply); });
    }
    Code refused(const transfer::v1::PushRequest& r) {
        return code_of([&] { send(r); });
    }
    /// Sends each of `chunks` as data (made into another request by
    /// `shape`, if given), then the file's end; returns the file's bytes.
    std::vector<std::uint8_t> send_data_and_end(
        const std::vector<std::vector<std::uint8_t>>& chunks,
        const std::function<transfer::v1::PushRequest(transfer::v1::PushRequest)>& shape = {}) {
        std::vector<std::uint8_t> whole;
        for (const auto& c : chunks) {
            send(shape ? shape(test::data_request(c)) : test::data_request(c));
            whole.insert(whole.end(), c.begin(), c.end());
        }
        send(test::end_request(whole));
        return whole;
    }
    void send_finish() {
        transfer::v1::PushRequest fin;
        fin.mutable_finish();
        send(fin);
    }

    test::TempDir tmp_;
    int stores_ = 0;
    fs::path dir_;
    std::vector<std::uint8_t> data_;
    std::vector<std::vector<std::uint8_t>> chunks_;
    std::unique_ptr<transfer::PushSession> session_;
    std::vector<transfer::v1::PushReply> replies_;
};

TEST_F(PushGroups, GroupsOfTheStoredFileAreTakenFromIt) {
    send(test::start_request("f"));
    send(test::group_request(chunks_));
    ASSERT_EQ(replies_.size(), 1u);  // a group want, and no want: nothing to list
    ASSERT_TRUE(replies_[0].has_group_want());
    EXPECT_EQ(replies_[0].group_want().count(), 0u);
    send(test::end_request(data_));
    ASSERT_EQ(replies_.size(), 2u);
    EXPECT_TRUE(replies_[1].done().unchanged());
    EXPECT_EQ(replies_[1].done().chunks(), chunks_.size());
    // The same groups under a new name, in another order: taken from "f"
    // (another file's groups are not looked at), hashed, committed.
    auto moved = chunks_;
    std::rotate(moved.begin(), moved.begin() + 100, moved.end());
    std::vector<std::uint8_t> whole;
    for (const auto& c : moved) whole.insert(whole.end(), c.begin(), c.end());
    send(test::start_request("f"));
    std::vector<std::pair<std::size_t, std::size_t>> groups;
    send(test::group_request(moved, &groups));
    ASSERT_EQ(replies_.size(), 3u);
    // groups cut at the seam and at the list's end are new: their chunks are listed
    EXPECT_GT(replies_[2].group_want().count(), 0u);
    EXPECT_LE(replies_[2].group_want().count(), 3u);
    const auto wanted = transfer::read_bitmap(replies_[2].group_want().bitmap(), groups.size(),
                                              replies_[2].group_want().count());
    std::vector<std::vector<std::uint8_t>> listed;
    for (std::size_t g = 0; g < groups.size(); ++g)
        if (wanted[g]) listed.insert(listed.end(), moved.begin() + static_cast<std::ptrdiff_t>(groups[g].first),
                                     moved.begin() + static_cast<std::ptrdiff_t>(groups[g].second));
    send(test::list_request(listed));
    ASSERT_EQ(replies_.size(), 4u);
    EXPECT_EQ(replies_[3].want().count(), 0u);  // all in the store
    send(test::end_request(whole));
    ASSERT_EQ(replies_.size(), 5u);
    EXPECT_FALSE(replies_[4].done().unchanged());
    send_finish();
    EXPECT_EQ(store_bytes(dir_, "f", tmp_), whole);
}

TEST_F(PushGroups, ShortDigestsAreTakenAndTheirGroupsChecked) {
    // 16-byte digests (Info's group_digest_bytes): the stored file's groups
    // are found as with 32; a group the server lacks is expanded and its
    // chunks checked against the 16 bytes; other widths are refused.
    send(test::start_request("f"));
    send(test::short_digests(test::group_request(chunks_)));
    ASSERT_EQ(replies_.size(), 1u);
    EXPECT_EQ(replies_[0].group_want().count(), 0u);
    send(test::end_request(data_));
    ASSERT_EQ(replies_.size(), 2u);
    EXPECT_TRUE(replies_[1].done().unchanged());
    // New chunks under short digests: listed, then a list that is not the group's is refused.
    const std::vector<std::vector<std::uint8_t>> fresh = {test::random_bytes(1024, 81), test::random_bytes(1024, 82)};
    auto start = [&] {
        SetUp();
        send(test::start_request("new"));
        send(test::short_digests(test::group_request(fresh)));
        ASSERT_EQ(replies_.size(), 1u);
        ASSERT_GT(replies_[0].group_want().count(), 0u);
    };
    start();
    EXPECT_EQ(refused(test::list_request({fresh[1], fresh[0]})), Code::invalid_argument);
    start();
    send(test::list_request(fresh));
    ASSERT_EQ(replies_.size(), 2u);
    EXPECT_EQ(replies_[1].want().count(), 2u);
    const auto whole = send_data_and_end(fresh);
    ASSERT_EQ(replies_.size(), 3u);
    send_finish();
    EXPECT_EQ(store_bytes(dir_, "new", tmp_), whole);
    // Neither 16 nor 32 bytes a group.
    SetUp();
    send(test::start_request("f"));
    EXPECT_EQ(refused(test::short_digests(test::group_request(chunks_), 20)), Code::invalid_argument);
}

TEST_F(PushGroups, DataWithoutIdsIsTheChunkDue) {
    // Info's data_ids_optional: a piece without an id is the chunk due; its
    // bytes must still be that chunk's (another chunk's bytes are refused,
    // nothing is committed).
    const std::vector<std::vector<std::uint8_t>> fresh = {test::random_bytes(1024, 91), test::random_bytes(1024, 92)};
    auto without_id = [](transfer::v1::PushRequest r) {
        r.mutable_data()->mutable_chunks(0)->clear_id();
        return r;
    };
    auto start = [&] {
        SetUp();
        send(test::start_request("new"));
        send(test::list_request(fresh));
        ASSERT_EQ(replies_.size(), 1u);
        ASSERT_EQ(replies_[0].want().count(), 2u);
    };
    start();
    send(without_id(test::data_request(fresh[0])));
    EXPECT_EQ(refused(without_id(test::data_request(fresh[0]))), Code::data_loss);  // fresh[1] is due
    start();
    const auto whole = send_data_and_end(fresh, without_id);
    send_finish();
    EXPECT_EQ(store_bytes(dir_, "new", tmp_), whole);
}

TEST_F(PushGroups, ALieAboutTheBytesCommitsNothing) {
    // Groups of the stored file, and the digest of other bytes of the same
    // size: the server hashes the stored chunks and refuses.
    send(test::start_request("f"));
    send(test::group_request(chunks_));
    auto other = data_;
    other[5000] ^= 1;
    EXPECT_EQ(refused(test::end_request(other)), Code::data_loss);
    session_->abort();
    EXPECT_EQ(store_bytes(dir_, "f", tmp_), data_);
    // Known groups whose byte counts add up to more than their chunks hold.
    SetUp();
    send(test::start_request("f"));
    auto more = test::group_request(chunks_);
    more.mutable_groups()->set_bytes(0, more.groups().bytes(0) + 1);
    EXPECT_EQ(refused(more), Code::invalid_argument);
}

TEST_F(PushGroups, TheChunksListedForAGroupMustBeThatGroups) {
    const std::vector<std::vector<std::uint8_t>> fresh = {test::random_bytes(1024, 71), test::random_bytes(1024, 72),
                                                          test::random_bytes(1024, 73)};
    auto start = [&] {
        SetUp();
        send(test::start_request("new"));
        send(test::group_request(fresh));
        ASSERT_EQ(replies_.back().group_want().count(),
                  static_cast<std::uint32_t>(test::group_request(fresh).groups().counts_size()));  // all wanted
    };
    start();
    EXPECT_EQ(refused(test::list_request({fresh[1], fresh[0], fresh[2]})), Code::invalid_argument);  // order
    start();
    EXPECT_EQ(refused(test::list_request({fresh[0], fresh[1]})), Code::invalid_argument);  // count
    start();
    auto sizes = test::list_request(fresh);
    sizes.mutable_chunks()->set_sizes(0, 1000);
    EXPECT_EQ(refused(sizes), Code::invalid_argument);  // sizes
    start();
    EXPECT_EQ(refused(test::data_request(fresh[0])), Code::invalid_argument);  // data before the chunks are listed
    start();
    EXPECT_EQ(refused(test::end_request(fresh[0])), Code::failed_precondition);  // end before them
    // listed right: wanted, sent, committed
    start();
    replies_.clear();
    send(test::list_request(fresh));
    ASSERT_EQ(replies_.size(), 1u);
    EXPECT_EQ(replies_[0].want().count(), 3u);
    const auto whole = send_data_and_end(fresh);
    send_finish();
    EXPECT_EQ(store_bytes(dir_, "new", tmp_), whole);
}

TEST_F(PushGroups, TheGroupTableIsCapped) {
    // Beyond the cap the stored list is not read: its first groups are
    // found (with their ids), the last ones are not.
    // (each list on a connection of its own, in a snapshot of its own)
    const auto s = store::Store::open(dir_);
    std::vector<std::pair<std::size_t, std::size_t>> groups;
    const auto request = test::group_request(chunks_, &groups);
    ASSERT_GT(groups.size(), 8u);
    const auto digest_of = [&](std::size_t g) {
        store::ChunkId d;
        std::memcpy(d.data(), request.groups().digests().data() + g * 32, 32);
        return d;
    };
    const auto all = transfer::BaseGroups::open(store::Ingest::stored_list(s, "f"));
    ASSERT_TRUE(all);
    EXPECT_EQ(all->group_count(), groups.size());
    const auto capped = transfer::BaseGroups::open(store::Ingest::stored_list(s, "f"), 4);
    ASSERT_TRUE(capped);
    EXPECT_GE(capped->group_count(), 4u);
    EXPECT_LT(capped->group_count(), groups.size());
    const auto first = capped->find(digest_of(0), groups[0].second - groups[0].first);
    ASSERT_TRUE(first);
    EXPECT_EQ(*first, 0u);
    std::vector<store::ChunkId> ids;
    capped->append_ids(*first, groups[0].second, ids);
    ASSERT_EQ(ids.size(), groups[0].second);
    EXPECT_EQ(ids[0], store::chunk_id_of(std::as_bytes(std::span(chunks_[0]))));
    const std::size_t last = groups.size() - 1;
    EXPECT_FALSE(capped->find(digest_of(last), groups[last].second - groups[last].first));
    EXPECT_TRUE(all->find(digest_of(last), groups[last].second - groups[last].first));
}

TEST_F(PushGroups, OfRepeatedGroupsTheOneNearestAfterThePreviousIsFound) {
    // A stored file that repeats its content three times has each inner
    // group three times: the one at or after `near` is found (a version's
    // groups come in order, and the rows of ids they need are read once),
    // else the last before it; its ids are the group's.
    std::vector<std::uint8_t> thrice;
    for (int k = 0; k < 3; ++k) thrice.insert(thrice.end(), data_.begin(), data_.end());
    const auto p = tmp_.write("rep", thrice);
    test::local_push(dir_, {{p.string(), "rep", thrice.size()}});
    std::vector<std::pair<std::size_t, std::size_t>> groups;
    const auto request = test::group_request(chunks_, &groups);
    ASSERT_GT(groups.size(), 3u);
    const auto [begin, end] = groups[2];  // an inner group: no repetition's edge in it
    store::ChunkId digest;
    std::memcpy(digest.data(), request.groups().digests().data() + 2 * 32, 32);
    const auto s = store::Store::open(dir_);
    const auto rep = transfer::BaseGroups::open(store::Ingest::stored_list(s, "rep"));
    ASSERT_TRUE(rep);
    const std::size_t n = end - begin, per = chunks_.size();
    EXPECT_EQ(rep->find(digest, n, 0), begin);
    EXPECT_EQ(rep->find(digest, n, begin), begin);
    EXPECT_EQ(rep->find(digest, n, begin + 1), begin + per);
    EXPECT_EQ(rep->find(digest, n, per), begin + per);
    EXPECT_EQ(rep->find(digest, n, begin + per + 1), begin + 2 * per);
    EXPECT_EQ(rep->find(digest, n, 10 * per), begin + 2 * per);  // none after: the last before
    EXPECT_FALSE(rep->find(digest, n + 1, 0));                    // the count must match
    std::vector<store::ChunkId> ids;
    rep->append_ids(begin + 2 * per, n, ids);
    ASSERT_EQ(ids.size(), n);
    for (std::size_t k = 0; k < n; ++k)
        EXPECT_EQ(ids[k], store::chunk_id_of(std::as_bytes(std::span(chunks_[begin + k]))));
}

TEST_F(PushGroups, GroupListBounds) {
    auto bad = [&](const std::function<void(transfer::v1::GroupList&)>& f) {
        SetUp();
        send(test::start_request("f"));
        auto r = test::group_request(chunks_);
        f(*r.mutable_groups());
        return refused(r);
    };
    EXPECT_EQ(bad([](auto& g) { g.clear_counts(); g.clear_bytes(); g.clear_digests(); }), Code::invalid_argument);
    EXPECT_EQ(bad([](auto& g) { g.set_counts(0, 0); }), Code::invalid_argument);
    EXPECT_EQ(bad([](auto& g) { g.set_counts(0, transfer::kMaxGroupChunks + 1); }), Code::invalid_argument);
    EXPECT_EQ(bad([](auto& g) { g.set_bytes(0, g.counts(0) - 1); }), Code::invalid_argument);
    EXPECT_EQ(bad([](auto& g) { g.set_bytes(0, std::uint64_t{g.counts(0)} * 1024 + 1); }), Code::invalid_argument);
    EXPECT_EQ(bad([](auto& g) { g.mutable_digests()->pop_back(); }), Code::invalid_argument);
    EXPECT_EQ(bad([](auto& g) { g.add_counts(1); }), Code::invalid_argument);
    SetUp();
    EXPECT_EQ(refused(test::group_request(chunks_)), Code::failed_precondition);  // before start
}

TEST(PullChecks, WantsAreChecked) {
    test::TempDir tmp;
    const auto dir = make_store(tmp, "fixed-v1.0.0", 1024);
    const auto data = test::random_bytes(10'000, 31);
    const auto p = tmp.write("f", data);
    test::local_push(dir, {{p.string(), "f", data.size()}});
    transfer::PullSession s(dir, {});
    std::vector<transfer::v1::PullReply> replies;
    auto sink = [&](const transfer::v1::PullReply& r) { replies.push_back(r); };
    transfer::v1::PullRequest want;
    want.mutable_want()->set_bitmap("\x01");
    want.mutable_want()->set_count(1);
    EXPECT_EQ(code_of([&] { s.handle(want, sink); }), Code::failed_precondition);  // before start
    transfer::v1::PullRequest start;
    start.mutable_start()->set_name("f");
    s.handle(start, sink);
    ASSERT_EQ(replies.size(), 2u);  // header, list
    EXPECT_EQ(replies[0].header().size(), data.size());
    EXPECT_EQ(replies[1].chunks().sizes_size(), 10);
    want.mutable_want()->set_bitmap(std::string("\xff\xff", 2));  // bits beyond the 10 chunks
    want.mutable_want()->set_count(16);
    EXPECT_EQ(code_of([&] { s.handle(want, sink); }), Code::invalid_argument);
    want.mutable_want()->set_bitmap(std::string("\x03\x00", 2));
    want.mutable_want()->set_count(3);  // says 3, sets 2
    EXPECT_EQ(code_of([&] { s.handle(want, sink); }), Code::invalid_argument);
}

// A small file is chunked on the caller's thread (ChunkFeed::kInlineBytes):
// the same chunks and ids as the threaded feed, also when the file is
// larger or smaller than its size said (it changed since its fstat).
TEST(ChunkFeedInline, ASmallStreamCutsAsTheThreadedFeed) {
    test::TempDir tmp;
    const auto dir = make_store(tmp);
    const auto finder = transfer::client_finder(test::params_of(dir), {});
    const auto chunks_of = [&](const std::vector<std::uint8_t>& bytes, std::optional<std::uint64_t> hint,
                               std::size_t& segments) {
        std::size_t at = 0;
        FunctionReader reader([&](std::span<std::byte> buf) {
            const std::size_t n = std::min<std::size_t>({buf.size(), bytes.size() - at, 70'000});
            if (n != 0) std::memcpy(buf.data(), bytes.data() + at, n);  // (an empty vector's data() may be null)
            at += n;
            return ReadResult{n, at == bytes.size()};
        });
        transfer::ChunkFeed feed(finder, reader, std::size_t{4} << 20, hint);
        std::vector<std::pair<std::uint32_t, store::ChunkId>> out;
        segments = 0;
        while (auto* g = feed.next()) {
            ++segments;
            for (std::size_t i = 0; i < g->lengths.size(); ++i) {
                EXPECT_EQ(store::chunk_id_of(g->bytes.subspan(g->starts[i], g->lengths[i])), g->ids[i]);
                out.emplace_back(g->lengths[i], g->ids[i]);
            }
            feed.release(g);
        }
        return out;
    };
    for (const std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{100'000}, std::size_t{1} << 20}) {
        const auto bytes = test::mixed_bytes(size, 7);
        std::size_t threaded = 0, inline_segments = 0;
        const auto want = chunks_of(bytes, std::nullopt, threaded);
        EXPECT_EQ(chunks_of(bytes, size, inline_segments), want) << size;
        EXPECT_LE(inline_segments, 1u) << size;
        EXPECT_EQ(chunks_of(bytes, size / 2, inline_segments), want) << size;  // (it grew)
        EXPECT_EQ(chunks_of(bytes, size + 5000, inline_segments), want) << size;  // (it shrank)
        std::uint64_t total = 0;
        for (const auto& c : want) total += c.first;
        EXPECT_EQ(total, size);
    }
}

}  // namespace
}  // namespace cdc
