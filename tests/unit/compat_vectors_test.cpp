// SPDX-License-Identifier: Apache-2.0
// Every case of shared/testvectors/compat (COMPAT.md's six names, made by
// running each original chunker): our cut points must be the origin's, from
// memory, through irregular readers and with a caller-owned buffer of
// exactly max_size; plus the fastcdc-rs crate's own SekienAkashita cases.
#include "test_support.hpp"

#include <cdc/corpus/datagen.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>

namespace cdc::test {
namespace {

std::filesystem::path compat_dir() { return vectors_dir() / "compat"; }

const std::vector<nlohmann::json>& all_cases() {
    static const std::vector<nlohmann::json> cases = read_jsonl(compat_dir() / "vectors.jsonl");
    return cases;
}

const std::vector<std::string> kCompatNames = {"fastcdc-rs-v2020", "fastcdc-rs-v2016", "fastcdc-rs-ronomon",
                                               "restic-rabin",     "borg-buzhash",     "casync-buzhash"};

TEST(CompatInputs, RegeneratedInputsMatchTheirSha256) {
    const auto specs = read_jsonl(compat_dir() / "inputs.jsonl");
    ASSERT_EQ(specs.size(), 252u);
    for (const auto& s : specs) {
        const std::string spec = s["input"];
        const auto& bytes = cached_input(spec);
        ASSERT_EQ(bytes.size(), s["input_len"].get<std::size_t>()) << spec;
        EXPECT_EQ(compute_digest(DigestKind::sha256, std::as_bytes(std::span(bytes))).hex(),
                  s["sha256"].get<std::string>())
            << spec;
    }
}

TEST(CompatVectors, CoverTheSixNamesWithTheReadmesCounts) {
    std::map<std::string, std::size_t> cases;
    for (const auto& c : all_cases()) ++cases[c["algorithm"].get<std::string>()];
    EXPECT_EQ(all_cases().size(), 509u);
    const std::map<std::string, std::size_t> expected = {{"fastcdc-rs-v2020", 94}, {"fastcdc-rs-v2016", 88},
                                                         {"fastcdc-rs-ronomon", 83}, {"restic-rabin", 81},
                                                         {"borg-buzhash", 83},      {"casync-buzhash", 80}};
    EXPECT_EQ(cases, expected);
    for (const auto& name : kCompatNames) EXPECT_NE(find_algorithm(name), nullptr) << name;
}

class CompatVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(CompatVectors, MatchTheOrigin) {
    const std::string& name = GetParam();
    std::size_t checked = 0;
    for (const auto& c : all_cases()) {
        if (c["algorithm"] != name) continue;
        const Options o = compat_case_options(c);
        const std::string spec = c["input"];
        const auto expected = c["lengths"].get<std::vector<std::size_t>>();
        SCOPED_TRACE(fmt::format("{} {} input={}", name, c["params"].dump(), spec));
        const auto finder = make_cut_finder(name, o, KernelLevel::automatic);
        const auto& data = cached_input(spec);
        ASSERT_EQ(data.size(), c["input_len"].get<std::size_t>());

        EXPECT_EQ(lengths_memory(finder, data), expected);

        ScriptedReader irregular(data, {1, 7, 4096, 65537, 13, 0, 1 << 20});
        EXPECT_EQ(lengths_stream(finder, irregular), expected) << "irregular reads";

        std::vector<std::byte> exact(finder->profile().max_size);
        ScriptedReader big(data, {1 << 20, 3}, true);
        EXPECT_EQ(lengths_stream(finder, big, exact), expected) << "caller buffer of exactly max_size";
        ++checked;
    }
    EXPECT_GT(checked, 79u);
}

INSTANTIATE_TEST_SUITE_P(All, CompatVectors, ::testing::ValuesIn(kCompatNames), [](const auto& param_info) {
    std::string s = param_info.param;
    for (auto& ch : s)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return s;
});

// ---- the crate's own test cases (testvectors/fastcdc-rs)

nlohmann::json crate_vectors() {
    return nlohmann::json::parse(read_text(vectors_dir() / "fastcdc-rs" / "fastcdc-rs-vectors.json"));
}

std::vector<std::uint8_t> sekien() {
    const std::string bytes = read_text(vectors_dir() / "fastcdc-rs" / "SekienAkashita.jpg");
    return {bytes.begin(), bytes.end()};
}

TEST(FastCdcRsCrate, SekienAkashitaCases) {
    const auto doc = crate_vectors();
    const auto data = sekien();
    ASSERT_EQ(data.size(), doc["input"]["size"].get<std::size_t>());
    std::size_t checked = 0;
    for (const auto& c : doc["cases"]) {
        const std::string name = "fastcdc-rs-" + c["algo"].get<std::string>();
        Options o;
        o.min_size = c["min"];
        o.normal_size = c["avg"];
        o.max_size = c["max"];
        if (name != "fastcdc-rs-ronomon") o.normalization_level = c["normalization_level"].get<int>();
        if (name == "fastcdc-rs-v2020") o.seed = c["seed"].get<std::uint64_t>();
        std::vector<std::size_t> expected;
        std::uint64_t offset = 0;
        for (const auto& ch : c["chunks"]) {
            EXPECT_EQ(ch["offset"].get<std::uint64_t>(), offset) << c["name"];
            expected.push_back(ch["length"]);
            offset += ch["length"].get<std::uint64_t>();
        }
        const auto finder = make_cut_finder(name, o);
        EXPECT_EQ(lengths_memory(finder, data), expected) << c["name"];
        ScriptedReader r(data, {1, 4093, 0, 17});
        EXPECT_EQ(lengths_stream(finder, r), expected) << c["name"] << " irregular reads";
        ++checked;
    }
    EXPECT_EQ(checked, 16u);
}

TEST(FastCdcRsCrate, AllZerosGiveMaxSizeChunks) {
    const auto doc = crate_vectors();
    const std::vector<std::uint8_t> zeros(10240, 0);
    for (const auto& z : doc["all_zeros"]) {
        Options o;
        o.min_size = z["min"];
        o.normal_size = z["avg"];
        o.max_size = z["max"];
        const auto got = lengths_memory(make_cut_finder("fastcdc-rs-" + z["algo"].get<std::string>(), o), zeros);
        EXPECT_EQ(got, std::vector<std::size_t>(z["count"].get<std::size_t>(), z["chunk_length"].get<std::size_t>()))
            << z["algo"];
    }
}

TEST(FastCdcRsCrate, DefaultSizesAre4K16K64K) {
    for (const char* name : {"fastcdc-rs-v2020", "fastcdc-rs-v2016", "fastcdc-rs-ronomon"}) {
        const Profile p = resolve_profile(name, {});
        EXPECT_EQ(p.min_size, 4096u) << name;
        EXPECT_EQ(p.normal_size, 16384u) << name;
        EXPECT_EQ(p.max_size, 65536u) << name;
    }
    EXPECT_EQ(resolve_profile("fastcdc-rs-v2020", {}).normalization_level, 1);
    EXPECT_EQ(resolve_profile("fastcdc-rs-ronomon", {}).normalization_level, 0);  // takes none
}

// ---- the spec's own worked examples (COMPAT.md)

std::vector<std::size_t> chunk(std::string_view name, const Options& o, const std::vector<std::uint8_t>& data,
                               KernelLevel level = KernelLevel::automatic) {
    return lengths_memory(make_cut_finder(name, o, level), data);
}

TEST(CompatExamples, V2020OddMinWithASeedThatZeroesTheTable) {
    Options o = sized_options(65, 256, 1024);
    o.seed = 0x3b5d3c7d207e37dcULL;  // = G[0]: every zero byte hashes to 0
    for (KernelLevel level : {KernelLevel::scalar, KernelLevel::automatic}) {
        std::vector<std::size_t> want(15, 64);
        want.push_back(40);
        EXPECT_EQ(chunk("fastcdc-rs-v2020", o, std::vector<std::uint8_t>(1000, 0), level), want);
        EXPECT_EQ(chunk("fastcdc-rs-v2020", o, std::vector<std::uint8_t>(66, 0), level),
                  (std::vector<std::size_t>{64, 2}));
        EXPECT_EQ(chunk("fastcdc-rs-v2020", o, std::vector<std::uint8_t>(65, 0), level), (std::vector<std::size_t>{65}));
    }
}

TEST(CompatExamples, ResticCutsZerosEveryMinBytes) {
    EXPECT_EQ(chunk("restic-rabin", {}, std::vector<std::uint8_t>(3 << 20, 0)), std::vector<std::size_t>(6, 524288));
}

TEST(CompatExamples, BorgFinalThresholdIsMinPlusWindow) {
    // 528383 = 2^19 + 4095 bytes: one chunk without hashing, whatever the bytes.
    const auto zeros = std::vector<std::uint8_t>(528383, 0);
    EXPECT_EQ(chunk("borg-buzhash", {}, zeros), std::vector<std::size_t>{528383});
}

}  // namespace
}  // namespace cdc::test
