/* cl_api.h: the part of the OpenCL 1.2 API that adreno_rt uses, declared by the runtime
 * itself so that building it needs no OpenCL headers and no OpenCL library to link.
 *
 * Written from the Khronos OpenCL 1.2 specification (the API reference's types, enums and
 * function prototypes; the numeric values are the ones the specification's cl.h and
 * cl_platform.h give, which every OpenCL implementation shares: they are the ABI). Only
 * what runtime/c uses is here; add a type, constant or entry point from the specification
 * when the code needs one (an entry point: one line in ADRENO_CL_FUNCTIONS and one
 * #define below).
 *
 * The entry points are not declared as functions: cl_loader.c opens the OpenCL library at
 * run time (dlopen: the ICD loader on Linux, the vendor's libOpenCL.so on Android) and
 * fills `adreno_cl`, one function pointer per entry point. The macros at the end let the
 * code call them by their OpenCL names (clFinish(q) is adreno_cl.Finish(q)). Nothing may
 * be called through the table before adreno_cl_load() has succeeded; adreno_opencl_library()
 * (adreno_rt.h) says which library it loaded. */
#ifndef ADRENO_CL_API_H
#define ADRENO_CL_API_H

#include <stddef.h>
#include <stdint.h>

/* The calling convention of OpenCL entry points and callbacks: __stdcall on 32-bit
 * Windows (the specification's CL_API_CALL / CL_CALLBACK), the platform's default
 * elsewhere. */
#if defined(_WIN32)
#define ADRENO_CL_API_CALL __stdcall
#else
#define ADRENO_CL_API_CALL
#endif
#define ADRENO_CL_CALLBACK ADRENO_CL_API_CALL

/* ------------------------------------------------------------------ scalar types */

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef int64_t cl_long;
typedef uint64_t cl_ulong;
typedef float cl_float;

typedef cl_uint cl_bool;
typedef cl_ulong cl_bitfield;
typedef cl_bitfield cl_device_type;
typedef cl_uint cl_platform_info;
typedef cl_uint cl_device_info;
typedef cl_bitfield cl_command_queue_properties;
typedef intptr_t cl_context_properties;
typedef cl_bitfield cl_mem_flags;
typedef cl_uint cl_mem_object_type;
typedef cl_bitfield cl_map_flags;
typedef cl_uint cl_channel_order;
typedef cl_uint cl_channel_type;
typedef cl_uint cl_program_build_info;
typedef cl_uint cl_kernel_info;
typedef cl_uint cl_kernel_work_group_info;
typedef cl_uint cl_profiling_info;

/* ------------------------------------------------------------------ objects */

/* Opaque handles: pointers to structures only the implementation defines. */
typedef struct adreno_cl_platform_id *cl_platform_id;
typedef struct adreno_cl_device_id *cl_device_id;
typedef struct adreno_cl_context *cl_context;
typedef struct adreno_cl_command_queue *cl_command_queue;
typedef struct adreno_cl_mem *cl_mem;
typedef struct adreno_cl_program *cl_program;
typedef struct adreno_cl_kernel *cl_kernel;
typedef struct adreno_cl_event *cl_event;

typedef struct cl_image_format {
    cl_channel_order image_channel_order;
    cl_channel_type image_channel_data_type;
} cl_image_format;

/* OpenCL 1.2's layout (2.0 makes `buffer` one member of an anonymous union with
 * `mem_object`, the same bytes). */
typedef struct cl_image_desc {
    cl_mem_object_type image_type;
    size_t image_width;
    size_t image_height;
    size_t image_depth;
    size_t image_array_size;
    size_t image_row_pitch;
    size_t image_slice_pitch;
    cl_uint num_mip_levels;
    cl_uint num_samples;
    cl_mem buffer;
} cl_image_desc;

/* ------------------------------------------------------------------ constants */

#define CL_FALSE 0
#define CL_TRUE 1

/* Error codes */
#define CL_SUCCESS 0
#define CL_DEVICE_NOT_FOUND -1
#define CL_DEVICE_NOT_AVAILABLE -2
#define CL_COMPILER_NOT_AVAILABLE -3
#define CL_MEM_OBJECT_ALLOCATION_FAILURE -4
#define CL_OUT_OF_RESOURCES -5
#define CL_OUT_OF_HOST_MEMORY -6
#define CL_PROFILING_INFO_NOT_AVAILABLE -7
#define CL_IMAGE_FORMAT_NOT_SUPPORTED -10
#define CL_BUILD_PROGRAM_FAILURE -11
#define CL_MAP_FAILURE -12
#define CL_INVALID_VALUE -30
#define CL_INVALID_DEVICE_TYPE -31
#define CL_INVALID_PLATFORM -32
#define CL_INVALID_DEVICE -33
#define CL_INVALID_CONTEXT -34
#define CL_INVALID_COMMAND_QUEUE -36
#define CL_INVALID_HOST_PTR -37
#define CL_INVALID_MEM_OBJECT -38
#define CL_INVALID_IMAGE_FORMAT_DESCRIPTOR -39
#define CL_INVALID_IMAGE_SIZE -40
#define CL_INVALID_SAMPLER -41
#define CL_INVALID_BINARY -42
#define CL_INVALID_BUILD_OPTIONS -43
#define CL_INVALID_PROGRAM -44
#define CL_INVALID_PROGRAM_EXECUTABLE -45
#define CL_INVALID_KERNEL_NAME -46
#define CL_INVALID_KERNEL -48
#define CL_INVALID_ARG_INDEX -49
#define CL_INVALID_ARG_VALUE -50
#define CL_INVALID_ARG_SIZE -51
#define CL_INVALID_KERNEL_ARGS -52
#define CL_INVALID_WORK_DIMENSION -53
#define CL_INVALID_WORK_GROUP_SIZE -54
#define CL_INVALID_WORK_ITEM_SIZE -55
#define CL_INVALID_GLOBAL_OFFSET -56
#define CL_INVALID_EVENT_WAIT_LIST -57
#define CL_INVALID_EVENT -58
#define CL_INVALID_OPERATION -59
#define CL_INVALID_BUFFER_SIZE -61
#define CL_INVALID_GLOBAL_WORK_SIZE -63
/* cl_khr_icd: the ICD loader found no platform (no driver registered) */
#define CL_PLATFORM_NOT_FOUND_KHR -1001

/* cl_platform_info */
#define CL_PLATFORM_NAME 0x0902

/* cl_device_type */
#define CL_DEVICE_TYPE_GPU (1 << 2)
#define CL_DEVICE_TYPE_ALL 0xFFFFFFFF

/* cl_device_info */
#define CL_DEVICE_TYPE 0x1000
#define CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS 0x1003
#define CL_DEVICE_MAX_WORK_ITEM_SIZES 0x1005
#define CL_DEVICE_MAX_MEM_ALLOC_SIZE 0x1010
#define CL_DEVICE_IMAGE2D_MAX_WIDTH 0x1011
#define CL_DEVICE_IMAGE2D_MAX_HEIGHT 0x1012
#define CL_DEVICE_IMAGE_SUPPORT 0x1016
#define CL_DEVICE_GLOBAL_MEM_SIZE 0x101F
#define CL_DEVICE_NAME 0x102B
#define CL_DRIVER_VERSION 0x102D
#define CL_DEVICE_VERSION 0x102F
#define CL_DEVICE_EXTENSIONS 0x1030
#define CL_DEVICE_PLATFORM 0x1031
#define CL_DEVICE_HOST_UNIFIED_MEMORY 0x1035

/* cl_command_queue_properties */
#define CL_QUEUE_PROFILING_ENABLE (1 << 1)

/* cl_mem_flags */
#define CL_MEM_READ_WRITE (1 << 0)
#define CL_MEM_READ_ONLY (1 << 2)
#define CL_MEM_ALLOC_HOST_PTR (1 << 4)
#define CL_MEM_COPY_HOST_PTR (1 << 5)

/* cl_channel_order, cl_channel_type, cl_mem_object_type */
#define CL_RGBA 0x10B5
#define CL_HALF_FLOAT 0x10DD
#define CL_FLOAT 0x10DE
#define CL_MEM_OBJECT_IMAGE2D 0x10F1

/* cl_map_flags */
#define CL_MAP_READ (1 << 0)
#define CL_MAP_WRITE (1 << 1)

/* cl_program_build_info, cl_kernel_info, cl_kernel_work_group_info, cl_profiling_info */
#define CL_PROGRAM_BUILD_LOG 0x1183
#define CL_KERNEL_NUM_ARGS 0x1191
#define CL_KERNEL_WORK_GROUP_SIZE 0x11B0
#define CL_KERNEL_COMPILE_WORK_GROUP_SIZE 0x11B1
#define CL_PROFILING_COMMAND_START 0x1282
#define CL_PROFILING_COMMAND_END 0x1283

/* ------------------------------------------------------------------ entry points */

/* X(return type, name without the "cl" prefix, parameter list): every entry point the
 * runtime calls, with the specification's prototype. */
#define ADRENO_CL_FUNCTIONS(X)                                                                                     \
    X(cl_int, GetPlatformIDs, (cl_uint num_entries, cl_platform_id *platforms, cl_uint *num_platforms))            \
    X(cl_int, GetPlatformInfo,                                                                                     \
      (cl_platform_id platform, cl_platform_info param_name, size_t param_value_size, void *param_value,           \
       size_t *param_value_size_ret))                                                                              \
    X(cl_int, GetDeviceIDs,                                                                                        \
      (cl_platform_id platform, cl_device_type device_type, cl_uint num_entries, cl_device_id *devices,            \
       cl_uint *num_devices))                                                                                      \
    X(cl_int, GetDeviceInfo,                                                                                       \
      (cl_device_id device, cl_device_info param_name, size_t param_value_size, void *param_value,                 \
       size_t *param_value_size_ret))                                                                              \
    X(cl_context, CreateContext,                                                                                   \
      (const cl_context_properties *properties, cl_uint num_devices, const cl_device_id *devices,                  \
       void(ADRENO_CL_CALLBACK *pfn_notify)(const char *errinfo, const void *private_info, size_t cb,              \
                                            void *user_data),                                                      \
       void *user_data, cl_int *errcode_ret))                                                                      \
    X(cl_int, RetainContext, (cl_context context))                                                                 \
    X(cl_int, ReleaseContext, (cl_context context))                                                                \
    X(cl_command_queue, CreateCommandQueue,                                                                        \
      (cl_context context, cl_device_id device, cl_command_queue_properties properties, cl_int *errcode_ret))      \
    X(cl_int, ReleaseCommandQueue, (cl_command_queue command_queue))                                               \
    X(cl_mem, CreateBuffer,                                                                                        \
      (cl_context context, cl_mem_flags flags, size_t size, void *host_ptr, cl_int *errcode_ret))                 \
    X(cl_mem, CreateImage,                                                                                         \
      (cl_context context, cl_mem_flags flags, const cl_image_format *image_format,                                \
       const cl_image_desc *image_desc, void *host_ptr, cl_int *errcode_ret))                                      \
    X(cl_int, ReleaseMemObject, (cl_mem memobj))                                                                   \
    X(cl_program, CreateProgramWithSource,                                                                         \
      (cl_context context, cl_uint count, const char **strings, const size_t *lengths, cl_int *errcode_ret))       \
    X(cl_program, CreateProgramWithBinary,                                                                         \
      (cl_context context, cl_uint num_devices, const cl_device_id *device_list, const size_t *lengths,            \
       const unsigned char **binaries, cl_int *binary_status, cl_int *errcode_ret))                                \
    X(cl_int, RetainProgram, (cl_program program))                                                                 \
    X(cl_int, ReleaseProgram, (cl_program program))                                                                \
    X(cl_int, BuildProgram,                                                                                        \
      (cl_program program, cl_uint num_devices, const cl_device_id *device_list, const char *options,              \
       void(ADRENO_CL_CALLBACK *pfn_notify)(cl_program program, void *user_data), void *user_data))                \
    X(cl_int, GetProgramBuildInfo,                                                                                 \
      (cl_program program, cl_device_id device, cl_program_build_info param_name, size_t param_value_size,         \
       void *param_value, size_t *param_value_size_ret))                                                           \
    X(cl_kernel, CreateKernel, (cl_program program, const char *kernel_name, cl_int *errcode_ret))                 \
    X(cl_int, ReleaseKernel, (cl_kernel kernel))                                                                   \
    X(cl_int, SetKernelArg, (cl_kernel kernel, cl_uint arg_index, size_t arg_size, const void *arg_value))         \
    X(cl_int, GetKernelInfo,                                                                                       \
      (cl_kernel kernel, cl_kernel_info param_name, size_t param_value_size, void *param_value,                    \
       size_t *param_value_size_ret))                                                                              \
    X(cl_int, GetKernelWorkGroupInfo,                                                                              \
      (cl_kernel kernel, cl_device_id device, cl_kernel_work_group_info param_name, size_t param_value_size,       \
       void *param_value, size_t *param_value_size_ret))                                                           \
    X(cl_int, ReleaseEvent, (cl_event event))                                                                      \
    X(cl_int, GetEventProfilingInfo,                                                                               \
      (cl_event event, cl_profiling_info param_name, size_t param_value_size, void *param_value,                   \
       size_t *param_value_size_ret))                                                                              \
    X(cl_int, Finish, (cl_command_queue command_queue))                                                            \
    X(cl_int, EnqueueReadBuffer,                                                                                   \
      (cl_command_queue command_queue, cl_mem buffer, cl_bool blocking_read, size_t offset, size_t size, void *ptr, \
       cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event))                         \
    X(cl_int, EnqueueWriteBuffer,                                                                                  \
      (cl_command_queue command_queue, cl_mem buffer, cl_bool blocking_write, size_t offset, size_t size,          \
       const void *ptr, cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event))        \
    X(void *, EnqueueMapBuffer,                                                                                    \
      (cl_command_queue command_queue, cl_mem buffer, cl_bool blocking_map, cl_map_flags map_flags, size_t offset, \
       size_t size, cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event,             \
       cl_int *errcode_ret))                                                                                       \
    X(cl_int, EnqueueUnmapMemObject,                                                                               \
      (cl_command_queue command_queue, cl_mem memobj, void *mapped_ptr, cl_uint num_events_in_wait_list,           \
       const cl_event *event_wait_list, cl_event *event))                                                          \
    X(cl_int, EnqueueNDRangeKernel,                                                                                \
      (cl_command_queue command_queue, cl_kernel kernel, cl_uint work_dim, const size_t *global_work_offset,       \
       const size_t *global_work_size, const size_t *local_work_size, cl_uint num_events_in_wait_list,             \
       const cl_event *event_wait_list, cl_event *event))

/* The function pointer types: adreno_clGetPlatformIDs_fn, ... */
#define ADRENO_CL_TYPEDEF(ret, name, params) typedef ret(ADRENO_CL_API_CALL *adreno_cl##name##_fn) params;
ADRENO_CL_FUNCTIONS(ADRENO_CL_TYPEDEF)
#undef ADRENO_CL_TYPEDEF

/* The table cl_loader.c fills: one member per entry point, named without "cl". */
typedef struct adreno_cl_table {
#define ADRENO_CL_MEMBER(ret, name, params) adreno_cl##name##_fn name;
    ADRENO_CL_FUNCTIONS(ADRENO_CL_MEMBER)
#undef ADRENO_CL_MEMBER
} adreno_cl_table;

/* Filled once per process by adreno_cl_load (cl_loader.c); not exported from the library. */
extern adreno_cl_table adreno_cl;

/* Make `adreno_cl` usable: on the first successful call, open the OpenCL library and
 * resolve every entry point (thread-safe; the library then stays loaded for the life of
 * the process). `explicit_path` (may be NULL) is adreno_options.opencl_library. Returns 0,
 * or -1 with the reason (every path tried, dlerror()'s words, what to do) in `error`. */
int adreno_cl_load(const char *explicit_path, char *error, size_t error_size);

/* The OpenCL names of the entry points, as calls through the table. */
#define clGetPlatformIDs adreno_cl.GetPlatformIDs
#define clGetPlatformInfo adreno_cl.GetPlatformInfo
#define clGetDeviceIDs adreno_cl.GetDeviceIDs
#define clGetDeviceInfo adreno_cl.GetDeviceInfo
#define clCreateContext adreno_cl.CreateContext
#define clRetainContext adreno_cl.RetainContext
#define clReleaseContext adreno_cl.ReleaseContext
#define clCreateCommandQueue adreno_cl.CreateCommandQueue
#define clReleaseCommandQueue adreno_cl.ReleaseCommandQueue
#define clCreateBuffer adreno_cl.CreateBuffer
#define clCreateImage adreno_cl.CreateImage
#define clReleaseMemObject adreno_cl.ReleaseMemObject
#define clCreateProgramWithSource adreno_cl.CreateProgramWithSource
#define clCreateProgramWithBinary adreno_cl.CreateProgramWithBinary
#define clRetainProgram adreno_cl.RetainProgram
#define clReleaseProgram adreno_cl.ReleaseProgram
#define clBuildProgram adreno_cl.BuildProgram
#define clGetProgramBuildInfo adreno_cl.GetProgramBuildInfo
#define clCreateKernel adreno_cl.CreateKernel
#define clReleaseKernel adreno_cl.ReleaseKernel
#define clSetKernelArg adreno_cl.SetKernelArg
#define clGetKernelInfo adreno_cl.GetKernelInfo
#define clGetKernelWorkGroupInfo adreno_cl.GetKernelWorkGroupInfo
#define clReleaseEvent adreno_cl.ReleaseEvent
#define clGetEventProfilingInfo adreno_cl.GetEventProfilingInfo
#define clFinish adreno_cl.Finish
#define clEnqueueReadBuffer adreno_cl.EnqueueReadBuffer
#define clEnqueueWriteBuffer adreno_cl.EnqueueWriteBuffer
#define clEnqueueMapBuffer adreno_cl.EnqueueMapBuffer
#define clEnqueueUnmapMemObject adreno_cl.EnqueueUnmapMemObject
#define clEnqueueNDRangeKernel adreno_cl.EnqueueNDRangeKernel

#endif
