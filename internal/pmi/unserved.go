package pmi

import (
	"fmt"
	"strconv"
)

// Unserved describes a launcher that started this process as one of
// several without a PMI-1 or PMI-2 server that this package can talk to
// (no PMI_FD, no PMI_PORT), or returns "" when the environment shows
// none. Without the check each such process would run as a job of its
// own, one PE each, and say nothing:
//
//   - srun without --mpi=pmi2 (a cluster whose MpiDefault is none or
//     pmix): SLURM_STEP_NUM_TASKS > 1;
//   - Open MPI's mpirun or mpiexec, which serves PMIx:
//     OMPI_COMM_WORLD_SIZE > 1.
//
// A lone task (srun -n 1, mpirun -n 1) is a one-PE job as without a
// launcher.
func Unserved(getenv func(string) string) string {
	if n, _ := strconv.Atoi(getenv("SLURM_STEP_NUM_TASKS")); n > 1 {
		return fmt.Sprintf("goshmem: srun started this process as task %s of %d without a PMI-1 or PMI-2 server (%s and %s are not set), "+
			"so its PEs could not find each other: start the job with srun --mpi=pmi2 (srun --mpi=list shows what this Slurm offers)",
			orUnknown(getenv("SLURM_PROCID")), n, EnvFD, EnvPort)
	}
	if n, _ := strconv.Atoi(getenv("OMPI_COMM_WORLD_SIZE")); n > 1 {
		return fmt.Sprintf("goshmem: Open MPI's mpirun started this process as rank %s of %d; it serves PMIx, not the PMI-1 or PMI-2 that goshmem speaks, "+
			"so its PEs could not find each other: start the job with MPICH's mpiexec.hydra or srun --mpi=pmi2, or with oshrun on one host",
			orUnknown(getenv("OMPI_COMM_WORLD_RANK")), n)
	}
	return ""
}

func orUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}
