#!/usr/bin/env python3
"""Figures of a chaos soak (chaos_soak.sh writes the inputs under --out).

Reads jobs.log (one line per job: loop, kind, exit code, start/end wall ms),
faults.log (one line per fault: wall ms at the fault's end, kind, detail)
and logs/ (the checker's per-rank files, the jobs' output). Prints the
figures and a verdict line; PASS needs 0 wrong answers, 0 hangs, 0 leases
left, a clean final job the switch path served, and service: the switch
path back within --recovery-bound-ms after every fault that no other fault
followed before it came back, and at least --min-switch-share of the
checked calls (in checker jobs that ran to their end) served by it.

Recovery after a fault: from the fault's end (agent restarted, SIGCONT
sent, lease deleted, rank killed, job cancelled, flood over) to the first
allreduce served by the switch path again, in a checker job that was
running then, else in the next checker job that runs.
"""
import argparse
import glob
import os
import re
import statistics


def parse_kv(line):
    return dict(kv.split("=", 1) for kv in line.split() if "=" in kv)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--leases-left", type=int, required=True)
    ap.add_argument("--final-rc", type=int, required=True)
    ap.add_argument("--call-bound-ms", type=int, required=True)
    ap.add_argument("--minutes", type=float, required=True)
    ap.add_argument("--seed", default="")
    ap.add_argument("--loops", default="")
    ap.add_argument("--final-job", default="none")
    ap.add_argument("--recovery-bound-ms", type=int, required=True)
    ap.add_argument("--min-switch-share", type=float, required=True)
    a = ap.parse_args()
    logs = os.path.join(a.out, "logs")

    jobs = []
    with open(os.path.join(a.out, "jobs.log")) as f:
        for line in f:
            jobs.append(parse_kv(line))
    faults = []
    with open(os.path.join(a.out, "faults.log")) as f:
        for line in f:
            parts = line.split()
            faults.append((int(parts[1]), parts[2], " ".join(parts[3:])))

    # Checker logs: per job, rank 0's (time, calls, path) lines and summary.
    wrong_lines, slow = [], []
    oks = {}  # job -> [(ms, calls, path)]
    summaries = {}
    for path in glob.glob(os.path.join(logs, "*.[0-9]*")):
        name = os.path.basename(path)
        m = re.fullmatch(r"(\w+)\.(\d+)", name)
        if not m:
            continue
        job, rank = m.group(1), int(m.group(2))
        with open(path, errors="replace") as f:
            for line in f:
                if line.startswith("WRONG"):
                    wrong_lines.append(name + ": " + line.strip())
                elif rank == 0 and line.startswith("ok "):
                    _, ms, calls, p = line.split()[:4]
                    oks.setdefault(job, []).append((int(ms), int(calls), p))
                elif rank == 0 and line.startswith("slow "):
                    slow.append((job, int(line.split()[2])))
                elif rank == 0 and line.startswith("summary"):
                    summaries[job] = parse_kv(line)

    calls = 0
    for job, lines in oks.items():
        calls += int(summaries[job]["calls"]) if job in summaries else max(c for _, c, _ in lines)
    summed = [s for s in summaries.values() if "switch_calls" in s]
    switch_share = (sum(int(s["switch_calls"]) for s in summed) /
                    max(1, sum(int(s["calls"]) for s in summed)))
    final = summaries.get(a.final_job, {})
    final_switch = int(final.get("switch_calls", 0))
    fallbacks = sum(int(s.get("fallbacks", 0)) for s in summaries.values())
    rejoins = sum(int(s.get("rejoins", 0)) for s in summaries.values())

    # Jobs: outcomes; a hang is a job the soak had to kill at its limit.
    kinds = {"check": [0, 0, 0], "train": [0, 0, 0]}  # ok, ended by chaos, wrong
    hangs, train_wrong = [], []
    for j in jobs:
        rc = int(j["rc"])
        out = os.path.join(logs, j["out"])
        text = open(out, errors="replace").read() if os.path.exists(out) else ""
        if int(j["end"]) - int(j["start"]) >= int(j["limit_s"]) * 1000 - 1000:
            hangs.append("job loop %s n %s (%s) killed at its time limit" % (j["loop"], j["n"], j["kind"]))
        if j["kind"] == "train" and re.search(r"^check: .*\bNO\b", text, re.M):
            train_wrong.append(j["out"] + ": " + re.search(r"^check: .*$", text, re.M).group(0))
            kinds["train"][2] += 1
        elif rc == 0:
            kinds[j["kind"]][0] += 1
        else:
            kinds[j["kind"]][1] += 1
    hangs += ["job %s: one call took %d ms" % (job, ms) for job, ms in slow if ms > a.call_bound_ms]

    # Recovery per fault.
    switch_times = {job: [ms for ms, _, p in lines if p == "switch"] for job, lines in oks.items()}
    spans = {job: (lines[0][0], lines[-1][0]) for job, lines in oks.items()}
    rec = {}
    unrecovered = 0
    late = []  # (fault, recovery ms) past the bound with no later fault before it
    fault_times = sorted(t for t, _, _ in faults)
    for t, kind, _ in faults:
        alive = [job for job, (s, e) in spans.items() if s <= t < e]
        best = []
        for job in alive:
            after = [ms for ms in switch_times[job] if ms > t]
            if after:
                best.append(after[0] - t)
        if best:
            r = max(best)
        else:
            after = [ms for times in switch_times.values() for ms in times if ms > t]
            if not after:
                unrecovered += 1
                continue
            r = min(after) - t
        rec.setdefault(kind, []).append(r)
        superseded = any(t < u < t + r for u in fault_times)
        if r > a.recovery_bound_ms and not superseded:
            late.append("%s at %d: the switch path served again only after %d ms" % (kind, t, r))

    wrong = len(wrong_lines) + len(train_wrong)
    print("chaos soak figures (%.0f min, %s job loops, seed %s)" % (a.minutes, a.loops, a.seed))
    print("allreduce calls checked: %d (exact checker), in %d checker jobs" % (calls, len(oks)))
    print("checker jobs: %d ok, %d ended by chaos; training jobs: %d ok, %d ended by chaos, %d wrong"
          % (kinds["check"][0], kinds["check"][1], kinds["train"][0], kinds["train"][1], kinds["train"][2]))
    # How long the jobs that ran to their end took: the recovery bound
    # counts on them (the rest of a job, a training job, the next check).
    lengths = {"check": [], "train": []}
    for j in jobs:
        if int(j["rc"]) == 0:
            lengths[j["kind"]].append((int(j["end"]) - int(j["start"])) / 1000.0)
    print("job lengths, ran to their end (median / max, s): %s" % ", ".join(
        "%s %s" % (k, "%.1f / %.1f" % (statistics.median(v), max(v)) if v else "none")
        for k, v in sorted(lengths.items())))
    print("wrong answers: %d" % wrong)
    for w in (wrong_lines + train_wrong)[:10]:
        print("  " + w)
    print("hangs past the bound (%d ms a call, the job's length + 60 s): %d" % (a.call_bound_ms, len(hangs)))
    for h in hangs[:10]:
        print("  " + h)
    print("leases left after all jobs ended: %d" % a.leases_left)
    print("fallbacks: %d, rejoins: %d (checker jobs that ran to their end)" % (fallbacks, rejoins))
    print("faults: %d (%s)" % (len(faults), ", ".join("%s %d" % (k, len(v)) for k, v in sorted(rec.items()))))
    print("recovery after a fault, to the switch path serving again (median / max, ms):")
    all_rec = [r for v in rec.values() for r in v]
    for kind, v in sorted(rec.items()):
        print("  %-14s %6d / %6d  (n=%d)" % (kind, statistics.median(v), max(v), len(v)))
    if all_rec:
        print("  %-14s %6d / %6d  (n=%d)" % ("all", statistics.median(all_rec), max(all_rec), len(all_rec)))
    print("faults after which the switch path never served again: %d" % unrecovered)
    print("recoveries past the bound (%d ms, no other fault before the switch served again): %d"
          % (a.recovery_bound_ms, len(late)))
    for l in late[:10]:
        print("  " + l)
    print("calls served by the switch path: %.1f %% (checker jobs that ran to their end; at least %.0f %%)"
          % (100 * switch_share, 100 * a.min_switch_share))
    print("final clean job after the chaos: %s, %d calls through the switch path"
          % ("ok" if a.final_rc == 0 else "FAILED rc=%d" % a.final_rc, final_switch))
    served = (unrecovered == 0 and not late and switch_share >= a.min_switch_share and
              final_switch > 0)
    ok = wrong == 0 and not hangs and a.leases_left == 0 and a.final_rc == 0 and served
    print("verdict: %s" % ("PASS" if ok else "FAIL"))


if __name__ == "__main__":
    main()
