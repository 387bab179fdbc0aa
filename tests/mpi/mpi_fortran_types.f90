! Every Fortran predefined datatype switchagg serves, with every op MPI
! defines on it, through MPI_ALLREDUCE from Fortran: results compared with a
! reference each rank computes alone (contributions of all ranks combined
! in rank order; the values keep every sum and product exact, so any
! reduction order gives the same bits), and the path that served each call
! checked against --expect (a host algorithm name or "switch"). Complex
! PROD must go to the previous module and still be right.
!   mpi_fortran_types --expect ring|switch|...
! Prints PASS on rank 0, or one FAIL line per wrong case and exits 1.
program mpi_fortran_types
  use mpi
  use iso_fortran_env, only: int8, int16, int32, int64, real32, real64
  implicit none
  interface
    subroutine switchagg_last_path_f(comm, path, len) bind(C)
      use iso_c_binding, only: c_int, c_char
      integer(c_int), intent(in) :: comm, len
      character(kind=c_char), intent(out) :: path(*)
    end subroutine
  end interface
  integer, parameter :: counts(3) = [1, 37, 1001]
  integer :: rank, nranks, ierr, failures, checks, c
  character(len=32) :: expect, arg

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
  expect = 'auto'
  if (command_argument_count() >= 2) then
    call get_command_argument(1, arg)
    if (arg == '--expect') call get_command_argument(2, expect)
  end if
  failures = 0
  checks = 0
  do c = 1, size(counts)
    call integers(counts(c), MPI_INTEGER, 'INTEGER', kind(0))
    call integers(counts(c), MPI_INTEGER1, 'INTEGER1', 1)
    call integers(counts(c), MPI_INTEGER2, 'INTEGER2', 2)
    call integers(counts(c), MPI_INTEGER4, 'INTEGER4', 4)
    call integers(counts(c), MPI_INTEGER8, 'INTEGER8', 8)
    call reals(counts(c), MPI_REAL, 'REAL', kind(0.0))
    call reals(counts(c), MPI_DOUBLE_PRECISION, 'DOUBLE_PRECISION', kind(0.0d0))
    call reals(counts(c), MPI_REAL4, 'REAL4', 4)
    call reals(counts(c), MPI_REAL8, 'REAL8', 8)
    call complexes(counts(c), MPI_COMPLEX, 'COMPLEX', kind(0.0))
    call complexes(counts(c), MPI_DOUBLE_COMPLEX, 'DOUBLE_COMPLEX', kind(0.0d0))
    call complexes(counts(c), MPI_COMPLEX8, 'COMPLEX8', 4)
    call complexes(counts(c), MPI_COMPLEX16, 'COMPLEX16', 8)
    call logicals(counts(c))
    call pairs(counts(c))
  end do
  call MPI_ALLREDUCE(MPI_IN_PLACE, failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (failures == 0) then
      print '(a,i0,a,i0,a,a)', 'PASS ', checks, ' Fortran allreduce cases on ', nranks, &
        ' ranks, served by ', trim(expect)
    else
      print '(a,i0,a)', 'FAIL ', failures, ' cases'
    end if
  end if
  call MPI_FINALIZE(ierr)
  if (failures /= 0) stop 1

contains

  ! Contribution of rank r at index i for each op family (small, so that
  ! INTEGER1 sums and every product stay exact on up to 8 ranks).
  integer(int64) function value(r, i, op)
    integer, intent(in) :: r, i, op
    integer, parameter :: factors(3) = [1, -1, 2]
    if (op == MPI_PROD) then
      value = factors(mod(r + i, 3) + 1)
    else if (op == MPI_BAND .or. op == MPI_BOR .or. op == MPI_BXOR) then
      value = iand(r * 5 + i * 9, 127)
    else
      value = mod(r * 7 + i * 3, 11) - 5
    end if
  end function

  integer(int64) function combine(a, b, op)
    integer(int64), intent(in) :: a, b
    integer, intent(in) :: op
    if (op == MPI_SUM) then
      combine = a + b
    else if (op == MPI_PROD) then
      combine = a * b
    else if (op == MPI_MIN) then
      combine = min(a, b)
    else if (op == MPI_MAX) then
      combine = max(a, b)
    else if (op == MPI_BAND) then
      combine = iand(a, b)
    else if (op == MPI_BOR) then
      combine = ior(a, b)
    else
      combine = ieor(a, b)
    end if
  end function

  ! The reference: every rank's contribution combined in rank order.
  subroutine reference(n, op, ref)
    integer, intent(in) :: n, op
    integer(int64), intent(out) :: ref(n)
    integer :: r, i
    do i = 1, n
      ref(i) = value(0, i, op)
      do r = 1, nranks - 1
        ref(i) = combine(ref(i), value(r, i, op), op)
      end do
    end do
  end subroutine

  subroutine mine(n, op, v)
    integer, intent(in) :: n, op
    integer(int64), intent(out) :: v(n)
    integer :: i
    do i = 1, n
      v(i) = value(rank, i, op)
    end do
  end subroutine

  ! Records one case: wrong values or the wrong path are failures.
  subroutine verdict(name, opname, n, ok, want_path)
    character(len=*), intent(in) :: name, opname, want_path
    integer, intent(in) :: n
    logical, intent(in) :: ok
    character(len=32) :: path
    call switchagg_last_path_f(MPI_COMM_WORLD, path, len(path))
    checks = checks + 1
    if (.not. ok) then
      failures = failures + 1
      print '(a,i0,5a,i0)', 'FAIL rank ', rank, ': ', name, ' ', opname, ' wrong result, count ', n
    end if
    if (want_path /= 'auto' .and. trim(path) /= want_path) then
      failures = failures + 1
      print '(a,i0,9a,i0)', 'FAIL rank ', rank, ': ', name, ' ', opname, ' served by ', &
        trim(path), ', expected ', want_path, ', count ', n
    end if
  end subroutine

  subroutine integers(n, dt, name, bytes)
    integer, intent(in) :: n, dt, bytes
    character(len=*), intent(in) :: name
    integer, parameter :: ops(7) = [MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_BAND, MPI_BOR, &
                                    MPI_BXOR]
    character(len=4), parameter :: names(7) = ['SUM ', 'PROD', 'MIN ', 'MAX ', 'BAND', 'BOR ', &
                                               'BXOR']
    integer(int64) :: v(n), ref(n), got(n)
    integer(int8), allocatable :: sbuf(:), rbuf(:)
    integer :: k, ierr
    allocate(sbuf(n * bytes), rbuf(n * bytes))
    do k = 1, size(ops)
      call mine(n, ops(k), v)
      call reference(n, ops(k), ref)
      select case (bytes)
      case (1); sbuf = transfer(int(v, int8), sbuf)
      case (2); sbuf = transfer(int(v, int16), sbuf)
      case (4); sbuf = transfer(int(v, int32), sbuf)
      case default; sbuf = transfer(v, sbuf)
      end select
      call MPI_ALLREDUCE(sbuf, rbuf, n, dt, ops(k), MPI_COMM_WORLD, ierr)
      select case (bytes)
      case (1); got = transfer(rbuf, 0_int8, n)
      case (2); got = transfer(rbuf, 0_int16, n)
      case (4); got = transfer(rbuf, 0_int32, n)
      case default; got = transfer(rbuf, 0_int64, n)
      end select
      call verdict(name, trim(names(k)), n, all(got == ref), expect)
    end do
  end subroutine

  subroutine reals(n, dt, name, bytes)
    integer, intent(in) :: n, dt, bytes
    character(len=*), intent(in) :: name
    integer, parameter :: ops(4) = [MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX]
    character(len=4), parameter :: names(4) = ['SUM ', 'PROD', 'MIN ', 'MAX ']
    integer(int64) :: v(n), ref(n)
    real(real64) :: got(n)
    integer(int8), allocatable :: buf(:)
    integer :: k, ierr
    allocate(buf(n * bytes))
    do k = 1, size(ops)
      call mine(n, ops(k), v)
      call reference(n, ops(k), ref)
      ! In place: the send buffer is the receive buffer.
      if (bytes == 4) then
        buf = transfer(real(v, real32), buf)
      else
        buf = transfer(real(v, real64), buf)
      end if
      call MPI_ALLREDUCE(MPI_IN_PLACE, buf, n, dt, ops(k), MPI_COMM_WORLD, ierr)
      if (bytes == 4) then
        got = transfer(buf, 0.0_real32, n)
      else
        got = transfer(buf, 0.0_real64, n)
      end if
      call verdict(name, trim(names(k)), n, all(got == real(ref, real64)), expect)
    end do
  end subroutine

  ! SUM is served (two real sums per element); PROD goes to the previous
  ! module (its factors are small Gaussian integers: products stay exact).
  subroutine complexes(n, dt, name, bytes)
    integer, intent(in) :: n, dt, bytes
    character(len=*), intent(in) :: name
    integer(int64) :: v(n), ref(n)
    complex(real64) :: z(n), want(n), got(n)
    integer :: r
    call mine(n, MPI_SUM, v)
    call reference(n, MPI_SUM, ref)
    z = cmplx(v, -2 * v, real64)
    want = cmplx(ref, -2 * ref, real64)
    call complex_allreduce(z, got, dt, bytes, MPI_SUM)
    call verdict(name, 'SUM', n, all(got == want), expect)
    want = (1.0_real64, 0.0_real64)
    do r = 0, nranks - 1
      call gaussian(r, n, z)
      want = want * z
    end do
    call gaussian(rank, n, z)
    call complex_allreduce(z, got, dt, bytes, MPI_PROD)
    call verdict(name, 'PROD', n, all(got == want), 'previous')
  end subroutine

  subroutine gaussian(r, n, z)
    integer, intent(in) :: r, n
    complex(real64), intent(out) :: z(n)
    integer :: i
    do i = 1, n
      z(i) = cmplx(value(r, i, MPI_PROD), value(r, i + 1, MPI_PROD), real64)
    end do
  end subroutine

  ! MPI_ALLREDUCE of z as a complex of `bytes`-byte parts.
  subroutine complex_allreduce(z, got, dt, bytes, op)
    complex(real64), intent(in) :: z(:)
    complex(real64), intent(out) :: got(:)
    integer, intent(in) :: dt, bytes, op
    integer(int8), allocatable :: sbuf(:), rbuf(:)
    integer :: ierr
    allocate(sbuf(2 * size(z) * bytes), rbuf(2 * size(z) * bytes))
    if (bytes == 4) then
      sbuf = transfer(cmplx(z, kind=real32), sbuf)
    else
      sbuf = transfer(z, sbuf)
    end if
    call MPI_ALLREDUCE(sbuf, rbuf, size(z), dt, op, MPI_COMM_WORLD, ierr)
    if (bytes == 4) then
      got = transfer(rbuf, (0.0_real32, 0.0_real32), size(z))
    else
      got = transfer(rbuf, (0.0_real64, 0.0_real64), size(z))
    end if
  end subroutine

  subroutine logicals(n)
    integer, intent(in) :: n
    integer, parameter :: ops(3) = [MPI_LAND, MPI_LOR, MPI_LXOR]
    character(len=4), parameter :: names(3) = ['LAND', 'LOR ', 'LXOR']
    logical :: mine_l(n), ref(n), got(n), x
    integer :: k, r, i, ierr
    do k = 1, size(ops)
      do i = 1, n
        mine_l(i) = truth(rank, i, k)
        ref(i) = truth(0, i, k)
        do r = 1, nranks - 1
          x = truth(r, i, k)
          if (k == 1) ref(i) = ref(i) .and. x
          if (k == 2) ref(i) = ref(i) .or. x
          if (k == 3) ref(i) = ref(i) .neqv. x
        end do
      end do
      call MPI_ALLREDUCE(mine_l, got, n, MPI_LOGICAL, ops(k), MPI_COMM_WORLD, ierr)
      call verdict('LOGICAL', trim(names(k)), n, all(got .eqv. ref), expect)
    end do
  end subroutine

  ! Mostly true for LAND, mostly false for LOR, mixed for LXOR: each op
  ! sees both answers across the indices.
  logical function truth(r, i, k)
    integer, intent(in) :: r, i, k
    if (k == 1) then
      truth = mod(r + i, 5) /= 0
    else if (k == 2) then
      truth = mod(r * 3 + i, 7) == 0
    else
      truth = mod(r + 2 * i, 3) == 0
    end if
  end function

  ! MPI_2INTEGER MINLOC/MAXLOC: (value, index) pairs, ties keep the lower
  ! index.
  subroutine pairs(n)
    integer, intent(in) :: n
    integer :: sbuf(2, n), rbuf(2, n), ref(2, n), k, i, r, ierr, v
    integer, parameter :: ops(2) = [MPI_MINLOC, MPI_MAXLOC]
    character(len=6), parameter :: names(2) = ['MINLOC', 'MAXLOC']
    do k = 1, 2
      do i = 1, n
        sbuf(:, i) = [int(value(rank, i, MPI_SUM)), rank]
        ref(:, i) = [int(value(0, i, MPI_SUM)), 0]
        do r = 1, nranks - 1
          v = int(value(r, i, MPI_SUM))
          if ((k == 1 .and. v < ref(1, i)) .or. (k == 2 .and. v > ref(1, i))) ref(:, i) = [v, r]
        end do
      end do
      call MPI_ALLREDUCE(sbuf, rbuf, n, MPI_2INTEGER, ops(k), MPI_COMM_WORLD, ierr)
      call verdict('2INTEGER', trim(names(k)), n, all(rbuf == ref), expect)
    end do
  end subroutine

end program
