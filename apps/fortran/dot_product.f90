! A distributed dot product and convergence test the way Fortran solvers
! write them: plain MPI_ALLREDUCE on DOUBLE PRECISION, INTEGER and LOGICAL,
! nothing switchagg-specific. With the component loaded
! (coll_switchagg_verbose 1) the log names the path that served each kind.
!   mpifort -O2 -o dot_product dot_product.f90 && mpirun -np 4 ./dot_product
program dot_product
  use mpi
  implicit none
  integer, parameter :: n = 100000
  double precision :: x(n), y(n), local, global
  integer :: rank, nranks, ierr, i, nonzero, total
  logical :: converged, all_converged

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
  do i = 1, n
    x(i) = dble(mod(i + rank, 7)) * 0.5d0
    y(i) = dble(mod(i * 3, 5)) - 2.0d0
  end do
  local = sum(x * y)
  call MPI_ALLREDUCE(local, global, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  nonzero = count(x /= 0.0d0)
  call MPI_ALLREDUCE(nonzero, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  converged = abs(local) < 1.0d9
  call MPI_ALLREDUCE(converged, all_converged, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a,f0.1,a,i0,a,l1)', 'dot = ', global, ', nonzeros = ', total, &
    ', all converged = ', all_converged
  call MPI_FINALIZE(ierr)
end program
