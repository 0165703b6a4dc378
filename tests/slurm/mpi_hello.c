/* tests/slurm/mpi_hello.c: a real MPI program: MPI_Init, then each rank prints what MPI
 * says it is beside what hvdrun told it (HVD_RANK), then an MPI_Allreduce proves the
 * ranks really talk. Used by the srun --mpi=pmix tests and the launch benchmark. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int one = 1, sum = 0;
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  const char* hvd = getenv("HVD_RANK");
  if (argc < 2) printf("mpi_rank=%d mpi_size=%d sum=%d hvd_rank=%s host=%s\n", rank, size, sum, hvd ? hvd : "unset", host);
  MPI_Finalize();
  return sum == size ? 0 : 1;
}
