// A committed file's chunk list, read in batches with bounded memory: a
// thread walks Store::for_each_chunk (on a Store of its own, from one
// snapshot) and hands over batches through a queue of two. A 4 GiB file
// has ~500k chunks; the list is never held whole.
#pragma once

#include <cdc/store.hpp>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cdc::transfer {

class ManifestCursor {
public:
    struct Batch {
        std::vector<store::ChunkId> ids;
        std::vector<std::uint32_t> sizes;
    };

    /// Starts reading the chunk list of `name` in batches of at most
    /// `batch_chunks`. Errors (NotFoundError, DamageError) surface in next().
    ManifestCursor(const std::filesystem::path& store_dir, const store::OpenOptions& options, std::string name,
                   std::size_t batch_chunks);
    ~ManifestCursor();
    ManifestCursor(const ManifestCursor&) = delete;
    ManifestCursor& operator=(const ManifestCursor&) = delete;

    /// The next batch; false at the end of the list. Rethrows the reader's error.
    bool next(Batch& out);

private:
    void run(std::filesystem::path dir, store::OpenOptions options, std::string name, std::size_t batch_chunks);

    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<Batch> queue_;
    bool done_ = false;
    bool stop_ = false;
    std::exception_ptr error_;
    std::thread thread_;
};

}  // namespace cdc::transfer
