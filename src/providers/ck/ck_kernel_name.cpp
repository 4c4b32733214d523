// Parsers for AMD kernel names: CK Tile GEMM names (ck_tile_heuristics.md §1.5) and the
// dispatcher's grouped-convolution names (§7.2). AMD logs carry kernel configs only as names, so
// these are the one place kselect recovers a config from a name; they are strict on purpose:
// a token they do not understand is an error naming it, never a silently mislabelled config.
#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/text.h"
#include "kselect/problem.h"
#include "providers/ck/ck_kernel_name.h"

namespace kselect {
namespace {

// Epilogues CK Tile knows (§6.3: cshuffle, default, tdm). The pipeline is everything between the
// layout and the first of these, because pipelines themselves may contain '_' (comp_tdm_v2).
constexpr std::array<std::string_view, 3> kCkEpilogues = {"cshuffle", "default", "tdm"};
// ck_tile::GemmPipelineScheduler: Default, Intrawave, Interwave.
constexpr std::array<std::string_view, 3> kCkSchedulers = {"intrawave", "interwave", "default"};
constexpr std::array<std::string_view, 2> kConvWaves = {"intrawave", "interwave"};

template <size_t N>
bool IsOneOf(std::string_view token, const std::array<std::string_view, N>& list) {
  for (std::string_view item : list) {
    if (token == item) return true;
  }
  return false;
}

std::string JoinNames(std::string_view separator, const auto& list) {
  std::string out;
  for (std::string_view item : list) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

bool IsLowerAlnum(std::string_view token) {
  if (token.empty()) return false;
  for (char c : token) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  }
  return true;
}

// "v2", "v10": a version token that continues a pipeline name (comp_tdm_v2, basic_v1).
bool IsVersionToken(std::string_view token) {
  if (token.size() < 2 || token[0] != 'v') return false;
  for (char c : token.substr(1)) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

Status NameError(std::string_view kind, std::string_view name, std::string_view detail) {
  return ParseError(std::string(kind) + " '" + std::string(name) + "': " + std::string(detail));
}

// A positive int32 written in decimal; `what` names the field in the error.
StatusOr<int32_t> ParsePositiveInt32(std::string_view token, bool allow_zero) {
  StatusOr<int64_t> value = text::ParseInt64(token);
  const int64_t min_value = allow_zero ? 0 : 1;
  if (!value.ok() || *value < min_value || *value > std::numeric_limits<int32_t>::max()) {
    return InvalidArgumentError("'" + std::string(token) + "' is not a " +
                                (allow_zero ? "non-negative" : "positive") + " integer");
  }
  return static_cast<int32_t>(*value);
}

// "128x128x64" -> {128, 128, 64}.
StatusOr<std::array<int32_t, 3>> ParseTriple(std::string_view token) {
  std::vector<std::string_view> parts = text::Split(token, 'x');
  if (parts.size() != 3) {
    return InvalidArgumentError("'" + std::string(token) + "' is not of the form AxBxC");
  }
  std::array<int32_t, 3> out{};
  for (size_t i = 0; i < 3; ++i) {
    StatusOr<int32_t> value = ParsePositiveInt32(parts[i], /*allow_zero=*/false);
    if (!value.ok()) {
      return InvalidArgumentError("'" + std::string(token) + "': " + value.status().message());
    }
    out[i] = *value;
  }
  return out;
}

// CK writes Python booleans into names.
StatusOr<bool> ParseCkBool(std::string_view token) {
  if (token == "True") return true;
  if (token == "False") return false;
  return InvalidArgumentError("'" + std::string(token) + "' is not True or False");
}

bool IsGemmLayout(std::string_view token) {
  if (token.size() != 3) return false;
  for (char c : token) {
    if (c != 'r' && c != 'c') return false;
  }
  return true;
}

}  // namespace

StatusOr<CkTileKernelName> ParseCkTileKernelName(std::string_view name) {
  constexpr std::string_view kKind = "CK Tile kernel name";
  std::string_view body = name;
  // Benchmark executables are the kernel name with this prefix (§1.5).
  if (text::StartsWith(body, "benchmark_"))
    body.remove_prefix(std::string_view("benchmark_").size());
  const std::vector<std::string_view> tokens = text::Split(body, '_');

  CkTileKernelName out;
  size_t i = 0;
  auto at = [&](size_t index) -> std::string_view {
    return index < tokens.size() ? tokens[index] : std::string_view();
  };
  auto missing = [&](std::string_view what) {
    return NameError(kKind, name, "ends before the " + std::string(what));
  };

  if (at(0) != "gemm") {
    return NameError(kKind, name, "bad token '" + std::string(at(0)) + "': expected 'gemm'");
  }
  ++i;
  out.op = "gemm";
  if (at(i) == "universal") {
    out.op = "gemm_universal";
    ++i;
  }

  if (i >= tokens.size()) return missing("dtype");
  if (!ParseDataType(at(i)).ok()) {
    return NameError(kKind, name, "bad dtype token '" + std::string(at(i)) + "'");
  }
  out.dtype = std::string(at(i++));

  if (i >= tokens.size()) return missing("layout");
  if (!IsGemmLayout(at(i))) {
    return NameError(kKind, name,
                     "bad layout token '" + std::string(at(i)) + "': expected three of r/c");
  }
  out.layout = std::string(at(i++));

  // The pipeline runs up to the epilogue token and has at least one token. An epilogue name can
  // also be part of a pipeline name (comp_tdm_v2 with the tdm epilogue), so the epilogue is the
  // first epilogue token followed by a scheduler token; failing that (a bad scheduler), the first
  // epilogue token, so the scheduler check below names the bad token.
  if (i >= tokens.size()) return missing("pipeline");
  size_t epilogue_index = tokens.size();
  for (size_t e = i + 1; e + 1 < tokens.size(); ++e) {
    if (IsOneOf(tokens[e], kCkEpilogues) && IsOneOf(tokens[e + 1], kCkSchedulers)) {
      epilogue_index = e;
      break;
    }
  }
  if (epilogue_index == tokens.size()) {
    epilogue_index = i + 1;
    while (epilogue_index < tokens.size() && !IsOneOf(tokens[epilogue_index], kCkEpilogues)) {
      ++epilogue_index;
    }
  }
  if (epilogue_index >= tokens.size()) {
    return NameError(kKind, name,
                     "no epilogue token (" + JoinNames("/", kCkEpilogues) + ") after the layout");
  }
  for (size_t p = i; p < epilogue_index; ++p) {
    if (!IsLowerAlnum(tokens[p])) {
      return NameError(kKind, name, "bad pipeline token '" + std::string(tokens[p]) + "'");
    }
    if (p > i) out.config.pipeline += '_';
    out.config.pipeline += tokens[p];
  }
  i = epilogue_index;
  out.config.epilogue = std::string(at(i++));

  if (i >= tokens.size()) return missing("scheduler");
  if (!IsOneOf(at(i), kCkSchedulers)) {
    return NameError(kKind, name,
                     "bad scheduler token '" + std::string(at(i)) + "': expected one of " +
                         JoinNames(", ", kCkSchedulers));
  }
  out.config.scheduler = std::string(at(i++));

  constexpr std::array<std::string_view, 4> kFlagNames = {"padM", "padN", "padK", "persistent"};
  std::array<bool*, 4> flags = {&out.config.pad_m, &out.config.pad_n, &out.config.pad_k,
                                &out.config.persistent};
  for (size_t f = 0; f < flags.size(); ++f) {
    if (i >= tokens.size()) return missing(kFlagNames[f]);
    StatusOr<bool> flag = ParseCkBool(at(i));
    if (!flag.ok()) {
      return NameError(kKind, name,
                       "bad " + std::string(kFlagNames[f]) + " token: " + flag.status().message());
    }
    *flags[f] = *flag;
    ++i;
  }

  constexpr std::array<std::string_view, 3> kTripleNames = {"tile", "warp", "warp tile"};
  std::array<std::array<int32_t*, 3>, 3> triples = {{
      {&out.config.tile_m, &out.config.tile_n, &out.config.tile_k},
      {&out.config.warp_m, &out.config.warp_n, &out.config.warp_k},
      {&out.config.warp_tile_m, &out.config.warp_tile_n, &out.config.warp_tile_k},
  }};
  for (size_t t = 0; t < triples.size(); ++t) {
    if (i >= tokens.size()) return missing(std::string(kTripleNames[t]) + " shape");
    StatusOr<std::array<int32_t, 3>> triple = ParseTriple(at(i));
    if (!triple.ok()) {
      return NameError(
          kKind, name,
          "bad " + std::string(kTripleNames[t]) + " shape token: " + triple.status().message());
    }
    for (size_t d = 0; d < 3; ++d) *triples[t][d] = (*triple)[d];
    ++i;
  }

  // Optional fixed vector widths, "_vec{A}_{B}_{C}"; absent means native (0, 0, 0).
  if (i < tokens.size()) {
    if (!text::StartsWith(at(i), "vec")) {
      return NameError(kKind, name, "unexpected trailing token '" + std::string(at(i)) + "'");
    }
    if (i + 3 != tokens.size()) {
      return NameError(kKind, name,
                       "malformed vector-width suffix starting at '" + std::string(at(i)) +
                           "': expected vec{A}_{B}_{C}");
    }
    std::array<std::string_view, 3> widths = {at(i).substr(3), at(i + 1), at(i + 2)};
    std::array<int32_t*, 3> fields = {&out.config.vec_a, &out.config.vec_b, &out.config.vec_c};
    for (size_t v = 0; v < 3; ++v) {
      StatusOr<int32_t> width = ParsePositiveInt32(widths[v], /*allow_zero=*/true);
      if (!width.ok()) {
        return NameError(kKind, name, "bad vector-width token: " + width.status().message());
      }
      *fields[v] = *width;
    }
  }
  return out;
}

StatusOr<CkConvKernelName> ParseCkConvKernelName(std::string_view name) {
  constexpr std::string_view kKind = "CK grouped-conv kernel name";
  const std::vector<std::string_view> tokens = text::Split(name, '_');
  auto at = [&](size_t index) -> std::string_view {
    return index < tokens.size() ? tokens[index] : std::string_view();
  };
  auto missing = [&](std::string_view what) {
    return NameError(kKind, name, "ends before the " + std::string(what));
  };

  if (at(0) != "grouped" || at(1) != "conv") {
    return NameError(kKind, name, "does not start with 'grouped_conv_'");
  }
  size_t i = 2;
  CkConvKernelName out;

  if (i >= tokens.size()) return missing("variant");
  if (at(i) == "forward" || at(i) == "fwd") {
    out.direction = ConvDirection::kForward;
    i += 1;
  } else if (at(i) == "bwd" && (at(i + 1) == "data" || at(i + 1) == "weight")) {
    out.direction =
        at(i + 1) == "data" ? ConvDirection::kBackwardData : ConvDirection::kBackwardWeight;
    i += 2;
  } else {
    return NameError(kKind, name,
                     "bad variant token '" + std::string(at(i)) +
                         "': expected forward, fwd, bwd_data or bwd_weight");
  }

  if (i >= tokens.size()) return missing("dtype");
  if (!ParseDataType(at(i)).ok()) {
    return NameError(kKind, name, "bad dtype token '" + std::string(at(i)) + "'");
  }
  out.dtype = std::string(at(i++));

  if (i >= tokens.size()) return missing("spatial dimensions");
  if (at(i) == "2d") {
    out.spatial_dims = 2;
  } else if (at(i) == "3d") {
    out.spatial_dims = 3;
  } else {
    return NameError(kKind, name,
                     "bad spatial-dimension token '" + std::string(at(i)) + "': expected 2d or 3d");
  }
  ++i;

  // The dispatcher writes {tile_m}x{tile_n}x{tile_k} here (§7.2), whatever CK's parser calls it.
  if (i >= tokens.size()) return missing("tile shape");
  StatusOr<std::array<int32_t, 3>> tile = ParseTriple(at(i));
  if (!tile.ok()) {
    return NameError(kKind, name, "bad tile shape token: " + tile.status().message());
  }
  out.config.tile_m = (*tile)[0];
  out.config.tile_n = (*tile)[1];
  out.config.tile_k = (*tile)[2];
  ++i;

  if (i >= tokens.size()) return missing("pipeline");
  if (!IsLowerAlnum(at(i)) || IsOneOf(at(i), kConvWaves) || at(i) == "dsb" || at(i) == "si") {
    return NameError(kKind, name, "bad pipeline token '" + std::string(at(i)) + "'");
  }
  out.config.pipeline = std::string(at(i++));
  // Version tokens continue the pipeline name (CK's conv features test for "basic_v*" pipelines).
  while (i < tokens.size() && IsVersionToken(at(i))) {
    out.config.pipeline += '_';
    out.config.pipeline += at(i++);
  }

  // Suffixes in the dispatcher's order: [_{wave}][_dsb][_si]. Anything else (CK's own _gm4,
  // _2stage, ...) is refused rather than dropped, since it changes the kernel.
  if (i < tokens.size() && IsOneOf(at(i), kConvWaves)) out.config.scheduler = std::string(at(i++));
  if (i < tokens.size() && at(i) == "dsb") {
    out.config.double_smem_buffer = true;
    ++i;
  }
  if (i < tokens.size() && at(i) == "si") {
    out.config.split_image = true;
    ++i;
  }
  if (i < tokens.size()) {
    std::string rest;
    for (size_t r = i; r < tokens.size(); ++r) {
      if (!rest.empty()) rest += ", ";
      rest += "'" + std::string(tokens[r]) + "'";
    }
    return NameError(kKind, name,
                     "unknown trailing token(s) " + rest +
                         " (only [_intrawave|_interwave][_dsb][_si] may follow the pipeline, "
                         "in that order)");
  }
  return out;
}

}  // namespace kselect
