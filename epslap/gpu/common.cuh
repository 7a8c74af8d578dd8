// Declarations shared by the ε-SSP sources (eps_ssp.cu, estimate.cu, diagnostics.cu): the cost
// type, the cost source's arguments, the launch constants and the statuses.
//
// Set by the host (epslap/gpu/modules.py) as compiler options, with the defaults below for a build
// on its own: COST_INTEGRAL (1: costs are int64, else double), THREADS. The statuses come from
// the generated header epslap_status.cuh (``epslap._status.cuda_defines()``), which the host
// writes into a directory on the include path.
#ifndef EPSLAP_COMMON_CUH
#define EPSLAP_COMMON_CUH

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#include "epslap_status.cuh"

#ifndef INFINITY  // NVRTC compiles without the C math headers
#define INFINITY __longlong_as_double(0x7ff0000000000000LL)
#endif

#ifndef COST_INTEGRAL  // set by the host: 1 for integer costs
#define COST_INTEGRAL 0
#endif
#if COST_INTEGRAL
typedef long long cost_t;
#define COST_INF (1LL << 62)
#else
typedef double cost_t;
#define COST_INF (1.0 / 0.0)
#endif

#ifndef THREADS  // set by the host: threads per block (LaunchConfig.threads, default 512)
#define THREADS 512
#endif
#define WARPS (THREADS / 32)
#define FULL_MASK 0xffffffffu

// Data shared between blocks inside one launch (v, d, pred, owner, col_open, the reduction
// slots) is accessed through volatile pointers: never kept in registers across a barrier and
// never served from a multiprocessor's (non-coherent) L1. LDG / STG mark those accesses.
#define LDG(x) (x)
#define STG(x, y) ((x) = (y))

struct CostArgs {
    const void* p[4];
    double s[4];
    long long k[4];
    long long n1, n2;
};

// The cost source's arguments travel as plain kernel parameters and are gathered here.
#define COST_PARAMS const void* p0, const void* p1, const void* p2, const void* p3, \
    double s0, double s1, double s2, double s3, long long k0, long long k1, long long k2, \
    long long k3, long long n1_, long long n2_
#define COST_BUILD CostArgs a; a.p[0] = p0; a.p[1] = p1; a.p[2] = p2; a.p[3] = p3; \
    a.s[0] = s0; a.s[1] = s1; a.s[2] = s2; a.s[3] = s3; a.k[0] = k0; a.k[1] = k1; \
    a.k[2] = k2; a.k[3] = k3; a.n1 = n1_; a.n2 = n2_;

#endif  // EPSLAP_COMMON_CUH
