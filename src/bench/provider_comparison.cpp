#include "bench/provider_comparison.h"

#include <memory>

#include "core/json_codec.h"
#include "core/statistics.h"
#include "kselect/config_schema.h"
#include "kselect/head_to_head.h"

namespace kselect::bench {

StatusOr<TileAndCublasLt> TileAndCublasLt::Create(const ProviderOptions& options) {
  TileAndCublasLt d;
  KSELECT_ASSIGN_OR_RETURN(d.cublaslt, CreateProvider(Provider::kCublasLt, options));
  KSELECT_ASSIGN_OR_RETURN(d.tile, CreateProvider(Provider::kTile, options));
  KSELECT_ASSIGN_OR_RETURN(d.timer, timing::GraphTimer::Create(options.device));
  verify::VerifyOptions vo;
  vo.device = options.device;
  KSELECT_ASSIGN_OR_RETURN(d.verifier, verify::Verifier::Create(vo));
  KSELECT_ASSIGN_OR_RETURN(d.hardware, QueryHardwareProfile(options.device));
  return d;
}

StatusOr<TileAndCublasLt::Operands> TileAndCublasLt::RotatingOperands(const GemmProblem& problem,
                                                                      int64_t workspace_bytes,
                                                                      int64_t rotate_bytes) const {
  Operands out;
  KSELECT_ASSIGN_OR_RETURN(out.specs, cublaslt->Operands(problem));
  KSELECT_ASSIGN_OR_RETURN(
      out.rotating, timer->RotatingOperands(problem, out.specs, workspace_bytes, rotate_bytes));
  return out;
}

StatusOr<DeviceVerdict> VerifyConfig(KernelProvider& provider, const KernelConfig& config,
                                     verify::VerifyCase& check) {
  StatusOr<verify::CheckResult> checked = verify::CheckConfig(provider, config, check);
  if (checked.ok()) return DeviceVerdict{true, checked->passed, checked->ToString()};
  if (cudaDeviceSynchronize() != cudaSuccess) return checked.status();
  return DeviceVerdict{false, false, checked.status().message()};
}

nlohmann::json FigureJson(const InterleavedFigure& f, const GemmProblem& p, double peak_gb_s) {
  return {{"config", json_codec::KernelConfigToJson(f.config)},
          {"name", SchemaOf(f.config).describe(f.config)},
          {"median_ms", f.median_ms},
          {"tflops", p.Flops() / (f.median_ms * 1e-3) / 1e12},
          {"hbm_fraction", HbmFraction(p, f.median_ms, peak_gb_s)},
          {"speedup_over_pick", f.speedup}};
}

}  // namespace kselect::bench
