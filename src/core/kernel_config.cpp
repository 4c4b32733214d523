#include "kselect/kernel_config.h"

#include <array>
#include <string>
#include <type_traits>

namespace kselect {
namespace {

template <typename Enum, size_t N>
struct NameTable {
  std::array<std::pair<Enum, std::string_view>, N> entries;

  std::string_view Name(Enum value) const {
    for (const auto& [v, name] : entries) {
      if (v == value) return name;
    }
    return "unknown";
  }
  StatusOr<Enum> Parse(std::string_view text, std::string_view what) const {
    std::string expected;
    for (const auto& [v, name] : entries) {
      if (name == text) return v;
      expected += (expected.empty() ? "" : ", ") + std::string(name);
    }
    return InvalidArgumentError("unknown " + std::string(what) + " '" + std::string(text) +
                                "' (expected one of: " + expected + ")");
  }
};

constexpr NameTable<Provider, 5> kProviders{{{{Provider::kCublasLt, "cublaslt"},
                                              {Provider::kTile, "tile"},
                                              {Provider::kCudnn, "cudnn"},
                                              {Provider::kCkTile, "ck_tile"},
                                              {Provider::kCkConv, "ck_conv"}}}};
constexpr NameTable<TilePipeline, 3> kPipelines{
    {{{TilePipeline::kMultistage, "multistage"},
      {TilePipeline::kWarpSpecialized, "warp_specialized"},
      {TilePipeline::kSmallM, "small_m"}}}};
constexpr NameTable<TileScheduler, 2> kSchedulers{{{{TileScheduler::kDataParallel, "data_parallel"},
                                                    {TileScheduler::kPersistent, "persistent"}}}};
constexpr NameTable<TileEpilogue, 2> kEpilogues{
    {{{TileEpilogue::kDirect, "direct"}, {TileEpilogue::kSharedStaged, "smem"}}}};

// Appends ",name=value" pairs in a fixed order: the canonical text ConfigKey promises.
class KeyBuilder {
 public:
  explicit KeyBuilder(std::string_view provider) : text_(provider) { text_ += ':'; }
  template <typename Integer>
  KeyBuilder& Add(std::string_view name, Integer value) {
    if constexpr (std::is_same_v<Integer, bool>) return AddText(name, value ? "1" : "0");
    return AddText(name, std::to_string(value));
  }
  KeyBuilder& AddText(std::string_view name, std::string_view value) {
    if (text_.back() != ':') text_ += ',';
    text_ += name;
    text_ += '=';
    text_ += value;
    return *this;
  }
  std::string Take() { return std::move(text_); }

 private:
  std::string text_;
};

std::string Dims(int64_t a, int64_t b, int64_t c) {
  return std::to_string(a) + "x" + std::to_string(b) + "x" + std::to_string(c);
}

}  // namespace

std::string_view ProviderName(Provider provider) {
  return kProviders.Name(provider);
}
StatusOr<Provider> ParseProvider(std::string_view name) {
  return kProviders.Parse(name, "provider");
}
std::string_view TilePipelineName(TilePipeline p) {
  return kPipelines.Name(p);
}
std::string_view TileSchedulerName(TileScheduler s) {
  return kSchedulers.Name(s);
}
std::string_view TileEpilogueName(TileEpilogue e) {
  return kEpilogues.Name(e);
}
StatusOr<TilePipeline> ParseTilePipeline(std::string_view name) {
  return kPipelines.Parse(name, "tile pipeline");
}
StatusOr<TileScheduler> ParseTileScheduler(std::string_view name) {
  return kSchedulers.Parse(name, "tile scheduler");
}
StatusOr<TileEpilogue> ParseTileEpilogue(std::string_view name) {
  return kEpilogues.Parse(name, "tile epilogue");
}

Provider ProviderOf(const KernelConfig& config) {
  struct Visitor {
    Provider operator()(const CublasLtConfig&) const { return Provider::kCublasLt; }
    Provider operator()(const TileConfig&) const { return Provider::kTile; }
    Provider operator()(const CudnnConfig&) const { return Provider::kCudnn; }
    Provider operator()(const CkTileConfig&) const { return Provider::kCkTile; }
    Provider operator()(const CkConvConfig&) const { return Provider::kCkConv; }
  };
  return std::visit(Visitor{}, config);
}

int32_t SplitKOf(const KernelConfig& config) {
  if (const auto* c = std::get_if<CublasLtConfig>(&config)) return c->split_k;
  if (const auto* c = std::get_if<TileConfig>(&config)) return c->split_k;
  if (const auto* c = std::get_if<CkTileConfig>(&config)) return c->split_k;
  return 1;
}

std::string ConfigKey(const KernelConfig& config) {
  struct Visitor {
    std::string operator()(const CublasLtConfig& c) const {
      return KeyBuilder("cublaslt")
          .Add("algo", c.algo_id)
          .Add("tile", c.tile_id)
          .Add("stages", c.stages_id)
          .Add("splitk", c.split_k)
          .Add("reduction", c.reduction_scheme)
          .Add("swizzle", c.swizzle)
          .Add("custom", c.custom_option)
          .Add("cluster", c.cluster_shape_id)
          .Add("inner", c.inner_shape_id)
          .Take();
    }
    std::string operator()(const TileConfig& c) const {
      return KeyBuilder("tile")
          .AddText("tile", Dims(c.tile_m, c.tile_n, c.tile_k))
          .AddText("warps", Dims(c.warps_m, c.warps_n, c.warps_k))
          .AddText("instr", Dims(c.instr_m, c.instr_n, c.instr_k))
          .Add("stages", c.stages)
          .AddText("pipeline", TilePipelineName(c.pipeline))
          .AddText("scheduler", TileSchedulerName(c.scheduler))
          .AddText("epilogue", TileEpilogueName(c.epilogue))
          .Add("mask_m", c.mask_m)
          .Add("mask_n", c.mask_n)
          .Add("mask_k", c.mask_k)
          .Add("splitk", c.split_k)
          .AddText("cluster", std::to_string(c.cluster_m) + "x" + std::to_string(c.cluster_n))
          .Add("swizzle", c.swizzle)
          .Take();
    }
    std::string operator()(const CudnnConfig& c) const {
      KeyBuilder key("cudnn");
      key.Add("engine", c.engine_id);
      for (const auto& [knob, value] : c.knobs) key.Add("k" + std::to_string(knob), value);
      return key.Take();
    }
    std::string operator()(const CkTileConfig& c) const {
      return KeyBuilder("ck_tile")
          .AddText("tile", Dims(c.tile_m, c.tile_n, c.tile_k))
          .AddText("warp", Dims(c.warp_m, c.warp_n, c.warp_k))
          .AddText("warp_tile", Dims(c.warp_tile_m, c.warp_tile_n, c.warp_tile_k))
          .AddText("pipeline", c.pipeline)
          .AddText("scheduler", c.scheduler)
          .AddText("epilogue", c.epilogue)
          .Add("pad_m", c.pad_m)
          .Add("pad_n", c.pad_n)
          .Add("pad_k", c.pad_k)
          .Add("persistent", c.persistent)
          .AddText("vec", Dims(c.vec_a, c.vec_b, c.vec_c))
          .Add("splitk", c.split_k)
          .Take();
    }
    std::string operator()(const CkConvConfig& c) const {
      return KeyBuilder("ck_conv")
          .AddText("tile", Dims(c.tile_m, c.tile_n, c.tile_k))
          .AddText("pipeline", c.pipeline)
          .AddText("scheduler", c.scheduler)
          .Add("dsb", c.double_smem_buffer)
          .Add("si", c.split_image)
          .Take();
    }
  };
  return std::visit(Visitor{}, config);
}

namespace {
// cublasLtReductionScheme_t by name (its values are bit flags: 1, 2, 4).
std::string ReductionSchemeLabel(int32_t scheme) {
  switch (scheme) {
    case 1:
      return "inplace";
    case 2:
      return "compute";
    case 4:
      return "output";
    default:
      return std::to_string(scheme);
  }
}
}  // namespace

std::string DescribeConfig(const KernelConfig& config) {
  struct Visitor {
    std::string operator()(const CublasLtConfig& c) const {
      std::string s = "cublaslt algo" + std::to_string(c.algo_id);
      if (c.tile_m > 0) s += " tile" + std::to_string(c.tile_m) + "x" + std::to_string(c.tile_n);
      if (c.stages > 0) s += " stages" + std::to_string(c.stage_k) + "x" + std::to_string(c.stages);
      if (c.split_k > 1) s += " splitk" + std::to_string(c.split_k);
      // Split-K configs differ only in where partial sums meet; without it two of them read alike.
      if (c.reduction_scheme != 0) s += " reduce-" + ReductionSchemeLabel(c.reduction_scheme);
      if (c.cluster_m > 0) {
        s += " cluster" + Dims(c.cluster_m, c.cluster_n, c.cluster_k);
      }
      if (c.swizzle) s += " swz";
      if (c.custom_option) s += " opt" + std::to_string(c.custom_option);
      if (c.inner_shape_id) s += " inner" + std::to_string(c.inner_shape_id);
      return s;
    }
    std::string operator()(const TileConfig& c) const {
      return "tile " + std::string(TilePipelineName(c.pipeline)) + " " +
             Dims(c.tile_m, c.tile_n, c.tile_k) + " w" + Dims(c.warps_m, c.warps_n, c.warps_k) +
             " s" + std::to_string(c.stages) +
             (c.split_k > 1 ? " splitk" + std::to_string(c.split_k) : "");
    }
    std::string operator()(const CudnnConfig& c) const {
      return "cudnn engine" + std::to_string(c.engine_id) + " knobs" +
             std::to_string(c.knobs.size());
    }
    std::string operator()(const CkTileConfig& c) const {
      return "ck_tile " + c.pipeline + " " + Dims(c.tile_m, c.tile_n, c.tile_k) + " " +
             Dims(c.warp_m, c.warp_n, c.warp_k) + " " +
             Dims(c.warp_tile_m, c.warp_tile_n, c.warp_tile_k);
    }
    std::string operator()(const CkConvConfig& c) const {
      return "ck_conv " + c.pipeline + " " + Dims(c.tile_m, c.tile_n, c.tile_k);
    }
  };
  return std::visit(Visitor{}, config);
}

}  // namespace kselect
