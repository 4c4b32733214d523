/* kselect's C API: the run-time selector (include/kselect/selector.h) for C programs, other
 * languages' foreign-function interfaces (the Python module python/kselect is ctypes over it)
 * and anything that cannot link C++. Pure C99, usable from C++.
 *
 * Conventions (LightGBM's c_api.h):
 *   - objects are opaque handles: kselect_selector (an open model directory) and
 *     kselect_selection (one decision, best-ranked kernel configs first);
 *   - every function returns an int status: KSELECT_OK (0), or one of the KSELECT_* codes below
 *     (kselect::StatusCode's values); results come back through out-parameters;
 *   - after a failure, kselect_last_error() says what was wrong (per thread);
 *   - names are kselect_<object>_<verb>.
 * No function exits, aborts or lets a C++ exception out.
 *
 * Lifetimes and threads:
 *   - a kselect_selector may be used from several threads at once (selection, dispatch and the
 *     cache calls are thread-safe); close it once, after every other call on it has returned;
 *   - a kselect_selection holds its own copy of the decision: it stays valid until
 *     kselect_selection_free, however many problems the selector decides meanwhile and after its
 *     selector is closed; the strings it hands out live as long as it;
 *   - closing or freeing NULL does nothing; a handle closed or freed already, passed again, is
 *     refused with KSELECT_INVALID_ARGUMENT ("not an open handle"), except where the allocator
 *     has since given its address to a new handle;
 *   - kselect_last_error() and the strings of a kselect_dispatch_info belong to the calling
 *     thread, valid until its next failing call (resp. its next kselect_gemm_run).
 *
 * A minimal program:
 *     kselect_selector* sel;
 *     if (kselect_selector_open("models/h200_cublaslt_default", NULL, &sel) != KSELECT_OK) {
 *       fprintf(stderr, "%s\n", kselect_last_error());
 *       return 1;
 *     }
 *     kselect_gemm_problem p;
 *     kselect_gemm_problem_init(&p);  // bf16, layout "rcc" (cuBLAS TN), batch 1, alpha 1, beta 0
 *     p.m = 4096; p.n = 16; p.k = 4096;
 *     kselect_selection* s;
 *     if (kselect_selector_select_gemm(sel, &p, &s) == KSELECT_OK) {
 *       const char* name;
 *       kselect_selection_config_name(s, 0, &name);
 *       kselect_selection_free(s);
 *     }
 *     kselect_selector_close(sel);
 */
#ifndef KSELECT_C_API_H_
#define KSELECT_C_API_H_

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define KSELECT_C_EXPORT
#else
#define KSELECT_C_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes: the values of kselect::StatusCode (include/kselect/status.h). */
enum {
  KSELECT_OK = 0,
  KSELECT_INVALID_ARGUMENT = 1,    /* an impossible argument: NULL, a negative dim, unknown name */
  KSELECT_PARSE_ERROR = 2,         /* malformed input text */
  KSELECT_SCHEMA_MISMATCH = 3,     /* a file of another format or version */
  KSELECT_NOT_FOUND = 4,           /* a file or key that does not exist */
  KSELECT_IO_ERROR = 5,            /* reading or writing failed */
  KSELECT_UNAVAILABLE = 6,         /* absent here: no GPU, no driver */
  KSELECT_CANNOT_IMPLEMENT = 7,    /* no kernel config can run the problem */
  KSELECT_FAILED_PRECONDITION = 8, /* refused in the current state */
  KSELECT_TIMEOUT = 9,
  KSELECT_INTERNAL = 10, /* a bug in kselect (the message names the file and line) */
  KSELECT_UNIMPLEMENTED = 11
};

/* An open model directory: the model, its candidate table, the decision cache; or an open
 * cross-provider model directory (cross_provider.h: cuBLASLt and the tile engine in one
 * decision). Thread-safe: several threads may select and run GEMMs on one selector. */
typedef struct kselect_selector kselect_selector;
/* One decision: the ranked kernel configs for a problem, best first (never empty). */
typedef struct kselect_selection kselect_selection;

/* What happened in the last failed call on this thread ("" when none failed yet): the failing
 * function's name, the status name and the message, e.g. "kselect_selector_open: not_found:
 * ...". Valid until the next failing call on this thread. Never NULL. */
KSELECT_C_EXPORT const char* kselect_last_error(void);

/* kselect's version, "0.1.0". Never NULL. */
KSELECT_C_EXPORT const char* kselect_version(void);

/* Settings of a selector (kselect::SelectorOptions). Fill with kselect_selector_options_init,
 * then change what differs, so that code keeps the defaults of fields it does not name. */
typedef struct kselect_selector_options {
  int top_k;                    /* configs per selection, best first; >= 1 (default 8) */
  int device;                   /* CUDA device ordinal selected and run for (default 0) */
  int check_can_implement;      /* non-zero: ask the provider before returning a config, where
                                   the host has the GPU (default 1) */
  int query_heuristic;          /* non-zero: a model trained on the library heuristic's picks
                                   asks the library for them live on a GPU (default 1) */
  int first_stage_candidates;   /* score at most this many candidates with the whole model,
                                   picked by cheap stages first; 0 = all (default 0) */
  const char* solution_library; /* path of a "kselect.solutions" file; NULL or "" = none */
  const char* record_path;      /* append every distinct problem asked for to this file
                                   (format "kselect.problem_record"); NULL or "" = off */
  int64_t max_workspace_bytes;  /* configs needing more workspace are not chosen; 0 = the
                                   default (32 MiB) */
  int time_top_k;               /* kselect_gemm_run times this many of the best-ranked configs
                                   the first time it runs a problem and runs the fastest from
                                   then on, its read operands copied past 2 x L2 as the bench
                                   times (SelectorOptions::first_use_cold_l2, always on here);
                                   0 or 1 = off (default 0) */
  int64_t cache_capacity;       /* decisions the selector's cache holds; later ones are made but
                                   not kept (default 65536); >= 1 */
} kselect_selector_options;

/* Sets every field to its default. */
KSELECT_C_EXPORT int kselect_selector_options_init(kselect_selector_options* options);

/* Opens the model directory `model_dir` (made by `kselect train`; it holds feature_spec.json,
 * model_*.lgbm.gz and candidates.json.gz), or one of several per-device models listed
 * ':'-separated ("models/h200_cublaslt_default_rank:models/h100_cublaslt_default_rank"): the one
 * trained for the device it selects for (Selector::Open; a cross-provider directory may be listed
 * too, as trained for its reference model's device: "models/h200_cross_bf16_tn_rank:
 * models/h100_cublaslt_default_rank"). A directory holding cross_provider.json
 * opens a cross-provider selector (kselect::CrossProviderSelector): its selections rank both
 * providers' configs, decided live on a GPU, and with time_top_k >= 2 kselect_gemm_run times the
 * candidates of both providers at a problem's first use. `options` NULL = the defaults. On success
 * *out is a selector to close with kselect_selector_close; on failure *out is NULL and the error
 * names the file or field at fault. */
KSELECT_C_EXPORT int kselect_selector_open(const char* model_dir,
                                           const kselect_selector_options* options,
                                           kselect_selector** out);

/* Closes a selector (NULL is accepted). Every selection made with it must be freed first. */
KSELECT_C_EXPORT int kselect_selector_close(kselect_selector* selector);

/* A (batched) GEMM: C = alpha * op(A) op(B) + beta * C, A m x k, B k x n, C m x n, element counts.
 * Type names as kselect writes them: "bf16", "fp16", "fp32" (or "f32"), "tf32", "fp8" (e4m3),
 * "bf8" (e5m2), "int8", "int32". The layout is three letters for the memory orders of A, B and C,
 * 'r' (row-major) or 'c' (column-major): cuBLAS's TN (what PyTorch's nn.Linear reaches, with
 * m = out features, n = tokens, k = in features) is "rcc". */
typedef struct kselect_gemm_problem {
  int64_t m;
  int64_t n;
  int64_t k;
  int64_t batch;       /* independent products of this size, strided densely (default 1) */
  const char* layout;  /* default "rcc" */
  const char* dtype_a; /* default "bf16" */
  const char* dtype_b; /* default "bf16" */
  const char* dtype_c; /* default "bf16" */
  const char* compute; /* accumulator type; default "fp32" */
  double alpha;        /* default 1 */
  double beta;         /* default 0 */
} kselect_gemm_problem;

/* Sets m = n = k = 0 (the caller's to fill) and every other field to its default. */
KSELECT_C_EXPORT int kselect_gemm_problem_init(kselect_gemm_problem* problem);

/* The selector's decision for `problem` (see selector.h for the decision order: solution
 * library, cache, model, fallbacks). On success *out is a selection to free with
 * kselect_selection_free; it must not outlive `selector`. KSELECT_INVALID_ARGUMENT for an
 * impossible problem (non-positive dims, unknown type or layout names), KSELECT_CANNOT_IMPLEMENT
 * when no kernel can run it. Thread-safe. */
KSELECT_C_EXPORT int kselect_selector_select_gemm(kselect_selector* selector,
                                                  const kselect_gemm_problem* problem,
                                                  kselect_selection** out);

/* Frees a selection handle (NULL is accepted). The decision itself stays in the selector's cache.
 */
KSELECT_C_EXPORT int kselect_selection_free(kselect_selection* selection);

/* Selection accessors. Strings returned are owned by the selection and valid until it is freed.
 * Index-taking accessors return KSELECT_INVALID_ARGUMENT for index >= count. */

/* Number of ranked configs (1 to top_k). */
KSELECT_C_EXPORT int kselect_selection_count(const kselect_selection* selection, size_t* out);
/* The stage that answered: "solution_library", "cache", "model", "analytical", "heuristic" or
 * "first_implementable". */
KSELECT_C_EXPORT int kselect_selection_path(const kselect_selection* selection, const char** out);
/* The stage that made the decision: the path, except for cached decisions. */
KSELECT_C_EXPORT int kselect_selection_decided_by(const kselect_selection* selection,
                                                  const char** out);
/* Why earlier stages were passed over; "" when plain. */
KSELECT_C_EXPORT int kselect_selection_note(const kselect_selection* selection, const char** out);
/* Non-zero when every returned config passed the provider's can-implement check on the GPU. */
KSELECT_C_EXPORT int kselect_selection_can_implement_checked(const kselect_selection* selection,
                                                             int* out);
/* The config's identity, stable across runs ("cublaslt:algo=66,tile=..."). */
KSELECT_C_EXPORT int kselect_selection_config_key(const kselect_selection* selection, size_t index,
                                                  const char** out);
/* A short human-readable name of the config. */
KSELECT_C_EXPORT int kselect_selection_config_name(const kselect_selection* selection, size_t index,
                                                   const char** out);
/* The provider that runs the config: "cublaslt", "tile". */
KSELECT_C_EXPORT int kselect_selection_provider(const kselect_selection* selection, size_t index,
                                                const char** out);
/* What the deciding stage ordered by, higher = better (a model's score, an estimate's TFLOPS, or
 * -rank). */
KSELECT_C_EXPORT int kselect_selection_score(const kselect_selection* selection, size_t index,
                                             double* out);
/* Predicted throughput (TFLOPS) and latency (milliseconds); NaN where the deciding stage
 * predicted none (a ranking model, the heuristic). */
KSELECT_C_EXPORT int kselect_selection_predicted_tflops(const kselect_selection* selection,
                                                        size_t index, double* out);
KSELECT_C_EXPORT int kselect_selection_predicted_latency_ms(const kselect_selection* selection,
                                                            size_t index, double* out);

/* The decision cache on disk. Saving records the device, driver, library versions and the
 * model's fingerprint; loading refuses (KSELECT_SCHEMA_MISMATCH) a file made under any other.
 * A cross-provider selector has none: KSELECT_FAILED_PRECONDITION (and a size of 0). */
KSELECT_C_EXPORT int kselect_selector_cache_save(const kselect_selector* selector,
                                                 const char* path);
KSELECT_C_EXPORT int kselect_selector_cache_load(kselect_selector* selector, const char* path);
/* Number of decisions in the cache. */
KSELECT_C_EXPORT int kselect_selector_cache_size(const kselect_selector* selector, size_t* out);

/* Record mode (kselect_selector_options.record_path): retries the problem records a failed write
 * left in memory, then KSELECT_OK when every distinct problem asked for is in the file (or record
 * mode is off), KSELECT_IO_ERROR otherwise (a full disk, a file-size limit), the last error naming
 * the file, the reason and how many records wait or were dropped. Selections never fail for a
 * record that could not be written: call this to know. */
KSELECT_C_EXPORT int kselect_selector_record_status(kselect_selector* selector);

/* What kselect_gemm_run ran. The strings live in storage of the calling thread and stay valid
 * until its next kselect_gemm_run. */
typedef struct kselect_dispatch_info {
  const char* config_key; /* the config run */
  const char* config_name;
  const char* path; /* the stage that chose it, as kselect_selection_path */
  int rank;         /* 1-based rank of the config in the selection */
  const char* note; /* configs that failed to prepare or launch before it, and why */
} kselect_dispatch_info;

/* Runs C = alpha * op(A) op(B) + beta * C with the selector's choice for `problem`, on the CUDA
 * stream `stream` (a cudaStream_t; NULL = the default stream). a, b, c are device pointers laid
 * out as the problem says; `workspace` may be NULL when workspace_bytes is 0 (configs that need
 * more are skipped). A config that fails to prepare or launch falls back to the next ranked one.
 * Asynchronous like any launch. `info` may be NULL. KSELECT_UNAVAILABLE on a host without a
 * GPU. */
KSELECT_C_EXPORT int kselect_gemm_run(kselect_selector* selector,
                                      const kselect_gemm_problem* problem, const void* a,
                                      const void* b, void* c, void* workspace,
                                      int64_t workspace_bytes, void* stream,
                                      kselect_dispatch_info* info);

#ifdef __cplusplus
}
#endif

#endif /* KSELECT_C_API_H_ */
