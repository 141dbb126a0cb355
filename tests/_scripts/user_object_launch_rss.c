/* Host memory of a process that launches graphs holding a CUDA user object:
   does it stay flat?  The driver calls of one graph cycle of
   benchmarks/bench_soak.py (and of NVIDIA cuda.core's graphs), with no
   Python: create a graph, optionally attach a user object whose destructor
   does nothing, instantiate, optionally launch, destroy the executable and
   the graph; synchronize the stream every 16 cycles.

   Build (no CUDA headers needed: see driver_entry.h, beside this file):
       cc -O2 -o user_object_launch_rss user_object_launch_rss.c -ldl
   Run:
       ./user_object_launch_rss USER_OBJECT LAUNCH CYCLES
   USER_OBJECT  1 attach a user object to every graph, 0 none
   LAUNCH       1 launch every executable once, 0 never, 2 make one graph
                and executable before the loop and only launch it in each
                cycle (a service relaunching one graph)
   After 2,000 warm-up cycles it samples the resident set size
   (/proc/self/statm) ten times along CYCLES more cycles, after a
   cuCtxSynchronize, and prints one line:
       RESULT user_object=U launch=L cycles=N rss_start_kib=S growth_kib=a,b,...
       bytes_per_cycle=B

   Measured on an H100 with driver 580.159.04 (see benchmarks/RESULTS.md,
   "Soak"): host memory grows by some hundred bytes a cycle with a user
   object and a launch, and stays flat without either.
*/
#include "driver_entry.h"
#include <unistd.h>

typedef void *CUgraph;
typedef void *CUgraphExec;
typedef void *CUuserObject;
typedef void (*CUhostFn)(void *);

#define CU_USER_OBJECT_NO_DESTRUCTOR_SYNC 1
#define CU_GRAPH_USER_OBJECT_MOVE 1
#define WARMUP 2000
#define SAMPLES 10

static CUresult (*p_cuGraphCreate)(CUgraph *, unsigned);
static CUresult (*p_cuGraphDestroy)(CUgraph);
static CUresult (*p_cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
static CUresult (*p_cuGraphLaunch)(CUgraphExec, CUstream);
static CUresult (*p_cuGraphExecDestroy)(CUgraphExec);
static CUresult (*p_cuUserObjectCreate)(CUuserObject *, void *, CUhostFn, unsigned, unsigned);
static CUresult (*p_cuGraphRetainUserObject)(CUgraph, CUuserObject, unsigned, unsigned);

/* The driver, device 0's primary context current, and a new stream. */
static CUstream load(void) {
    getproc_t gp;
    CUstream stream = driver_start(&gp);
#define R(name) DRIVER_RESOLVE(gp, name, 12080)
    R(cuGraphCreate);
    R(cuGraphDestroy);
    R(cuGraphInstantiateWithFlags);
    R(cuGraphLaunch);
    R(cuGraphExecDestroy);
    R(cuUserObjectCreate);
    R(cuGraphRetainUserObject);
#undef R
    return stream;
}

static long rss_kib(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld %ld", &pages, &resident) != 2) {
        fprintf(stderr, "cannot read /proc/self/statm\n");
        exit(2);
    }
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static void nothing(void *arg) { (void)arg; }

static CUgraphExec kept;

static void cycle(CUstream stream, int user_object, int launch, long i) {
    CUgraph graph;
    CUgraphExec exec;
    if (launch == 2) {
        CK(p_cuGraphLaunch(kept, stream));
        if ((i + 1) % 16 == 0) CK(p_cuStreamSynchronize(stream));
        return;
    }
    CK(p_cuGraphCreate(&graph, 0));
    if (user_object) {
        CUuserObject uo;
        CK(p_cuUserObjectCreate(&uo, (void *)(i + 1), nothing, 1,
                                CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
        CK(p_cuGraphRetainUserObject(graph, uo, 1, CU_GRAPH_USER_OBJECT_MOVE));
    }
    CK(p_cuGraphInstantiateWithFlags(&exec, graph, 0));
    if (launch) CK(p_cuGraphLaunch(exec, stream));
    CK(p_cuGraphExecDestroy(exec));
    CK(p_cuGraphDestroy(graph));
    if ((i + 1) % 16 == 0) CK(p_cuStreamSynchronize(stream));
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s USER_OBJECT(0|1) LAUNCH(0|1) CYCLES\n", argv[0]);
        return 1;
    }
    int user_object = atoi(argv[1]), launch = atoi(argv[2]);
    long cycles = atol(argv[3]), every = cycles / SAMPLES, i;
    if (every < 1) every = 1;
    CUstream stream = load();
    if (launch == 2) {
        CUgraph graph;
        CK(p_cuGraphCreate(&graph, 0));
        if (user_object) {
            CUuserObject uo;
            CK(p_cuUserObjectCreate(&uo, (void *)1, nothing, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
            CK(p_cuGraphRetainUserObject(graph, uo, 1, CU_GRAPH_USER_OBJECT_MOVE));
        }
        CK(p_cuGraphInstantiateWithFlags(&kept, graph, 0));
    }
    for (i = 0; i < WARMUP; i++) cycle(stream, user_object, launch, i);
    CK(p_cuCtxSynchronize());
    long start = rss_kib(), last = start;
    printf("RESULT user_object=%d launch=%d cycles=%ld rss_start_kib=%ld growth_kib=", user_object,
           launch, cycles, start);
    for (i = 0; i < cycles; i++) {
        cycle(stream, user_object, launch, i);
        if ((i + 1) % every == 0) {
            CK(p_cuCtxSynchronize());
            last = rss_kib();
            printf("%s%ld", (i + 1) == every ? "" : ",", last - start);
        }
    }
    printf(" bytes_per_cycle=%.0f\n", (double)(last - start) * 1024.0 / (double)cycles);
    return 0;
}
