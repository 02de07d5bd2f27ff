// SPDX-License-Identifier: Apache-2.0
// Secret bytes: key material and passwords in memory that is locked (never
// swapped out), fenced by guard pages and zeroed when released
// (libsodium's sodium_malloc / sodium_free).
#pragma once

#include <cdc/error.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace cdc::crypto {

/// Initialises libsodium once per process (thread-safe; later calls return
/// at once). Throws cdc::Error if it cannot (no entropy source).
void ensure_sodium();

/// Fills `out` from the operating system's random source.
void random_bytes(std::span<std::uint8_t> out);

/// An owned block of secret bytes, move-only. Allocated with sodium_malloc
/// (its own pages, mlock'd, guard pages around it) and wiped by sodium_free
/// when destroyed or reassigned. An empty SecretBytes holds no allocation.
class SecretBytes {
public:
    SecretBytes() noexcept = default;
    /// `size` zero bytes. Throws std::bad_alloc if sodium_malloc fails.
    explicit SecretBytes(std::size_t size);
    /// A copy of `bytes` (the caller wipes its own copy).
    static SecretBytes copy_of(std::span<const std::uint8_t> bytes);
    ~SecretBytes();
    SecretBytes(SecretBytes&& other) noexcept;
    SecretBytes& operator=(SecretBytes&& other) noexcept;
    SecretBytes(const SecretBytes&) = delete;
    SecretBytes& operator=(const SecretBytes&) = delete;

    std::uint8_t* data() noexcept { return data_; }
    const std::uint8_t* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    std::span<std::uint8_t> span() noexcept { return {data_, size_}; }
    std::span<const std::uint8_t> span() const noexcept { return {data_, size_}; }
    /// The bytes as text (a password), without a copy.
    std::string_view view() const noexcept { return {reinterpret_cast<const char*>(data_), size_}; }

    /// Keeps the first `size` bytes (size <= size()); the rest is wiped.
    /// The allocation stays: only the visible size shrinks.
    void shrink(std::size_t size) noexcept;

    /// Constant-time equality of contents (sizes compared first).
    bool equals(std::span<const std::uint8_t> other) const noexcept;

private:
    std::uint8_t* data_ = nullptr;
    std::size_t size_ = 0;
};

/// Wipes `bytes` in a way the compiler does not remove (sodium_memzero).
void wipe(std::span<std::uint8_t> bytes) noexcept;

}  // namespace cdc::crypto
