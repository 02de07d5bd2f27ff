// SPDX-License-Identifier: Apache-2.0
// The tree layer of store format 2 (issue 35 items 2 and 6): tree objects
// (deterministic, strict reader), the capture of every file type and
// metadata kind, and the round trip capture -> tree objects -> restore ->
// capture, compared field by field.
#include "tree_support.hpp"
#include "store/snapshot_names.hpp"
#include "test_support.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace cdc {
namespace {

using namespace cdc::test;
using tr::Entry;
using tr::EntryType;
using json = nlohmann::json;

tr::BlobId id_of(std::uint8_t v) {
    tr::BlobId id{};
    id.fill(v);
    return id;
}

/// Entries of every type with every field a type may have.
std::vector<Entry> every_entry() {
    std::vector<Entry> out;
    Entry f;
    f.name = "file";
    f.type = EntryType::file;
    f.mode = 04755;
    f.uid = 4242;
    f.gid = 4343;
    f.user = "someone";
    f.group = std::string("gr\xff\x01", 4);
    f.mtime_ns = 1'600'000'000'123'456'789;
    f.atime_ns = -5;  // before 1970
    f.ctime_ns = INT64_MAX;
    f.inode = UINT64_MAX;
    f.device = 0x803;
    f.size = 10 << 20;
    f.nlink = 1;
    f.xattrs = {{"security.x", std::string("\0v", 2)}, {"user.a", ""}};
    f.sparse = true;
    f.extents = {{0, 4096}, {1 << 20, 8192}, {(10 << 20) - 1, 1}};
    f.content.digest = std::string(32, '\x7f');
    f.content.chunks = {id_of(1), id_of(2)};
    out.push_back(f);
    Entry h = f;
    h.name = "hard";
    h.type = EntryType::hardlink;
    h.link = {"dir", "file"};
    h.sparse = false;
    h.extents.clear();
    h.content.chunks_are_lists = true;
    h.nlink = 2;
    out.push_back(h);
    Entry d;
    d.name = "dir";
    d.type = EntryType::directory;
    d.mode = 01777;
    d.subtree = id_of(9);
    out.push_back(d);
    Entry s;
    s.name = "link";
    s.type = EntryType::symlink;
    s.mode = 0777;
    s.target = std::string("../\x80target", 10);
    out.push_back(s);
    Entry p;
    p.name = "fifo";
    p.type = EntryType::fifo;
    p.mode = 0600;
    out.push_back(p);
    Entry c;
    c.name = "null";
    c.type = EntryType::char_device;
    c.rdev = 0x103;
    out.push_back(c);
    Entry b = c;
    b.name = "loop";
    b.type = EntryType::block_device;
    out.push_back(b);
    Entry k;
    k.name = "sock";
    k.type = EntryType::socket;
    out.push_back(k);
    Entry empty_sparse;  // a file of holes only
    empty_sparse.name = "holes";
    empty_sparse.size = 1 << 30;
    empty_sparse.sparse = true;
    out.push_back(empty_sparse);
    return out;
}

std::vector<Entry> sorted(std::vector<Entry> v) {
    std::sort(v.begin(), v.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
    return v;
}

// ---------------------------------------------------------------- tree objects

TEST(TreeObject, RoundTripsEveryTypeAndField) {
    const auto entries = every_entry();
    const auto bytes = tr::encode_tree(entries);
    const auto back = tr::parse_tree(bytes);
    EXPECT_EQ(back, sorted(entries));
    EXPECT_TRUE(tr::parse_tree(tr::encode_tree({})).empty());
}

TEST(TreeObject, IsDeterministicAndCompact) {
    auto entries = every_entry();
    const auto a = tr::encode_tree(entries);
    std::reverse(entries.begin(), entries.end());
    const auto b = tr::encode_tree(entries);
    EXPECT_EQ(a, b) << "the order of the entries given changes the bytes";
    EXPECT_EQ(tr::tree_id(a), tr::tree_id(b));
    entries[0].mtime_ns += 1;
    EXPECT_NE(tr::tree_id(tr::encode_tree(entries)), tr::tree_id(a)) << "a changed mtime leaves the id";
    // Defaults are left out: a plain file entry is a few bytes beside its name.
    Entry small;
    small.name = "x";
    small.mode = 0644;
    small.size = 5;
    EXPECT_LT(tr::encode_tree({small}).size(), 30u);
}

TEST(TreeObject, EncodeRefusesBadNamesInconsistentEntriesAndTwins) {
    for (const std::string& bad : {std::string(), std::string("."), std::string(".."), std::string("a/b"), std::string("/abs"),
                                  std::string("nul\0", 4), std::string(256, 'n')}) {
        Entry e;
        e.name = bad;
        EXPECT_THROW(tr::encode_tree({e}), tr::TreeError) << "name '" << bad << "'";
    }
    Entry a;
    a.name = "same";
    EXPECT_THROW(tr::encode_tree({a, a}), tr::TreeError);
    Entry s;
    s.name = "s";
    s.type = EntryType::symlink;  // without a target
    EXPECT_THROW(tr::encode_tree({s}), tr::TreeError);
    Entry f;
    f.name = "f";
    f.size = 100;
    f.sparse = true;
    f.extents = {{50, 60}};  // beyond the size
    EXPECT_THROW(tr::encode_tree({f}), tr::TreeError);
    f.extents = {{0, 10}, {5, 10}};  // overlapping
    EXPECT_THROW(tr::encode_tree({f}), tr::TreeError);
    Entry x;
    x.name = "x";
    x.xattrs = {{"user.b", ""}, {"user.a", ""}};  // unsorted
    EXPECT_THROW(tr::encode_tree({x}), tr::TreeError);
    Entry m;
    m.name = "m";
    m.mode = 010000;
    EXPECT_THROW(tr::encode_tree({m}), tr::TreeError);
}

TEST(TreeObject, TheDirectWriterWritesNlohmannsBytesAndTheFastReaderTakesThem) {
    // parse_tree reads the usual tree without nlohmann's DOM and compares it
    // with encode_sorted_direct's bytes: those must be encode_tree's (the
    // DOM's) for every field, every integer width and sign, every length
    // of a byte string, array and map head, or a tree would have two
    // accepted encodings.
    std::vector<std::uint64_t> widths = {0, 1, 23, 24, 255, 256, 65535, 65536, 0xffffffffull, 0x100000000ull, UINT64_MAX};
    std::vector<std::int64_t> signed_widths = {0, 1, -1, 23, 24, -24, -25, 255, 256, -256, -257, -65536, -65537,
                                               INT32_MIN, -4294967296ll, -4294967297ll, INT64_MIN, INT64_MAX};
    std::vector<std::vector<Entry>> trees = {{}, every_entry()};
    for (std::size_t i = 0; i < widths.size(); ++i) {
        Entry f;
        f.name = std::string(i == 0 ? 1 : std::min<std::size_t>(widths[i] % 300 + 1, 255), 'a');
        f.size = widths[i];
        f.inode = widths[i];
        f.device = widths[i];
        f.nlink = widths[i];
        f.uid = static_cast<std::uint32_t>(std::min<std::uint64_t>(widths[i], UINT32_MAX));
        f.gid = f.uid;
        f.mtime_ns = signed_widths[i % signed_widths.size()];
        f.atime_ns = signed_widths[(i + 5) % signed_widths.size()];
        f.ctime_ns = signed_widths[(i + 11) % signed_widths.size()];
        f.content.digest = std::string(i * 7, 'd');
        f.user = std::string(i * 3, 'u');
        trees.push_back({f});
    }
    for (const std::int64_t v : signed_widths) {
        Entry f;
        f.name = "t";
        f.mtime_ns = v;
        trees.push_back({f});
    }
    // Byte strings and arrays across their head widths: 23/24 and 255/256 long.
    for (const std::size_t n : {std::size_t{23}, std::size_t{24}, std::size_t{255}, std::size_t{256}, std::size_t{65536}, std::size_t{70000}}) {
        Entry s;
        s.name = "s";
        s.type = EntryType::symlink;
        s.target = std::string(std::min<std::size_t>(n, 4095), 'x');
        Entry f;
        f.name = "f";
        f.content.chunks.assign(std::min<std::size_t>(n, 300), id_of(3));
        f.xattrs = {{"user.v", std::string(std::min<std::size_t>(n, 65536), 'v')}};
        f.content.digest = std::string(n, 'd');
        trees.push_back({f, s});
    }
    std::vector<Entry> many;  // an entry list of 300 (a two-byte array head)
    for (int i = 0; i < 300; ++i) {
        Entry f;
        f.name = std::to_string(1000 + i);
        many.push_back(f);
    }
    trees.push_back(many);
    for (const auto& t : trees) {
        const auto bytes = tr::encode_tree(t);
        EXPECT_EQ(tr::detail::encode_sorted_dom(sorted(t)), bytes);
        EXPECT_EQ(tr::detail::encode_sorted_direct(sorted(t)), bytes);
        const auto fast = tr::detail::parse_plain(bytes);
        ASSERT_TRUE(fast.has_value());
        EXPECT_EQ(*fast, sorted(t));
    }
}

TEST(TreeObject, RejectsEveryTruncation) {
    const auto bytes = tr::encode_tree(every_entry());
    for (std::size_t n = 0; n < bytes.size(); ++n)
        EXPECT_THROW(tr::parse_tree(std::span(bytes.data(), n)), tr::TreeError) << "a prefix of " << n << " bytes was read";
    auto longer = bytes;
    longer.push_back(0);
    EXPECT_THROW(tr::parse_tree(longer), tr::TreeError) << "a trailing byte was accepted";
}

TEST(TreeObject, GarbledBytesAreRejectedOrCanonical) {
    // Every byte changed in three ways: either a TreeError, or another valid
    // tree whose encoding is exactly the garbled bytes (a name or a value
    // changed in place). Never another exception, never a crash.
    const auto bytes = tr::encode_tree(every_entry());
    std::size_t rejected = 0;
    for (std::size_t i = 0; i < bytes.size(); ++i)
        for (const std::uint8_t x : {std::uint8_t{0x01}, std::uint8_t{0x80}, std::uint8_t{0xff}}) {
            auto g = bytes;
            g[i] ^= x;
            try {
                const auto entries = tr::parse_tree(g);
                std::vector<Entry> copy = entries;
                // Bad names are read (the restore refuses them): compare raw.
                const bool bad_name = std::any_of(entries.begin(), entries.end(), [](const Entry& e) { return !tr::name_problem(e.name).empty(); });
                if (!bad_name) {
                    EXPECT_EQ(tr::encode_tree(copy), g) << "byte " << i << " ^ " << int(x);
                }
            } catch (const tr::TreeError&) {
                ++rejected;
            }
        }
    EXPECT_GT(rejected, bytes.size());  // most changes break the layout
}

/// The canonical bytes of `top` (a hand-made layout) as CBOR.
std::vector<std::uint8_t> cbor(const json& top) { return json::to_cbor(top); }

json bin(std::string_view s) { return json::binary(std::vector<std::uint8_t>(s.begin(), s.end())); }

json good_entry() { return json{{"n", bin("a")}, {"t", 0}}; }

std::string parse_error(const std::vector<std::uint8_t>& b) {
    try {
        tr::parse_tree(b);
    } catch (const tr::TreeError& e) {
        return e.what();
    }
    return "(accepted)";
}

TEST(TreeObject, RejectsMalformedLayoutsWithAClearError) {
    auto top = [](json entries) { return json{{"e", std::move(entries)}, {"v", 1}}; };
    EXPECT_EQ(parse_error(cbor(top(json::array({good_entry()})))), "(accepted)");
    struct Case {
        json tree;
        const char* expect;
    };
    json two_names = json::array({good_entry(), good_entry()});
    json unsorted = json::array({json{{"n", bin("b")}, {"t", 0}}, good_entry()});
    std::vector<Case> cases = {
        {json::array(), "not a map"},
        {json{{"e", json::array()}}, "no format version"},
        {json{{"e", json::array()}, {"v", 2}}, "format 2"},
        {json{{"v", 1}}, "no entry list"},
        {json{{"e", json::array()}, {"v", 1}, {"z", 0}}, "unknown field 'z'"},
        {top(json::array({json{{"t", 0}}})), "no name"},
        {top(json::array({json{{"n", bin("a")}}})), "no type"},
        {top(json::array({json{{"n", "text"}, {"t", 0}}})), "not a byte string"},
        {top(json::array({json{{"n", bin("a")}, {"t", 8}}})), "field 't' is 8"},
        {top(json::array({json{{"n", bin("a")}, {"t", 0}, {"m", 010000}}})), "field 'm'"},
        {top(json::array({json{{"n", bin("a")}, {"t", 0}, {"u", 1ull << 32}}})), "field 'u'"},
        {top(json::array({json{{"n", bin("a")}, {"t", 0}, {"M", 1.5}}})), "field 'M'"},
        {top(json::array({json{{"n", bin("a")}, {"t", 0}, {"q", 1}}})), "unknown field 'q'"},
        {top(json::array({json{{"n", bin("a")}, {"t", 1}}})), "without its subtree id"},
        {top(json::array({json{{"n", bin("a")}, {"t", 1}, {"T", bin("short")}}})), "an id is 32"},
        {top(json::array({json{{"n", bin("a")}, {"t", 0}, {"T", bin(std::string(32, 'x'))}}})), "not a directory"},
        {top(json::array({json{{"n", bin("a")}, {"t", 2}}})), "without a target"},
        {top(json::array({json{{"n", bin("a")}, {"t", 3}}})), "without the path"},
        {top(json::array({json{{"n", bin("a")}, {"t", 3}, {"k", json::array({bin("..")})}}})), "component is bad"},
        {top(json::array({json{{"n", bin("a")}, {"t", 0}, {"s", 10}, {"h", json::array({0, 20})}}})), "beyond the size"},
        {top(json::array({json{{"n", bin("a")}, {"t", 0}, {"s", 10}, {"h", json::array({0})}}})), "pairs"},
        {top(json::array({json{{"n", bin("a")}, {"t", 0}, {"x", json::array({json::array({bin("user.a")})})}}})), "pair"},
        {top(json::array({json{{"n", bin("a")}, {"t", 0}, {"x", json::array({json::array({bin(""), bin("")})})}}})), "empty name"},
        {top(json::array({json{{"n", bin("a")}, {"t", 0}, {"c", json::array({bin("123")})}}})), "an id is 32"},
        {top(json::array({json{{"n", bin("a")}, {"t", 0}, {"L", 1}}})), "not a boolean"},
        {top(json::array({json{{"n", bin("a")}, {"t", 4}, {"s", 3}}})), "not a file"},
        {top(json::array({json{{"n", bin("a")}, {"t", 0}, {"r", 3}}})), "not a device"},
        {top(two_names), "sorted and unique"},
        {top(unsorted), "sorted and unique"},
        {top(json::array({json{{"n", bin("a")}, {"t", 0}, {"m", 0}}})), "canonical"},  // a default written out
        {top(json::array({json{{"n", bin("a")}, {"t", 0}, {"L", false}}})), "canonical"},
        {top(json::array({json{{"n", bin("a")}, {"t", 0}, {"h", json::array()}, {"s", 0}}})), "canonical"},
    };
    for (const Case& c : cases) {
        const std::string got = parse_error(cbor(c.tree));
        EXPECT_NE(got.find(c.expect), std::string::npos) << c.tree.dump() << " -> " << got;
        EXPECT_EQ(got.rfind("tree object: ", 0), 0u) << got;
    }
}

TEST(TreeObject, RejectsNonCanonicalEncodings) {
    Entry a;
    a.name = "a";
    a.mode = 0644;
    const auto good = tr::encode_tree({a});
    ASSERT_NO_THROW(tr::parse_tree(good));
    // The version 1 as a two-byte integer (0x18 0x01) instead of one byte.
    auto b = good;
    ASSERT_EQ(b.back(), 0x01);
    b.back() = 0x18;
    b.push_back(0x01);
    EXPECT_NE(parse_error(b).find("canonical"), std::string::npos) << parse_error(b);
    // A key twice: {"e": [...], "v": 1, "v": 1} (map of 3).
    auto twice = good;
    ASSERT_EQ(twice[0], 0xa2);
    twice[0] = 0xa3;
    for (const std::uint8_t x : {std::uint8_t{0x61}, std::uint8_t{'v'}, std::uint8_t{0x01}}) twice.push_back(x);
    EXPECT_NE(parse_error(twice).find("canonical"), std::string::npos) << parse_error(twice);
    // An indefinite-length array for the entries.
    const std::vector<std::uint8_t> indefinite = {0xa2, 0x61, 'e', 0x9f, 0xff, 0x61, 'v', 0x01};
    EXPECT_NE(parse_error(indefinite).find("canonical"), std::string::npos) << parse_error(indefinite);
    // A tag before the map.
    std::vector<std::uint8_t> tagged = {0xd8, 0x20};
    tagged.insert(tagged.end(), good.begin(), good.end());
    EXPECT_NE(parse_error(tagged).find("not CBOR"), std::string::npos) << parse_error(tagged);
}

TEST(TreeObject, RejectsDeepNestingWithoutRecursingIntoIt) {
    // A million nested arrays: from_cbor would recurse a million times.
    std::vector<std::uint8_t> deep = {0xa2, 0x61, 'e'};
    deep.insert(deep.end(), 1'000'000, 0x81);
    deep.push_back(0x00);
    const std::string got = parse_error(deep);
    EXPECT_NE(got.find("nested deeper"), std::string::npos) << got;
    // Lengths announced far beyond the input.
    const std::vector<std::uint8_t> huge_array = {0xa2, 0x61, 'e', 0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    EXPECT_NE(parse_error(huge_array).find("not CBOR"), std::string::npos);
    const std::vector<std::uint8_t> huge_bytes = {0xa1, 0x61, 'n', 0x5b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    EXPECT_NE(parse_error(huge_bytes).find("not CBOR"), std::string::npos);
}

TEST(TreeObject, ReadsBadNamesForTheRestoreToRefuseOneByOne) {
    // Written by hand (encode_tree refuses them): read, so that the restore
    // refuses those entries and restores their siblings.
    json entries = json::array();
    for (const std::string& n : {std::string(""), std::string("."), std::string(".."), std::string("../up"), std::string("/abs"),
                                std::string("a/b"), std::string("ok")})
        entries.push_back(json{{"n", bin(n)}, {"t", 0}});
    const auto b = cbor(json{{"e", entries}, {"v", 1}});
    const auto got = tr::parse_tree(b);
    ASSERT_EQ(got.size(), 7u);
    EXPECT_EQ(got[2].name, "..");
    EXPECT_EQ(got.back().name, "ok");
}

// ---------------------------------------------------------------- capture

const Entry* find(const std::vector<Entry>& v, std::string_view name) {
    for (const Entry& e : v)
        if (e.name == name) return &e;
    return nullptr;
}

std::string xattr_value(const Entry& e, std::string_view name) {
    for (const tr::Xattr& x : e.xattrs)
        if (x.name == name) return x.value;
    return "(absent)";
}

TEST(Capture, EveryTypeAndMetadataKind) {
    TempDir tmp;
    const fs::path top = tmp.path() / "src";
    const FullTree made = make_full_tree(top);
    MemoryTrees mem;
    const Entry root = tr::capture(top, mem);
    EXPECT_TRUE(mem.problems.empty()) << problems_text(mem.problems);
    EXPECT_EQ(root.type, EntryType::directory);
    EXPECT_EQ(root.name, "src");
    EXPECT_EQ(root.mtime_ns, 1'700'000'000'500'000'005);
    EXPECT_EQ(root.atime_ns, 1'700'000'000'000'000'003) << "capturing moved the root's atime";
    const auto top_entries = mem.tree(root.subtree);
    std::vector<std::string> names;
    for (const Entry& e : top_entries) names.push_back(e.name);
    std::vector<std::string> expect = {"dir", "empty", "empty.bin", "fifo", "hard0", "links", "pair_a", "pair_b", "plain.txt",
                                       "sock", "sparse.img"};
    if (made.devices) expect = {"dir", "empty", "empty.bin", "fifo", "hard0", "links", "loop", "null", "pair_a", "pair_b",
                                "plain.txt", "sock", "sparse.img"};
    EXPECT_EQ(names, expect);

    const Entry& plain = *find(top_entries, "plain.txt");
    EXPECT_EQ(plain.type, EntryType::file);
    EXPECT_EQ(plain.mode, 04755u);
    EXPECT_EQ(plain.size, 12u);
    EXPECT_EQ(plain.nlink, 1u);
    EXPECT_EQ(plain.uid, ::geteuid());
    EXPECT_EQ(mem.content(plain), "hello, tree\n");
    EXPECT_EQ(xattr_value(plain, "user.note"), "a note");
    EXPECT_EQ(xattr_value(plain, "user.bin"), std::string("\0\x01\xff", 3));
    EXPECT_EQ(find(top_entries, "empty")->mode, 01777u);
    EXPECT_EQ(find(top_entries, "empty.bin")->size, 0u);
    EXPECT_TRUE(find(top_entries, "empty.bin")->content.chunks.empty());
    EXPECT_EQ(find(top_entries, "fifo")->type, EntryType::fifo);
    EXPECT_EQ(find(top_entries, "fifo")->mode, 0620u);
    EXPECT_EQ(find(top_entries, "sock")->type, EntryType::socket);
    if (made.devices) {
        EXPECT_EQ(find(top_entries, "null")->type, EntryType::char_device);
        EXPECT_EQ(find(top_entries, "null")->rdev, makedev(1, 3));
        EXPECT_EQ(find(top_entries, "loop")->type, EntryType::block_device);
        EXPECT_EQ(find(top_entries, "loop")->rdev, makedev(7, 200));
    }
    // Sparse: data at 1 MiB and 3 MiB, holes around; the content is the data only.
    const Entry& sparse = *find(top_entries, "sparse.img");
    EXPECT_EQ(sparse.size, 6u << 20);
    ASSERT_TRUE(sparse.sparse);
    ASSERT_EQ(sparse.extents.size(), 2u);
    EXPECT_LE(sparse.extents[0].offset, 1u << 20);
    EXPECT_GE(sparse.extents[0].offset + sparse.extents[0].length, (1u << 20) + 8192);
    EXPECT_LT(sparse.extents[1].offset + sparse.extents[1].length, 6u << 20);
    EXPECT_EQ(mem.content(sparse).size(), tr::data_length(sparse));
    // Hard links: the first in capture order (dir/hard1) is the file; the others name it.
    const auto dir = mem.tree(find(top_entries, "dir")->subtree);
    const Entry& hard1 = *find(dir, "hard1");
    EXPECT_EQ(hard1.type, EntryType::file);
    EXPECT_EQ(hard1.nlink, 3u);
    const Entry& hard0 = *find(top_entries, "hard0");
    // "hard0" sorts after "dir", so dir/hard1 was captured first.
    EXPECT_EQ(hard0.type, EntryType::hardlink);
    EXPECT_EQ(hard0.link, (std::vector<std::string>{"dir", "hard1"}));
    EXPECT_EQ(hard0.content, hard1.content);
    EXPECT_EQ(find(top_entries, "pair_b")->link, std::vector<std::string>{"pair_a"});
    const auto links = mem.tree(find(top_entries, "links")->subtree);
    EXPECT_EQ(find(links, "hard2")->type, EntryType::hardlink);
    EXPECT_EQ(find(links, "rel")->target, "../plain.txt");
    EXPECT_EQ(find(links, "abs")->target, "/etc/hostname");
    EXPECT_EQ(find(links, "long")->target, std::string(3000, 'x'));
    EXPECT_EQ(find(links, "todir")->type, EntryType::symlink) << "a link to a directory was followed";
    EXPECT_EQ(find(links, "rel")->mtime_ns, 1'500'000'000'999'999'999);
    EXPECT_EQ(find(links, "rel")->atime_ns, 1'500'000'000'000'000'001);
    // ACLs as their xattrs, byte for byte.
    const auto sub = mem.tree(find(dir, "sub")->subtree);
    EXPECT_EQ(find(dir, "sub")->mode, 0750u);
    EXPECT_NE(xattr_value(*find(dir, "sub"), "system.posix_acl_default"), "(absent)");
    const auto deeper = mem.tree(find(sub, "deeper")->subtree);
    EXPECT_EQ(xattr_value(*find(deeper, "leaf"), "system.posix_acl_access"),
              acl_xattr({{kAclUserObj, 6, kAclNoId}, {kAclUser, 4, 4242}, {kAclGroupObj, 4, kAclNoId},
                         {kAclMask, 4, kAclNoId}, {kAclOther, 0, kAclNoId}}));
    EXPECT_EQ(find(dir, std::string(255, 'L'))->size, 9u);
    if (made.root) {
        const Entry& big = *find(dir, "big.bin");
        EXPECT_EQ(big.uid, 4242u);
        EXPECT_EQ(big.gid, 4343u);
        EXPECT_EQ(big.mode, 02640u);
        EXPECT_EQ(xattr_value(big, "trusted.root"), "root only");
        EXPECT_EQ(xattr_value(*find(links, "rel"), "trusted.onlink"), "on a symlink");
        EXPECT_EQ(xattr_value(*find(top_entries, "fifo"), "trusted.onfifo"), "on a fifo");
        EXPECT_EQ(find(links, "rel")->uid, 4244u);
        EXPECT_EQ(plain.user, "root");
        EXPECT_EQ(big.user, "") << "uid 4242 has no name here";
    }
}

TEST(Capture, NeverFollowsALinkGivenAsTheRoot) {
    TempDir tmp;
    fs::create_directories(tmp.path() / "real");
    write_bytes(tmp.path() / "real/f", "x");
    fs::create_directory_symlink("real", tmp.path() / "alias");
    MemoryTrees mem;
    const Entry e = tr::capture(tmp.path() / "alias", mem);
    EXPECT_EQ(e.type, EntryType::symlink);
    EXPECT_EQ(e.target, "real");
    const Entry d = tr::capture(tmp.path() / "real/", mem);
    EXPECT_EQ(d.name, "real");
    EXPECT_EQ(d.type, EntryType::directory);
}

TEST(Capture, ReportsWhatItCannotTakeAndKeepsTheRest) {
    TempDir tmp;
    const fs::path top = tmp.path() / "t";
    fs::create_directories(top);
    for (const char* n : {"a", "b", "c", "d"}) write_bytes(top / n, n);
    MemoryTrees mem;
    mem.on_file = [&](tr::Entry& e, std::string_view) {
        if (e.name == "a") fs::remove(top / "b");  // b vanishes before its turn
        if (e.name == "c") throw tr::Unreadable(EIO, "cannot read it: Input/output error");
    };
    const Entry root = tr::capture(top, mem);
    const auto entries = mem.tree(root.subtree);
    ASSERT_EQ(entries.size(), 2u);
    EXPECT_EQ(entries[0].name, "a");
    EXPECT_EQ(entries[1].name, "d");
    ASSERT_EQ(mem.problems.size(), 2u) << problems_text(mem.problems);
    EXPECT_EQ(mem.problems[0].path, "b");
    EXPECT_EQ(mem.problems[0].error, ENOENT);
    EXPECT_TRUE(mem.problems[0].skipped);
    EXPECT_EQ(mem.problems[1].path, "c");
    EXPECT_EQ(mem.problems[1].error, EIO);
}

/// A file and a directory the capturing user cannot read: named with
/// EACCES, left out. Root reads everything, so as root this runs as nobody.
bool unreadable_reported(const fs::path& top) {
    MemoryTrees mem;
    const Entry root = tr::capture(top, mem);
    const auto entries = mem.tree(root.subtree);
    bool ok = entries.size() == 1 && entries[0].name == "ok" && mem.problems.size() == 2 &&
              mem.problems[0].path == "closed" && mem.problems[0].error == EACCES && mem.problems[1].path == "secret" &&
              mem.problems[1].error == EACCES;
    if (!ok) std::fprintf(stderr, "%zu entries; problems:\n%s", entries.size(), problems_text(mem.problems).c_str());
    return ok;
}

TEST(Capture, AFileItCannotReadIsNamedWithItsErrno) {
    TempDir tmp;
    const fs::path top = tmp.path() / "t";
    fs::create_directories(top / "closed");
    write_bytes(top / "ok", "ok");
    write_bytes(top / "secret", "s");
    ::chmod((top / "secret").c_str(), 0);
    ::chmod((top / "closed").c_str(), 0);
    ::chmod(tmp.path().c_str(), 0755);
    ::chmod(top.c_str(), 0755);
    if (::geteuid() == 0) {
        // Root bypasses permissions: the documented non-root behaviour is
        // checked as nobody.
        EXPECT_EQ(run_as_nobody([&] { return unreadable_reported(top); }), 0);
        MemoryTrees mem;
        const Entry root = tr::capture(top, mem);
        EXPECT_EQ(mem.tree(root.subtree).size(), 3u) << "root reads what others cannot";
    } else {
        EXPECT_TRUE(unreadable_reported(top));
    }
}

// ---------------------------------------------------------------- round trip

TEST(RoundTrip, EveryTypeAndMetadataKindComesBackTheSame) {
    TempDir tmp;
    const fs::path src = tmp.path() / "src";
    const FullTree made = make_full_tree(src);
    MemoryTrees before;
    const Entry root = tr::capture(src, before);
    ASSERT_TRUE(before.problems.empty()) << problems_text(before.problems);

    const fs::path out = tmp.path() / "out";
    tr::RestoreOptions options;
    options.setid = true;  // as root the default; asked for otherwise
    const tr::RestoreReport report = tr::restore(out, root, before.source(), options);
    // Everything restored; the socket reported as not restorable.
    ASSERT_EQ(report.problems.size(), 1u) << problems_text(report);
    EXPECT_EQ(report.problems[0].path, "sock");
    EXPECT_EQ(report.problems[0].kind, tr::RestoreProblem::Kind::not_restored);
    EXPECT_TRUE(report.complete());
    EXPECT_EQ(report.hardlinks, 3u);  // hard0, links/hard2, pair_b
    EXPECT_EQ(report.symlinks, 5u);
    EXPECT_EQ(report.specials, made.devices ? 3u : 1u);

    MemoryTrees after;
    const Entry back = tr::capture(out, after);
    ASSERT_TRUE(after.problems.empty()) << problems_text(after.problems);
    std::vector<std::string> diffs;
    diff_trees(before, root, after, back, "", diffs);
    // The socket is the one difference.
    EXPECT_EQ(diffs, std::vector<std::string>{"sock: only in the first"});

    // Holes stayed holes: the 6 MiB file holds about its 16 KiB of data.
    struct stat st {};
    ASSERT_EQ(::stat((out / "sparse.img").c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 6 << 20);
    EXPECT_LT(st.st_blocks * 512, 1 << 20) << "the holes were written as zeros";
    // The three links of the group are one inode.
    struct stat a {}, b {}, c {};
    ASSERT_EQ(::stat((out / "dir/hard1").c_str(), &a), 0);
    ASSERT_EQ(::stat((out / "links/hard2").c_str(), &b), 0);
    ASSERT_EQ(::stat((out / "hard0").c_str(), &c), 0);
    EXPECT_EQ(a.st_ino, b.st_ino);
    EXPECT_EQ(a.st_ino, c.st_ino);
    EXPECT_EQ(a.st_nlink, 3u);

    // The comparison sees a difference where there is one.
    ASSERT_EQ(::chmod((out / "plain.txt").c_str(), 0755), 0);
    set_xattr(out / "dir", "user.dir", "changed");
    write_bytes(out / "dir/sub/deeper/leaf", "lea!");
    MemoryTrees again;
    const Entry changed = tr::capture(out, again);
    diffs.clear();
    diff_trees(before, root, again, changed, "", diffs);
    // (The links' atimes moved too: the capture above read their targets.)
    EXPECT_EQ(diffs, (std::vector<std::string>{"dir: xattrs", "dir/sub/deeper/leaf: mtime", "dir/sub/deeper/leaf: content bytes",
                                               "links/abs: atime", "links/dangling: atime", "links/long: atime",
                                               "links/rel: atime", "links/todir: atime", "plain.txt: mode",
                                               "sock: only in the first"}));
}

TEST(RoundTrip, TreeObjectsOfAnUnchangedSubtreeAreTheSame) {
    TempDir tmp;
    const fs::path src = tmp.path() / "src";
    make_full_tree(src);
    // Reading a symlink moves its atime (readlink has no O_NOATIME; with
    // relatime once, then at most once a day): a first capture settles them.
    MemoryTrees settle;
    tr::capture(src, settle);
    MemoryTrees one;
    const Entry r1 = tr::capture(src, one);
    write_bytes(src / "plain.txt", "changed!\n");
    MemoryTrees two;
    const Entry r2 = tr::capture(src, two);
    EXPECT_NE(r1.subtree, r2.subtree);
    const auto t1 = one.tree(r1.subtree);
    const auto t2 = two.tree(r2.subtree);
    EXPECT_EQ(find(t1, "links")->subtree, find(t2, "links")->subtree) << "an unchanged directory got a new tree object";
    EXPECT_EQ(find(t1, "dir")->subtree, find(t2, "dir")->subtree);
}

// A tree stream split into its records by lengths it carries itself
// (untrusted: a push's trees, a damaged manifest): every whole record in
// order, and a stream whose end is not a whole record named as truncated,
// never read beyond.
TEST(TreeRecords, SplitByTheirOwnLengthsNeverBeyondTheStream) {
    auto record = [](std::uint8_t tag, std::string_view object, std::uint32_t declared) {
        std::string r(32, static_cast<char>(tag));
        for (int i = 0; i < 4; ++i) r.push_back(static_cast<char>((declared >> (8 * i)) & 0xff));
        r.append(object);
        return r;
    };
    auto split = [](const std::string& stream) {
        std::vector<std::pair<std::size_t, std::string>> seen;
        const std::string problem = store::detail::for_each_tree_record(
            stream, [&](const store::detail::TreeRecord& r) {
                EXPECT_EQ(r.id[0], static_cast<std::uint8_t>(stream[r.at]));
                seen.emplace_back(r.at, std::string(r.object));
            });
        return std::pair{seen, problem};
    };
    const std::string a = record(1, "first", 5), b = record(2, "", 0), c = record(3, std::string(300, 'x'), 300);
    auto [seen, problem] = split(a + b + c);
    EXPECT_EQ(problem, "");
    ASSERT_EQ(seen.size(), 3u);
    EXPECT_EQ(seen[0], (std::pair<std::size_t, std::string>{0, "first"}));
    EXPECT_EQ(seen[1], (std::pair<std::size_t, std::string>{a.size(), ""}));
    EXPECT_EQ(seen[2].first, a.size() + b.size());
    EXPECT_EQ(seen[2].second.size(), 300u);
    EXPECT_EQ(split("").second, "");
    // a head cut short, a length beyond the stream, the largest length
    for (const std::string& bad : {a + std::string(20, '\1'), a + record(4, "abc", 4), a + record(5, "abc", 0xffffffffu),
                                   a.substr(0, a.size() - 1)}) {
        const auto [part, why] = split(bad);
        EXPECT_EQ(why, "a truncated tree record") << bad.size();
        EXPECT_LE(part.size(), 1u);
    }
    // the length is little-endian whatever the host: 0x0100 bytes, not 0x00010000
    const std::string le = record(6, std::string(256, 'y'), 256);
    EXPECT_EQ(static_cast<unsigned char>(le[33]), 1u);
    EXPECT_EQ(split(le).first.at(0).second.size(), 256u);
}

}  // namespace
}  // namespace cdc
