// SPDX-License-Identifier: Apache-2.0
// The tree object's CBOR read and written straight into and out of entries
// (tree_object.hpp, "direct"): the bytes nlohmann's to_cbor writes for the
// layout, without its DOM, whose maps of strings and allocations made a
// tree's parse the most of what a prune or a restore spends reading trees.
// The reader here takes only the layout in its plain form and says nothing
// about anything else: parse_tree then asks nlohmann's reader, which
// names what is wrong.
#include "tree_object.hpp"

#include <algorithm>
#include <limits>

namespace cdc::store::tree::detail {

namespace {

using Bytes = std::vector<std::uint8_t>;

// CBOR major types (RFC 8949, 3.1).
constexpr unsigned kUnsigned = 0, kNegative = 1, kByteString = 2, kTextString = 3, kArray = 4, kMap = 5;
constexpr std::uint8_t kTrue = 0xf5;

/// An item's head in its shortest form (RFC 8949, 4.2.1), as to_cbor writes it.
void head(Bytes& out, unsigned major, std::uint64_t v) {
    const auto m = static_cast<std::uint8_t>(major << 5);
    if (v < 24) {
        out.push_back(static_cast<std::uint8_t>(m | v));
        return;
    }
    int n = 8;
    std::uint8_t ai = 27;
    if (v <= 0xff) {
        n = 1;
        ai = 24;
    } else if (v <= 0xffff) {
        n = 2;
        ai = 25;
    } else if (v <= 0xffffffffu) {
        n = 4;
        ai = 26;
    }
    out.push_back(static_cast<std::uint8_t>(m | ai));
    for (int i = n - 1; i >= 0; --i) out.push_back(static_cast<std::uint8_t>((v >> (8 * i)) & 0xff));
}

void key(Bytes& out, char k) {
    head(out, kTextString, 1);
    out.push_back(static_cast<std::uint8_t>(k));
}

void bytes(Bytes& out, std::string_view s) {
    head(out, kByteString, s.size());
    out.insert(out.end(), s.begin(), s.end());
}

void bytes(Bytes& out, const BlobId& id) {
    head(out, kByteString, id.size());
    out.insert(out.end(), id.begin(), id.end());
}

void sint(Bytes& out, std::int64_t v) {
    if (v >= 0)
        head(out, kUnsigned, static_cast<std::uint64_t>(v));
    else
        head(out, kNegative, static_cast<std::uint64_t>(-1 - v));
}

/// One entry: its fields in the map's key order (bytewise: capitals first),
/// defaults left out, as entry_json builds them.
void entry(Bytes& out, const Entry& e) {
    const bool has_h = e.sparse, has_c = !e.content.chunks.empty(), is_dir = e.type == EntryType::directory;
    std::size_t fields = 2;  // (n and t)
    for (const bool present : {e.mode != 0, e.uid != 0, e.gid != 0, !e.user.empty(), !e.group.empty(), e.mtime_ns != 0,
                               e.atime_ns != 0, e.ctime_ns != 0, e.inode != 0, e.device != 0, e.size != 0, e.nlink != 0,
                               e.rdev != 0, !e.target.empty(), !e.link.empty(), !e.xattrs.empty(), has_h,
                               !e.content.digest.empty(), has_c, e.content.chunks_are_lists, is_dir})
        fields += present ? 1 : 0;
    head(out, kMap, fields);
    if (e.atime_ns != 0) key(out, 'A'), sint(out, e.atime_ns);
    if (e.ctime_ns != 0) key(out, 'C'), sint(out, e.ctime_ns);
    if (!e.content.digest.empty()) key(out, 'D'), bytes(out, e.content.digest);
    if (!e.group.empty()) key(out, 'G'), bytes(out, e.group);
    if (e.content.chunks_are_lists) key(out, 'L'), out.push_back(kTrue);
    if (e.mtime_ns != 0) key(out, 'M'), sint(out, e.mtime_ns);
    if (e.nlink != 0) key(out, 'N'), head(out, kUnsigned, e.nlink);
    if (is_dir) key(out, 'T'), bytes(out, e.subtree);
    if (!e.user.empty()) key(out, 'U'), bytes(out, e.user);
    if (has_c) {
        key(out, 'c');
        head(out, kArray, e.content.chunks.size());
        for (const BlobId& id : e.content.chunks) bytes(out, id);
    }
    if (e.device != 0) key(out, 'd'), head(out, kUnsigned, e.device);
    if (e.gid != 0) key(out, 'g'), head(out, kUnsigned, e.gid);
    if (has_h) {
        key(out, 'h');
        head(out, kArray, 2 * e.extents.size());
        for (const Extent& x : e.extents) head(out, kUnsigned, x.offset), head(out, kUnsigned, x.length);
    }
    if (e.inode != 0) key(out, 'i'), head(out, kUnsigned, e.inode);
    if (!e.link.empty()) {
        key(out, 'k');
        head(out, kArray, e.link.size());
        for (const std::string& c : e.link) bytes(out, c);
    }
    if (!e.target.empty()) key(out, 'l'), bytes(out, e.target);
    if (e.mode != 0) key(out, 'm'), head(out, kUnsigned, e.mode);
    key(out, 'n'), bytes(out, e.name);
    if (e.rdev != 0) key(out, 'r'), head(out, kUnsigned, e.rdev);
    if (e.size != 0) key(out, 's'), head(out, kUnsigned, e.size);
    key(out, 't'), head(out, kUnsigned, static_cast<std::uint64_t>(e.type));
    if (e.uid != 0) key(out, 'u'), head(out, kUnsigned, e.uid);
    if (!e.xattrs.empty()) {
        key(out, 'x');
        head(out, kArray, e.xattrs.size());
        for (const Xattr& x : e.xattrs) {
            head(out, kArray, 2);
            bytes(out, x.name);
            bytes(out, x.value);
        }
    }
}

/// Thrown inside the reader for anything it does not take (never escapes).
struct NotPlain {};

class Cursor {
public:
    explicit Cursor(std::span<const std::uint8_t> b) : b_(b) {}
    bool done() const { return at_ == b_.size(); }
    std::size_t left() const { return b_.size() - at_; }

    /// The head of the next item, which must be of type `major`.
    std::uint64_t head(unsigned major) {
        const std::uint8_t first = byte();
        if ((first >> 5) != major) throw NotPlain{};
        const unsigned ai = first & 0x1f;
        if (ai < 24) return ai;
        if (ai > 27) throw NotPlain{};  // (indefinite lengths, reserved values)
        const int n = 1 << (ai - 24);
        std::uint64_t v = 0;
        for (int i = 0; i < n; ++i) v = (v << 8) | byte();
        return v;
    }
    std::uint64_t u64(std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) {
        const std::uint64_t v = head(kUnsigned);
        if (v > max) throw NotPlain{};
        return v;
    }
    std::int64_t i64() {
        if (at_ >= b_.size()) throw NotPlain{};
        const bool negative = (b_[at_] >> 5) == kNegative;
        const std::uint64_t v = head(negative ? kNegative : kUnsigned);
        if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) throw NotPlain{};
        return negative ? -1 - static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
    }
    std::string_view bytes() {
        const std::uint64_t n = head(kByteString);
        if (n > left()) throw NotPlain{};
        const std::string_view s(reinterpret_cast<const char*>(b_.data() + at_), static_cast<std::size_t>(n));
        at_ += static_cast<std::size_t>(n);
        return s;
    }
    BlobId id() {
        const std::string_view s = bytes();
        if (s.size() != BlobId{}.size()) throw NotPlain{};
        BlobId out{};
        std::copy(s.begin(), s.end(), out.begin());
        return out;
    }
    char key() {
        if (head(kTextString) != 1) throw NotPlain{};
        return static_cast<char>(byte());
    }
    /// An array's count, at most the bytes left (each item takes one at least).
    std::size_t array() {
        const std::uint64_t n = head(kArray);
        if (n > left()) throw NotPlain{};
        return static_cast<std::size_t>(n);
    }
    std::size_t map() {
        const std::uint64_t n = head(kMap);
        if (n > left()) throw NotPlain{};
        return static_cast<std::size_t>(n);
    }
    std::uint8_t byte() {
        if (at_ >= b_.size()) throw NotPlain{};
        return b_[at_++];
    }

private:
    std::span<const std::uint8_t> b_;
    std::size_t at_ = 0;
};

Entry read_entry(Cursor& c) {
    Entry e;
    bool has_name = false, has_type = false, has_subtree = false;
    for (std::size_t n = c.map(); n > 0; --n) {
        switch (c.key()) {
            case 'n': e.name = c.bytes(), has_name = true; break;
            case 't': e.type = static_cast<EntryType>(c.u64(kEntryTypeCount - 1)), has_type = true; break;
            case 'm': e.mode = static_cast<std::uint32_t>(c.u64(07777)); break;
            case 'u': e.uid = static_cast<std::uint32_t>(c.u64(UINT32_MAX)); break;
            case 'g': e.gid = static_cast<std::uint32_t>(c.u64(UINT32_MAX)); break;
            case 'U': e.user = c.bytes(); break;
            case 'G': e.group = c.bytes(); break;
            case 'M': e.mtime_ns = c.i64(); break;
            case 'A': e.atime_ns = c.i64(); break;
            case 'C': e.ctime_ns = c.i64(); break;
            case 'i': e.inode = c.u64(); break;
            case 'd': e.device = c.u64(); break;
            case 's': e.size = c.u64(); break;
            case 'N': e.nlink = c.u64(); break;
            case 'r': e.rdev = c.u64(); break;
            case 'l': e.target = c.bytes(); break;
            case 'D': e.content.digest = c.bytes(); break;
            case 'k':
                for (std::size_t k = c.array(); k > 0; --k) e.link.emplace_back(c.bytes());
                break;
            case 'x':
                for (std::size_t k = c.array(); k > 0; --k) {
                    if (c.array() != 2) throw NotPlain{};
                    const std::string_view name = c.bytes();
                    e.xattrs.push_back({std::string(name), std::string(c.bytes())});
                }
                break;
            case 'h': {
                const std::size_t k = c.array();
                if (k % 2 != 0) throw NotPlain{};
                e.sparse = true;
                for (std::size_t i = 0; i < k; i += 2) {
                    const std::uint64_t offset = c.u64();
                    e.extents.push_back({offset, c.u64()});
                }
                break;
            }
            case 'c': {
                const std::size_t k = c.array();
                e.content.chunks.reserve(k);
                for (std::size_t i = 0; i < k; ++i) e.content.chunks.push_back(c.id());
                break;
            }
            case 'L':
                if (c.byte() != kTrue) throw NotPlain{};
                e.content.chunks_are_lists = true;
                break;
            case 'T': e.subtree = c.id(), has_subtree = true; break;
            default: throw NotPlain{};
        }
    }
    if (!has_name || !has_type || has_subtree != (e.type == EntryType::directory)) throw NotPlain{};
    if (!entry_problem(e).empty()) throw NotPlain{};
    return e;
}

}  // namespace

std::vector<std::uint8_t> encode_sorted_direct(const std::vector<Entry>& entries) {
    Bytes out;
    out.reserve(64 + 96 * entries.size());
    head(out, kMap, 2);
    key(out, 'e');
    head(out, kArray, entries.size());
    for (const Entry& e : entries) entry(out, e);
    key(out, 'v');
    head(out, kUnsigned, kTreeFormat);
    return out;
}

std::optional<std::vector<Entry>> parse_plain(std::span<const std::uint8_t> bytes) {
    try {
        Cursor c(bytes);
        if (c.map() != 2 || c.key() != 'e') return std::nullopt;
        const std::size_t count = c.array();
        std::vector<Entry> entries;
        entries.reserve(std::min(count, c.left() / 7));  // (an entry takes 7 bytes at least)
        for (std::size_t n = count; n > 0; --n) {
            entries.push_back(read_entry(c));
            if (entries.size() > 1 && !(entries[entries.size() - 2].name < entries.back().name)) return std::nullopt;
        }
        if (c.key() != 'v' || c.u64() != kTreeFormat || !c.done()) return std::nullopt;
        // What was read must be what would be written: one tree, one encoding.
        const Bytes again = encode_sorted_direct(entries);
        if (again.size() != bytes.size() || !std::equal(again.begin(), again.end(), bytes.begin())) return std::nullopt;
        return entries;
    } catch (const NotPlain&) {
        return std::nullopt;
    }
}

}  // namespace cdc::store::tree::detail
