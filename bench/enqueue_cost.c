/* What one clEnqueueNDRangeKernel costs the host on an OpenCL driver, apart from any
 * runtime of ours: the floor under the native runtime's launch overhead (docs/native-runtime.md).
 *
 *   cc -O2 -std=c99 bench/enqueue_cost.c -o /tmp/enqueue_cost -lOpenCL && /tmp/enqueue_cost [DEVICE_INDEX]
 *
 * For tiny kernels (so the device is never the bottleneck for long) it enqueues N launches
 * back to back on an in-order queue and reports the host time per enqueue, and the wall
 * time per launch until the device has finished them all. Variants: local size NULL (the
 * driver chooses, what adreno-mlir's plans use by default) or explicit, 1 or 8 buffer
 * arguments, an image argument, and one cl_kernel reused vs one cl_kernel per launch. */
#define _POSIX_C_SOURCE 200809L
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 2000

static const char *source =
    "__kernel void one(__global float *a) { if (get_global_id(0) == 0) a[0] += 1.0f; }\n"
    "__kernel void eight(__global float *a, __global float *b, __global float *c, __global float *d,\n"
    "                    __global float *e, __global float *f, __global float *g, __global float *h) {\n"
    "  if (get_global_id(0) == 0) a[0] += b[0] + c[0] + d[0] + e[0] + f[0] + g[0] + h[0]; }\n"
    "__kernel void image(__read_only image2d_t img, __global float *a) {\n"
    "  if (get_global_id(0) == 0) a[0] += read_imagef(img, (int2)(0, 0)).x; }\n";

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

#define CHECK(x)                                                            \
    do {                                                                    \
        cl_int e_ = (x);                                                    \
        if (e_ != CL_SUCCESS) {                                             \
            fprintf(stderr, "%s failed: %d (line %d)\n", #x, e_, __LINE__); \
            exit(1);                                                        \
        }                                                                   \
    } while (0)

static void measure(const char *what, cl_command_queue q, cl_kernel *ks, int per_launch, const size_t *local) {
    size_t global = 1024;
    CHECK(clFinish(q));
    for (int i = 0; i < 50; i++) CHECK(clEnqueueNDRangeKernel(q, ks[0], 1, NULL, &global, local, 0, NULL, NULL));
    CHECK(clFinish(q));
    double t0 = now_us();
    for (int i = 0; i < N; i++)
        CHECK(clEnqueueNDRangeKernel(q, ks[per_launch ? i : 0], 1, NULL, &global, local, 0, NULL, NULL));
    double t1 = now_us();
    CHECK(clFinish(q));
    double t2 = now_us();
    printf("| %s | %.2f | %.2f |\n", what, (t1 - t0) / N, (t2 - t0) / N);
}

int main(int argc, char **argv) {
    int want = argc > 1 ? atoi(argv[1]) : -1;
    cl_platform_id plats[16];
    cl_uint np = 0;
    CHECK(clGetPlatformIDs(16, plats, &np));
    cl_device_id dev = NULL;
    int index = 0;
    for (cl_uint p = 0; p < np && !dev; p++) {
        cl_device_id ds[16];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, ds, &nd) != CL_SUCCESS) continue;
        for (cl_uint d = 0; d < nd && !dev; d++, index++) {
            cl_device_type t;
            clGetDeviceInfo(ds[d], CL_DEVICE_TYPE, sizeof t, &t, NULL);
            if (index == want || (want < 0 && (t & CL_DEVICE_TYPE_GPU))) dev = ds[d];
        }
    }
    if (!dev) {
        fprintf(stderr, "no such device (give a device index)\n");
        return 1;
    }
    char name[256];
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
    cl_int e;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
    CHECK(e);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &e);
    CHECK(e);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &source, NULL, &e);
    CHECK(e);
    CHECK(clBuildProgram(prog, 1, &dev, "-cl-std=CL1.2", NULL, NULL));
    cl_mem bufs[8];
    for (int i = 0; i < 8; i++) {
        bufs[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, NULL, &e);
        CHECK(e);
    }
    cl_image_format fmt = {CL_RGBA, CL_FLOAT};
    cl_image_desc desc = {0};
    desc.image_type = CL_MEM_OBJECT_IMAGE2D;
    desc.image_width = desc.image_height = 16;
    cl_mem img = clCreateImage(ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &e);
    CHECK(e);
    static cl_kernel one[N], eight[1], image[1];
    for (int i = 0; i < N; i++) {
        one[i] = clCreateKernel(prog, "one", &e);
        CHECK(e);
        CHECK(clSetKernelArg(one[i], 0, sizeof(cl_mem), &bufs[0]));
    }
    eight[0] = clCreateKernel(prog, "eight", &e);
    CHECK(e);
    for (int i = 0; i < 8; i++) CHECK(clSetKernelArg(eight[0], (cl_uint)i, sizeof(cl_mem), &bufs[i]));
    image[0] = clCreateKernel(prog, "image", &e);
    CHECK(e);
    CHECK(clSetKernelArg(image[0], 0, sizeof(cl_mem), &img));
    CHECK(clSetKernelArg(image[0], 1, sizeof(cl_mem), &bufs[0]));
    size_t local = 64;
    printf("device: %s; %d launches of a 1024-item kernel each\n", name, N);
    printf("| variant | host us per enqueue | wall us per launch (to clFinish) |\n|---|---:|---:|\n");
    measure("1 buffer arg, local NULL, one cl_kernel", q, one, 0, NULL);
    measure("1 buffer arg, local 64, one cl_kernel", q, one, 0, &local);
    measure("1 buffer arg, local NULL, a cl_kernel per launch", q, one, 1, NULL);
    measure("8 buffer args, local NULL", q, eight, 0, NULL);
    measure("image + buffer args, local NULL", q, image, 0, NULL);
    for (int i = 0; i < N; i++) clReleaseKernel(one[i]);
    clReleaseKernel(eight[0]);
    clReleaseKernel(image[0]);
    for (int i = 0; i < 8; i++) clReleaseMemObject(bufs[i]);
    clReleaseMemObject(img);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return 0;
}
