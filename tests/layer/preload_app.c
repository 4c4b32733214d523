/* An application that knows nothing of kselect: it calls cuBLASLt as frameworks do (fresh
 * descriptors per call, the heuristic's first pick, a 32 MiB workspace) and writes every output.
 * tests/layer/preload_check.sh runs it with and without libkselect_preload.so and compares.
 *
 *   preload_app run OUT         run every case, write the outputs to OUT
 *   preload_app compare X Y     per case, the largest difference relative to the largest value
 * Exit 77 where there is no GPU. */
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORKSPACE_BYTES (32u << 20)

typedef struct {
  const char* name;
  int m, n, k, batch;
  int trans_a, trans_b;
  cudaDataType_t type;
  int bias;
  int misalign;       /* operand B offset by 16 bytes */
  int device_scalars; /* alpha and beta in device memory */
  float beta;
  int api; /* 0 cublasLtMatmul, 1 cublasGemmEx (workspace set as PyTorch does), 2
              cublasGemmStridedBatchedEx (no workspace set) */
} Case;

static const Case kCases[] = {
    {"linear_4096x8x4096", 4096, 8, 4096, 1, 1, 0, CUDA_R_16BF, 0, 0, 0, 0},
    {"linear_bias_14336x16x4096", 14336, 16, 4096, 1, 1, 0, CUDA_R_16BF, 1, 0, 0, 0},
    {"linear_1024x1x4096", 1024, 1, 4096, 1, 1, 0, CUDA_R_16BF, 0, 0, 0, 0},
    {"prefill_6144x2048x4096", 6144, 2048, 4096, 1, 1, 0, CUDA_R_16BF, 0, 0, 0, 0},
    {"accumulate_4096x64x4096", 4096, 64, 4096, 1, 1, 0, CUDA_R_16BF, 0, 0, 0, 1.0f},
    {"nn_2048x256x1024", 2048, 256, 1024, 1, 0, 0, CUDA_R_16BF, 0, 0, 0, 0},
    {"batched_1024x128x512x4", 1024, 128, 512, 4, 1, 0, CUDA_R_16BF, 0, 0, 0, 0},
    {"fp16_4096x16x4096", 4096, 16, 4096, 1, 1, 0, CUDA_R_16F, 0, 0, 0, 0},
    {"misaligned_4096x8x4096", 4096, 8, 4096, 1, 1, 0, CUDA_R_16BF, 0, 1, 0, 0},
    {"device_scalars_4096x8x4096", 4096, 8, 4096, 1, 1, 0, CUDA_R_16BF, 0, 0, 1, 0},
    {"gemmex_4096x8x4096", 4096, 8, 4096, 1, 1, 0, CUDA_R_16BF, 0, 0, 0, 0, 1},
    {"gemmex_14336x16x4096", 14336, 16, 4096, 1, 1, 0, CUDA_R_16BF, 0, 0, 0, 0, 1},
    {"gemmex_prefill_4096x2048x4096", 4096, 2048, 4096, 1, 1, 0, CUDA_R_16BF, 0, 0, 0, 0, 1},
    {"gemmex_nn_1024x512x2048", 1024, 512, 2048, 1, 0, 0, CUDA_R_16BF, 0, 0, 0, 0, 1},
    {"gemmex_device_scalars", 4096, 8, 4096, 1, 1, 0, CUDA_R_16BF, 0, 0, 1, 0, 1},
    {"strided_1024x128x512x4", 1024, 128, 512, 4, 1, 0, CUDA_R_16BF, 0, 0, 0, 0, 2},
};
#define CASES ((int)(sizeof(kCases) / sizeof(kCases[0])))

static void Check(int ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "preload_app: %s failed\n", what);
    exit(1);
  }
}

static uint16_t ToHalf(float value, cudaDataType_t type) {
  uint32_t bits;
  memcpy(&bits, &value, 4);
  if (type == CUDA_R_16BF) return (uint16_t)((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
  /* fp16 of a value in [-1, 1]: sign, exponent, 10-bit mantissa (round to nearest). */
  {
    const uint32_t sign = (bits >> 16) & 0x8000;
    const int exponent = (int)((bits >> 23) & 0xff) - 127 + 15;
    if (exponent <= 0) return (uint16_t)sign;
    return (uint16_t)(sign | ((uint32_t)exponent << 10) | (((bits & 0x7fffff) + 0x1000) >> 13));
  }
}

static float FromHalf(uint16_t half, cudaDataType_t type) {
  if (type == CUDA_R_16BF) {
    uint32_t bits = (uint32_t)half << 16;
    float value;
    memcpy(&value, &bits, 4);
    return value;
  }
  {
    const int exponent = (half >> 10) & 0x1f;
    const float mantissa = (float)(half & 0x3ff) / 1024.0f;
    const float magnitude =
        exponent == 0 ? ldexpf(mantissa, -14) : ldexpf(1.0f + mantissa, exponent - 15);
    return (half & 0x8000) ? -magnitude : magnitude;
  }
}

static void* RandomDevice(size_t count, cudaDataType_t type, unsigned seed) {
  uint16_t* host = (uint16_t*)malloc(count * 2);
  void* device = NULL;
  size_t i;
  Check(host != NULL, "malloc");
  for (i = 0; i < count; ++i) {
    seed = seed * 1664525u + 1013904223u;
    host[i] = ToHalf(((float)(seed >> 8) / 8388608.0f) - 1.0f, type);
  }
  Check(cudaMalloc(&device, count * 2 + 256) == cudaSuccess, "cudaMalloc");
  Check(cudaMemcpy(device, host, count * 2, cudaMemcpyHostToDevice) == cudaSuccess, "copy");
  free(host);
  return device;
}

static cublasLtMatrixLayout_t Layout(cudaDataType_t type, int rows, int cols, int batch) {
  cublasLtMatrixLayout_t layout;
  Check(cublasLtMatrixLayoutCreate(&layout, type, rows, cols, rows) == CUBLAS_STATUS_SUCCESS,
        "layout");
  if (batch > 1) {
    const int64_t stride = (int64_t)rows * cols;
    cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                     sizeof(batch));
    cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                     sizeof(stride));
  }
  return layout;
}

/* One call as a framework makes it: descriptors, heuristic, matmul, descriptors destroyed. */
static void Matmul(cublasLtHandle_t handle, const Case* c, void* a, void* b, void* d, void* bias,
                   void* workspace, const float* alpha, const float* beta) {
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, ld;
  cublasLtMatmulPreference_t preference;
  cublasLtMatmulHeuristicResult_t result;
  int returned = 0;
  const cublasOperation_t op_a = c->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = c->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const uint64_t limit = WORKSPACE_BYTES;
  cublasStatus_t status;
  Check(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS,
        "desc");
  cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a));
  cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b));
  if (c->bias) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue));
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
  }
  if (c->device_scalars) {
    const cublasLtPointerMode_t mode = CUBLASLT_POINTER_MODE_DEVICE;
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_POINTER_MODE, &mode, sizeof(mode));
  }
  la = Layout(c->type, c->trans_a ? c->k : c->m, c->trans_a ? c->m : c->k, c->batch);
  lb = Layout(c->type, c->trans_b ? c->n : c->k, c->trans_b ? c->k : c->n, c->batch);
  ld = Layout(c->type, c->m, c->n, c->batch);
  cublasLtMatmulPreferenceCreate(&preference);
  cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &limit, sizeof(limit));
  if (c->misalign) {
    const uint32_t alignment = 16;
    cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                         &alignment, sizeof(alignment));
  }
  Check(cublasLtMatmulAlgoGetHeuristic(handle, op, la, lb, ld, ld, preference, 1, &result,
                                       &returned) == CUBLAS_STATUS_SUCCESS &&
            returned == 1,
        "heuristic");
  status = cublasLtMatmul(handle, op, alpha, a, la, b, lb, beta, d, ld, d, ld, &result.algo,
                          workspace, WORKSPACE_BYTES, 0);
  if (status != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "preload_app: %s: cublasLtMatmul returned %d\n", c->name, (int)status);
    exit(1);
  }
  cublasLtMatmulPreferenceDestroy(preference);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatmulDescDestroy(op);
}

/* The same product through cuBLAS, as PyTorch's default backend calls it. */
static void BlasMatmul(cublasHandle_t handle, const Case* c, void* a, void* b, void* d,
                       void* workspace, const float* alpha, const float* beta) {
  const cublasOperation_t op_a = c->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = c->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int lda = c->trans_a ? c->k : c->m, ldb = c->trans_b ? c->n : c->k;
  cublasStatus_t status;
  Check(cublasSetPointerMode(handle, c->device_scalars ? CUBLAS_POINTER_MODE_DEVICE
                                                       : CUBLAS_POINTER_MODE_HOST) ==
            CUBLAS_STATUS_SUCCESS,
        "pointer mode");
  if (c->api == 1) {
    Check(cublasSetWorkspace(handle, workspace, WORKSPACE_BYTES) == CUBLAS_STATUS_SUCCESS,
          "set workspace");
    status = cublasGemmEx(handle, op_a, op_b, c->m, c->n, c->k, alpha, a, c->type, lda, b,
                          c->type, ldb, beta, d, c->type, c->m, CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT_TENSOR_OP);
  } else {
    status = cublasGemmStridedBatchedEx(
        handle, op_a, op_b, c->m, c->n, c->k, alpha, a, c->type, lda, (long long)c->m * c->k, b,
        c->type, ldb, (long long)c->k * c->n, beta, d, c->type, c->m, (long long)c->m * c->n,
        c->batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP);
  }
  if (status != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "preload_app: %s: cuBLAS returned %d\n", c->name, (int)status);
    exit(1);
  }
}

static int Run(const char* out_path) {
  cublasLtHandle_t handle;
  cublasHandle_t blas;
  void* workspace = NULL;
  FILE* out;
  int devices = 0, i, repeat;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    fprintf(stderr, "preload_app: no GPU\n");
    return 77;
  }
  Check(cublasLtCreate(&handle) == CUBLAS_STATUS_SUCCESS, "cublasLtCreate");
  Check(cublasCreate(&blas) == CUBLAS_STATUS_SUCCESS, "cublasCreate");
  Check(cudaMalloc(&workspace, WORKSPACE_BYTES) == cudaSuccess, "workspace");
  out = fopen(out_path, "wb");
  Check(out != NULL, "open output");
  for (i = 0; i < CASES; ++i) {
    const Case* c = &kCases[i];
    const size_t elements = (size_t)c->m * c->n * c->batch;
    void* a = RandomDevice((size_t)c->m * c->k * c->batch, c->type, 1u + i);
    void* b = RandomDevice((size_t)c->k * c->n * c->batch, c->type, 101u + i);
    void* d = RandomDevice(elements, c->type, 201u + i);
    void* bias = RandomDevice((size_t)c->m, c->type, 301u + i);
    void* b_used = c->misalign ? (void*)((char*)b + 16) : b;
    float scalars[2] = {1.0f, c->beta};
    float* device_scalars = NULL;
    const float* alpha = &scalars[0];
    const float* beta = &scalars[1];
    uint16_t* host = (uint16_t*)malloc(elements * 2);
    float* values = (float*)malloc(elements * 4);
    size_t e;
    if (c->device_scalars) {
      Check(cudaMalloc((void**)&device_scalars, sizeof(scalars)) == cudaSuccess, "scalars");
      cudaMemcpy(device_scalars, scalars, sizeof(scalars), cudaMemcpyHostToDevice);
      alpha = &device_scalars[0];
      beta = &device_scalars[1];
    }
    /* Three calls: the layer decides on the first and looks the decision up after. With beta 1,
     * each call accumulates into D, so the output depends on every call. */
    for (repeat = 0; repeat < 3; ++repeat) {
      if (c->api == 0) {
        Matmul(handle, c, a, b_used, d, bias, workspace, alpha, beta);
      } else {
        BlasMatmul(blas, c, a, b_used, d, workspace, alpha, beta);
      }
    }
    Check(cudaDeviceSynchronize() == cudaSuccess, "synchronize");
    Check(cudaMemcpy(host, d, elements * 2, cudaMemcpyDeviceToHost) == cudaSuccess, "copy back");
    for (e = 0; e < elements; ++e) values[e] = FromHalf(host[e], c->type);
    fwrite(&elements, sizeof(elements), 1, out);
    fwrite(values, 4, elements, out);
    free(host);
    free(values);
    cudaFree(a);
    cudaFree(b);
    cudaFree(d);
    cudaFree(bias);
    cudaFree(device_scalars);
  }
  fclose(out);
  cudaFree(workspace);
  cublasLtDestroy(handle);
  cublasDestroy(blas);
  return 0;
}

static int Compare(const char* x_path, const char* y_path) {
  FILE* x = fopen(x_path, "rb");
  FILE* y = fopen(y_path, "rb");
  int i, failed = 0;
  Check(x != NULL && y != NULL, "open inputs");
  printf("%-30s %12s\n", "case", "rel diff");
  for (i = 0; i < CASES; ++i) {
    size_t nx = 0, ny = 0, e;
    float *vx, *vy;
    double largest = 1e-6, worst = 0;
    Check(fread(&nx, sizeof(nx), 1, x) == 1 && fread(&ny, sizeof(ny), 1, y) == 1 && nx == ny,
          "read sizes");
    vx = (float*)malloc(nx * 4);
    vy = (float*)malloc(nx * 4);
    Check(fread(vx, 4, nx, x) == nx && fread(vy, 4, nx, y) == nx, "read values");
    for (e = 0; e < nx; ++e) {
      const double dx = fabs((double)vx[e]), diff = fabs((double)vx[e] - (double)vy[e]);
      if (dx > largest) largest = dx;
      if (diff > worst || diff != diff) worst = diff != diff ? 1e30 : diff;
    }
    printf("%-30s %12.3g%s\n", kCases[i].name, worst / largest,
           worst / largest > 2e-2 ? "  FAIL" : "");
    if (worst / largest > 2e-2) failed = 1;
    free(vx);
    free(vy);
  }
  fclose(x);
  fclose(y);
  return failed;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "run") == 0) return Run(argv[2]);
  if (argc == 4 && strcmp(argv[1], "compare") == 0) return Compare(argv[2], argv[3]);
  fprintf(stderr, "usage: preload_app run OUT | preload_app compare X Y\n");
  return 2;
}
