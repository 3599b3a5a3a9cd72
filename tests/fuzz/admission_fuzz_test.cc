// Replays tests/fuzz/corpus/admission through the libFuzzer target (admission_fuzz_target.cc), then a fixed
// number of deterministic mutations of each seed (byte flips, truncations, splices of JSON tokens), so every
// build checks the target's properties even where clang's libFuzzer is not used. The RNG seed is fixed: a
// failure reproduces exactly.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<std::string> Seeds() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(TEPHRA_ADMISSION_CORPUS)) {
    std::ifstream f(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    out.push_back(ss.str());
  }
  return out;
}

void Feed(const std::string& s) { LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size()); }

TEST(AdmissionFuzz, CorpusAndMutations) {
  auto seeds = Seeds();
  ASSERT_GE(seeds.size(), 11u) << "one seed per admission path expected in " << TEPHRA_ADMISSION_CORPUS;
  std::mt19937 rng(20261125);
  const char* tokens[] = {"null", "{}", "[]", "\"\"", "0", "-1", "1e999", "\"CREATE\"", "\"UPDATE\"", "\"DELETE\"",
                          "true", "\"\\u0000\"", "{\"a\":[[[[]]]]}", "\"volcano\"", "99999999999999999999"};
  for (const auto& seed : seeds) {
    Feed(seed);
    for (int i = 0; i < 300; ++i) {
      std::string m = seed;
      switch (rng() % 4) {
        case 0:  // flip a byte
          if (!m.empty()) m[rng() % m.size()] = static_cast<char>(rng());
          break;
        case 1:  // truncate
          m.resize(m.empty() ? 0 : rng() % m.size());
          break;
        case 2: {  // replace a value after a ':' with a token
          size_t p = m.find(':', m.empty() ? 0 : rng() % m.size());
          if (p != std::string::npos) {
            size_t end = m.find_first_of(",}", p + 1);
            if (end != std::string::npos) m.replace(p + 1, end - p - 1, tokens[rng() % std::size(tokens)]);
          }
          break;
        }
        default:  // splice another seed's tail
          if (!m.empty()) {
            const std::string& other = seeds[rng() % seeds.size()];
            m = m.substr(0, rng() % m.size()) + other.substr(other.empty() ? 0 : rng() % other.size());
          }
      }
      Feed(m);
    }
  }
}

}  // namespace
