#include "core/json_codec.h"

#include <array>
#include <cmath>
#include <limits>

namespace kselect::json_codec {

using nlohmann::json;

namespace {

std::string TypeName(const json& j) {
  return j.type_name();
}

}  // namespace

ObjectReader::ObjectReader(const json& object, std::string path)
    : object_(object), path_(std::move(path)) {
  if (!object_.is_object()) {
    status_ = ParseError(path_ + ": expected a JSON object, got " + TypeName(object_));
  }
}

std::string ObjectReader::PathOf(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

bool ObjectReader::Has(std::string_view key) const {
  return object_.is_object() && object_.find(key) != object_.end();
}

const json* ObjectReader::Find(std::string_view key, bool required) {
  if (!status_.ok()) return nullptr;
  read_keys_.emplace(key);
  const auto it = object_.find(key);
  if (it == object_.end()) {
    if (required) Fail(ParseError(PathOf(key) + ": required field is missing"));
    return nullptr;
  }
  return &*it;
}

void ObjectReader::Fail(Status status) {
  if (status_.ok()) status_ = std::move(status);
}

int64_t ObjectReader::Int(std::string_view key) {
  const json* v = Find(key, true);
  if (!v) return 0;
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (std::floor(d) == d && std::fabs(d) < 9.0e18) return static_cast<int64_t>(d);
  }
  Fail(ParseError(PathOf(key) + ": expected an integer, got " + TypeName(*v) + " " + v->dump()));
  return 0;
}

int64_t ObjectReader::IntOr(std::string_view key, int64_t fallback) {
  return Has(key) ? Int(key) : (read_keys_.emplace(key), fallback);
}

double ObjectReader::Number(std::string_view key) {
  const json* v = Find(key, true);
  if (!v) return 0;
  if (v->is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (v->is_number()) return v->get<double>();
  Fail(ParseError(PathOf(key) + ": expected a number, got " + TypeName(*v) + " " + v->dump()));
  return 0;
}

double ObjectReader::NumberOr(std::string_view key, double fallback) {
  return Has(key) ? Number(key) : (read_keys_.emplace(key), fallback);
}

bool ObjectReader::Bool(std::string_view key) {
  const json* v = Find(key, true);
  if (!v) return false;
  if (v->is_boolean()) return v->get<bool>();
  Fail(ParseError(PathOf(key) + ": expected true or false, got " + TypeName(*v)));
  return false;
}

bool ObjectReader::BoolOr(std::string_view key, bool fallback) {
  return Has(key) ? Bool(key) : (read_keys_.emplace(key), fallback);
}

std::string ObjectReader::String(std::string_view key) {
  const json* v = Find(key, true);
  if (!v) return "";
  if (v->is_string()) return v->get<std::string>();
  Fail(ParseError(PathOf(key) + ": expected a string, got " + TypeName(*v)));
  return "";
}

std::string ObjectReader::StringOr(std::string_view key, std::string fallback) {
  return Has(key) ? String(key) : (read_keys_.emplace(key), fallback);
}

const json* ObjectReader::Child(std::string_view key, bool required) {
  return Find(key, required);
}

Status ObjectReader::Finish() {
  if (!status_.ok()) return status_;
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    if (!read_keys_.contains(it.key())) {
      return ParseError(PathOf(it.key()) + ": unknown field");
    }
  }
  return Status::Ok();
}

namespace {

// Parses an enum-valued string field through `parse`, recording errors with the field's path.
template <typename T, typename ParseFn>
T ParseField(ObjectReader& r, std::string_view key, ParseFn parse, T fallback) {
  if (!r.Has(key)) {
    r.StringOr(key, "");  // marks the key as read
    return fallback;
  }
  const std::string text = r.String(key);
  if (!r.ok()) return fallback;
  auto parsed = parse(text);
  if (!parsed.ok()) {
    r.Fail(ParseError(r.PathOf(key) + ": " + parsed.status().message()));
    return fallback;
  }
  return *parsed;
}

int32_t I32(ObjectReader& r, std::string_view key, int32_t fallback) {
  const int64_t v = r.IntOr(key, fallback);
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
    r.Fail(ParseError(r.PathOf(key) + ": " + std::to_string(v) + " does not fit in 32 bits"));
    return fallback;
  }
  return static_cast<int32_t>(v);
}

}  // namespace

json GemmProblemToJson(const GemmProblem& p) {
  return json{{"kind", "gemm"},
              {"m", p.m},
              {"n", p.n},
              {"k", p.k},
              {"batch", p.batch},
              {"layout", p.layout.ToString()},
              {"dtype_a", DataTypeName(p.dtype_a)},
              {"dtype_b", DataTypeName(p.dtype_b)},
              {"dtype_c", DataTypeName(p.dtype_c)},
              {"compute", DataTypeName(p.compute)},
              {"alpha", p.alpha},
              {"beta", p.beta}};
}

json ConvProblemToJson(const ConvProblem& p) {
  return json{{"kind", "conv"},
              {"direction", ConvDirectionName(p.direction)},
              {"n", p.n},
              {"c", p.c},
              {"k", p.k},
              {"g", p.g},
              {"di", p.di},
              {"hi", p.hi},
              {"wi", p.wi},
              {"z", p.z},
              {"y", p.y},
              {"x", p.x},
              {"stride", {p.stride_d, p.stride_h, p.stride_w}},
              {"pad", {p.pad_d, p.pad_h, p.pad_w}},
              {"dilation", {p.dilation_d, p.dilation_h, p.dilation_w}},
              {"layout", ConvLayoutName(p.layout)},
              {"dtype", DataTypeName(p.dtype)},
              {"compute", DataTypeName(p.compute)}};
}

json ProblemToJson(const Problem& p) {
  if (const auto* g = std::get_if<GemmProblem>(&p)) return GemmProblemToJson(*g);
  return ConvProblemToJson(std::get<ConvProblem>(p));
}

namespace {

// Reads a [d, h, w] triple.
void ReadTriple(ObjectReader& r, std::string_view key, int64_t& d, int64_t& h, int64_t& w) {
  const json* v = r.Child(key, false);
  if (!v) return;
  if (!v->is_array() || v->size() != 3 || !(*v)[0].is_number_integer() ||
      !(*v)[1].is_number_integer() || !(*v)[2].is_number_integer()) {
    r.Fail(ParseError(r.PathOf(key) + ": expected [d, h, w] integers, got " + v->dump()));
    return;
  }
  d = (*v)[0].get<int64_t>();
  h = (*v)[1].get<int64_t>();
  w = (*v)[2].get<int64_t>();
}

}  // namespace

StatusOr<Problem> ProblemFromJson(const json& j, const std::string& path) {
  ObjectReader r(j, path);
  const std::string kind = r.String("kind");
  if (!r.ok()) return r.Finish();
  if (kind == "gemm") {
    GemmProblem p;
    p.m = r.Int("m");
    p.n = r.Int("n");
    p.k = r.Int("k");
    p.batch = r.IntOr("batch", 1);
    p.layout = ParseField(r, "layout", ParseGemmLayout, p.layout);
    p.dtype_a = ParseField(r, "dtype_a", ParseDataType, p.dtype_a);
    p.dtype_b = ParseField(r, "dtype_b", ParseDataType, p.dtype_b);
    p.dtype_c = ParseField(r, "dtype_c", ParseDataType, p.dtype_c);
    p.compute = ParseField(r, "compute", ParseDataType, p.compute);
    p.alpha = r.NumberOr("alpha", 1.0);
    p.beta = r.NumberOr("beta", 0.0);
    KSELECT_RETURN_IF_ERROR(r.Finish());
    return Problem(p);
  }
  if (kind == "conv") {
    ConvProblem p;
    p.direction = ParseField(r, "direction", ParseConvDirection, p.direction);
    p.n = r.Int("n");
    p.c = r.Int("c");
    p.k = r.Int("k");
    p.g = r.IntOr("g", 1);
    p.di = r.IntOr("di", 1);
    p.hi = r.Int("hi");
    p.wi = r.Int("wi");
    p.z = r.IntOr("z", 1);
    p.y = r.Int("y");
    p.x = r.Int("x");
    ReadTriple(r, "stride", p.stride_d, p.stride_h, p.stride_w);
    ReadTriple(r, "pad", p.pad_d, p.pad_h, p.pad_w);
    ReadTriple(r, "dilation", p.dilation_d, p.dilation_h, p.dilation_w);
    p.layout = ParseField(r, "layout", ParseConvLayout, p.layout);
    p.dtype = ParseField(r, "dtype", ParseDataType, p.dtype);
    p.compute = ParseField(r, "compute", ParseDataType, p.compute);
    KSELECT_RETURN_IF_ERROR(r.Finish());
    return Problem(p);
  }
  return ParseError(r.PathOf("kind") + ": unknown problem kind '" + kind +
                    "' (expected gemm or conv)");
}

json KernelConfigToJson(const KernelConfig& config) {
  struct Visitor {
    json operator()(const CublasLtConfig& c) const {
      return json{{"provider", "cublaslt"},
                  {"algo_id", c.algo_id},
                  {"tile_id", c.tile_id},
                  {"stages_id", c.stages_id},
                  {"split_k", c.split_k},
                  {"reduction_scheme", c.reduction_scheme},
                  {"swizzle", c.swizzle},
                  {"custom_option", c.custom_option},
                  {"cluster_shape_id", c.cluster_shape_id},
                  {"inner_shape_id", c.inner_shape_id},
                  {"tile_m", c.tile_m},
                  {"tile_n", c.tile_n},
                  {"stage_k", c.stage_k},
                  {"stages", c.stages},
                  {"cluster_m", c.cluster_m},
                  {"cluster_n", c.cluster_n},
                  {"cluster_k", c.cluster_k}};
    }
    json operator()(const TileConfig& c) const {
      return json{{"provider", "tile"},
                  {"tile", {c.tile_m, c.tile_n, c.tile_k}},
                  {"warps", {c.warps_m, c.warps_n, c.warps_k}},
                  {"instr", {c.instr_m, c.instr_n, c.instr_k}},
                  {"stages", c.stages},
                  {"pipeline", TilePipelineName(c.pipeline)},
                  {"scheduler", TileSchedulerName(c.scheduler)},
                  {"epilogue", TileEpilogueName(c.epilogue)},
                  {"mask", {c.mask_m, c.mask_n, c.mask_k}},
                  {"split_k", c.split_k},
                  {"cluster", {c.cluster_m, c.cluster_n}},
                  {"swizzle", c.swizzle}};
    }
    json operator()(const CudnnConfig& c) const {
      json knobs = json::array();
      for (const auto& [knob, value] : c.knobs) knobs.push_back({knob, value});
      return json{{"provider", "cudnn"}, {"engine_id", c.engine_id}, {"knobs", knobs}};
    }
    json operator()(const CkTileConfig& c) const {
      return json{{"provider", "ck_tile"},
                  {"tile", {c.tile_m, c.tile_n, c.tile_k}},
                  {"warp", {c.warp_m, c.warp_n, c.warp_k}},
                  {"warp_tile", {c.warp_tile_m, c.warp_tile_n, c.warp_tile_k}},
                  {"pipeline", c.pipeline},
                  {"scheduler", c.scheduler},
                  {"epilogue", c.epilogue},
                  {"pad", {c.pad_m, c.pad_n, c.pad_k}},
                  {"persistent", c.persistent},
                  {"vec", {c.vec_a, c.vec_b, c.vec_c}},
                  {"split_k", c.split_k}};
    }
    json operator()(const CkConvConfig& c) const {
      return json{{"provider", "ck_conv"},
                  {"tile", {c.tile_m, c.tile_n, c.tile_k}},
                  {"pipeline", c.pipeline},
                  {"scheduler", c.scheduler},
                  {"double_smem_buffer", c.double_smem_buffer},
                  {"split_image", c.split_image}};
    }
  };
  return std::visit(Visitor{}, config);
}

namespace {

// Reads an array of `N` integers (or booleans when T is bool) into `out`.
template <typename T, size_t N>
void ReadArray(ObjectReader& r, std::string_view key, std::array<T*, N> out) {
  const json* v = r.Child(key, false);
  if (!v) return;
  bool ok = v->is_array() && v->size() == N;
  for (size_t i = 0; ok && i < N; ++i) {
    if constexpr (std::is_same_v<T, bool>) {
      ok = (*v)[i].is_boolean();
    } else {
      ok = (*v)[i].is_number_integer() && (*v)[i].get<int64_t>() >= std::numeric_limits<T>::min() &&
           (*v)[i].get<int64_t>() <= std::numeric_limits<T>::max();
    }
  }
  if (!ok) {
    r.Fail(ParseError(r.PathOf(key) + ": expected an array of " + std::to_string(N) +
                      (std::is_same_v<T, bool> ? " booleans" : " integers") + ", got " +
                      v->dump()));
    return;
  }
  for (size_t i = 0; i < N; ++i) *out[i] = (*v)[i].get<T>();
}

}  // namespace

StatusOr<KernelConfig> KernelConfigFromJson(const json& j, const std::string& path) {
  ObjectReader r(j, path);
  const std::string provider_name = r.String("provider");
  if (!r.ok()) return r.Finish();
  auto provider = ParseProvider(provider_name);
  if (!provider.ok()) return ParseError(r.PathOf("provider") + ": " + provider.status().message());
  switch (*provider) {
    case Provider::kCublasLt: {
      CublasLtConfig c;
      c.algo_id = I32(r, "algo_id", 0);
      c.tile_id = I32(r, "tile_id", 0);
      c.stages_id = I32(r, "stages_id", 0);
      c.split_k = I32(r, "split_k", 1);
      c.reduction_scheme = I32(r, "reduction_scheme", 0);
      c.swizzle = I32(r, "swizzle", 0);
      c.custom_option = I32(r, "custom_option", 0);
      c.cluster_shape_id = I32(r, "cluster_shape_id", 0);
      c.inner_shape_id = I32(r, "inner_shape_id", 0);
      c.tile_m = I32(r, "tile_m", 0);
      c.tile_n = I32(r, "tile_n", 0);
      c.stage_k = I32(r, "stage_k", 0);
      c.stages = I32(r, "stages", 0);
      c.cluster_m = I32(r, "cluster_m", 0);
      c.cluster_n = I32(r, "cluster_n", 0);
      c.cluster_k = I32(r, "cluster_k", 0);
      KSELECT_RETURN_IF_ERROR(r.Finish());
      return KernelConfig(c);
    }
    case Provider::kTile: {
      TileConfig c;
      ReadArray<int32_t, 3>(r, "tile", {&c.tile_m, &c.tile_n, &c.tile_k});
      ReadArray<int32_t, 3>(r, "warps", {&c.warps_m, &c.warps_n, &c.warps_k});
      ReadArray<int32_t, 3>(r, "instr", {&c.instr_m, &c.instr_n, &c.instr_k});
      c.stages = I32(r, "stages", c.stages);
      c.pipeline = ParseField(r, "pipeline", ParseTilePipeline, c.pipeline);
      c.scheduler = ParseField(r, "scheduler", ParseTileScheduler, c.scheduler);
      c.epilogue = ParseField(r, "epilogue", ParseTileEpilogue, c.epilogue);
      ReadArray<bool, 3>(r, "mask", {&c.mask_m, &c.mask_n, &c.mask_k});
      c.split_k = I32(r, "split_k", 1);
      ReadArray<int32_t, 2>(r, "cluster", {&c.cluster_m, &c.cluster_n});
      c.swizzle = I32(r, "swizzle", 1);
      KSELECT_RETURN_IF_ERROR(r.Finish());
      return KernelConfig(c);
    }
    case Provider::kCudnn: {
      CudnnConfig c;
      c.engine_id = r.Int("engine_id");
      if (const json* knobs = r.Child("knobs", false)) {
        if (!knobs->is_array()) {
          r.Fail(ParseError(r.PathOf("knobs") + ": expected an array of [knob, value] pairs"));
        } else {
          for (const auto& pair : *knobs) {
            if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer() ||
                !pair[1].is_number_integer()) {
              r.Fail(ParseError(r.PathOf("knobs") + ": expected [knob, value] integer pairs, got " +
                                pair.dump()));
              break;
            }
            c.knobs.emplace_back(pair[0].get<int32_t>(), pair[1].get<int64_t>());
          }
        }
      }
      KSELECT_RETURN_IF_ERROR(r.Finish());
      return KernelConfig(c);
    }
    case Provider::kCkTile: {
      CkTileConfig c;
      ReadArray<int32_t, 3>(r, "tile", {&c.tile_m, &c.tile_n, &c.tile_k});
      ReadArray<int32_t, 3>(r, "warp", {&c.warp_m, &c.warp_n, &c.warp_k});
      ReadArray<int32_t, 3>(r, "warp_tile", {&c.warp_tile_m, &c.warp_tile_n, &c.warp_tile_k});
      c.pipeline = r.StringOr("pipeline", "");
      c.scheduler = r.StringOr("scheduler", "");
      c.epilogue = r.StringOr("epilogue", "");
      ReadArray<bool, 3>(r, "pad", {&c.pad_m, &c.pad_n, &c.pad_k});
      c.persistent = r.BoolOr("persistent", false);
      ReadArray<int32_t, 3>(r, "vec", {&c.vec_a, &c.vec_b, &c.vec_c});
      c.split_k = I32(r, "split_k", 1);
      KSELECT_RETURN_IF_ERROR(r.Finish());
      return KernelConfig(c);
    }
    case Provider::kCkConv: {
      CkConvConfig c;
      ReadArray<int32_t, 3>(r, "tile", {&c.tile_m, &c.tile_n, &c.tile_k});
      c.pipeline = r.StringOr("pipeline", "");
      c.scheduler = r.StringOr("scheduler", "");
      c.double_smem_buffer = r.BoolOr("double_smem_buffer", false);
      c.split_image = r.BoolOr("split_image", false);
      KSELECT_RETURN_IF_ERROR(r.Finish());
      return KernelConfig(c);
    }
  }
  return InternalError("unhandled provider");
}

json MethodToJson(const MeasurementMethod& m) {
  return json{{"name", m.name},
              {"timer", m.timer},
              {"statistic", m.statistic},
              {"warmup_iters", m.warmup_iters},
              {"repeats", m.repeats},
              {"iters_per_repeat", m.iters_per_repeat},
              {"rotating_buffer_bytes", m.rotating_buffer_bytes},
              {"sm_clock_min_mhz", m.sm_clock_min_mhz},
              {"sm_clock_max_mhz", m.sm_clock_max_mhz}};
}

StatusOr<MeasurementMethod> MethodFromJson(const json& j, const std::string& path) {
  ObjectReader r(j, path);
  MeasurementMethod m;
  m.name = r.StringOr("name", "");
  m.timer = r.StringOr("timer", "");
  m.statistic = r.StringOr("statistic", "");
  m.warmup_iters = I32(r, "warmup_iters", 0);
  m.repeats = I32(r, "repeats", 0);
  m.iters_per_repeat = I32(r, "iters_per_repeat", 0);
  m.rotating_buffer_bytes = r.IntOr("rotating_buffer_bytes", 0);
  m.sm_clock_min_mhz = I32(r, "sm_clock_min_mhz", 0);
  m.sm_clock_max_mhz = I32(r, "sm_clock_max_mhz", 0);
  KSELECT_RETURN_IF_ERROR(r.Finish());
  return m;
}

}  // namespace kselect::json_codec
