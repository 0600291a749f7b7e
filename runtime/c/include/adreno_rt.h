/* adreno_rt: run an adreno-mlir compiled-model artifact (docs/artifact.md) with nothing
 * but an OpenCL 1.2 implementation. C99 + POSIX; it links no OpenCL library and needs no
 * OpenCL headers: it opens the OpenCL library at run time (dlopen) the first time a model
 * is opened: adreno_options.opencl_library, else $ADRENO_RT_OPENCL_LIBRARY, else the ICD
 * loader libOpenCL.so.1 / libOpenCL.so (Debian's ocl-icd), else, on Android, the vendor's
 * /vendor/lib64/libOpenCL.so (docs/native-runtime.md, "Which OpenCL library").
 *
 *     adreno_model *m;
 *     char err[1024];
 *     if (adreno_open("mobilenet_v2.adreno", NULL, &m, err, sizeof err) != ADRENO_OK) {
 *         fprintf(stderr, "%s\n", err);
 *         return 1;
 *     }
 *     adreno_set_input(m, 0, x, adreno_input_count(m, 0));
 *     if (adreno_run(m) != ADRENO_OK) fprintf(stderr, "%s\n", adreno_error(m));
 *     adreno_get_output(m, 0, y, adreno_output_count(m, 0));
 *     adreno_close(m);
 *
 * Inputs are float32 (ADRENO_DTYPE_F32) or, in format version 2 and later, int32 values
 * (ADRENO_DTYPE_I32: an embedding lookup's token ids, or an integer input such as an attention
 * mask that the model computes with, bound 2^24) with a bound: adreno_input_dtype and
 * adreno_input_bound say which. Give an int32 input with adreno_set_input_i32, or run with
 * adreno_run_typed, whose input pointers each point to their input's own element type. Every
 * id is checked against [-bound, bound) before anything is uploaded (the kernels index a table
 * with them): one outside is an ADRENO_ERR_INPUT naming the input, the id and the range.
 * Outputs are always float32.
 *
 * Errors: every function that can fail returns an adreno_status; the message (naming the
 * file, the manifest entry or the OpenCL call and what to do) is in the caller's buffer
 * for adreno_open and in adreno_error(model) afterwards. The library never exits, never
 * prints, and frees everything it allocated on every error path. A model is not
 * thread-safe: call it from one thread at a time (separate models may run concurrently).
 */
#ifndef ADRENO_RT_H
#define ADRENO_RT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define ADRENO_API __declspec(dllexport)
#else
#define ADRENO_API __attribute__((visibility("default")))
#endif

#define ADRENO_RT_VERSION "0.1.0"
/* The artifact format versions this library reads (docs/artifact.md, "Versioning"): 1 (f32
 * tensors), 2 (i32 inputs: token ids with a bound), 3 (constant outputs; f32 ones: the C API
 * returns float arrays), 4 (i32 weights: quantized weights' packed words) and 5 (state: inputs
 * kept on the device between runs, and decoder artifacts: adreno_decoder_open). Constant outputs
 * of other dtypes are refused by name. */
#define ADRENO_FORMAT_VERSION_MIN 1
#define ADRENO_FORMAT_VERSION 5

typedef enum adreno_status {
    ADRENO_OK = 0,
    ADRENO_ERR_ARGUMENT = 1, /* bad argument to an API call (NULL, index or size out of range) */
    ADRENO_ERR_IO = 2,       /* a file of the artifact is missing or unreadable */
    ADRENO_ERR_FORMAT = 3,   /* malformed artifact: bad JSON, missing or inconsistent field */
    ADRENO_ERR_VERSION = 4,  /* not an artifact, or another format version: recompile */
    ADRENO_ERR_CORRUPT = 5,  /* a file's size or sha256 differs from manifest.json */
    ADRENO_ERR_DEVICE = 6,   /* no such OpenCL device, or it cannot hold the model (image/alloc limits) */
    ADRENO_ERR_BUILD = 7,    /* the OpenCL program did not build, or a launched kernel is not in it */
    ADRENO_ERR_OPENCL = 8,   /* another OpenCL call failed (the message names it and the error code) */
    ADRENO_ERR_MEMORY = 9,   /* host memory exhausted */
    /* No OpenCL library could be loaded (the message names every path tried and why each
     * failed), the one named lacks an OpenCL entry point, or another library than the one
     * this process already uses was asked for (adreno_options.opencl_library). */
    ADRENO_ERR_OPENCL_LIBRARY = 10,
    /* An input's values are invalid: a token id of an i32 input outside [-bound, bound) (the
     * message names the input, the element, the id and the range). Nothing was uploaded. */
    ADRENO_ERR_INPUT = 11
} adreno_status;

/* The element type of an input (outputs are always f32). */
typedef enum adreno_dtype {
    ADRENO_DTYPE_INVALID = -1, /* no such input */
    ADRENO_DTYPE_F32 = 0,      /* float32: adreno_set_input, a `const float *` in adreno_run_typed */
    ADRENO_DTYPE_I32 = 1       /* int32 token ids in [-bound, bound): adreno_set_input_i32, a `const int32_t *` */
} adreno_dtype;

/* How inputs and outputs travel between host and device. */
typedef enum adreno_io_mode {
    ADRENO_IO_AUTO = 0,   /* on discrete GPUs (no host-unified memory): inputs and outputs up to 1 MiB
                             PINNED, larger outputs DIRECT; elsewhere DIRECT */
    ADRENO_IO_DIRECT = 1, /* clEnqueueWrite/ReadBuffer straight from/to the caller's memory */
    ADRENO_IO_PINNED = 2  /* through mapped CL_MEM_ALLOC_HOST_PTR staging buffers (DMA-able memory) */
} adreno_io_mode;

typedef struct adreno_options {
    /* Device choice (ignored when `context` is given): `device_index` >= 0 picks the N-th
     * device counting over all platforms in order; else `device_match`, when not NULL,
     * picks the first device whose platform or device name contains it (case-insensitive);
     * else the first GPU, else the first device. */
    int device_index;
    const char *device_match;
    /* Check every file against manifest.json's sha256 (default 1). Sizes are always checked. */
    int verify_checksums;
    adreno_io_mode io_mode;
    /* Embedding in a program that already has OpenCL objects (the Python binding does):
     * a cl_context, one of its cl_device_ids and, optionally, a cl_program already built
     * from the artifact's source for that device. Retained while the model lives. */
    void *context;
    void *device;
    void *program;
    /* The OpenCL library to load (a path for dlopen), or NULL to search: $ADRENO_RT_OPENCL_LIBRARY,
     * then libOpenCL.so.1, libOpenCL.so, then (Android) /vendor/lib64/libOpenCL.so and the system's.
     * The library is loaded once per process, by the first adreno_open that gets that far, and kept
     * until exit; a later adreno_open naming another library fails with ADRENO_ERR_OPENCL_LIBRARY.
     * With `context`, name the library that created it (the Python binding passes pyopencl's). */
    const char *opencl_library;
} adreno_options;

typedef struct adreno_model adreno_model;

/* Defaults: device_index -1, device_match NULL, verify_checksums 1, io_mode AUTO, no context,
 * opencl_library NULL. */
ADRENO_API void adreno_options_init(adreno_options *options);

/* Load the artifact directory `path` (X.adreno/): read and check manifest.json and its
 * files, create the context (unless given), get the program (a matching embedded binary,
 * else the source), create every allocation and weight buffer, upload the weights and
 * set every kernel's arguments. `options` may be NULL (defaults). On failure *model is
 * NULL and `error` (if not NULL) holds the reason. */
ADRENO_API adreno_status adreno_open(const char *path, const adreno_options *options, adreno_model **model,
                                     char *error, size_t error_size);

/* The same from memory: the manifest's JSON text, the OpenCL C source and the weights
 * blob (weights.bin's bytes). The manifest's "files" and "binaries" are ignored (there
 * are no files); everything else is checked as for adreno_open. The buffers are copied
 * or uploaded before it returns. */
ADRENO_API adreno_status adreno_open_memory(const char *manifest_json, size_t manifest_size, const char *source,
                                            size_t source_size, const void *weights, size_t weights_size,
                                            const adreno_options *options, adreno_model **model, char *error,
                                            size_t error_size);

/* Releases every OpenCL object and host allocation of the model. NULL is ignored. */
ADRENO_API void adreno_close(adreno_model *model);

/* The last error message of a call on `model` ("" if none). */
ADRENO_API const char *adreno_error(const adreno_model *model);
/* "ADRENO_ERR_FORMAT", ... */
ADRENO_API const char *adreno_status_name(adreno_status status);

/* Inputs and outputs, in the model's order: name, rank, dims (ONNX shape), element count. */
ADRENO_API int adreno_num_inputs(const adreno_model *model);
ADRENO_API int adreno_num_outputs(const adreno_model *model);
ADRENO_API const char *adreno_input_name(const adreno_model *model, int index);
ADRENO_API const char *adreno_output_name(const adreno_model *model, int index);
ADRENO_API int adreno_input_rank(const adreno_model *model, int index);
ADRENO_API int adreno_output_rank(const adreno_model *model, int index);
ADRENO_API const int64_t *adreno_input_shape(const adreno_model *model, int index);
ADRENO_API const int64_t *adreno_output_shape(const adreno_model *model, int index);
ADRENO_API size_t adreno_input_count(const adreno_model *model, int index);
ADRENO_API size_t adreno_output_count(const adreno_model *model, int index);
/* Input `index`'s element type (ADRENO_DTYPE_INVALID when out of range), and "f32" / "i32"
 * for a dtype (NULL for another value). */
ADRENO_API adreno_dtype adreno_input_dtype(const adreno_model *model, int index);
ADRENO_API const char *adreno_dtype_name(adreno_dtype dtype);
/* An i32 input's bound: its ids must lie in [-bound, bound) (negative ones count from the end
 * of the table they index). 1 <= bound <= 2^31. 0 for a float input or an index out of range. */
ADRENO_API int64_t adreno_input_bound(const adreno_model *model, int index);

/* Copy input `index` (`count` float32 values, dense row-major) in; it is uploaded by the
 * next adreno_run. `count` must equal adreno_input_count. adreno_run and adreno_profile
 * refuse to run until every input has been given. An i32 input is refused
 * (ADRENO_ERR_ARGUMENT): give it with adreno_set_input_i32. */
ADRENO_API adreno_status adreno_set_input(adreno_model *model, int index, const float *data, size_t count);
/* The same for an i32 input (`count` int32 token ids; a float input is refused). Every id is
 * checked against [-bound, bound) here: one outside is ADRENO_ERR_INPUT (the message names the
 * input, the element, the id and the range) and the input is then not given. */
ADRENO_API adreno_status adreno_set_input_i32(adreno_model *model, int index, const int32_t *data, size_t count);
/* One inference: upload the inputs, enqueue every launch in order, download the outputs, wait. */
ADRENO_API adreno_status adreno_run(adreno_model *model);
/* Copy output `index` of the last run out (`count` must equal adreno_output_count). */
ADRENO_API adreno_status adreno_get_output(adreno_model *model, int index, float *data, size_t count);
/* One inference from the caller's arrays into the caller's arrays (the low-overhead path
 * for bindings): inputs[i] holds adreno_input_count(i) floats, outputs[i] room for
 * adreno_output_count(i). It does not use the inputs given with adreno_set_input, and
 * afterwards those (and the outputs of the last adreno_run) are no longer held: give the
 * inputs again before adreno_run or adreno_profile. A model with an i32 input is refused
 * (ADRENO_ERR_ARGUMENT): run it with adreno_run_typed. */
ADRENO_API adreno_status adreno_run_io(adreno_model *model, const float *const *inputs, float *const *outputs);
/* adreno_run_io for inputs of any dtype: inputs[i] points to adreno_input_count(i) elements
 * of input i's own type (adreno_input_dtype: `const float *` for F32, `const int32_t *` for
 * I32). The ids of every i32 input are checked against [-bound, bound) before any input is
 * uploaded: one outside is ADRENO_ERR_INPUT, and nothing runs. */
ADRENO_API adreno_status adreno_run_typed(adreno_model *model, const void *const *inputs, float *const *outputs);

/* Device time of each launch, in milliseconds, from OpenCL profiling events on a separate
 * profiling queue: `repeat` inferences on the current inputs, the median per launch into
 * launch_ms[0 .. adreno_num_launches). `span_ms` (may be NULL) receives the median time
 * from the start of the first launch to the end of the last: the kernels plus the gaps
 * between them on the device. */
ADRENO_API adreno_status adreno_profile(adreno_model *model, int repeat, double *launch_ms, double *span_ms);
/* Enqueue the launches of `n` inferences back to back (no copies) and wait for the device:
 * `issue_ms` receives the host time spent enqueueing, per inference, and `total_ms` the
 * wall time until the device finished, per inference. When issuing is faster than the
 * device, total_ms is the device-bound time of an inference with no host gaps. */
ADRENO_API adreno_status adreno_measure_launches(adreno_model *model, int n, double *issue_ms, double *total_ms);
/* The input and output copies of adreno_run_io alone (no launches), for measuring how much
 * of an inference's wall time is transfer rather than launch overhead; adreno_transfer_typed
 * takes inputs as adreno_run_typed does (ids checked as there). */
ADRENO_API adreno_status adreno_transfer(adreno_model *model, const float *const *inputs, float *const *outputs);
ADRENO_API adreno_status adreno_transfer_typed(adreno_model *model, const void *const *inputs, float *const *outputs);

ADRENO_API int adreno_num_launches(const adreno_model *model);
/* Launch `index` (0 .. adreno_num_launches, in the order adreno_run enqueues them, the order of
 * adreno_profile's launch_ms): the __kernel function it runs (NULL when out of range), and the
 * ONNX node it computes (the manifest's optional "node", docs/artifact.md; "" when the launch has
 * none, e.g. a layout conversion the compiler inserted, or when out of range). */
ADRENO_API const char *adreno_launch_kernel(const adreno_model *model, int index);
ADRENO_API const char *adreno_launch_node(const adreno_model *model, int index);
/* State (format version 5): inputs that live on the device between runs and that the launches
 * update in place (a decoder's KV cache). They are not inputs of the C API (adreno_num_inputs
 * counts the fed ones): their buffers are created zero-filled when the model is opened and never
 * copied in or out. adreno_state_name gives the ONNX input a state stands for (NULL when out of
 * range), adreno_state_bytes its size; adreno_reset_states writes zeros over all of them. */
ADRENO_API int adreno_num_states(const adreno_model *model);
ADRENO_API const char *adreno_state_name(const adreno_model *model, int index);
ADRENO_API int64_t adreno_state_bytes(const adreno_model *model, int index);
ADRENO_API adreno_status adreno_reset_states(adreno_model *model);
/* "NVIDIA CUDA / NVIDIA H200 (OpenCL 3.0 CUDA)" */
ADRENO_API const char *adreno_device_name(const adreno_model *model);
/* Where the program came from: "artifact binary", "built from source", "given". */
ADRENO_API const char *adreno_program_origin(const adreno_model *model);
/* "pinned", "direct" or "mixed" (what ADRENO_IO_AUTO resolved to). */
ADRENO_API const char *adreno_io_mode_name(const adreno_model *model);
ADRENO_API const char *adreno_version(void);
/* The OpenCL library this process loaded ("/usr/lib/x86_64-linux-gnu/libOpenCL.so.1": the file a
 * bare name such as libOpenCL.so.1 resolved to, else the path as given), or "" before any
 * adreno_open has loaded one. */
ADRENO_API const char *adreno_opencl_library(void);

/* ------------------------------------------------------------------ decoders
 *
 * A decoder artifact (format version 5, written by adreno_mlir.compile_decoder(...).save(PATH);
 * docs/artifact.md, "Decoder artifacts") holds a decoder's prefill program (prefill_chunk token
 * ids a run) and decode program (one), one weights blob and the KV cache they share (state).
 * adreno_decoder_open creates both on one context: every weight uploaded once, one buffer per
 * cache, zero-filled. The generation loop runs here, in C (what `adreno-run --generate` calls):
 *
 *     adreno_decoder *d;
 *     if (adreno_decoder_open("llama.adreno", NULL, &d, err, sizeof err) != ADRENO_OK) ...
 *     adreno_generate_options o;
 *     adreno_generate_options_init(&o);          // greedy, 32 tokens, stop at an eos id
 *     adreno_generation g;
 *     int32_t prompt[] = {1, 2, 3}, out[32];
 *     if (adreno_decoder_generate(d, prompt, 3, &o, out, NULL, &g) != ADRENO_OK)
 *         fprintf(stderr, "%s\n", adreno_decoder_error(d));
 *     adreno_decoder_close(d);
 *
 * The prompt is prefilled in chunks while more than one token is left and a whole chunk fits
 * the cache (a short last chunk padded by repeating its last token), the rest of it token by
 * token through the decode program, then one decode step per generated token; generation stops
 * at max_new_tokens, at an end-of-sequence id of the decoder (stop_at_eos) or when the cache is
 * full ("max_context"): the same loop as adreno_mlir's Decoder.generate, so greedy generation
 * gives the same tokens. A decoder, like a model, is not thread-safe. */
typedef struct adreno_decoder adreno_decoder;

/* Open a decoder artifact (an artifact of one model is refused with ADRENO_ERR_ARGUMENT, saying
 * so; adreno_open refuses a decoder artifact the same way). `options` as for adreno_open (NULL:
 * defaults); both programs run on the device it picks (a given context is used for both). */
ADRENO_API adreno_status adreno_decoder_open(const char *path, const adreno_options *options,
                                             adreno_decoder **decoder, char *error, size_t error_size);
ADRENO_API void adreno_decoder_close(adreno_decoder *decoder);
/* The last error of a call on `decoder` ("" if none). */
ADRENO_API const char *adreno_decoder_error(const adreno_decoder *decoder);
/* The prefill (0) or decode (1) program, for adreno_device_name, adreno_program_origin,
 * adreno_num_launches, ... (NULL for another value). Owned by the decoder. */
ADRENO_API const adreno_model *adreno_decoder_model(const adreno_decoder *decoder, int which);
ADRENO_API int64_t adreno_decoder_vocab(const adreno_decoder *decoder);
ADRENO_API int64_t adreno_decoder_max_context(const adreno_decoder *decoder);   /* the cache's rows */
ADRENO_API int64_t adreno_decoder_prefill_chunk(const adreno_decoder *decoder);
ADRENO_API int64_t adreno_decoder_max_positions(const adreno_decoder *decoder); /* the rotary tables' rows */
ADRENO_API int64_t adreno_decoder_position(const adreno_decoder *decoder);      /* tokens in the cache */
ADRENO_API int adreno_decoder_num_eos(const adreno_decoder *decoder);
ADRENO_API const int32_t *adreno_decoder_eos(const adreno_decoder *decoder);

/* Position 0 and a zeroed cache (a new conversation). */
ADRENO_API adreno_status adreno_decoder_reset(adreno_decoder *decoder);
/* Append `count` token ids to the cache (prefill chunks, then decode steps where a chunk would
 * not fit); `logits` (may be NULL) receives the vocab logits after the last one. Ids outside
 * [0, vocab), or more tokens than the cache has room for, are ADRENO_ERR_INPUT (nothing runs). */
ADRENO_API adreno_status adreno_decoder_feed(adreno_decoder *decoder, const int32_t *ids, size_t count,
                                             float *logits);
/* One decode step: `token` at the current position; the next token's logits (may be NULL). A
 * full cache is ADRENO_ERR_INPUT. */
ADRENO_API adreno_status adreno_decoder_step(adreno_decoder *decoder, int32_t token, float *logits);

typedef struct adreno_generate_options {
    int max_new_tokens; /* >= 1 (default 32) */
    int stop_at_eos;    /* stop at an end-of-sequence id of the decoder (default 1) */
    int greedy;         /* 1 (default): the largest logit (the first one, as numpy's argmax); 0: sample */
    float temperature;  /* sampling: softmax(logits / temperature), > 0 (default 1) */
    int top_k;          /* sampling: among the top_k largest logits; 0 (default): all */
    uint64_t seed;      /* sampling: the generator's seed (splitmix64; not numpy's stream) */
} adreno_generate_options;

typedef struct adreno_generation {
    int num_tokens;     /* generated tokens (in `tokens`), >= 1 */
    int prompt_tokens;
    double ttft_ms;       /* from the call to the first generated token, prefill included */
    double prefill_ms, decode_ms;
    double prefill_tok_s; /* prompt tokens per second of prefill */
    double decode_tok_s;  /* generated tokens after the first per second of decode steps (0 with one) */
    const char *stop_reason; /* "max_new_tokens", "eos" or "max_context" (static strings) */
} adreno_generation;

/* Defaults: 32 new tokens, greedy, stop at eos, temperature 1, top_k 0, seed 0. */
ADRENO_API void adreno_generate_options_init(adreno_generate_options *options);
/* Generate after `prompt` from an empty cache (the decoder is reset first): `tokens` has room
 * for max_new_tokens ids; `logits` (may be NULL) room for max_new_tokens * vocab floats, the
 * logits each generated token was chosen from; `result` says how many and how fast. A prompt
 * that is empty, longer than the context or has ids outside [0, vocab) is refused before anything
 * runs (ADRENO_ERR_ARGUMENT / ADRENO_ERR_INPUT, the message names the ids or the lengths). */
ADRENO_API adreno_status adreno_decoder_generate(adreno_decoder *decoder, const int32_t *prompt, size_t prompt_len,
                                                 const adreno_generate_options *options, int32_t *tokens,
                                                 float *logits, adreno_generation *result);

#ifdef __cplusplus
}
#endif

#endif
