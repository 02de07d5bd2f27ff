// SPDX-License-Identifier: Apache-2.0
// Tree objects as CBOR (tree_object.hpp: the layout and why).
#include "tree_object.hpp"

#include <cdc/digest.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

namespace cdc::store::tree {

namespace {

using json = nlohmann::json;
using Bytes = std::vector<std::uint8_t>;

/// The deepest nesting of the layout: the object, "e", an entry, "x", a pair.
constexpr std::size_t kMaxDepth = 5;

json bytes_of(std::string_view s) { return json::binary(Bytes(s.begin(), s.end())); }
json bytes_of(const BlobId& id) { return json::binary(Bytes(id.begin(), id.end())); }

/// A name for messages: printable ASCII as is, any other byte as \xHH.
std::string shown(std::string_view s) {
    std::string out;
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u < 0x7f && c != '\\')
            out.push_back(c);
        else
            out += fmt::format("\\x{:02x}", u);
    }
    return out;
}

json entry_json(const Entry& e) {
    json j = json::object();
    j["n"] = bytes_of(e.name);
    j["t"] = static_cast<std::uint64_t>(e.type);
    auto uint = [&](const char* key, std::uint64_t v) {
        if (v != 0) j[key] = v;
    };
    auto sint = [&](const char* key, std::int64_t v) {
        if (v != 0) j[key] = v;
    };
    auto text = [&](const char* key, const std::string& v) {
        if (!v.empty()) j[key] = bytes_of(v);
    };
    uint("m", e.mode);
    uint("u", e.uid);
    uint("g", e.gid);
    text("U", e.user);
    text("G", e.group);
    sint("M", e.mtime_ns);
    sint("A", e.atime_ns);
    sint("C", e.ctime_ns);
    uint("i", e.inode);
    uint("d", e.device);
    uint("s", e.size);
    uint("N", e.nlink);
    uint("r", e.rdev);
    text("l", e.target);
    if (!e.link.empty()) {
        json a = json::array();
        for (const std::string& c : e.link) a.push_back(bytes_of(c));
        j["k"] = std::move(a);
    }
    if (!e.xattrs.empty()) {
        json a = json::array();
        for (const Xattr& x : e.xattrs) a.push_back(json::array({bytes_of(x.name), bytes_of(x.value)}));
        j["x"] = std::move(a);
    }
    if (e.sparse) {
        json a = json::array();
        for (const Extent& x : e.extents) {
            a.push_back(x.offset);
            a.push_back(x.length);
        }
        j["h"] = std::move(a);
    }
    text("D", e.content.digest);
    if (!e.content.chunks.empty()) {
        json a = json::array();
        for (const BlobId& id : e.content.chunks) a.push_back(bytes_of(id));
        j["c"] = std::move(a);
    }
    if (e.content.chunks_are_lists) j["L"] = true;
    if (e.type == EntryType::directory) j["T"] = bytes_of(e.subtree);
    return j;
}

/// The bytes of sorted entries, names unjudged (the reader's comparison).
Bytes encode_sorted(const std::vector<Entry>& entries) {
    json a = json::array();
    for (const Entry& e : entries) a.push_back(entry_json(e));
    json top = json::object();
    top["e"] = std::move(a);
    top["v"] = kTreeFormat;
    return json::to_cbor(top);
}

// ---------------------------------------------------------------- reading

/// nlohmann's DOM reader, with the nesting bounded before anything deeper is
/// built (from_cbor recurses once per level: a hostile input of a million
/// nested arrays would exhaust the stack) and the first error kept.
class BoundedBuilder : public nlohmann::json_sax<json> {
public:
    explicit BoundedBuilder(json& root) : root_(root) {}
    const std::string& error() const { return error_; }

    bool null() override { return put(json(nullptr)); }
    bool boolean(bool v) override { return put(json(v)); }
    bool number_integer(number_integer_t v) override { return put(json(v)); }
    bool number_unsigned(number_unsigned_t v) override { return put(json(v)); }
    bool number_float(number_float_t v, const string_t&) override { return put(json(v)); }
    bool string(string_t& v) override { return put(json(std::move(v))); }
    bool binary(binary_t& v) override { return put(json::binary(std::move(v))); }
    bool start_object(std::size_t) override { return open(json::object()); }
    bool key(string_t& k) override {
        key_ = std::move(k);
        return true;
    }
    bool end_object() override { return close(); }
    bool start_array(std::size_t) override { return open(json::array()); }
    bool end_array() override { return close(); }
    bool parse_error(std::size_t, const std::string&, const nlohmann::json::exception& ex) override {
        if (error_.empty()) error_ = ex.what();
        return false;
    }

private:
    json* put(json v) {
        if (stack_.empty()) {
            root_ = std::move(v);
            return &root_;
        }
        json& top = *stack_.back();
        if (top.is_array()) {
            top.push_back(std::move(v));
            return &top.back();
        }
        // A key twice: the later value wins here and the comparison with the
        // canonical bytes rejects the object.
        json& slot = top[key_];
        slot = std::move(v);
        return &slot;
    }
    bool open(json v) {
        if (stack_.size() >= kMaxDepth) {
            error_ = fmt::format("nested deeper than the {} levels of a tree object", kMaxDepth);
            return false;
        }
        stack_.push_back(put(std::move(v)));
        return true;
    }
    bool close() {
        stack_.pop_back();
        return true;
    }

    json& root_;
    std::vector<json*> stack_;
    std::string key_;
    std::string error_;
};

class Reader {
public:
    Reader(std::size_t index, const json& j) : index_(index), j_(j) {}

    [[noreturn]] void fail(const std::string& why) const {
        throw TreeError(fmt::format("tree object: entry {}{}: {}", index_, name_.empty() ? std::string() : fmt::format(" ('{}')", shown(name_)), why));
    }
    const json* find(const char* key) const {
        const auto it = j_.find(key);
        return it == j_.end() ? nullptr : &*it;
    }
    std::uint64_t u64(const char* key, std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) const {
        const json* v = find(key);
        if (v == nullptr) return 0;
        if (!v->is_number_unsigned()) fail(fmt::format("field '{}' is not an unsigned integer", key));
        const auto n = v->get<std::uint64_t>();
        if (n > max) fail(fmt::format("field '{}' is {}, at most {}", key, n, max));
        return n;
    }
    std::int64_t i64(const char* key) const {
        const json* v = find(key);
        if (v == nullptr) return 0;
        if (v->is_number_integer() && !v->is_number_unsigned()) return v->get<std::int64_t>();
        if (v->is_number_unsigned() && v->get<std::uint64_t>() <= static_cast<std::uint64_t>(INT64_MAX))
            return static_cast<std::int64_t>(v->get<std::uint64_t>());
        fail(fmt::format("field '{}' is not a 64-bit integer", key));
    }
    std::string bytes(const json& v, const char* what) const {
        if (!v.is_binary()) fail(fmt::format("{} is not a byte string", what));
        const auto& b = v.get_binary();
        return std::string(b.begin(), b.end());
    }
    std::string bytes(const char* key) const {
        const json* v = find(key);
        return v == nullptr ? std::string() : bytes(*v, fmt::format("field '{}'", key).c_str());
    }
    BlobId id(const json& v, const char* what) const {
        const std::string b = bytes(v, what);
        if (b.size() != BlobId{}.size()) fail(fmt::format("{} is {} bytes, an id is 32", what, b.size()));
        BlobId out{};
        std::memcpy(out.data(), b.data(), out.size());
        return out;
    }
    const json& array(const char* key) const {
        const json* v = find(key);
        if (!v->is_array()) fail(fmt::format("field '{}' is not an array", key));
        return *v;
    }
    void set_name(std::string n) { name_ = std::move(n); }

private:
    std::size_t index_;
    const json& j_;
    std::string name_;
};

Entry entry_of(std::size_t index, const json& j) {
    Reader r(index, j);
    if (!j.is_object()) r.fail("not a map");
    static constexpr std::string_view kKeys = "nmugUGMACidsNrlkxhDcLTt";
    for (const auto& [k, v] : j.items()) {
        (void)v;
        if (k.size() != 1 || kKeys.find(k[0]) == std::string_view::npos) r.fail(fmt::format("unknown field '{}'", shown(k)));
    }
    if (r.find("n") == nullptr) r.fail("no name (field 'n')");
    Entry e;
    e.name = r.bytes("n");
    r.set_name(e.name);
    if (r.find("t") == nullptr) r.fail("no type (field 't')");
    e.type = static_cast<EntryType>(r.u64("t", kEntryTypeCount - 1));
    e.mode = static_cast<std::uint32_t>(r.u64("m", 07777));
    e.uid = static_cast<std::uint32_t>(r.u64("u", UINT32_MAX));
    e.gid = static_cast<std::uint32_t>(r.u64("g", UINT32_MAX));
    e.user = r.bytes("U");
    e.group = r.bytes("G");
    e.mtime_ns = r.i64("M");
    e.atime_ns = r.i64("A");
    e.ctime_ns = r.i64("C");
    e.inode = r.u64("i");
    e.device = r.u64("d");
    e.size = r.u64("s");
    e.nlink = r.u64("N");
    e.rdev = r.u64("r");
    e.target = r.bytes("l");
    if (r.find("k") != nullptr)
        for (const json& c : r.array("k")) e.link.push_back(r.bytes(c, "a component of 'k'"));
    if (r.find("x") != nullptr)
        for (const json& p : r.array("x")) {
            if (!p.is_array() || p.size() != 2) r.fail("an xattr (field 'x') is not a [name, value] pair");
            e.xattrs.push_back({r.bytes(p[0], "an xattr name"), r.bytes(p[1], "an xattr value")});
        }
    if (r.find("h") != nullptr) {
        const json& h = r.array("h");
        if (h.size() % 2 != 0) r.fail("the extents (field 'h') are not offset, length pairs");
        e.sparse = true;
        for (std::size_t i = 0; i < h.size(); i += 2) {
            if (!h[i].is_number_unsigned() || !h[i + 1].is_number_unsigned())
                r.fail("an extent (field 'h') is not two unsigned integers");
            e.extents.push_back({h[i].get<std::uint64_t>(), h[i + 1].get<std::uint64_t>()});
        }
    }
    e.content.digest = r.bytes("D");
    if (r.find("c") != nullptr)
        for (const json& c : r.array("c")) e.content.chunks.push_back(r.id(c, "a chunk id (field 'c')"));
    if (const json* l = r.find("L")) {
        if (!l->is_boolean()) r.fail("field 'L' is not a boolean");
        e.content.chunks_are_lists = l->get<bool>();
    }
    if (const json* t = r.find("T")) {
        if (e.type != EntryType::directory) r.fail("a subtree (field 'T') on an entry that is not a directory");
        e.subtree = r.id(*t, "the subtree id (field 'T')");
    } else if (e.type == EntryType::directory) {
        r.fail("a directory without its subtree id (field 'T')");
    }
    if (const std::string why = entry_problem(e); !why.empty()) r.fail(why);
    return e;
}

}  // namespace

std::vector<std::uint8_t> encode_tree(std::vector<Entry> entries) {
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const Entry& e = entries[i];
        if (const std::string why = name_problem(e.name); !why.empty())
            throw TreeError(fmt::format("cannot store the entry '{}': {}", shown(e.name), why));
        if (const std::string why = entry_problem(e); !why.empty())
            throw TreeError(fmt::format("cannot store the entry '{}': {}", shown(e.name), why));
        if (i > 0 && entries[i - 1].name == e.name)
            throw TreeError(fmt::format("cannot store a directory with two entries named '{}'", shown(e.name)));
    }
    // (written directly: the DOM's bytes, tests/unit/tree_test.cpp holds
    // the two writers to the same bytes, without the DOM's allocations)
    return detail::encode_sorted_direct(entries);
}

std::vector<std::uint8_t> detail::encode_sorted_dom(const std::vector<Entry>& entries) { return encode_sorted(entries); }

std::vector<Entry> parse_tree(std::span<const std::uint8_t> bytes) {
    if (auto plain = detail::parse_plain(bytes)) return std::move(*plain);
    json top;
    BoundedBuilder builder(top);
    bool ok = false;
    try {
        ok = json::sax_parse(bytes.begin(), bytes.end(), &builder, json::input_format_t::cbor, true);
    } catch (const json::exception& ex) {
        throw TreeError(fmt::format("tree object: not CBOR: {}", ex.what()));
    }
    if (!ok)
        throw TreeError(fmt::format("tree object: not CBOR: {}",
                                    builder.error().empty() ? std::string("unreadable") : builder.error()));
    if (!top.is_object()) throw TreeError("tree object: not a map");
    for (const auto& [k, v] : top.items()) {
        (void)v;
        if (k != "e" && k != "v") throw TreeError(fmt::format("tree object: unknown field '{}'", shown(k)));
    }
    const auto v = top.find("v");
    if (v == top.end() || !v->is_number_unsigned())
        throw TreeError("tree object: no format version (field 'v')");
    if (v->get<std::uint64_t>() != kTreeFormat)
        throw TreeError(fmt::format("tree object: format {}, this version reads format {}", v->get<std::uint64_t>(), kTreeFormat));
    const auto list = top.find("e");
    if (list == top.end() || !list->is_array()) throw TreeError("tree object: no entry list (field 'e')");
    std::vector<Entry> entries;
    entries.reserve(list->size());
    for (std::size_t i = 0; i < list->size(); ++i) {
        entries.push_back(entry_of(i, (*list)[i]));
        if (i > 0 && !(entries[i - 1].name < entries[i].name))
            throw TreeError(fmt::format("tree object: entry {} ('{}') is not after '{}': names must be sorted and unique", i,
                                        shown(entries[i].name), shown(entries[i - 1].name)));
    }
    // One tree, one encoding: what was read must be what would be written.
    const Bytes again = encode_sorted(entries);
    if (again.size() != bytes.size() || !std::equal(again.begin(), again.end(), bytes.begin()))
        throw TreeError("tree object: not in its canonical form (a default value written out, an integer not in its "
                        "shortest form, a key twice or keys out of order)");
    return entries;
}

BlobId tree_id(std::span<const std::uint8_t> bytes) {
    const Digest d = compute_digest(DigestKind::blake3, std::as_bytes(bytes));
    BlobId out{};
    std::memcpy(out.data(), d.bytes.data(), out.size());
    return out;
}

}  // namespace cdc::store::tree
