#include "kselect/shapes.h"
#include "core/text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "core/text.h"
#include "kselect/problem.h"

namespace kselect {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> SplitComma(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    fields.push_back(
        Trim(line.substr(start, comma == std::string_view::npos ? line.npos : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return fields;
}

// A positive int64 or the reason it is not one.
StatusOr<int64_t> PositiveInt(std::string_view text, std::string_view column) {
  int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) {
    return ParseError(std::string(column) + ": '" + std::string(text) + "' overflows int64");
  }
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) {
    return ParseError(std::string(column) + ": '" + std::string(text) + "' is not an integer");
  }
  if (value <= 0) {
    return ParseError(std::string(column) + ": " + std::to_string(value) + " must be positive");
  }
  return value;
}

// A tiny deterministic generator (64-bit LCG), so generated sets never depend on the platform's
// std:: distributions.
class Lcg {
 public:
  explicit Lcg(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    return state_ >> 33;
  }
  int64_t Uniform(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(Next() % static_cast<uint64_t>(hi - lo + 1));
  }
  // Log-uniform in [lo, hi], rounded to a multiple of `step` (at least lo).
  int64_t LogUniform(int64_t lo, int64_t hi, int64_t step) {
    const double u = static_cast<double>(Next() % 1000000) / 1e6;
    const double v =
        static_cast<double>(lo) * std::pow(static_cast<double>(hi) / static_cast<double>(lo), u);
    int64_t r = static_cast<int64_t>(v) / step * step;
    return std::max(lo, std::min(hi, r));
  }

 private:
  uint64_t state_;
};

class SetBuilder {
 public:
  void Add(int64_t m, int64_t n, int64_t k, std::string family, int64_t batch = 1) {
    if (!seen_.insert({m, n, k, batch}).second) return;
    rows_.push_back(ShapeRow{m, n, k, batch, ShapeRegime(m, n, k), std::move(family)});
  }
  std::vector<ShapeRow> Take() { return std::move(rows_); }
  size_t size() const { return rows_.size(); }

 private:
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t>> seen_;
  std::vector<ShapeRow> rows_;
};

// Linear layers of well-known LLMs as (name, n = out features, k = in features).
struct LinearLayer {
  const char* name;
  int64_t n, k;
};
constexpr LinearLayer kLlmLayers[] = {
    {"llama7b.qkv", 12288, 4096},
    {"llama7b.o", 4096, 4096},
    {"llama7b.gate_up", 22016, 4096},
    {"llama7b.down", 4096, 11008},
    {"llama70b.qkv", 10240, 8192},
    {"llama70b.o", 8192, 8192},
    {"llama70b.gate_up", 57344, 8192},
    {"llama70b.down", 8192, 28672},
    {"deepseek.q_a", 1536, 7168},
    {"deepseek.q_b", 24576, 1536},
    {"deepseek.kv_a", 576, 7168},
    {"deepseek.o", 7168, 16384},
    {"deepseek.mlp_gate_up", 36864, 7168},
    {"deepseek.mlp_down", 7168, 18432},
    {"deepseek.expert_gate_up", 4096, 7168},
    {"deepseek.expert_down", 7168, 2048},
};
constexpr int64_t kLlmTokens[] = {1,   2,   4,    8,    16,   32,   64,   128,
                                  256, 512, 1024, 2048, 4096, 8192, 16384};
constexpr int64_t kPrimes[] = {17,  31,  61,   97,   127,  211,  251, 401,
                               509, 769, 1021, 1543, 2039, 3079, 4093};
constexpr int64_t kNonPow2[] = {48,  80,  96,   112,  160,  192,  224,  320,  384,  448, 640,
                                768, 896, 1280, 1536, 1792, 2304, 2560, 3072, 3584, 4608};

std::vector<ShapeRow> WideSet() {
  SetBuilder b;
  for (const LinearLayer& layer : kLlmLayers) {
    for (const int64_t m : kLlmTokens) b.Add(m, layer.n, layer.k, std::string("llm.") + layer.name);
  }
  for (int64_t s = 64; s <= 16384; s *= 2) b.Add(s, s, s, "square");
  for (const int64_t s : {1000, 2000, 3000, 5000, 6000, 10000, 12288, 20480})
    b.Add(s, s, s, "square");
  for (const int64_t m : {4096, 8192, 16384, 20480}) {
    for (const int64_t n : {16, 64, 128, 256}) {
      for (const int64_t k : {1024, 4096}) {
        b.Add(m, n, k, "tall");
        b.Add(n, m, k, "wide");
      }
    }
  }
  for (const int64_t mn : {64, 128, 256, 512, 1024, 2048}) {
    for (const int64_t k : {8192, 16384, 32768, 65536}) b.Add(mn, mn, k, "deep_k");
  }
  for (const int64_t mn : {1024, 2048, 4096, 8192, 16384}) {
    for (const int64_t k : {16, 32, 64, 128, 192}) b.Add(mn, mn, k, "shallow_k");
  }
  for (const int64_t m : {256, 1024, 4096, 8192, 16384}) {
    b.Add(m, 1, 4096, "n1");
    b.Add(m, 1, 16384, "n1");
  }
  for (const int64_t mn : {256, 1024, 4096, 8192}) b.Add(mn, mn, 1, "k1");
  for (const int64_t p : kPrimes) {
    b.Add(p, p, p, "prime");
    b.Add(p, 4096, 4096, "prime");
    b.Add(4096, p, 4096, "prime");
    b.Add(4096, 4096, p, "prime");
  }
  for (const int64_t s : kNonPow2) {
    b.Add(s, s, s, "npot");
    b.Add(s, 4096, s, "npot");
  }
  // Fill the rest of the set with log-uniform draws inside each M regime, so every regime has
  // non-structured shapes too.
  Lcg rng(20261122);
  constexpr int64_t kMRanges[][2] = {{1, 1}, {2, 16}, {32, 128}, {256, 2048}, {4096, 20480}};
  while (b.size() < 700) {
    for (const auto& range : kMRanges) {
      const int64_t m = range[0] == range[1]
                            ? range[0]
                            : rng.LogUniform(range[0], range[1], range[0] >= 256 ? 64 : 1);
      const int64_t n = rng.LogUniform(64, 20480, 64);
      const int64_t k = rng.LogUniform(64, 20480, 64);
      b.Add(m, n, k, "random");
      if (b.size() >= 700) break;
    }
  }
  return b.Take();
}

std::vector<ShapeRow> EdgeSet() {
  SetBuilder b;
  b.Add(1, 1, 1, "edge.unit");
  for (const int64_t k : {1, 2, 7, 65536, 131072}) b.Add(1, 1, k, "edge.dot");
  for (const int64_t m : {2, 3, 17, 4097, 20480}) b.Add(m, 1, 1, "edge.k1n1");
  for (const int64_t m : {1, 8, 4095, 20480}) b.Add(m, 20480, 1, "edge.k1");
  for (const int64_t s : {2, 3, 5, 7, 9, 15, 17, 33, 65, 129}) b.Add(s, s, s, "edge.tiny");
  for (const int64_t s : {4095, 4097, 8191, 8193, 16383, 16385})
    b.Add(s, s, s, "edge.pow2_neighbour");
  for (const int64_t s : {4095, 4097, 8191, 8193}) {
    b.Add(1, s, s, "edge.gemv_odd");
    b.Add(s, s, 7, "edge.k_odd_small");
  }
  for (const int64_t k : {262144, 524288}) b.Add(64, 64, k, "edge.very_deep_k");
  b.Add(20480, 20480, 20480, "edge.largest");
  b.Add(20480, 20480, 16, "edge.flat");
  b.Add(1, 65536, 8192, "edge.vocab_gemv");
  b.Add(16, 128256, 4096, "edge.vocab_llama3");
  b.Add(1, 3, 4096, "edge.n3");
  b.Add(4096, 3, 4096, "edge.n3");
  for (const int64_t batch : {2, 8, 64}) b.Add(128, 128, 128, "edge.batched", batch);
  b.Add(1, 4096, 4096, "edge.batched_gemv", 32);
  return b.Take();
}

// Linear layers of LLMs the wide set does not name, as (name, n = out features, k = in
// features): a test set of real shapes for models trained on wide-set data.
constexpr LinearLayer kHoldoutLayers[] = {
    {"llama3_8b.qkv", 6144, 4096},      {"llama3_8b.gate_up", 28672, 4096},
    {"llama3_8b.down", 4096, 14336},    {"qwen2_7b.qkv", 4608, 3584},
    {"qwen2_7b.o", 3584, 3584},         {"qwen2_7b.gate_up", 37888, 3584},
    {"qwen2_7b.down", 3584, 18944},     {"mistral_nemo.qkv", 6144, 5120},
    {"mistral_nemo.o", 5120, 4096},     {"mistral_nemo.gate_up", 28672, 5120},
    {"mistral_nemo.down", 5120, 14336}, {"phi3_mini.qkv", 9216, 3072},
    {"phi3_mini.o", 3072, 3072},        {"phi3_mini.gate_up", 16384, 3072},
    {"phi3_mini.down", 3072, 8192},     {"gemma2_9b.qkv", 8192, 3584},
    {"gemma2_9b.o", 3584, 4096},        {"gemma2_9b.gate_up", 28672, 3584},
    {"gemma2_9b.down", 3584, 14336},    {"qwen2_72b.gate_up", 59136, 8192},
    {"qwen2_72b.down", 8192, 29568},    {"llama3.lm_head", 128256, 4096},
};
// Token counts a server batches, powers of two and not, none of them the wide set's alone.
constexpr int64_t kHoldoutTokens[] = {1, 8, 24, 64, 200, 512, 1536, 4096};

std::vector<ShapeRow> HoldoutSet() {
  const std::vector<ShapeRow> wide = WideSet();
  std::set<std::tuple<int64_t, int64_t, int64_t>> in_wide;
  for (const ShapeRow& r : wide) in_wide.insert({r.m, r.n, r.k});
  SetBuilder b;
  for (const LinearLayer& layer : kHoldoutLayers) {
    for (const int64_t m : kHoldoutTokens) {
      // The largest layers only at decode sizes: a prefill of them alone would take minutes.
      if (static_cast<double>(m) * static_cast<double>(layer.n) * static_cast<double>(layer.k) >
          1.6e12) {
        continue;
      }
      if (in_wide.count({m, layer.n, layer.k})) continue;
      b.Add(m, layer.n, layer.k, std::string("holdout.") + layer.name);
    }
  }
  return b.Take();
}

}  // namespace

std::string ShapeRegime(int64_t m, int64_t n, int64_t k) {
  std::string r = "m";
  r += m == 1 ? "1" : m <= 16 ? "2-16" : m <= 128 ? "17-128" : m <= 2048 ? "129-2048" : "2049+";
  r += n == 1 ? ".n1" : n <= 64 ? ".n_small" : ".n_large";
  r += k == 1 ? ".k1" : k < 256 ? ".k_shallow" : k <= 4096 ? ".k_mid" : ".k_deep";
  return r;
}

StatusOr<std::vector<ShapeRow>> ParseShapeCsv(std::string_view text, std::string_view source) {
  std::vector<ShapeRow> rows;
  std::vector<std::string> header;
  int line_number = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = text.find('\n', pos);
    const std::string_view raw =
        text.substr(pos, end == std::string_view::npos ? text.npos : end - pos);
    pos = end == std::string_view::npos ? text.size() + 1 : end + 1;
    ++line_number;
    const std::string_view line = Trim(raw);
    if (line.empty() || line.front() == '#') continue;
    const std::string where = std::string(source) + ":" + std::to_string(line_number) + ": ";
    const std::vector<std::string_view> fields = SplitComma(line);
    if (header.empty()) {
      for (const std::string_view f : fields) header.emplace_back(f);
      if (header.size() < 3 || header[0] != "m" || header[1] != "n" || header[2] != "k") {
        return ParseError(where + "expected the header 'm,n,k[,batch,regime,family]', got '" +
                          std::string(line) + "'");
      }
      continue;
    }
    if (fields.size() != header.size()) {
      return ParseError(where + "expected " + std::to_string(header.size()) + " fields, got " +
                        std::to_string(fields.size()));
    }
    ShapeRow row;
    for (size_t i = 0; i < fields.size(); ++i) {
      const std::string& column = header[i];
      if (column == "m" || column == "n" || column == "k" || column == "batch") {
        StatusOr<int64_t> value = PositiveInt(fields[i], column);
        if (!value.ok()) return ParseError(where + value.status().message());
        (column == "m"   ? row.m
         : column == "n" ? row.n
         : column == "k" ? row.k
                         : row.batch) = *value;
      } else if (column == "regime") {
        row.regime = std::string(fields[i]);
      } else if (column == "family") {
        row.family = std::string(fields[i]);
      } else {
        return ParseError(where + "unknown column '" + column + "'");
      }
    }
    GemmProblem p;
    p.m = row.m;
    p.n = row.n;
    p.k = row.k;
    p.batch = row.batch;
    if (Status valid = p.Validate(); !valid.ok()) return ParseError(where + valid.message());
    const std::string regime = ShapeRegime(row.m, row.n, row.k);
    if (row.regime.empty()) row.regime = regime;
    if (row.regime != regime) {
      return ParseError(where + "regime '" + row.regime + "' does not match the dims (" + regime +
                        ")");
    }
    rows.push_back(std::move(row));
  }
  if (header.empty()) return ParseError(std::string(source) + ": no header line 'm,n,k,...'");
  return rows;
}

StatusOr<std::vector<ShapeRow>> LoadShapeFile(const std::string& path) {
  auto contents = text::ReadFile(path);
  if (contents.status().code() == StatusCode::kNotFound) {
    return NotFoundError(path + ": cannot open the shape file");
  }
  KSELECT_RETURN_IF_ERROR(contents.status());
  return ParseShapeCsv(*contents, path);
}

// A systematic sample of `rows`: rows i with i mod `modulus` in `residues`.
std::vector<ShapeRow> SystematicSample(const std::vector<ShapeRow>& rows, size_t modulus,
                                       std::initializer_list<size_t> residues) {
  std::vector<ShapeRow> sample;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (std::find(residues.begin(), residues.end(), i % modulus) != residues.end())
      sample.push_back(rows[i]);
  }
  return sample;
}

std::vector<ShapeRow> WideSample(size_t modulus, std::initializer_list<size_t> residues) {
  return SystematicSample(WideSet(), modulus, residues);
}

// About 1 in 4.5 of the wide set (i mod 9 in {0, 4}): every family and regime in proportion, for
// the datasets that need ~150 shapes, not ~700.
std::vector<ShapeRow> CoreSet() {
  return WideSample(9, {0, 4});
}

// Core plus the wide rows with i mod 9 == 2. cuBLASLt 13.1 has fp8 (e4m3) kernels only where
// k % 16 == 0 and m is 1 or a multiple of 8 (on an H200, 33 of core's 156 shapes had none), so fp8
// data needs a denser sample to reach 150 shapes it can run.
std::vector<ShapeRow> Fp8Set() {
  return WideSample(9, {0, 2, 4});
}

// About 1 in 29 of the wide set (i mod 29 == 0): 25 shapes from decode to the largest GEMMs, the
// same pairs timed in separate runs to measure cross-run drift (docs/lab/drift.md).
std::vector<ShapeRow> DriftSet() {
  return WideSample(29, {0});
}

// 3 in 7 of the wide set (i mod 7 in {0, 2, 4}): 300 shapes of every family and regime, the
// training sample of a second device (issue 21: the H100), whose device time allows ~300, not 700.
std::vector<ShapeRow> H100Set() {
  return WideSample(7, {0, 2, 4});
}

// 2 in 3 of the holdout set (i mod 3 in {0, 1}): 116 LLM layers no training set names, the test
// set of a second device.
std::vector<ShapeRow> HoldoutH100Set() {
  return SystematicSample(HoldoutSet(), 3, {0, 1});
}

// A tokens-in-m set as nn.Linear reaches cuBLAS (TN, m = out features, n = tokens): m and n
// swapped, regimes recomputed, families kept (they name the layer).
std::vector<ShapeRow> FrameworkOrientation(std::vector<ShapeRow> rows) {
  for (ShapeRow& r : rows) {
    std::swap(r.m, r.n);
    r.regime = ShapeRegime(r.m, r.n, r.k);
  }
  return rows;
}

StatusOr<std::vector<ShapeRow>> GenerateShapeSet(std::string_view set) {
  constexpr std::string_view kFramework = "_framework";
  if (set.size() > kFramework.size() && set.ends_with(kFramework)) {
    const std::string_view base = set.substr(0, set.size() - kFramework.size());
    if (base == "edge") return InvalidArgumentError("the edge set has no framework orientation");
    KSELECT_ASSIGN_OR_RETURN(std::vector<ShapeRow> rows, GenerateShapeSet(base));
    return FrameworkOrientation(std::move(rows));
  }
  if (set == "wide") return WideSet();
  if (set == "core") return CoreSet();
  if (set == "fp8") return Fp8Set();
  if (set == "edge") return EdgeSet();
  if (set == "holdout") return HoldoutSet();
  if (set == "drift") return DriftSet();
  if (set == "h100") return H100Set();
  if (set == "holdout_h100") return HoldoutH100Set();
  return InvalidArgumentError(
      "unknown shape set '" + std::string(set) +
      "' (known: wide, core, fp8, edge, holdout, drift, h100, holdout_h100; all but edge with the "
      "suffix "
      "_framework: m and n swapped, tokens in n; conv sets: conv_train, conv_train_extra, "
      "conv_train_networks, conv_train_hard, conv_validation)");
}

std::string ShapeCsv(const std::vector<ShapeRow>& rows, std::string_view origin) {
  std::string out = "# " + std::string(origin) + "\nm,n,k,batch,regime,family\n";
  for (const ShapeRow& r : rows) {
    out += std::to_string(r.m) + "," + std::to_string(r.n) + "," + std::to_string(r.k) + "," +
           std::to_string(r.batch) + "," + r.regime + "," + r.family + "\n";
  }
  return out;
}

}  // namespace kselect
