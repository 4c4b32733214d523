// cuBLASLt algos for configs under a caller's own descriptors: what the preloaded layer
// (src/layer/) runs on an application's matmul, where the provider builds its own descriptors.
#pragma once

#include <cublasLt.h>

#include <optional>
#include <string>

#include "kselect/problem.h"
#include "kselect/status.h"
#include "providers/cublaslt/cublaslt_config.h"

namespace kselect::cublaslt {

// An algo of `config` for matmuls of these types: cublasLtMatmulAlgoInit, then every typed field
// of the config. kCannotImplement naming the field cuBLASLt refused.
StatusOr<cublasLtMatmulAlgo_t> InitAlgoForConfig(cublasLtHandle_t handle,
                                                 cublasComputeType_t compute, cudaDataType_t scale,
                                                 cudaDataType_t a, cudaDataType_t b,
                                                 cudaDataType_t c, cudaDataType_t d,
                                                 const CublasLtConfig& config);

// The config an algo carries (what an application's heuristic pick is, in kselect's terms).
CublasLtConfig ConfigOfAlgo(const cublasLtMatmulAlgo_t& algo);

// kselect's dtype of a cuBLASLt data type; nullopt for those kselect does not name.
std::optional<DataType> DataTypeOfCuda(cudaDataType_t type);

// "CUBLAS_STATUS_NOT_SUPPORTED", ... (cublasGetStatusName lives in libcublas, not linked).
std::string CublasStatusText(cublasStatus_t status);

}  // namespace kselect::cublaslt
