// SPDX-License-Identifier: Apache-2.0
#include "secret.hpp"

#include <sodium.h>

#include <cstring>
#include <new>
#include <utility>

namespace cdc::crypto {

void ensure_sodium() {
    // sodium_init is itself safe to call from several threads and more than
    // once (1: already done); a static keeps the fast path a load.
    static const int rc = sodium_init();
    if (rc < 0) throw Error("libsodium could not be initialised (no random source?)");
}

void random_bytes(std::span<std::uint8_t> out) {
    ensure_sodium();
    randombytes_buf(out.data(), out.size());
}

void wipe(std::span<std::uint8_t> bytes) noexcept {
    if (!bytes.empty()) sodium_memzero(bytes.data(), bytes.size());
}

SecretBytes::SecretBytes(std::size_t size) {
    if (size == 0) return;
    ensure_sodium();
    // sodium_malloc tries mlock and carries on without it (RLIMIT_MEMLOCK):
    // the guard pages and the wipe remain.
    void* p = sodium_malloc(size);
    if (p == nullptr) throw std::bad_alloc();
    data_ = static_cast<std::uint8_t*>(p);
    size_ = size;
    std::memset(data_, 0, size);
}

SecretBytes SecretBytes::copy_of(std::span<const std::uint8_t> bytes) {
    SecretBytes s(bytes.size());
    if (!bytes.empty()) std::memcpy(s.data_, bytes.data(), bytes.size());
    return s;
}

SecretBytes::~SecretBytes() {
    if (data_ != nullptr) sodium_free(data_);  // wipes the whole allocation
}

SecretBytes::SecretBytes(SecretBytes&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

SecretBytes& SecretBytes::operator=(SecretBytes&& other) noexcept {
    if (this != &other) {
        if (data_ != nullptr) sodium_free(data_);
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

void SecretBytes::shrink(std::size_t size) noexcept {
    if (size >= size_) return;
    sodium_memzero(data_ + size, size_ - size);
    size_ = size;
}

bool SecretBytes::equals(std::span<const std::uint8_t> other) const noexcept {
    if (other.size() != size_) return false;
    if (size_ == 0) return true;
    return sodium_memcmp(data_, other.data(), size_) == 0;
}

}  // namespace cdc::crypto
