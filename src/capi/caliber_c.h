/* caliber's C ABI, for host languages (the Python package python/caliber loads it with ctypes;
 * docs/python.md). Plain C types only, so one build serves every Python version.
 *
 * Replies are JSON written into a caller's buffer (NUL-terminated, cut at `cap`). Callbacks are
 * called on the thread that called in. A callback never lets an exception of its language
 * escape: it returns a status and, where there is one, a message. */
#ifndef CALIBER_C_H
#define CALIBER_C_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CALIBER_C_ABI_VERSION 1

/* Status of a launch callback. */
#define CALIBER_C_OK 0
#define CALIBER_C_NATIVE_ERROR 1 /* a runtime error: *native_code holds the runtime's code */
#define CALIBER_C_RAISED 2       /* an error of the host language itself */

/* One launch of `provider` of `target` (a callable, or a workload). Only enqueues. */
typedef int (*caliber_c_launch_fn)(int64_t target, int64_t provider, int64_t* native_code,
                                   char* message, int64_t cap);
/* A request (JSON) to `target`, answered in `reply` (JSON). Returns 0. */
typedef int (*caliber_c_call_fn)(int64_t target, const char* request, char* reply, int64_t cap);
/* Graph capture through the host language's own graph API (docs/python.md):
 * what 1 begin (on the device's stream), 2 end (returns a graph id > 0), 3 replay `graph`,
 * 4 release `graph`, 5 abort a capture in progress, 6 is the host's own profiler idle (returns 1
 * when it is not running now, though it may have run: its activity subscription, which outlives
 * it, may then be shared; 0 when it runs or cannot be known). Returns >= 0, or -1 with
 * *native_code set
 * (0 when the error is not the runtime's) and the message in `message`. */
typedef int64_t (*caliber_c_capture_fn)(int64_t what, int64_t graph, int64_t* native_code,
                                        char* message, int64_t cap);

int caliber_c_abi_version(void);

/* The caliber CLI in this process (`caliber run ...`): argv[0] is the program name. */
int caliber_c_cli(int argc, char** argv);

/* Opens a device of `backend` ("auto", "cpu", "cuda", ...) at `index`, once per process and
 * pair; returns a handle > 0, or 0 with {"error": ...} in reply. reply: the device as JSON
 * ({"backend", "name", "stream", "host", "capabilities", ...}). */
int64_t caliber_c_device_open(const char* backend, int index, char* reply, int64_t cap);

/* Times `launch(target, 0, ...)` on the device with caliber's timers; options and result are
 * JSON (docs/python.md). Returns 0 when a measurement was made (ok or failed), 1 when the
 * launch raised outside any capture (reply {"raised": true, "error"}), 2 for bad options. */
int caliber_c_measure(int64_t device, const char* options, caliber_c_launch_fn launch,
                      int64_t target, char* reply, int64_t cap);

/* Routes every device's graph capture (of devices opened afterwards) through `hooks`; NULL
 * turns it off. */
void caliber_c_set_capture_hooks(caliber_c_capture_fn hooks);

/* Registers an op for `backend` described by `info` (JSON: name, family, dtypes, dim_names,
 * rng, refuses_capture, description, providers [{name, role, version, label, configs,
 * swept_by}], shapes). Its workloads are driven through `call` (setup, prepare, check, release,
 * bytes_needed) and `launch`. Returns 0, or 2 with the reason in `error`.
 * A provider with `configs` (name=value strings; the first is the default) is tunable; with
 * `swept_by` ("triton") it sweeps them itself: caliber's tuner keeps the cache rules and sends
 * prepare {"config": ""; "sweep": true} where a sweep is due, answered with {"status": "ok",
 * "tune": {"config" (the winner, or null), "trials": [{config, ms, rejected, error}], "sweep_s",
 * "detail"}}; otherwise prepare's "config" is the one to use (status "rejected" when it cannot). */
int caliber_c_register_op(const char* backend, const char* info, caliber_c_call_fn call,
                          caliber_c_launch_fn launch, int64_t target, char* error, int64_t cap);

/* Credits the ops registered since the mark to `source` and refuses duplicate names. */
int64_t caliber_c_ops_mark(void);
int caliber_c_ops_adopt(int64_t mark, const char* source, char* error, int64_t cap);

/* Adds `key` with the JSON `value` to every run_identity.json this process writes. */
int caliber_c_identity_extra(const char* key, const char* value);

/* A run whose cases the host feeds (caliber run --flaggems, docs/flaggems.md). `feed` is called
 * once by `caliber_c_cli(run ...)` with the run handle and the resolved knobs (JSON); it walks the
 * host's loop, calling caliber_c_run_call, and returns 0 when the loop ended, else 2 with the
 * message in `message` (before the run's "open": exit 2, nothing written). NULL removes it. */
typedef int (*caliber_c_feed_fn)(int64_t run, const char* knobs, char* message, int64_t cap);
void caliber_c_set_feeder(caliber_c_feed_fn feed);
/* One request of a fed run (run/fed_run.hpp lists them: open, time, case, shapes); "time" times
 * launch(target, 0). Returns 0 with the reply, or 2 with {"error"}. */
int caliber_c_run_call(int64_t run, const char* request, caliber_c_launch_fn launch, int64_t target,
                       char* reply, int64_t cap);

/* The marker spellings, as a JSON object (records/markers.hpp). */
int caliber_c_markers(char* reply, int64_t cap);

/* The words and defaults of a measurement's options, as the knob table has them
 * (settings/settings.hpp, settings/knobs.hpp): {"words": {"timer": ["auto", ...], "l2": [...],
 * "clock": [...], "sample_method": [...], "return_mode": [...]}, "defaults": {"timer": "auto",
 * ...}}. Returns 0, or 2 when cap is too small. */
int caliber_c_settings(char* reply, int64_t cap);

/* The environment that makes `backend`'s device `index` (as this process sees it) a child
 * process's only device, pinned by its physical id ({"CUDA_VISIBLE_DEVICES": "7"}), as JSON in
 * reply; the parallel warmup of a FlagGems run starts its shards with it. Returns 0, or 2 with
 * {"error"}. */
int caliber_c_child_env(const char* backend, int index, char* reply, int64_t cap);

/* `backend`'s compat rules, the skip guards it lifts by an exact (op, reason) match, as JSON in
 * reply: [{"op", "reason", "why"}]; an op "flaggems:<file>" is a FlagGems benchmark file's
 * skipif reason, which the FlagGems plugin drops (docs/flaggems.md). The backend need not be
 * usable here. Returns 0, or 2 with {"error"} for a name no backend has. */
int caliber_c_compat_rules(const char* backend, char* reply, int64_t cap);

#ifdef __cplusplus
}
#endif

#endif /* CALIBER_C_H */
