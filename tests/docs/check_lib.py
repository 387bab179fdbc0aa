"""What the docs checks share: their command line and their selftests."""
import sys


def split_args(argv, counts, usage):
    """(selftest?, the other arguments): `--selftest` may come first."""
    test = argv[1:2] == ["--selftest"]
    args = argv[2:] if test else argv[1:]
    if len(args) not in counts:
        sys.exit(usage)
    return test, args


def report(problems, fail, ok):
    """Prints each problem, then `fail` (with the count) or `ok`: the check's
    exit status, 1 or 0."""
    for p in problems:
        print(p)
    if problems:
        print(f"{fail}: {len(problems)}")
        return 1
    print(ok)
    return 0


def expect_caught(cases):
    """cases: (name, the errors the check found in a copy broken that way,
    what one of them must say). Prints a line per case; 1 if any was missed."""
    failed = 0
    for name, errors, want in cases:
        if any(want in e for e in errors):
            print(f"ok: {name}: caught ({next(e for e in errors if want in e)})")
        else:
            print(f"FAIL: {name}: not caught (wanted '{want}'; got {errors})")
            failed += 1
    return 1 if failed else 0
