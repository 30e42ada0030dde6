#include "fault/probe_output.h"

#include <openssl/evp.h>

#include <cstdio>

namespace jobctl::fault {
namespace {

uint64_t Mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

std::string ProbeLine(int64_t run, int shard, int attempt, int i, int lines) {
  uint64_t h = Mix(static_cast<uint64_t>(run));
  h = Mix(h ^ static_cast<uint64_t>(shard));
  h = Mix(h ^ static_cast<uint64_t>(attempt));
  h = Mix(h ^ static_cast<uint64_t>(i));
  char buf[160];
  std::snprintf(buf, sizeof buf, "probe run=%lld shard=%d attempt=%d line=%d/%d %016llx%016llx\n",
                static_cast<long long>(run), shard, attempt, i, lines,
                static_cast<unsigned long long>(h), static_cast<unsigned long long>(Mix(h)));
  return buf;
}

std::string ProbeOutput(int64_t run, int shard, int attempt, int lines) {
  std::string out;
  for (int i = 0; i < lines; ++i) out += ProbeLine(run, shard, attempt, i, lines);
  return out;
}

std::string Sha256Hex(const std::string& data) {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), d, &n, EVP_sha256(), nullptr);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < n; ++i) {
    out += kHex[d[i] >> 4];
    out += kHex[d[i] & 15];
  }
  return out;
}

}  // namespace jobctl::fault
