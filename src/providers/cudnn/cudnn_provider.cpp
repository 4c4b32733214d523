#include "providers/cudnn/cudnn_provider.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <cudnn_frontend.h>

#include "cuda/runtime.h"
#include "providers/cudnn/cudnn_config.h"
#include "providers/cudnn/cudnn_library.h"

namespace kselect::cudnn {
namespace {

namespace fe = cudnn_frontend;

// Tensor uids in every graph: the operand order of ConvOperandSpecs (x, w, y).
constexpr int64_t kUidX = 1, kUidW = 2, kUidY = 3;
// Operation graphs kept built at once (each holds its built plans' device resources); the bench
// works through one problem at a time.
constexpr size_t kCachedProblems = 4;

Status FrontendStatus(fe::error_t error, const std::string& what,
                      StatusCode code = StatusCode::kInternal) {
  if (error.is_good()) return Status::Ok();
  return Status(code, what + ": " + error.get_message());
}

std::string CudnnStatusText(cudnnStatus_t status) {
  return "cudnnStatus " + std::to_string(static_cast<int>(status));
}

// Runs `body`, turning an exception from cudnn-frontend (its dynamic loader throws when a symbol
// is missing) into a status: nothing of the frontend's escapes the provider.
template <typename Body>
auto Guarded(const char* what, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::exception& e) {
    return InternalError(std::string(what) + ": cudnn-frontend threw: " + e.what());
  }
}

std::optional<fe::DataType_t> FrontendType(DataType type) {
  switch (type) {
    case DataType::kBF16:
      return fe::DataType_t::BFLOAT16;
    case DataType::kF16:
      return fe::DataType_t::HALF;
    default:
      return std::nullopt;
  }
}

CudnnConfig EngineConfig(int64_t engine, std::vector<std::pair<int32_t, int64_t>> knobs) {
  CudnnConfig c;
  c.engine_id = engine;
  c.knobs = std::move(knobs);
  std::sort(c.knobs.begin(), c.knobs.end());
  return c;
}

// Dims (N, C, [D,] H, W order, as cuDNN wants them) and channels-last strides of one tensor.
struct TensorShape {
  std::vector<int64_t> dims, strides;
};
TensorShape ChannelsLast(int64_t n, int64_t c, int64_t d, int64_t h, int64_t w, bool three_d) {
  TensorShape t;
  if (three_d) {
    t.dims = {n, c, d, h, w};
    t.strides = {d * h * w * c, 1, h * w * c, w * c, c};
  } else {
    t.dims = {n, c, h, w};
    t.strides = {h * w * c, 1, w * c, c};
  }
  return t;
}

std::shared_ptr<fe::graph::Tensor_attributes> MakeTensor(fe::graph::Graph& graph, const char* name,
                                                         int64_t uid, const TensorShape& shape) {
  return graph.tensor(fe::graph::Tensor_attributes()
                          .set_name(name)
                          .set_uid(uid)
                          .set_dim(shape.dims)
                          .set_stride(shape.strides));
}

void MarkOutput(const std::shared_ptr<fe::graph::Tensor_attributes>& out, int64_t uid,
                const TensorShape& shape, fe::DataType_t type) {
  out->set_output(true)
      .set_uid(uid)
      .set_dim(shape.dims)
      .set_stride(shape.strides)
      .set_data_type(type);
}

// The convolution's spatial attributes, depth first for 3D.
template <typename Attributes>
Attributes SpatialAttributes(const ConvProblem& p) {
  Attributes a;
  if (p.Is3d()) {
    a.set_padding({p.pad_d, p.pad_h, p.pad_w})
        .set_stride({p.stride_d, p.stride_h, p.stride_w})
        .set_dilation({p.dilation_d, p.dilation_h, p.dilation_w});
  } else {
    a.set_padding({p.pad_h, p.pad_w})
        .set_stride({p.stride_h, p.stride_w})
        .set_dilation({p.dilation_h, p.dilation_w});
  }
  return a;
}

// cudnn-frontend's graph, reaching its engine configs in cuDNN's own knob types: the frontend's
// KnobType_t has no word for older knobs (KBLOCK, LDGA, CHUNK_K, WINO_TILE, ...), and asking for
// those engines through it fails, which would drop whole engines from the space.
class ConvGraph final : public fe::graph::Graph {
 public:
  // The knobs of `engine` on this graph: type (cudnnBackendKnobType_t), minimum, maximum, stride.
  fe::error_t BackendKnobs(int64_t engine_id, std::vector<KnobRange>& out) {
    using namespace cudnn_frontend;  // the frontend's error macros name its symbols unqualified
    fe::detail::backend_descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    RETURN_CUDNN_FRONTEND_ERROR_IF(engine.get_status() != CUDNN_STATUS_SUCCESS,
                                   fe::error_code_t::CUDNN_BACKEND_API_FAILED,
                                   "cannot create an engine descriptor");
    CHECK_CUDNN_FRONTEND_ERROR(
        fe::detail::create_engine(engine, engine_id, operation_graph->get_raw_desc()));
    std::vector<fe::detail::backend_descriptor> infos;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int i = 0; i < CUDNN_KNOB_TYPE_COUNTS; ++i) {
      infos.emplace_back(CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR);
      raw.push_back(infos.back().get_ptr());
    }
    int64_t count = 0;
    _CUDNN_CHECK_CUDNN_ERROR(fe::detail::get_attribute(
        engine.get_ptr(), CUDNN_ATTR_ENGINE_KNOB_INFO, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        CUDNN_KNOB_TYPE_COUNTS, &count, raw.data()));
    out.clear();
    for (int64_t i = 0; i < count; ++i) {
      cudnnBackendKnobType_t type;
      KnobRange range;
      int64_t n = 0;
      _CUDNN_CHECK_CUDNN_ERROR(fe::detail::get_attribute(raw[i], CUDNN_ATTR_KNOB_INFO_TYPE,
                                                         CUDNN_TYPE_KNOB_TYPE, 1, &n, &type));
      _CUDNN_CHECK_CUDNN_ERROR(fe::detail::get_attribute(raw[i], CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE,
                                                         CUDNN_TYPE_INT64, 1, &n, &range.maximum));
      _CUDNN_CHECK_CUDNN_ERROR(fe::detail::get_attribute(raw[i], CUDNN_ATTR_KNOB_INFO_MINIMUM_VALUE,
                                                         CUDNN_TYPE_INT64, 1, &n, &range.minimum));
      _CUDNN_CHECK_CUDNN_ERROR(fe::detail::get_attribute(raw[i], CUDNN_ATTR_KNOB_INFO_STRIDE,
                                                         CUDNN_TYPE_INT64, 1, &n, &range.stride));
      range.type = static_cast<int32_t>(type);
      out.push_back(range);
    }
    return {fe::error_code_t::OK, ""};
  }

  // Appends `c` (knobs in cuDNN's types) to the plan list, as create_execution_plan does.
  fe::error_t AddEngineConfig(const CudnnConfig& c) {
    using namespace cudnn_frontend;  // the frontend's error macros name its symbols unqualified
    fe::detail::backend_descriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    RETURN_CUDNN_FRONTEND_ERROR_IF(engine.get_status() != CUDNN_STATUS_SUCCESS,
                                   fe::error_code_t::CUDNN_BACKEND_API_FAILED,
                                   "cannot create an engine descriptor");
    CHECK_CUDNN_FRONTEND_ERROR(fe::detail::create_engine(
        engine, c.engine_id, operation_graph->get_raw_desc(), device_properties));
    std::vector<fe::detail::backend_descriptor> choices;
    for (const auto& [type, value] : c.knobs) {
      fe::detail::backend_descriptor choice(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
      RETURN_CUDNN_FRONTEND_ERROR_IF(choice.get_status() != CUDNN_STATUS_SUCCESS,
                                     fe::error_code_t::CUDNN_BACKEND_API_FAILED,
                                     "cannot create a knob choice descriptor");
      const auto knob = static_cast<cudnnBackendKnobType_t>(type);
      _CUDNN_CHECK_CUDNN_ERROR(fe::detail::set_attribute(
          choice.get_ptr(), CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &knob));
      _CUDNN_CHECK_CUDNN_ERROR(fe::detail::set_attribute(
          choice.get_ptr(), CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &value));
      _CUDNN_CHECK_CUDNN_ERROR(fe::detail::finalize(choice.get_ptr()));
      choices.push_back(std::move(choice));
    }
    auto config = fe::make_shared_backend_pointer(
        static_cast<cudnnBackendDescriptorType_t>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    CHECK_CUDNN_FRONTEND_ERROR(fe::detail::create_engine_config(config, engine, choices));
    plans.enqueue_engine_configs({config});
    return plans.query_properties();
  }

  // The configs of the plan list in its order (a heuristic's ranking after
  // create_execution_plans), knobs in cuDNN's types.
  std::vector<CudnnConfig> ListedConfigs() {
    std::vector<CudnnConfig> listed;
    for (const auto& config : plans.get_barred_engine_configs()) {  // = the ones not barred
      int64_t engine = 0;
      std::vector<std::pair<cudnnBackendKnobType_t, int64_t>> knobs;
      if (fe::detail::get_engine_id_and_knobs(config, engine, knobs) != CUDNN_STATUS_SUCCESS)
        continue;
      std::vector<std::pair<int32_t, int64_t>> settings;
      for (const auto& [type, value] : knobs)
        settings.emplace_back(static_cast<int32_t>(type), value);
      listed.push_back(EngineConfig(engine, std::move(settings)));
    }
    return listed;
  }
};

// The operation graph of one convolution, validated and built (the engine list exists after).
StatusOr<std::shared_ptr<ConvGraph>> BuildGraph(const ConvProblem& p, cudnnHandle_t handle) {
  const fe::DataType_t io = *FrontendType(p.dtype);
  auto graph = std::make_shared<ConvGraph>();
  graph->set_io_data_type(io)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  const bool three_d = p.Is3d();
  // Groups are implied by the weight's channel count (C/G against the input's C).
  const TensorShape x = ChannelsLast(p.n, p.c, p.di, p.hi, p.wi, three_d);
  const TensorShape w = ChannelsLast(p.k, p.c / p.g, p.z, p.y, p.x, three_d);
  const TensorShape y = ChannelsLast(p.n, p.k, p.Do(), p.Ho(), p.Wo(), three_d);
  switch (p.direction) {
    case ConvDirection::kForward: {
      auto X = MakeTensor(*graph, "x", kUidX, x);
      auto W = MakeTensor(*graph, "w", kUidW, w);
      auto Y = graph->conv_fprop(X, W, SpatialAttributes<fe::graph::Conv_fprop_attributes>(p));
      MarkOutput(Y, kUidY, y, io);
      break;
    }
    case ConvDirection::kBackwardData: {
      auto DY = MakeTensor(*graph, "dy", kUidY, y);
      auto W = MakeTensor(*graph, "w", kUidW, w);
      auto DX = graph->conv_dgrad(DY, W, SpatialAttributes<fe::graph::Conv_dgrad_attributes>(p));
      MarkOutput(DX, kUidX, x, io);
      break;
    }
    case ConvDirection::kBackwardWeight: {
      auto DY = MakeTensor(*graph, "dy", kUidY, y);
      auto X = MakeTensor(*graph, "x", kUidX, x);
      auto DW = graph->conv_wgrad(DY, X, SpatialAttributes<fe::graph::Conv_wgrad_attributes>(p));
      MarkOutput(DW, kUidW, w, io);
      break;
    }
  }
  KSELECT_RETURN_IF_ERROR(
      FrontendStatus(graph->validate(), "cuDNN refused the graph", StatusCode::kCannotImplement));
  KSELECT_RETURN_IF_ERROR(FrontendStatus(graph->build_operation_graph(handle),
                                         "cuDNN could not build the operation graph",
                                         StatusCode::kCannotImplement));
  return graph;
}

// Engines whose plans need their inputs reordered first (int8x32 layouts): not a conv on
// plain channels-last tensors, so never candidates.
const std::vector<fe::BehaviorNote_t> kExcludedNotes = {
    fe::BehaviorNote_t::REQUIRES_FILTER_INT8x32_REORDER,
    fe::BehaviorNote_t::REQUIRES_BIAS_INT8x32_REORDER,
};

// A config as a map key: engine id, then (type, value) pairs in the config's order.
std::vector<int64_t> ConfigKey(const CudnnConfig& c) {
  std::vector<int64_t> key{c.engine_id};
  for (const auto& [type, value] : c.knobs) {
    key.push_back(type);
    key.push_back(value);
  }
  return key;
}

// One problem's operation graph and every plan made on it. Plans are appended to the graph in
// the order configs are first asked about; `plans` maps a config to its index there, `refused`
// remembers why a config cannot run.
struct ProblemPlans {
  std::string key;  // ProblemToString
  std::shared_ptr<ConvGraph> graph;
  std::map<std::vector<int64_t>, int64_t> plans;
  std::map<std::vector<int64_t>, Status> refused;
  int64_t engine_count = 0;
  std::set<int64_t> runtime_compiled;  // engines whose plans carry RUNTIME_COMPILATION
  std::vector<EngineSurvey> survey;    // of the last enumeration
};

class CudnnKernel final : public PreparedKernel {
 public:
  CudnnKernel(std::shared_ptr<ProblemPlans> plans, int64_t index, int64_t workspace,
              cudnnHandle_t handle, std::mutex* handle_mutex, std::vector<OperandSpec> specs)
      : plans_(std::move(plans)),
        index_(index),
        workspace_(workspace),
        handle_(handle),
        handle_mutex_(handle_mutex),
        specs_(std::move(specs)) {}

  int64_t WorkspaceBytes() const override { return workspace_; }

  Status Launch(const KernelOperands& operands, void* stream) override {
    KSELECT_RETURN_IF_ERROR(CheckOperands(specs_, operands, workspace_));
    // The variant pack in uid order (kUidX < kUidW < kUidY), the frontend's map-free path.
    static_assert(kUidX < kUidW && kUidW < kUidY);
    void* pack[] = {operands.buffers[0], operands.buffers[1], operands.buffers[2]};
    return Guarded("cuDNN launch", [&]() -> Status {
      // One handle per provider: its stream is set per launch, under the provider's lock.
      std::lock_guard<std::mutex> lock(*handle_mutex_);
      const cudnnStatus_t set = fe::detail::set_stream(handle_, static_cast<cudaStream_t>(stream));
      if (set != CUDNN_STATUS_SUCCESS) {
        return InternalError(std::string("cudnnSetStream failed: ") + CudnnStatusText(set));
      }
      return FrontendStatus(
          plans_->graph->execute_plan_at_index(handle_, pack, 3, operands.workspace, index_),
          "cuDNN execute");
    });
  }

 private:
  std::shared_ptr<ProblemPlans> plans_;
  int64_t index_;
  int64_t workspace_;
  cudnnHandle_t handle_;
  std::mutex* handle_mutex_;
  std::vector<OperandSpec> specs_;
};

class CudnnProvider final : public KernelProvider {
 public:
  explicit CudnnProvider(const ProviderOptions& options) : options_(options) {}
  ~CudnnProvider() override {
    cache_.clear();
    if (handle_ != nullptr) {
      try {
        fe::detail::destroy_handle(handle_);
      } catch (const std::exception&) {
        // The library vanished under us: nothing left to free.
      }
    }
  }

  Provider id() const override { return Provider::kCudnn; }

  std::string version() const override {
    const std::string frontend = "frontend " + std::to_string(CUDNN_FRONTEND_MAJOR_VERSION) + "." +
                                 std::to_string(CUDNN_FRONTEND_MINOR_VERSION) + "." +
                                 std::to_string(CUDNN_FRONTEND_PATCH_VERSION);
    StatusOr<const CudnnLibrary*> library = LoadCudnn();
    if (!library.ok()) return "cudnn unavailable, " + frontend;
    return "cudnn " + (*library)->VersionText() + ", " + frontend;
  }

  bool SupportsProblem(const Problem& problem) const override {
    return CudnnSupportsProblem(problem);
  }

  StatusOr<std::vector<OperandSpec>> Operands(const Problem& problem) const override {
    if (!CudnnSupportsProblem(problem)) {
      return CannotImplementError("cudnn does not run " + ProblemToString(problem));
    }
    return ConvOperandSpecs(std::get<ConvProblem>(problem), 16);
  }

  StatusOr<std::vector<KernelConfig>> Enumerate(const Problem& problem,
                                                const ConfigFilter& keep) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return Guarded("cuDNN enumerate", [&]() -> StatusOr<std::vector<KernelConfig>> {
      KSELECT_ASSIGN_OR_RETURN(std::shared_ptr<ProblemPlans> plans, PlansFor(problem));
      std::vector<KernelConfig> out;
      std::set<std::vector<int64_t>> seen;
      // Builds `c`'s plan unless the filter rejects it or it was seen; keeps it when it builds.
      auto consider = [&](CudnnConfig c, EngineSurvey* survey) {
        if (!seen.insert(ConfigKey(c)).second) return;
        KernelConfig config(std::move(c));
        if (!keep.empty() && !keep.keep(config)) return;
        const auto start = std::chrono::steady_clock::now();
        StatusOr<int64_t> index = PlanIndex(*plans, std::get<CudnnConfig>(config));
        if (survey != nullptr) {
          ++survey->tried;
          survey->build_seconds +=
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          if (index.ok()) {
            ++survey->built;
          } else if (survey->first_refusal.empty()) {
            survey->first_refusal = index.status().message();
          }
        }
        if (index.ok()) out.push_back(std::move(config));
      };
      // The first enumeration of a problem surveys it; later ones (all plans cached) do not.
      const bool surveying = plans->survey.empty();
      std::vector<EngineSurvey> surveys(static_cast<size_t>(plans->engine_count));
      for (int64_t engine = 0; engine < plans->engine_count; ++engine) {
        EngineSurvey& survey = surveys[static_cast<size_t>(engine)];
        survey.engine_id = engine;
        std::vector<KnobRange> ranges;
        if (fe::error_t known = plans->graph->BackendKnobs(engine, ranges); known.is_bad()) {
          survey.first_refusal = known.get_message();  // the engine does not run this graph
          continue;
        }
        survey.knob_combinations = KnobProduct(ranges);
        auto settings = KnobCombinations(ranges, kMaxConfigsPerEngine);
        // Once a plan says the engine compiles at build, the engine gets the smaller sample
        // (configs already tried stay; `seen` skips them).
        for (size_t i = 0; i < settings.size(); ++i) {
          consider(EngineConfig(engine, settings[i]), &survey);
          if (!survey.runtime_compiled && plans->runtime_compiled.count(engine) != 0) {
            survey.runtime_compiled = true;
            settings = KnobCombinations(ranges, kMaxConfigsPerRuntimeCompiledEngine);
            i = static_cast<size_t>(-1);  // restart over the smaller sample
          }
        }
      }
      // The heuristics' configs belong to the space even where thinning skipped them.
      for (fe::HeurMode_t mode : {fe::HeurMode_t::A, fe::HeurMode_t::B}) {
        StatusOr<std::vector<CudnnConfig>> listed = HeuristicList(problem, mode);
        if (!listed.ok()) continue;
        if (static_cast<int64_t>(listed->size()) > kHeuristicConfigsInSpace) {
          listed->resize(static_cast<size_t>(kHeuristicConfigsInSpace));
        }
        for (CudnnConfig& c : *listed) {
          const int64_t engine = c.engine_id;
          consider(std::move(c), engine >= 0 && engine < plans->engine_count
                                     ? &surveys[static_cast<size_t>(engine)]
                                     : nullptr);
        }
      }
      if (surveying) plans->survey = std::move(surveys);
      return out;
    });
  }

  // The survey of the problem's first enumeration (enumerating it now if it has none).
  StatusOr<std::vector<EngineSurvey>> Survey(const Problem& problem) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      KSELECT_ASSIGN_OR_RETURN(std::shared_ptr<ProblemPlans> plans, PlansFor(problem));
      if (!plans->survey.empty()) return plans->survey;
    }
    KSELECT_RETURN_IF_ERROR(Enumerate(problem, {}).status());
    std::lock_guard<std::mutex> lock(mutex_);
    KSELECT_ASSIGN_OR_RETURN(std::shared_ptr<ProblemPlans> plans, PlansFor(problem));
    return plans->survey;
  }

  Status CanImplement(const Problem& problem, const KernelConfig& config) override {
    return WorkspaceBytes(problem, config).status();
  }

  StatusOr<int64_t> WorkspaceBytes(const Problem& problem, const KernelConfig& config) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return Guarded("cuDNN plan", [&]() -> StatusOr<int64_t> {
      KSELECT_ASSIGN_OR_RETURN(const CudnnConfig* c, AsCudnn(config));
      KSELECT_ASSIGN_OR_RETURN(std::shared_ptr<ProblemPlans> plans, PlansFor(problem));
      KSELECT_ASSIGN_OR_RETURN(int64_t index, PlanIndex(*plans, *c));
      return PlanWorkspace(*plans, index);
    });
  }

  StatusOr<std::unique_ptr<PreparedKernel>> Prepare(const Problem& problem,
                                                    const KernelConfig& config) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return Guarded("cuDNN prepare", [&]() -> StatusOr<std::unique_ptr<PreparedKernel>> {
      KSELECT_ASSIGN_OR_RETURN(const CudnnConfig* c, AsCudnn(config));
      KSELECT_ASSIGN_OR_RETURN(std::shared_ptr<ProblemPlans> plans, PlansFor(problem));
      KSELECT_ASSIGN_OR_RETURN(int64_t index, PlanIndex(*plans, *c));
      KSELECT_ASSIGN_OR_RETURN(int64_t workspace, PlanWorkspace(*plans, index));
      return std::unique_ptr<PreparedKernel>(
          new CudnnKernel(plans, index, workspace, handle_, &mutex_,
                          ConvOperandSpecs(std::get<ConvProblem>(problem), 16)));
    });
  }

  StatusOr<std::vector<KernelConfig>> HeuristicPicks(const Problem& problem, int count) override {
    return SupportedHeuristicPicks(problem, fe::HeurMode_t::A, count);
  }

  StatusOr<std::vector<KernelConfig>> SecondHeuristicPicks(const Problem& problem,
                                                           int count) override {
    return SupportedHeuristicPicks(problem, fe::HeurMode_t::B, count);
  }

  // Serialises the plan of `config` (built on the cached graph first).
  StatusOr<std::vector<uint8_t>> Serialize(const Problem& problem, const KernelConfig& config) {
    std::lock_guard<std::mutex> lock(mutex_);
    return Guarded("cuDNN serialise", [&]() -> StatusOr<std::vector<uint8_t>> {
      KSELECT_ASSIGN_OR_RETURN(const CudnnConfig* c, AsCudnn(config));
      KSELECT_ASSIGN_OR_RETURN(std::shared_ptr<ProblemPlans> plans, PlansFor(problem));
      KSELECT_ASSIGN_OR_RETURN(int64_t index, PlanIndex(*plans, *c));
      // serialize() writes the graph's current candidate, which building an index selects.
      KSELECT_RETURN_IF_ERROR(
          FrontendStatus(plans->graph->build_plan_at_index(index), "cuDNN plan build"));
      std::vector<uint8_t> bytes;
      KSELECT_RETURN_IF_ERROR(FrontendStatus(plans->graph->serialize(bytes), "cuDNN serialise"));
      return bytes;
    });
  }

  StatusOr<std::unique_ptr<PreparedKernel>> Load(const Problem& problem,
                                                 const std::vector<uint8_t>& bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    return Guarded("cuDNN deserialise", [&]() -> StatusOr<std::unique_ptr<PreparedKernel>> {
      if (!CudnnSupportsProblem(problem)) {
        return CannotImplementError("cudnn does not run " + ProblemToString(problem));
      }
      KSELECT_RETURN_IF_ERROR(Ready());
      auto plans = std::make_shared<ProblemPlans>();
      plans->key = ProblemToString(problem);
      plans->graph = std::make_shared<ConvGraph>();
      KSELECT_RETURN_IF_ERROR(FrontendStatus(plans->graph->deserialize(handle_, bytes),
                                             "not a cuDNN plan this cuDNN can load",
                                             StatusCode::kInvalidArgument));
      int64_t workspace = 0;
      KSELECT_RETURN_IF_ERROR(
          FrontendStatus(plans->graph->get_workspace_size(workspace), "cuDNN workspace query"));
      const int64_t index = plans->graph->get_execution_plan_count() - 1;
      return std::unique_ptr<PreparedKernel>(
          new CudnnKernel(plans, std::max<int64_t>(index, 0), workspace, handle_, &mutex_,
                          ConvOperandSpecs(std::get<ConvProblem>(problem), 16)));
    });
  }

 private:
  static StatusOr<const CudnnConfig*> AsCudnn(const KernelConfig& config) {
    if (!std::holds_alternative<CudnnConfig>(config)) {
      return InvalidArgumentError("not a cudnn config: " + kselect::ConfigKey(config));
    }
    return &std::get<CudnnConfig>(config);
  }

  // The library, the device and the handle, made once; kUnavailable without cuDNN or a GPU.
  Status Ready() {
    if (handle_ != nullptr) return Status::Ok();
    if (!ready_.ok()) return ready_;
    StatusOr<const CudnnLibrary*> library = LoadCudnn();
    if (!library.ok()) return ready_ = library.status();
    if (Status device = cuda::UseDevice(options_.device); !device.ok()) return ready_ = device;
    cudnnHandle_t handle = nullptr;
    const cudnnStatus_t created = fe::detail::create_handle(&handle);
    if (created != CUDNN_STATUS_SUCCESS) {
      return ready_ =
                 UnavailableError(std::string("cudnnCreate failed: ") + CudnnStatusText(created));
    }
    handle_ = handle;
    return Status::Ok();
  }

  // The cached operation graph of `problem`, built on first use (least recently used evicted).
  StatusOr<std::shared_ptr<ProblemPlans>> PlansFor(const Problem& problem) {
    if (!CudnnSupportsProblem(problem)) {
      return CannotImplementError("cudnn does not run " + ProblemToString(problem));
    }
    KSELECT_RETURN_IF_ERROR(Ready());
    const std::string key = ProblemToString(problem);
    for (auto it = cache_.begin(); it != cache_.end(); ++it) {
      if ((*it)->key == key) {
        cache_.splice(cache_.begin(), cache_, it);
        return cache_.front();
      }
    }
    auto plans = std::make_shared<ProblemPlans>();
    plans->key = key;
    KSELECT_ASSIGN_OR_RETURN(plans->graph, BuildGraph(std::get<ConvProblem>(problem), handle_));
    KSELECT_RETURN_IF_ERROR(
        FrontendStatus(plans->graph->get_engine_count(plans->engine_count), "cuDNN engine count"));
    cache_.push_front(plans);
    if (cache_.size() > kCachedProblems) cache_.pop_back();
    return plans;
  }

  // The index of `c`'s built plan in the problem's graph, making and building it on first use;
  // kCannotImplement (remembered) when cuDNN refuses the engine, the knobs or the build.
  StatusOr<int64_t> PlanIndex(ProblemPlans& plans, const CudnnConfig& c) {
    const std::vector<int64_t> key = ConfigKey(c);
    if (auto it = plans.plans.find(key); it != plans.plans.end()) return it->second;
    if (auto it = plans.refused.find(key); it != plans.refused.end()) return it->second;
    auto refuse = [&](const std::string& why) -> Status {
      Status status =
          CannotImplementError("cudnn engine " + std::to_string(c.engine_id) + ": " + why);
      plans.refused.emplace(key, status);
      return status;
    };
    if (c.engine_id < 0 || c.engine_id >= plans.engine_count) {
      return refuse("no such engine (the graph has " + std::to_string(plans.engine_count) + ")");
    }
    ConvGraph& graph = *plans.graph;
    const int64_t before = graph.get_execution_plan_count();
    if (fe::error_t made = graph.AddEngineConfig(c); made.is_bad()) {
      return refuse(made.get_message());
    }
    const int64_t index = graph.get_execution_plan_count() - 1;
    if (index < before) return refuse("cuDNN made no plan");
    if (std::vector<fe::BehaviorNote_t> notes;
        graph.get_behavior_notes_for_plan_at_index(index, notes).is_good() &&
        std::find(notes.begin(), notes.end(), fe::BehaviorNote_t::RUNTIME_COMPILATION) !=
            notes.end()) {
      plans.runtime_compiled.insert(c.engine_id);
    }
    (void)graph.deselect_behavior_notes(kExcludedNotes);
    if (fe::error_t built = graph.build_plan_at_index(index); built.is_bad()) {
      return refuse(built.get_message());
    }
    StatusOr<int64_t> workspace = PlanWorkspace(plans, index);
    if (!workspace.ok()) return refuse(workspace.status().message());
    if (*workspace > options_.max_workspace_bytes) {
      return refuse("needs " + std::to_string(*workspace) + " bytes of workspace, over the limit " +
                    std::to_string(options_.max_workspace_bytes));
    }
    plans.plans.emplace(key, index);
    return index;
  }

  static StatusOr<int64_t> PlanWorkspace(const ProblemPlans& plans, int64_t index) {
    int64_t bytes = 0;
    KSELECT_RETURN_IF_ERROR(FrontendStatus(
        plans.graph->get_workspace_size_plan_at_index(index, bytes), "cuDNN workspace query"));
    return bytes;
  }

  // Every config the heuristic lists, in its order, on a graph of its own (asking appends the
  // list to the graph's plans).
  StatusOr<std::vector<CudnnConfig>> HeuristicList(const Problem& problem, fe::HeurMode_t mode) {
    KSELECT_RETURN_IF_ERROR(Ready());
    KSELECT_ASSIGN_OR_RETURN(std::shared_ptr<ConvGraph> graph,
                             BuildGraph(std::get<ConvProblem>(problem), handle_));
    KSELECT_RETURN_IF_ERROR(FrontendStatus(graph->create_execution_plans({mode}),
                                           "cuDNN heuristic query", StatusCode::kCannotImplement));
    return graph->ListedConfigs();
  }

  // The first `count` configs of the heuristic's list that build on this problem (the ones an
  // application asking the heuristic would run), in its order.
  StatusOr<std::vector<KernelConfig>> SupportedHeuristicPicks(const Problem& problem,
                                                              fe::HeurMode_t mode, int count) {
    std::lock_guard<std::mutex> lock(mutex_);
    return Guarded("cuDNN heuristic", [&]() -> StatusOr<std::vector<KernelConfig>> {
      KSELECT_ASSIGN_OR_RETURN(std::vector<CudnnConfig> listed, HeuristicList(problem, mode));
      KSELECT_ASSIGN_OR_RETURN(std::shared_ptr<ProblemPlans> plans, PlansFor(problem));
      std::vector<KernelConfig> picks;
      for (CudnnConfig& c : listed) {
        if (static_cast<int>(picks.size()) >= count) break;
        if (PlanIndex(*plans, c).ok()) picks.emplace_back(std::move(c));
      }
      return picks;
    });
  }

  ProviderOptions options_;
  std::mutex mutex_;  // guards everything below and the handle's stream
  Status ready_ = Status::Ok();
  cudnnHandle_t handle_ = nullptr;
  std::list<std::shared_ptr<ProblemPlans>> cache_;
};

}  // namespace

bool CudnnSupportsProblem(const Problem& problem) {
  const ConvProblem* p = std::get_if<ConvProblem>(&problem);
  if (p == nullptr) return false;
  if (p->layout != ConvLayout::kChannelsLast) return false;
  if (!FrontendType(p->dtype).has_value() || p->compute != DataType::kF32) return false;
  return p->Validate().ok();
}

std::vector<std::vector<std::pair<int32_t, int64_t>>> KnobCombinations(
    const std::vector<KnobRange>& knobs, int64_t limit) {
  std::vector<std::vector<int64_t>> values;
  for (const KnobRange& knob : knobs) {
    const int64_t stride = std::max<int64_t>(knob.stride, 1);
    std::vector<int64_t> v;
    for (int64_t x = knob.minimum; x <= knob.maximum; x += stride) v.push_back(x);
    if (v.empty()) v.push_back(knob.minimum);
    values.push_back(std::move(v));
  }
  const int64_t total = KnobProduct(knobs);  // the product of the value counts above
  const int64_t taken = std::min(total, std::max<int64_t>(limit, 1));
  std::vector<std::vector<std::pair<int32_t, int64_t>>> out;
  out.reserve(static_cast<size_t>(taken));
  for (int64_t i = 0; i < taken; ++i) {
    // Evenly spaced over the product: combination number floor(i * total / taken).
    int64_t ordinal = static_cast<int64_t>(static_cast<__int128>(i) * total / taken);
    std::vector<std::pair<int32_t, int64_t>> combination(knobs.size());
    for (size_t k = knobs.size(); k-- > 0;) {
      const int64_t size = static_cast<int64_t>(values[k].size());
      combination[k] = {knobs[k].type, values[k][static_cast<size_t>(ordinal % size)]};
      ordinal /= size;
    }
    out.push_back(std::move(combination));
  }
  return out;
}

int64_t KnobProduct(const std::vector<KnobRange>& knobs) {
  int64_t total = 1;
  for (const KnobRange& knob : knobs) {
    const int64_t stride = std::max<int64_t>(knob.stride, 1);
    const int64_t count =
        knob.maximum >= knob.minimum ? (knob.maximum - knob.minimum) / stride + 1 : 1;
    total = total > (int64_t{1} << 40) / count ? (int64_t{1} << 40) : total * count;
  }
  return total;
}

std::unique_ptr<KernelProvider> CreateCudnnProvider(const ProviderOptions& options) {
  return std::make_unique<CudnnProvider>(options);
}

StatusOr<std::vector<uint8_t>> SerializePlan(KernelProvider& provider, const Problem& problem,
                                             const KernelConfig& config) {
  auto* cudnn = dynamic_cast<CudnnProvider*>(&provider);
  if (cudnn == nullptr) return InvalidArgumentError("SerializePlan needs the cudnn provider");
  return cudnn->Serialize(problem, config);
}

StatusOr<std::vector<EngineSurvey>> SurveyEngines(KernelProvider& provider,
                                                  const Problem& problem) {
  auto* cudnn = dynamic_cast<CudnnProvider*>(&provider);
  if (cudnn == nullptr) return InvalidArgumentError("SurveyEngines needs the cudnn provider");
  return cudnn->Survey(problem);
}

StatusOr<std::unique_ptr<PreparedKernel>> LoadSerializedPlan(KernelProvider& provider,
                                                             const Problem& problem,
                                                             const std::vector<uint8_t>& bytes) {
  auto* cudnn = dynamic_cast<CudnnProvider*>(&provider);
  if (cudnn == nullptr) return InvalidArgumentError("LoadSerializedPlan needs the cudnn provider");
  return cudnn->Load(problem, bytes);
}

}  // namespace kselect::cudnn
