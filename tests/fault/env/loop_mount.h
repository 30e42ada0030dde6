// LoopMount is a small ext4 filesystem of a test's own: an image file under the test's temp
// directory, attached to a loop device and mounted where the test says (a data directory), for
// tests that fill a disk up. Fill() takes every free block with one file (fallocate, then writes
// for what a reserve leaves) and Free() deletes it again.
//
// The destructor unmounts (lazily if something still holds it open), detaches the loop device
// and deletes the image, also after a failed assertion. Test thread only; needs root,
// mkfs.ext4 and losetup (Unavailable() says what is missing).
#pragma once

#include <cstdint>
#include <string>

namespace jobctl::testing {

class LoopMount {
 public:
  static std::string Unavailable();

  // Makes an image of `mib` MiB in `image_dir`, formats it ext4 and mounts it on
  // `mount_point` (created if missing). Throws std::runtime_error when a step fails.
  LoopMount(const std::string& image_dir, std::string mount_point, int mib);
  ~LoopMount();
  LoopMount(const LoopMount&) = delete;
  LoopMount& operator=(const LoopMount&) = delete;

  const std::string& path() const { return mount_point_; }  // the mounted directory
  // Takes all free space (a file "filler" at the top), so that the next write that needs a
  // new block fails with ENOSPC.
  void Fill();
  void Free();
  int64_t free_bytes() const;

 private:
  std::string image_;
  std::string mount_point_;
  std::string device_;  // /dev/loopN
  bool mounted_ = false;
};

}  // namespace jobctl::testing
