// SPDX-License-Identifier: Apache-2.0
// Property: whatever requests a client sends, the server's push session
// (the request handling of `cdc serve`, in process, below gRPC) refuses or
// accepts them without crashing, never stores a chunk under an id its bytes
// do not have, and never commits a file whose bytes do not have the digest
// it is listed with: after every input, each committed file restores
// (Store::get checks every chunk and the whole-file BLAKE3) and a full
// verify passes now and then.
//
// The input is decoded into requests built from a small pool of chunk
// contents with correct ids (so that the fuzzer reaches deep states), with
// flips that break ids, sizes, pieces, order and digests, and raw protobuf
// bytes parsed as requests. Snapshot pushes too (SnapshotStart, tree ids,
// trees, commit): whatever trees a client sends, every snapshot committed passes
// verify_snapshots (each file's content there, with its digest and size).
#include "fuzz_input.hpp"

#include <push_session.hpp>

#include "../store/codec.hpp"
#include "../store/tree_object.hpp"

#include <cdc/snapshot.hpp>
#include <cdc/store.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

namespace {

namespace fs = std::filesystem;
using namespace cdc;

const fs::path& store_dir() {
    static const fs::path dir = [] {
        // tmpfs where there is one: the store fsyncs at each commit.
        const fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
        const fs::path d = base / ("cdc-fuzz-push-" + std::to_string(::getpid()));
        fs::remove_all(d);
        store::InitOptions o;
        o.algorithm = "fastcdc";
        o.chunking.min_size = 64;
        o.chunking.normal_size = 256;
        o.chunking.max_size = 1024;
        store::Store::init(d, o);
        std::atexit([] { fs::remove_all(store_dir()); });
        return d;
    }();
    return dir;
}

struct Harness {
    std::unique_ptr<transfer::PushSession> session;
    std::vector<std::vector<std::uint8_t>> pool;  // chunk contents
    std::vector<std::uint8_t> file;               // bytes listed since the last start
    std::vector<std::size_t> due;                 // pool indices listed, in order
    std::size_t next_due = 0;
    std::vector<std::vector<std::size_t>> groups;  // pool indices of the last group list's groups
    std::string group_want;                        // the last group want's bitmap
    store::tree::BlobId last_tree{};               // the last tree object sent
    store::detail::Compressor zstd{3};

    void send(const transfer::v1::PushRequest& r) {
        if (!session) session = std::make_unique<transfer::PushSession>(store_dir(), store::OpenOptions{});
        try {
            session->handle(r, [&](const transfer::v1::PushReply& reply) {
                if (reply.has_group_want()) group_want = reply.group_want().bitmap();
            });
            if (session->finished()) session.reset();
        } catch (const transfer::TransferError&) {
            session->abort();
            session.reset();
        } catch (const store::StoreError&) {
            std::abort();  // the session must refuse bad requests itself, never damage the store
        }
    }
};

std::vector<std::uint8_t> take(fuzz::Bytes& in, std::size_t n) {
    std::vector<std::uint8_t> v;
    const auto rest = in.rest();
    n = std::min(n, rest.size());
    v.assign(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(n));
    for (std::size_t i = 0; i < n; ++i) in.u8();
    return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::Bytes in(data, size);
    Harness h;
    // A pool of 1..6 chunk contents of 1..1024 bytes (the store's max).
    const std::size_t pool = 1 + in.u8() % 6;
    for (std::size_t i = 0; i < pool; ++i) {
        std::vector<std::uint8_t> c(1 + in.u16() % 1024);
        SplitMix64(in.u8()).fill(c);
        h.pool.push_back(std::move(c));
    }
    static const char* const kNames[] = {"f", "dir/g", "../up", "/abs", "a//b", "ok name", "x\x01y", ""};
    for (int steps = 0; steps < 64 && !in.rest().empty(); ++steps) {
        transfer::v1::PushRequest r;
        const std::uint8_t op = in.u8();
        switch (op % 12) {
        case 0: {  // start
            r.mutable_start()->set_name(kNames[in.u8() % 8]);
            r.mutable_start()->set_mode(in.u16());
            h.file.clear();
            h.due.clear();
            h.next_due = 0;
            break;
        }
        case 1: {  // a list of pool chunks
            const std::size_t k = 1 + in.u8() % 8;
            std::string ids;
            for (std::size_t i = 0; i < k; ++i) {
                const std::size_t p = in.u8() % h.pool.size();
                const auto& c = h.pool[p];
                transfer::append_id(ids, store::chunk_id_of(std::as_bytes(std::span(c))));
                std::uint32_t s = static_cast<std::uint32_t>(c.size());
                if ((op & 0x80) && i == 0) s = in.u16();  // a lie about a size
                r.mutable_chunks()->add_sizes(s);
                h.file.insert(h.file.end(), c.begin(), c.end());
                h.due.push_back(p);
            }
            if ((op & 0x40) && !ids.empty()) ids.pop_back();  // ids and sizes disagree
            r.mutable_chunks()->set_ids(ids);
            break;
        }
        case 2:
        case 3: {  // the next listed chunk (whether or not the server wants it), maybe damaged, in pieces
            const std::size_t p = h.next_due < h.due.size() ? h.due[h.next_due++] : in.u8() % h.pool.size();
            const auto& c = h.pool[p];
            const auto id = store::chunk_id_of(std::as_bytes(std::span(c)));
            std::vector<std::byte> payload;
            bool raw = (op & 0x10) != 0;
            if (raw || h.zstd.compress(std::as_bytes(std::span(c)), payload) == store::Codec::raw) {
                raw = true;
                payload.assign(reinterpret_cast<const std::byte*>(c.data()),
                               reinterpret_cast<const std::byte*>(c.data()) + c.size());
            }
            if ((op & 0x20) && !payload.empty()) payload[in.u16() % payload.size()] ^= std::byte{1};
            const std::size_t piece = 1 + in.u16() % (payload.size() + 8);
            std::size_t off = (op & 0x80) ? in.u8() % 4 : 0;  // a first piece that does not start at 0
            do {
                auto* d = r.mutable_data()->add_chunks();
                if (!(op & 0x40)) d->set_id(id.data(), id.size());  // else the chunk due (Info's data_ids_optional)
                d->set_raw_size(static_cast<std::uint32_t>(c.size()));
                d->set_raw(raw);
                d->set_payload_size(static_cast<std::uint32_t>(payload.size()));
                d->set_offset(static_cast<std::uint32_t>(off));
                const std::size_t n = std::min(piece, payload.size() - std::min(off, payload.size()));
                d->set_piece(payload.data() + std::min(off, payload.size()), n);
                off += n;
                if (n == 0) break;
            } while (off < payload.size());
            break;
        }
        case 4: {  // end, with the right digest unless flipped
            auto d = store::chunk_id_of(std::as_bytes(std::span(h.file)));
            if (op & 0x80) d[in.u8() % 32] ^= 1;
            r.mutable_end()->set_size(h.file.size() + ((op & 0x40) ? 1 : 0));
            r.mutable_end()->set_digest(d.data(), d.size());
            break;
        }
        case 5: r.mutable_finish(); break;
        case 6: {  // a group list of pool chunks (the store's file of that name may have some groups)
            const std::size_t k = 1 + in.u8() % 40;
            std::vector<store::ChunkId> ids;
            std::vector<std::size_t> picked;
            for (std::size_t i = 0; i < k; ++i) {
                // runs of one chunk often: groups a stored file has
                const std::size_t p = (in.u8() & 1) && !picked.empty() ? picked.back() : in.u8() % h.pool.size();
                picked.push_back(p);
                ids.push_back(store::chunk_id_of(std::as_bytes(std::span(h.pool[p]))));
                h.file.insert(h.file.end(), h.pool[p].begin(), h.pool[p].end());
                h.due.push_back(p);
            }
            auto* g = r.mutable_groups();
            std::string digests;
            h.groups.clear();
            const std::size_t width = (op & 0x20) ? transfer::kShortGroupDigest : 32;  // Info's group_digest_bytes
            transfer::for_each_group(ids, [&](std::size_t a, std::size_t b) {
                const store::ChunkId d = transfer::group_digest(std::span(ids).subspan(a, b - a));
                digests.append(reinterpret_cast<const char*>(d.data()), width);
                g->add_counts(static_cast<std::uint32_t>(b - a));
                std::uint64_t bytes = 0;
                for (std::size_t j = a; j < b; ++j) bytes += h.pool[picked[j]].size();
                g->add_bytes(bytes + ((op & 0x80) ? 1 : 0));  // a lie about the bytes
                h.groups.emplace_back(picked.begin() + static_cast<std::ptrdiff_t>(a),
                                      picked.begin() + static_cast<std::ptrdiff_t>(b));
            });
            if ((op & 0x40) && !digests.empty()) digests[in.u8() % digests.size()] ^= 1;
            g->set_digests(digests);
            break;
        }
        case 7: {  // the chunks of the groups the last group want asked for (or of all, or of none)
            for (std::size_t i = 0; i < h.groups.size(); ++i) {
                const bool wanted = i / 8 < h.group_want.size() && (h.group_want[i / 8] >> (i % 8) & 1);
                if (!wanted && !(op & 0x80)) continue;
                for (const std::size_t p : h.groups[i]) {
                    const auto& c = h.pool[p];
                    const auto id = store::chunk_id_of(std::as_bytes(std::span(c)));
                    std::string ids = r.chunks().ids();
                    transfer::append_id(ids, id);
                    r.mutable_chunks()->set_ids(ids);
                    r.mutable_chunks()->add_sizes(static_cast<std::uint32_t>(c.size()));
                }
            }
            if (r.chunks().sizes_size() == 0) r.mutable_chunks()->add_sizes(1);
            break;
        }
        case 9: {  // a snapshot push's start (a good path, or one refused)
            static const char* const kPaths[] = {"/x", "/x/y", "x", "/x/../y", "/"};
            r.mutable_snapshot()->add_paths(kPaths[in.u8() % 5]);
            r.mutable_snapshot()->set_no_parent((op & 0x80) != 0);
            break;
        }
        case 10: {  // a tree object naming the bytes listed since the last start, or another tree, maybe lying
            store::tree::Entry e;
            e.name = kNames[in.u8() % 8];
            if (op & 0x80) {
                e.type = store::tree::EntryType::directory;
                e.mode = 0755;
                e.subtree = h.last_tree;
            } else {
                e.type = store::tree::EntryType::file;
                e.mode = 0644;
                e.size = h.file.size() + ((op & 0x40) ? 1 : 0);
                e.nlink = 1;
                const auto d = store::chunk_id_of(std::as_bytes(std::span(h.file)));
                e.content.digest.assign(reinterpret_cast<const char*>(d.data()), d.size());
            }
            std::vector<std::uint8_t> object;
            try {
                object = store::tree::encode_tree({e});
            } catch (const store::tree::TreeError&) {
                object = {0xa1, 0x61, 0x76, 0x01};  // (a name the encoder refuses: bytes that are no tree)
            }
            store::tree::BlobId id = store::tree::tree_id(object);
            if (op & 0x20) id[in.u8() % 32] ^= 1;
            h.last_tree = id;
            std::string rec(reinterpret_cast<const char*>(id.data()), id.size());
            const auto len = static_cast<std::uint32_t>(object.size() + ((op & 0x10) ? 1 : 0));
            for (int i = 0; i < 4; ++i) rec.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
            rec.append(reinterpret_cast<const char*>(object.data()), object.size());
            r.mutable_trees()->set_bytes(rec);
            break;
        }
        case 11: {  // commit the last tree, or ask which of it and others the server lacks (or a flipped id)
            auto id = h.last_tree;
            if (op & 0x80) id[in.u8() % 32] ^= 1;
            if (op & 0x40) {
                // (the answered-held trees are read from the parent at the commit)
                std::string ids(reinterpret_cast<const char*>(id.data()), id.size());
                if (op & 0x20) {  // (more ids, maybe not whole ones)
                    const auto more = take(in, in.u8() % 70);
                    ids.append(reinterpret_cast<const char*>(more.data()), more.size());
                }
                r.mutable_tree_ids()->set_ids(ids);
            } else {
                r.mutable_commit()->set_root(id.data(), id.size());
            }
            break;
        }
        default: {  // raw protobuf bytes
            const auto bytes = take(in, in.u8());
            if (!r.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) continue;
            break;
        }
        }
        h.send(r);
    }
    if (h.session) {
        h.session->abort();
        h.session.reset();
    }
    // Every committed file restores with its digest.
    const store::Store s = store::Store::open(store_dir());
    const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    for (const auto& m : s.list()) s.get(m.name, null);  // throws DamageError (uncaught: a crash) on a mismatch
    ::close(null);
    static unsigned runs = 0;
    if (++runs % 512 == 0 && !s.verify().ok()) std::abort();
    // Every committed snapshot is whole: its trees, each file's content
    // (the snapshots accumulate: checked now and then, as verify).
    if (runs % 64 == 0 && !store::verify_snapshots(s).damage.empty()) std::abort();
    return 0;
}
