// SPDX-License-Identifier: Apache-2.0
// A pack's sealed records in both forms (src/store/pack_writer.cpp,
// records.cpp; docs/STORE-V2.md "Records and packs"): the compact form (a
// 128-bit nonce, the raw size taken from the stored form) where the record
// allows it, the first form otherwise; both read back to their bytes, and
// the form, the raw size and the bytes cannot be changed unnoticed.
#include "store/codec.hpp"
#include "store/format.hpp"
#include "store/pack_writer.hpp"
#include "store/records.hpp"
#include "seal.hpp"  // (src/crypto)

#include "test_support.hpp"

#include <gtest/gtest.h>

#include <zstd.h>

#include <algorithm>
#include <cstring>

namespace cdc::test {
namespace {

using store::ChunkId;
using store::Codec;
using store::detail::RecordBatch;
using store::detail::RecordHeader;
using Bytes = std::vector<std::byte>;

Bytes bytes_of(const std::vector<std::uint8_t>& v) {
    Bytes b(v.size());
    if (!v.empty()) std::memcpy(b.data(), v.data(), v.size());
    return b;
}

// Compressible bytes (a short random alphabet) of `n`.
Bytes text(std::size_t n, std::uint64_t seed) {
    auto r = random_bytes(n, seed);
    for (auto& c : r) c = static_cast<std::uint8_t>('a' + c % 4);
    return bytes_of(r);
}

// A zstd frame of `raw`, with or without its content size declared.
Bytes frame_of(const Bytes& raw, bool declare_size) {
    ZSTD_CCtx* c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, declare_size ? 1 : 0);
    Bytes out(ZSTD_compressBound(raw.size()));
    std::size_t n = 0;
    if (declare_size) {
        n = ZSTD_compress2(c, out.data(), out.size(), raw.data(), raw.size());
    } else {  // (a streamed frame of unknown size, as another writer might send)
        ZSTD_inBuffer in{raw.data(), raw.size(), 0};
        ZSTD_outBuffer o{out.data(), out.size(), 0};
        n = ZSTD_compressStream2(c, &o, &in, ZSTD_e_end);
        EXPECT_EQ(n, 0u);
        n = o.pos;
    }
    ZSTD_freeCCtx(c);
    EXPECT_FALSE(ZSTD_isError(n));
    out.resize(n);
    return out;
}

struct Sealed {
    crypto::Sealer sealer{random_bytes(32, 501)};
    RecordBatch batch;
    Sealed() {
        batch.sealer = &sealer;
        batch.compact = true;
    }
    // The record i of the batch and its location (pack 1, as if at its offset).
    std::pair<std::span<const std::byte>, store::detail::Location> record(std::size_t i) const {
        const auto& e = batch.entries.at(i);
        const std::span<const std::byte> all = std::as_bytes(std::span(batch.bytes));
        return {all.subspan(e.offset, store::detail::kRecordHeaderSize + e.stored_size),
                store::detail::Location{1, e.offset, e.raw_size, e.stored_size}};
    }
    RecordHeader header(std::size_t i) const {
        return *store::detail::decode_record(batch.bytes.data() + batch.entries.at(i).offset);
    }
    Bytes decode(std::size_t i, const ChunkId& id) const {
        const auto [rec, loc] = record(i);
        Bytes out(loc.raw_size);
        store::detail::decode_record_into(rec, loc, id, out, "", &sealer);
        return out;
    }
};

ChunkId id_of(std::uint64_t seed) {
    ChunkId id{};
    const auto r = random_bytes(id.size(), seed);
    std::memcpy(id.data(), r.data(), id.size());
    return id;
}

TEST(SealedRecords, CompactWhereTheFormDeclaresItsRawSizeFirstFormElse) {
    Sealed s;
    const Bytes raw = bytes_of(random_bytes(5000, 1));
    const Bytes plain_text = text(9000, 2);
    const Bytes declared = frame_of(plain_text, true);
    const Bytes undeclared = frame_of(plain_text, false);
    ASSERT_FALSE(store::detail::frame_content_size(undeclared).has_value());
    ASSERT_EQ(store::detail::frame_content_size(declared), plain_text.size());
    const ChunkId a = id_of(11), b = id_of(12), c = id_of(13), d = id_of(14);
    s.batch.add(a, Codec::raw, 5000, raw);
    s.batch.add(b, Codec::zstd, 9000, declared);
    s.batch.add(c, Codec::zstd, 9000, undeclared);
    s.batch.add(d, Codec::raw, 0, {});  // an empty chunk
    // 16 + 16 bytes beyond the stored form in the compact form; 24 + 16 + 4 in the first
    EXPECT_EQ(s.batch.entries[0].stored_size, raw.size() + 32);
    EXPECT_EQ(s.batch.entries[1].stored_size, declared.size() + 32);
    EXPECT_EQ(s.batch.entries[2].stored_size, undeclared.size() + 44);
    EXPECT_EQ(s.batch.entries[3].stored_size, 32u);
    EXPECT_TRUE(s.header(0).compact);
    EXPECT_TRUE(s.header(1).compact);
    EXPECT_FALSE(s.header(2).compact);
    EXPECT_TRUE(s.header(2).encrypted);
    EXPECT_TRUE(s.header(3).compact);
    for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(s.header(i).raw_size, 0u) << "a raw size in clear: " << i;
    EXPECT_EQ(s.decode(0, a), raw);
    EXPECT_EQ(s.decode(1, b), plain_text);
    // (record c opens, below; the reader then wants a declared size as for
    // any record, which is why the writer decodes a frame it is given first)
    EXPECT_TRUE(s.decode(3, d).empty());
    // stored_payload gives the stored form back, opened
    for (std::size_t i : {0u, 1u, 2u}) {
        const auto [rec, loc] = s.record(i);
        Bytes form;
        const ChunkId& id = i == 0 ? a : i == 1 ? b : c;
        const Codec codec = store::detail::stored_payload(rec, loc, id, form, "", &s.sealer);
        EXPECT_EQ(form, i == 0 ? raw : i == 1 ? declared : undeclared) << i;
        EXPECT_EQ(codec, i == 0 ? Codec::raw : Codec::zstd);
    }
}

TEST(SealedRecords, AStoreOfTheFirstFormWritesTheFirstForm) {
    Sealed s;
    s.batch.compact = false;
    const Bytes raw = bytes_of(random_bytes(3000, 3));
    const ChunkId a = id_of(21);
    s.batch.add(a, Codec::raw, 3000, raw);
    EXPECT_FALSE(s.header(0).compact);
    EXPECT_EQ(s.batch.entries[0].stored_size, raw.size() + 44);
    EXPECT_EQ(s.decode(0, a), raw);
}

// What a writer of the storage can do without the key: flip the form bit,
// change the index's raw size, move bytes; each is damage, named, and no
// byte of an unauthenticated opening reaches the output (a compact raw
// record is opened straight into it).
TEST(SealedRecords, FormRawSizeAndBytesCannotBeChangedUnnoticed) {
    const Bytes plain_text = text(7000, 4);
    const ChunkId id = id_of(31);
    for (const Codec codec : {Codec::zstd, Codec::raw})
    for (const bool compact : {true, false}) {
        SCOPED_TRACE(std::string(compact ? "compact" : "first form") + (codec == Codec::raw ? ", raw" : ", zstd"));
        Sealed s;
        s.batch.compact = compact;
        s.batch.add(id, codec, 7000, codec == Codec::raw ? plain_text : frame_of(plain_text, true));
        ASSERT_EQ(s.header(0).compact, compact);
        ASSERT_EQ(s.header(0).codec, codec);
        const auto [rec, loc] = s.record(0);
        const auto expect_damage = [&](Bytes bytes, const store::detail::Location& l, const char* what) {
            Bytes out(l.raw_size);
            try {
                store::detail::decode_record_into(bytes, l, id, out, "", &s.sealer);
                ADD_FAILURE() << what << ": read without an error";
            } catch (const store::DamageError& e) {
                EXPECT_NE(std::string(e.what()).find(store::to_hex(id)), std::string::npos) << e.what();
            }
            EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](std::byte b) { return b == std::byte{0}; }))
                << what << ": bytes of a failed opening in the output";
        };
        const Bytes good(rec.begin(), rec.end());
        // the form bit flipped, the checksum recomputed as anyone can
        Bytes other_form = good;
        auto* h = reinterpret_cast<std::uint8_t*>(other_form.data());
        h[4] ^= store::detail::kRecordCompact;
        store::detail::set_record_checksum(h, std::span(other_form).subspan(store::detail::kRecordHeaderSize));
        ASSERT_TRUE(store::detail::decode_record(h).has_value());
        expect_damage(other_form, loc, "the form bit flipped");
        // the index says another raw size
        store::detail::Location wrong = loc;
        wrong.raw_size += 1;
        expect_damage(good, wrong, "another raw size");
        // a nonce byte and a cipher text byte flipped, checksum recomputed
        for (const std::size_t at : {std::size_t{3}, std::size_t{40}}) {
            Bytes flipped = good;
            flipped[store::detail::kRecordHeaderSize + at] ^= std::byte{1};
            auto* fh = reinterpret_cast<std::uint8_t*>(flipped.data());
            store::detail::set_record_checksum(fh, std::span(flipped).subspan(store::detail::kRecordHeaderSize));
            expect_damage(flipped, loc, "a payload byte flipped");
        }
        // and the intact record still reads
        Bytes out(loc.raw_size);
        store::detail::decode_record_into(good, loc, id, out, "", &s.sealer);
        EXPECT_EQ(out, plain_text);
    }
}

// The compact flag on an unsealed record is no valid header.
TEST(SealedRecords, TheCompactBitAloneIsNoRecord) {
    RecordBatch plain;
    const Bytes raw = bytes_of(random_bytes(100, 5));
    plain.add(id_of(41), Codec::raw, 100, raw);
    auto* h = plain.bytes.data();
    ASSERT_TRUE(store::detail::decode_record(h).has_value());
    h[4] |= store::detail::kRecordCompact;
    EXPECT_FALSE(store::detail::decode_record(h).has_value());
}

}  // namespace
}  // namespace cdc::test
