/* mpi_check: the MPI program of the e2e `flux` MPI scenarios (tests/e2e/test_flux_mpi.py), built
 * with Debian's mpicc into localhost/flux-mpi:bookworm (realnode/toolchain.py, piece flux-mpi).
 *
 *   mpi_check                  hello from every rank (gathered at rank 0, in rank order), then
 *                              an allreduce of the ranks checked against size*(size-1)/2 and
 *                              timed over ITERS further allreduces; exit 0 when it adds up
 *   mpi_check abort RANK       the same hello, then rank RANK calls MPI_Abort(COMM_WORLD, 3)
 *   mpi_check exit RANK        the same hello, then every rank finalizes and rank RANK exits 5
 *
 * Rank 0 prints the lines the scenarios read: "hello from rank R of N on HOST", "allreduce:
 * sum=S expected=E OK|FAIL", "allreduce: ITERS in T s (U us each)".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITERS 1000

int main(int argc, char **argv)
{
    int rank, size, len;
    char host[MPI_MAX_PROCESSOR_NAME];
    const char *mode = argc > 1 ? argv[1] : "check";
    int victim = argc > 2 ? atoi(argv[2]) : 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    memset(host, 0, sizeof host);
    MPI_Get_processor_name(host, &len);

    char *all = rank == 0 ? malloc((size_t)size * MPI_MAX_PROCESSOR_NAME) : NULL;
    MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    if (rank == 0) {
        for (int i = 0; i < size; i++)
            printf("hello from rank %d of %d on %s\n", i, size, all + (size_t)i * MPI_MAX_PROCESSOR_NAME);
        free(all);
    }

    if (strcmp(mode, "abort") == 0) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == victim) {
            fprintf(stderr, "rank %d: MPI_Abort(MPI_COMM_WORLD, 3)\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        MPI_Barrier(MPI_COMM_WORLD); /* the others wait here until the abort ends them */
        MPI_Finalize();
        return 0;
    }

    long v = rank, sum = -1, want = (long)size * (size - 1) / 2;
    MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    int ok = sum == want, allok = 0;
    MPI_Allreduce(&ok, &allok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < ITERS; i++)
        MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    double dt = MPI_Wtime() - t0;
    if (rank == 0) {
        printf("allreduce: sum=%ld expected=%ld %s\n", sum, want, allok ? "OK" : "FAIL");
        printf("allreduce: %d in %.4f s (%.2f us each)\n", ITERS, dt, dt / ITERS * 1e6);
    }
    MPI_Finalize();
    if (strcmp(mode, "exit") == 0 && rank == victim) {
        fprintf(stderr, "rank %d: exit 5 after MPI_Finalize\n", rank);
        return 5;
    }
    return allok ? 0 : 1;
}
