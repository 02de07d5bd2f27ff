// SPDX-License-Identifier: Apache-2.0
// restic-rabin (COMPAT.md section 5): restic/chunker 0.4's Rabin fingerprint
// of the last 64 bytes of the chunk, modulo an irreducible polynomial over
// GF(2) of degree 8..53 (restic picks one per repository).
#include "family.hpp"

#include <vector>

namespace cdc::detail {

namespace {

// Polynomials over GF(2) as integers: bit k is the coefficient of x^k.
int degree(std::uint64_t p) noexcept { return static_cast<int>(std::bit_width(p)) - 1; }  // -1 for 0

std::uint64_t poly_mod(std::uint64_t a, std::uint64_t p) noexcept {
    const int dp = degree(p);
    for (int da = degree(a); da >= dp; da = degree(a)) a ^= p << (da - dp);
    return a;
}

/// a * b mod p, for a, b reduced mod p (deg p <= 53: the shifted value fits).
std::uint64_t poly_mulmod(std::uint64_t a, std::uint64_t b, std::uint64_t p) noexcept {
    std::uint64_t r = 0;
    for (int k = degree(b); k >= 0; --k) {
        r = poly_mod(r << 1, p);
        if ((b >> k) & 1) r ^= a;
    }
    return r;
}

std::uint64_t poly_gcd(std::uint64_t a, std::uint64_t b) noexcept {
    while (b != 0) {
        const std::uint64_t r = poly_mod(a, b);
        a = b;
        b = r;
    }
    return a;
}

}  // namespace

/// P of degree n is irreducible iff gcd(P, x^(2^i) - x mod P) = 1 for every
/// i = 1 .. floor(n/2) (Ben-Or; what the module's Irreducible() tests).
bool rabin_polynomial_irreducible(std::uint64_t p) noexcept {
    const int n = degree(p);
    if (n < 1) return false;
    constexpr std::uint64_t x = 2;
    std::uint64_t t = poly_mod(x, p);
    for (int i = 1; i <= n / 2; ++i) {
        t = poly_mulmod(t, t, p);  // x^(2^i) mod P
        if (poly_gcd(p, t ^ x) != 1) return false;
    }
    return true;
}

std::size_t rabin_scalar(const RabinParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    if (n < p.min) return n;  // the stream ends before any length can be tested
    const unsigned shift = p.degree - 8;
    const std::uint64_t low = (std::uint64_t{1} << p.degree) - 1;
    // F = (F * x^8 + b) mod P.
    auto append = [&](std::uint64_t f, std::uint8_t b) {
        return (((f << 8) | b) & low) ^ p.reduce[f >> shift];
    };
    // F of the 64 bytes ending at the first length tested, L = min.
    std::uint64_t f = 0;
    for (std::size_t j = p.min - kRabinWindow; j < p.min; ++j) f = append(f, w[j]);
    for (std::size_t len = p.min;; ++len) {
        if (len >= p.max) return len;
        if ((f & p.mask) == 0) return len;  // the window ends with the chunk's last byte
        if (len == n) return n;             // the stream ended
        f = append(f ^ p.out[w[len - kRabinWindow]], w[len]);
    }
}

namespace {

/// The two rolling tables of one polynomial (4 KiB).
struct RabinTables {
    std::array<std::uint64_t, 256> out;
    std::array<std::uint64_t, 256> reduce;
    std::array<std::uint64_t, 256> out_x8;
};

std::shared_ptr<const RabinTables> rabin_tables(std::uint64_t poly) {
    auto t = std::make_shared<RabinTables>();
    const int deg = degree(poly);
    std::uint64_t x504 = 1;  // x^(8 * 63) mod P: the weight of the oldest byte of the window
    for (std::size_t k = 0; k < 8 * (kRabinWindow - 1); ++k) x504 = poly_mod(x504 << 1, poly);
    for (std::uint64_t b = 0; b < 256; ++b) {
        t->out[b] = poly_mulmod(poly_mod(b, poly), x504, poly);
        t->reduce[b] = poly_mod(b << deg, poly);
    }
    for (std::size_t b = 0; b < 256; ++b) t->out_x8[b] = poly_mulmod(t->out[b], poly_mod(std::uint64_t{1} << 8, poly), poly);
    return t;
}

void check(const AlgorithmInfo& info, const Profile& p) {
    const int deg = degree(p.polynomial);
    if (deg < 8 || deg > 53)
        throw OptionError(fmt::format("{}: polynomial = {:#x} is invalid: must have a degree from 8 to 53 (this one has "
                                      "{}; restic/chunker fails on any other)",
                                      info.name, p.polynomial, deg),
                          "polynomial");
    if (!rabin_polynomial_irreducible(p.polynomial))
        throw OptionError(fmt::format("{}: polynomial = {:#x} is invalid: must be irreducible over GF(2) (restic "
                                      "refuses a repository whose polynomial is not)",
                                      info.name, p.polynomial),
                          "polynomial");
}

std::shared_ptr<const CutFinder> make(const AlgorithmInfo& info, const Profile& p, const Options&, KernelLevel level) {
    auto tables = rabin_tables(p.polynomial);
    const RabinParams params{tables->out.data(), tables->reduce.data(), tables->out_x8.data(),
                             static_cast<unsigned>(degree(p.polynomial)),
                             p.min_size, p.max_size, p.normal_size - 1};
    return make_family_finder(info, p, level, params, &select_rabin, tables);
}

}  // namespace

const std::array<AlgorithmRow, 1> kResticRows = {{
    {.info = {.name = "restic-rabin",
              .summary = "Rabin fingerprint of the last 64 bytes; an irreducible polynomial per repository",
              .origin = "restic/chunker 0.4.0",
              .default_min = 512 * KiB, .default_normal = 1 * MiB, .default_max = 8 * MiB,
              .normal_rule = {.power_of_two = true},
              // (degree 8..53 and irreducible: check() says so in its own words)
              .polynomial = {.accepted = true, .default_value = 0x3DA3358B4DC173, .low = 0, .high = ~std::uint64_t{0}}},
     .check = &check,
     .make = &make},
}};

}  // namespace cdc::detail
