/* kselect's preloaded cuBLASLt layer: tuned kernels and the selector's choices for applications
 * that are not changed at all (an inference server, a JAX or PyTorch program), the NVIDIA
 * equivalent of merging tuned kernels into the library the application calls.
 *
 *     LD_PRELOAD=/path/to/libkselect_preload.so KSELECT_SOLUTIONS=solutions.json python3 app.py
 *
 * libkselect_preload.so defines cublasLtMatmul. Each call is read from the application's own
 * descriptors (a repeated call is recognised from their bytes: a lookup), then runs
 *   1. the tuned library's entry for exactly that GEMM (KSELECT_SOLUTIONS), else
 *   2. the model's decision (KSELECT_MODEL, mode "select"), else
 *   3. the application's own call, untouched.
 * A chosen config runs on the application's descriptors (its epilogue, scales, pointer mode),
 * stream and workspace, and only when cuBLASLt accepts it for them (cublasLtMatmulAlgoCheck) and
 * it fits the workspace the application gave. Anything the layer does not fully understand, or
 * any failure (a missing or corrupt library or model, another device or cuBLASLt version, a
 * failing launch) passes the call through and is counted with its reason. Nothing is timed or
 * allocated on the GPU by the layer; decisions are CPU work, so they are safe during stream
 * capture. The implementation (libkselect_layer.so, beside the preloaded file) is loaded at the
 * first call, from the cuBLASLt the application already loaded.
 *
 * Environment:
 *   KSELECT_MODE       off | record | library | select. Unset: select when KSELECT_MODEL is set,
 *                      library when KSELECT_SOLUTIONS is, off otherwise.
 *   KSELECT_SOLUTIONS  a solution library (kselect tune's solutions.json[.gz]).
 *   KSELECT_MODEL      a model directory (':'-separated, one per device) for mode select.
 *   KSELECT_STATS      where to write the statistics at exit (JSON "kselect.layer_stats": per
 *                      GEMM the calls, how many ran kselect's choice, how many passed through and
 *                      why). "%p" in the path is replaced by the process id.
 *   KSELECT_RECORD     where to write the application's GEMMs at exit, as the CSV `kselect tune`
 *                      and `kselect replay` read (one row per distinct GEMM with its call count);
 *                      any mode records, mode record only records. "%p" as above.
 *   KSELECT_LAYER_IMPL the implementation's path, if not beside libkselect_preload.so.
 *   KSELECT_LAYER_VERBOSE=1  one line per decision on stderr.
 *
 * The functions below are exported by libkselect_preload.so (reach them with dlsym or ctypes):
 * a program that wants to compare with and without kselect in one process switches modes. */
#ifndef KSELECT_LAYER_H_
#define KSELECT_LAYER_H_

#ifdef __cplusplus
extern "C" {
#endif

/* Switches the mode ("off", "record", "library", "select") for every later call; decisions
 * made under another mode are forgotten. 0 on success, -1 for an unknown mode or a layer that
 * could not load (the reason goes to stderr and into the statistics). */
int kselect_layer_set_mode(const char* mode);

/* Writes the statistics and the record now (they are written at exit as well). 0 on success. */
int kselect_layer_flush(void);

#ifdef __cplusplus
}
#endif

#endif /* KSELECT_LAYER_H_ */
